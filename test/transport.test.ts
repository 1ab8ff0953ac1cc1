/**
 * Both transports between nodes, chosen explicitly (the rest of the suite runs on the default,
 * `auto`: UCX where the native addon has it, else TCP): point-to-point semantics and
 * collectives over each, how the choice is made, and what a wrong choice says.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath } from './helpers.ts';
import { nativeAddon } from '../src/runtime/native.ts';

const T = { timeout: 300_000 };

/** Why the UCX transport cannot run here, or false when it can. */
function ucxMissing(): string | false {
  const { addon, why } = nativeAddon();
  if (addon === null) return `no native addon (${why})`;
  if (addon.ucxPoll === undefined) return 'the native addon was built without UCX: install Debian package libucx-dev (.ci/run does) and npm run build';
  return false;
}

async function runOn(transport: 'ucx' | 'tcp' | 'auto', job: string, ranks: number, ppn: number, args: string[], env: Record<string, string> = {}) {
  return launch(jobPath(job), { ranks, ppn, args, output: 'pipe', timeoutMs: 90_000, transport, env });
}

async function okOn(transport: 'ucx' | 'tcp', job: string, ranks: number, ppn: number, args: string[]) {
  const r = await runOn(transport, job, ranks, ppn, args);
  assert.equal(r.exitCode, 0, `${job} ${args.join(' ')} on ${ranks} ranks (ppn ${ppn}) over ${transport} failed: ${r.failure}\n${r.stderr}`);
  assert.equal(r.ranks.length, ranks);
  return r;
}

for (const transport of ['tcp', 'ucx'] as const) {
  describe(`transport ${transport}`, { skip: transport === 'ucx' ? ucxMissing() : false }, () => {
    test(`messages between nodes travel over ${transport}, and stats() counts the peers used`, T, async () => {
      const r = await okOn(transport, 'p2p.ts', 4, 2, ['transport']);
      for (const x of r.ranks) {
        const got = x.result as { interNode: string; interNodeMessages: number; got: number; peers: number[] };
        assert.equal(got.interNode, transport);
        assert.ok(got.interNodeMessages >= 1, 'the cross-node send was counted as inter-node');
        assert.deepEqual(got.peers, [1, 1], 'one peer on its own node and one on the other, each counted once');
        assert.equal(got.got, (x.rank + 2) % 4);
      }
    });

    test(`p2p semantics between nodes over ${transport}: ring, all pairs, order, truncation, datatypes, large and many messages, requests and probes`, T, async () => {
      await okOn(transport, 'p2p.ts', 6, 2, ['ring', '8']);
      await okOn(transport, 'p2p.ts', 3, 1, ['ring', '8']);
      await okOn(transport, 'p2p.ts', 6, 3, ['allpairs', '20000']);
      await okOn(transport, 'p2p.ts', 2, 1, ['order']);
      for (const bytes of ['16', '3000000']) {
        const r = await okOn(transport, 'p2p.ts', 2, 1, ['truncate', bytes]);
        assert.equal(r.ranks[0]!.result, 'NBC_ERR_TRUNCATE');
      }
      await okOn(transport, 'p2p.ts', 2, 1, ['dtypes']);
      await okOn(transport, 'p2p.ts', 2, 1, ['big', String(16 * 1024 * 1024)]);
      await okOn(transport, 'p2p.ts', 2, 1, ['many']);
      await okOn(transport, 'p2p.ts', 2, 1, ['requests']);
    });

    test(`a lean receive across nodes over ${transport} takes its own message, leaves another tag for its receive, and refuses a count its peer disagrees on`, T, async () => {
      const r = await okOn(transport, 'lean-inbox.ts', 2, 1, []);
      for (const x of r.ranks) {
        const got = x.result as { sums: number; p2p: number; mismatch: string; after: number };
        assert.equal(got.sums, 2000, `rank ${x.rank}: every 8 B allreduce gave the exact sum`);
        assert.equal(got.p2p, 42 + 1 - x.rank, `rank ${x.rank}: the message of tag 7 came to its own receive`);
        assert.match(got.mismatch, x.rank === 0 ? /^NBC_ERR_TRUNCATE: / : /^NBC_ERR_COUNT: /, `rank ${x.rank}`);
        assert.equal(got.after, 3, `rank ${x.rank}: a fresh communicator works after the error`);
      }
    });

    test(`collectives across nodes over ${transport} pass the property checks (allreduce, bcast, alltoall, barrier, allgather)`, T, async () => {
      for (const coll of ['allreduce', 'bcast', 'alltoall', 'barrier', 'allgather']) {
        await okOn(transport, 'coll.ts', 5, 2, ['props', coll]);
      }
    });
  });
}

describe('UCX without peer error handling (NBC_UCX_ERR_MODE=none)', { skip: ucxMissing() }, () => {
  const NONE = { NBC_UCX_ERR_MODE: 'none' };
  async function okNone(job: string, ranks: number, ppn: number, args: string[]) {
    const r = await runOn('ucx', job, ranks, ppn, args, NONE);
    assert.equal(r.exitCode, 0, `${job} ${args.join(' ')} on ${ranks} ranks (ppn ${ppn}) over ucx, err mode none, failed: ${r.failure}\n${r.stderr}`);
    return r;
  }

  test('every rank runs its endpoints in the mode asked for, and the default is peer', T, async () => {
    const none = await okNone('p2p.ts', 4, 2, ['transport']);
    for (const x of none.ranks) assert.deepEqual((x.result as { ucxErrMode: string }).ucxErrMode, 'none');
    const dflt = await okOn('ucx', 'p2p.ts', 4, 2, ['transport']);
    for (const x of dflt.ranks) assert.deepEqual((x.result as { ucxErrMode: string }).ucxErrMode, 'peer');
    const tcp = await okOn('tcp', 'p2p.ts', 4, 2, ['transport']);
    for (const x of tcp.ranks) assert.equal((x.result as { ucxErrMode: string | null }).ucxErrMode, null);
  });

  test('p2p semantics and collectives hold: ring, order, truncation, 16 MiB, requests, allreduce and alltoall', T, async () => {
    await okNone('p2p.ts', 6, 2, ['ring', '8']);
    await okNone('p2p.ts', 2, 1, ['order']);
    const r = await okNone('p2p.ts', 2, 1, ['truncate', '3000000']);
    assert.equal(r.ranks[0]!.result, 'NBC_ERR_TRUNCATE');
    await okNone('p2p.ts', 2, 1, ['big', String(16 * 1024 * 1024)]);
    await okNone('p2p.ts', 2, 1, ['requests']);
    for (const coll of ['allreduce', 'alltoall']) await okNone('coll.ts', 5, 2, ['props', coll]);
  });

  test('a value other than peer or none stops the job at start, naming the variable and the choices', T, async () => {
    const r = await runOn('ucx', 'p2p.ts', 2, 1, ['transport'], { NBC_UCX_ERR_MODE: 'fast' });
    assert.equal(r.exitCode, 2, r.stderr);
    assert.match(r.stderr, /NBC_UCX_ERR_MODE=fast: expected peer \(the default.*\) or none \(.*\) \[NBC_ERR_ARG\]/);
  });
});

test('--transport ucx refuses the engines\' link queue (NBC_WIRE=queue) and a node without UCX, saying why; auto falls back to tcp', T, async () => {
  const withQueue = await launch(jobPath('p2p.ts'), {
    ranks: 2, ppn: 1, args: ['transport'], output: 'pipe', timeoutMs: 60_000, transport: 'ucx', link: 'latency=10us', env: { NBC_WIRE: 'queue' },
  });
  assert.notEqual(withQueue.exitCode, 0);
  assert.match(withQueue.stderr, /Cannot emulate links \(--link\) with --transport ucx under NBC_WIRE=queue.*expected --transport tcp, or NBC_WIRE=stamp \[NBC_ERR_ARG\]/);
  const noAddon = await runOn('ucx', 'p2p.ts', 2, 1, ['transport'], { NBC_NO_NATIVE: '1' });
  assert.notEqual(noAddon.exitCode, 0);
  assert.match(noAddon.stderr, /Cannot use --transport ucx on node \d: the native addon is disabled by NBC_NO_NATIVE=1; expected --transport tcp or auto/);
  const auto = await runOn('auto', 'p2p.ts', 2, 1, ['transport'], { NBC_NO_NATIVE: '1' });
  assert.equal(auto.exitCode, 0, auto.stderr);
  assert.deepEqual(auto.ranks.map((x) => (x.result as { interNode: string }).interNode), ['tcp', 'tcp']);
  // An emulated link stamps messages on either transport (p2p/wire.ts): auto still picks UCX where it can.
  const linked = await launch(jobPath('p2p.ts'), { ranks: 2, ppn: 1, args: ['transport'], output: 'pipe', timeoutMs: 60_000, link: 'latency=10us' });
  assert.equal(linked.exitCode, 0, linked.stderr);
  const expected = ucxMissing() === false ? 'ucx' : 'tcp';
  assert.deepEqual(linked.ranks.map((x) => (x.result as { interNode: string }).interNode), [expected, expected]);
});
