/**
 * The offload executor under an emulated network (`--link`, p2p/wire.ts): the node engines
 * stamp the frames of offloaded schedules and carry their arrivals on in virtual time
 * (sched/offload.ts), and a rank takes the completion only once the wire has reached it
 * (sched/offload-client.ts). A lower bound that follows from the model: every rank's result
 * holds every other rank's contribution, which crossed the wire after that rank posted, so no
 * rank completes earlier than one latency after the latest post of a rank on another node.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath } from './helpers.ts';

const T = { timeout: 120_000 };
const LATENCY_MS = 2;

interface Report {
  posted: number;
  done: number;
  right: boolean;
}

describe('offloaded collectives under --link', () => {
  for (const { what, ranks, ppn, algorithm, transport } of [
    { what: 'an offloaded allreduce on 2 nodes', ranks: 2, ppn: 1, algorithm: 'auto', transport: undefined },
    { what: 'an offloaded allreduce on 2 nodes over TCP', ranks: 2, ppn: 1, algorithm: 'auto', transport: 'tcp' as const },
    { what: 'a two-level offloaded allreduce on 2 nodes of 2 ranks', ranks: 4, ppn: 2, algorithm: 'two-level', transport: undefined },
  ]) {
    test(`under --link latency=${LATENCY_MS}ms, ${what} completes no earlier than ${LATENCY_MS} ms after the other node's ranks posted, with the right sum`, T, async () => {
      const r = await launch(jobPath('offload-wire.ts'), {
        ranks, ppn, args: [algorithm, '16'], output: 'pipe', timeoutMs: 60_000, link: `latency=${LATENCY_MS}ms`, transport,
      });
      assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
      const got = r.ranks.map((x) => x.result as Report);
      assert.equal(got.length, ranks);
      for (let me = 0; me < ranks; me++) {
        assert.ok(got[me]!.right, `rank ${me} has the right sum`);
        const node = Math.floor(me / ppn);
        for (let other = 0; other < ranks; other++) {
          if (Math.floor(other / ppn) === node) continue;
          const after = got[me]!.done - got[other]!.posted;
          assert.ok(after >= LATENCY_MS, `rank ${me} completed ${after.toFixed(3)} ms after rank ${other} (another node) posted; expected at least ${LATENCY_MS} ms`);
        }
      }
    });
  }
});
