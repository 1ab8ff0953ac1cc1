import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ANY_SOURCE, ANY_TAG } from 'nbcoll';
import fc from 'fast-check';
import { MatchCore, type PayloadSource, type Unexpected } from '../src/p2p/match.ts';
import { MatchTable } from '../src/p2p/match-table.ts';
import { RecvRequest, type TransportStats } from '../src/p2p/messages.ts';
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

// ---- the match core (p2p/match.ts) and the offload engine's table (p2p/match-table.ts) ----

const noProgress = { progress: () => false, waitUntil: () => {}, waitUntilAny: () => {}, parkAsync: () => {} };

/** A path that completes a receive with the message's `n` (in its token) as the receive's tag check. */
const fakePath: PayloadSource & { got: Array<[RecvRequest, Unexpected]> } = {
  got: [],
  receive(req, m) {
    this.got.push([req, m]);
    req.status.source = m.src;
    req.status.tag = m.tag;
    req.complete();
  },
  fetch: () => new Uint8Array(0),
  drop: () => {},
};

function recvReq(ctx: number, src: number, tag: number): RecvRequest {
  const r = new RecvRequest(noProgress);
  r.view = new Uint8Array(8);
  r.ctx = ctx;
  r.src = src;
  r.tag = tag;
  return r;
}

function message(src: number, tag: number, n: number): Unexpected {
  return { kind: 0, src, tag, bytes: 0, data: null, slice: -1, offset: 0, token: n, from: src, invalid: false, held: false, path: fakePath };
}

function core(): MatchCore {
  const stats = { messagesReceived: 0, bytesReceived: 0 } as TransportStats;
  return new MatchCore(0, 4, stats);
}

describe('match core', () => {
  test('a message takes the first posted receive it fits, wildcards included, in posting order', () => {
    const c = core();
    const r1 = recvReq(3, 1, 5);
    const r2 = recvReq(3, ANY_SOURCE, 5);
    const r3 = recvReq(3, 1, ANY_TAG);
    for (const r of [r1, r2, r3]) c.post(r);
    assert.equal(c.match(4, 1, 5), null, 'another context matches nothing');
    assert.equal(c.match(3, 1, 7), r3);
    assert.equal(c.match(3, 2, 5), r2);
    assert.equal(c.match(3, 1, 5), r1);
    assert.equal(c.match(3, 1, 5), null);
  });

  test('receives take unexpected messages in arrival order: one source is never overtaken', () => {
    const c = core();
    fakePath.got = [];
    c.arrive(3, message(1, 5, 0));
    c.arrive(3, message(2, 5, 1));
    c.arrive(3, message(1, 5, 2));
    c.arrive(3, message(1, 6, 3));
    const order: number[] = [];
    for (const [src, tag] of [[1, 6], [ANY_SOURCE, 5], [ANY_SOURCE, ANY_TAG], [1, ANY_TAG]] as const) {
      const r = recvReq(3, src, tag);
      c.post(r);
      assert.ok(r.done, 'an unexpected message matched at once');
      order.push(fakePath.got.at(-1)![1].token);
    }
    assert.deepEqual(order, [3, 0, 1, 2]);
    assert.equal(c.peek(3, ANY_SOURCE, ANY_TAG), null);
  });

  test('a matching property: every receive gets the earliest arrival it fits, as one list in arrival order gives', () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 2 })), { maxLength: 60 }),
      (steps) => {
        const c = core();
        const model: Unexpected[] = [];
        let n = 0;
        fakePath.got = [];
        for (const [isRecv, a, b] of steps) {
          if (!isRecv) {
            const m = message(a, b, n++);
            c.arrive(7, m);
            model.push(m);
            continue;
          }
          const src = a === 2 ? ANY_SOURCE : a;
          const tag = b === 2 ? ANY_TAG : b;
          const i = model.findIndex((m) => (src === ANY_SOURCE || m.src === src) && (tag === ANY_TAG || m.tag === tag));
          const r = recvReq(7, src, tag);
          c.post(r);
          if (i < 0) {
            assert.equal(r.done, false);
            assert.equal(c.match(7, src === ANY_SOURCE ? 0 : src, tag === ANY_TAG ? 0 : tag), r, 'posted, and matched by a fitting message');
          } else {
            assert.equal(fakePath.got.at(-1)![1], model[i]);
            model.splice(i, 1);
          }
        }
      }));
  });

  test('a finished peer fails the posted receives only it could match, and those posted later; ANY_SOURCE stays', () => {
    const c = core();
    c.registerContext(3, Int32Array.of(2, 3));
    const fromGone = recvReq(3, 1, 5);
    const any = recvReq(3, ANY_SOURCE, 5);
    const fromOther = recvReq(3, 0, 5);
    for (const r of [fromGone, any, fromOther]) c.post(r);
    assert.equal(c.isFinished(3), false);
    assert.equal(c.peerFinished(3), true);
    assert.equal(c.peerFinished(3), false, 'once');
    assert.ok(c.isFinished(3));
    assert.ok(fromGone.done && fromGone.error?.message.includes('returned from its job'), 'failed');
    assert.equal((fromGone.error as { code?: string }).code, 'NBC_ERR_PEER_FAILED');
    assert.equal(any.done, false);
    assert.equal(fromOther.done, false);
    const later = recvReq(3, 1, 6);
    c.post(later);
    assert.ok(later.done && later.error !== null, 'a receive posted later fails at once');
    assert.equal(c.senderGone(3, 1), 3);
    assert.equal(c.senderGone(3, ANY_SOURCE), -1);
    assert.equal(c.match(3, 0, 5), any, 'ANY_SOURCE still matches, first in posting order');
  });
});

describe('match table', () => {
  test('takes exactly by (destination, context, source, tag), in arrival order, and forgets what a finished peer waits on', () => {
    type W = { src: number; tag: number; n: number };
    const t = new MatchTable<W>();
    t.push(4, 9, { src: 1, tag: 100, n: 0 });
    t.push(4, 9, { src: 1, tag: 100, n: 1 });
    t.push(4, 9, { src: 2, tag: 100, n: 2 });
    t.push(5, 9, { src: 1, tag: 100, n: 3 });
    assert.equal(t.size, 4);
    assert.equal(t.take(4, 8, 1, 100), null, 'another context');
    assert.equal(t.take(4, 9, 1, 101), null, 'another tag');
    assert.equal(t.take(4, 9, 1, 100)?.n, 0);
    assert.deepEqual(t.removeWhere((w) => w.src === 1).map((w) => w.n), [1, 3]);
    assert.equal(t.take(4, 9, 2, 100)?.n, 2);
    assert.equal(t.size, 0);
    assert.equal(t.take(4, 9, 2, 100), null);
  });
});
