/**
 * A rank that returns from its job while its peers still wait for it: its word (KIND_FIN)
 * follows its last message on every path, so what only it could complete fails with
 * NBC_ERR_PEER_FAILED, naming it, instead of waiting for the job's timeout; and what it sent
 * before it returned is still delivered.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch, type LaunchResult } from 'nbcoll';
import { jobPath } from './helpers.ts';

const T = { timeout: 300_000 };

/** Layouts: one node; two nodes over the default transport (UCX where built) and over TCP. */
const layouts: Array<{ name: string; ppn: number; transport?: 'tcp' }> = [
  { name: '1 node', ppn: 4 },
  { name: '2 nodes', ppn: 2 },
  { name: '2 nodes, TCP', ppn: 2, transport: 'tcp' },
];

async function finished(ranks: number, ppn: number, args: string[], transport?: 'tcp'): Promise<LaunchResult> {
  // Far below the deadline: a receive that waited for a finished rank would hang until it.
  return launch(jobPath('finished.ts'), { ranks, ppn, args, output: 'pipe', timeoutMs: 60_000, transport });
}

function results(r: LaunchResult, what: string): string[] {
  assert.equal(r.exitCode, 0, `${what}: exit ${r.exitCode}: ${r.failure}\n${r.stderr}`);
  return r.ranks.map((x) => x.result as string);
}

describe('a rank that returns from its job while others wait for it', () => {
  for (const { name, ppn, transport } of layouts) {
    test(`collectives that the last rank skipped fail on every other rank, naming it (host lean and scheduled, offload; ${name})`, T, async () => {
      for (const [executor, n] of [['host', '4'], ['host', '100000'], ['offload', '4']] as const) {
        const what = `${executor} allreduce of ${n}, ${name}`;
        const got = results(await finished(4, ppn, ['collective', executor, n], transport), what);
        assert.equal(got[3], 'returned', what);
        for (const x of got.slice(0, 3)) assert.match(x, /^NBC_ERR_PEER_FAILED: /, `${what}: ${got.join('\n')}`);
        // Ranks that failed return in turn, so some name a rank that failed before them.
        assert.ok(got.some((x) => /rank 3\b.*returned from its job/.test(x)), `${what}: ${got.join('\n')}`);
      }
    });

    // Ranks 0 and 1 share a node in every layout here; across nodes below (2 nodes x 1 rank).
    if (ppn !== 4) continue;
    test(`on a node, receives from it fail, posted before or after its word; sends it never took fail; what it sent first arrives intact (${name})`, T, async () => {
      const recv = results(await finished(4, ppn, ['recv'], transport), `recv, ${name}`);
      assert.match(recv[0]!, /^NBC_ERR_PEER_FAILED: Rank 0 cannot receive from rank 1 \(context 0, tag 7\): that rank returned from its job/);
      const late = results(await finished(4, ppn, ['late'], transport), `late, ${name}`);
      assert.match(late[0]!, /^NBC_ERR_PEER_FAILED \/ NBC_ERR_PEER_FAILED: Rank 0 cannot receive from rank 1 \(context 0, tag 8\)/);
      const delivered = results(await finished(4, ppn, ['delivered'], transport), `delivered, ${name}`);
      assert.equal(delivered[0], 'NBC_ERR_PEER_FAILED / 1,2,3 / 0 bad bytes');
      // An eager send completes (its message dropped, as one nobody receives); a rendezvous
      // one, which waits for its receiver, fails.
      assert.equal(results(await finished(4, ppn, ['send', '100'], transport), `send 100, ${name}`)[0], 'ok');
      const big = results(await finished(4, ppn, ['send', String(1 << 20)], transport), `send 1 MiB, ${name}`);
      assert.match(big[0]!, /^NBC_ERR_PEER_FAILED: Rank 0 cannot send 1048576 bytes to rank 1 .*returned from its job without receiving/);
    });
  }

  // With 2 ranks per node, ranks 0 and 1 share a node: these run the point-to-point cases across nodes.
  for (const transport of [undefined, 'tcp'] as const) {
    const name = `2 nodes x 1 rank, ${transport ?? 'default transport'}`;
    test(`across nodes, receives from it fail, posted before or after its word; what it sent first arrives intact; a send it never took completes once it has left the node (${name})`, T, async () => {
      const recv = results(await finished(2, 1, ['recv'], transport), `recv, ${name}`);
      assert.match(recv[0]!, /^NBC_ERR_PEER_FAILED: Rank 0 cannot receive from rank 1 \(context 0, tag 7\): that rank returned from its job/);
      const late = results(await finished(2, 1, ['late'], transport), `late, ${name}`);
      assert.match(late[0]!, /^NBC_ERR_PEER_FAILED \/ NBC_ERR_PEER_FAILED: Rank 0 cannot receive from rank 1 \(context 0, tag 8\)/);
      assert.equal(results(await finished(2, 1, ['delivered'], transport), `delivered, ${name}`)[0], 'NBC_ERR_PEER_FAILED / 1,2,3 / 0 bad bytes');
      // Pushed over TCP within the engines' credit, or taken and dropped by the finished rank
      // over UCX: the sender completes, as with an eager message nobody receives.
      assert.equal(results(await finished(2, 1, ['send', String(1 << 20)], transport), `send 1 MiB, ${name}`)[0], 'ok');
    });
  }

  test('between two nodes that never exchanged a frame, the word goes through the rendezvous (TCP, 2 nodes x 1 rank)', T, async () => {
    const got = results(await finished(2, 1, ['recv'], 'tcp'), 'recv, 2 x 1');
    assert.match(got[0]!, /^NBC_ERR_PEER_FAILED: Rank 0 cannot receive from rank 1 /);
  });

  test('a job that does not catch the error ends with exit 1 within seconds, naming the rank that returned', T, async () => {
    for (const ppn of [4, 2]) {
      const start = performance.now();
      const r = await finished(4, ppn, ['uncaught']);
      assert.equal(r.exitCode, 1, `ppn ${ppn}: ${r.failure}\n${r.stderr}`);
      assert.match(r.failure ?? '', /failed: NbcPeerFailedError: Rank \d cannot receive from rank 3 .*returned from its job/, `ppn ${ppn}`);
      assert.ok(performance.now() - start < 30_000, `ppn ${ppn}: took ${Math.round(performance.now() - start)} ms`);
    }
  });
});
