import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ANY_SOURCE, ANY_TAG } from 'nbcoll';
import { UnexpectedQueue } from '../src/p2p/unexpected.ts';

type M = { src: number; tag: number; n: number };

describe('unexpected messages', () => {
  test('a receive takes the earliest arrival it matches, by source, tag and wildcards', () => {
    const q = new UnexpectedQueue<M>();
    const arrivals: M[] = [
      { src: 2, tag: 7, n: 0 }, { src: 1, tag: 5, n: 1 }, { src: 2, tag: 5, n: 2 },
      { src: 1, tag: 7, n: 3 }, { src: 3, tag: 5, n: 4 }, { src: 1, tag: 5, n: 5 },
    ];
    for (const m of arrivals) q.push(m);
    assert.equal(q.peek(ANY_SOURCE, 5)?.n, 1);
    assert.equal(q.take(1, 7)?.n, 3);
    assert.equal(q.take(ANY_SOURCE, 5)?.n, 1);
    assert.equal(q.take(ANY_SOURCE, ANY_TAG)?.n, 0);
    assert.equal(q.take(2, ANY_TAG)?.n, 2);
    assert.equal(q.take(2, ANY_TAG), null);
    assert.equal(q.take(1, 9), null);
    assert.equal(q.take(ANY_SOURCE, ANY_TAG)?.n, 4);
    assert.equal(q.take(1, 5)?.n, 5);
    assert.equal(q.size, 0);
  });

  // The slow-receiver load scenario: a receiver that fell 10^5 messages behind, then caught
  // up source by source, took minutes when every take spliced one list as long as the backlog.
  // Linear, not quadratic: a scan from the head for each take would be 4 x 10^10 steps, far past
  // the deadline; the linear drain takes well under a second.
  test('slow receiver: a backlog of 400,000 messages from 4 sources drains source by source in linear time', { timeout: 30_000 }, () => {
    const q = new UnexpectedQueue<M>();
    const per = 100_000;
    for (let i = 0; i < per; i++) for (let s = 0; s < 4; s++) q.push({ src: s, tag: i & 0x7fff, n: i });
    for (let s = 3; s >= 0; s--) {
      for (let i = 0; i < per; i++) {
        const m = q.take(s, ANY_TAG);
        if (m === null || m.n !== i) assert.fail(`source ${s}: message ${i} came as ${m?.n}`);
      }
    }
    assert.equal(q.size, 0);
  });
});
