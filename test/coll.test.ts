import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath, run, runOk } from './helpers.ts';

const T = { timeout: 180_000 };

/**
 * Comm sizes 1..9 and 16 (non-powers of two included) over 1..4 nodes, the last node holding
 * fewer ranks where the size does not divide (5 = 2+2+1, 7 = 2+2+2+1, 7 = 3+3+1, ...). Every
 * algorithm of the table runs, `hier` included.
 */
const shapes: Array<[number, number]> = [[1, 1], [2, 1], [3, 3], [4, 2], [5, 2], [6, 3], [7, 2], [7, 3], [8, 4], [9, 3], [16, 8]];

describe('collectives against a sequential reference', () => {
  for (const [n, ppn] of shapes) {
    test(`every collective x algorithm x root x dtype/op (and IN_PLACE) matches the reference on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('coll.ts', n, ppn, ['props']);
      const checks = r.ranks.map((x) => x.result as number);
      assert.ok(checks.every((c) => c === checks[0] && c > 150), `checks per rank: ${checks.join(', ')}`);
    });
  }

  for (const [n, ppn] of [[1, 1], [2, 2], [3, 1], [4, 2], [5, 2], [6, 3], [7, 2], [7, 3], [8, 4], [9, 3], [16, 8]] as Array<[number, number]>) {
    test(`with executor 'offload', every collective x algorithm x root x dtype/op matches the reference on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('coll.ts', n, ppn, ['props', '-', 'offload']);
      const checks = r.ranks.map((x) => x.result as number);
      assert.ok(checks.every((c) => c === checks[0] && c > 150), `checks per rank: ${checks.join(', ')}`);
    });
  }

  // Where every rank and engine has a core the engines poll between calls instead of parking
  // (NBC_ENGINE_SPIN_US forces it here): posts then skip the doorbell, frames are picked up by
  // the polling turn, and results must not change.
  test('with polling engines (NBC_ENGINE_SPIN_US=1000), offloaded collectives, flat and two-level, match the reference on 4 ranks over 2 nodes', T, async () => {
    const env = { NBC_ENGINE_SPIN_US: '1000' };
    for (const args of [['props', '-', 'offload'], ['twolevel']]) {
      const r = await launch(jobPath('coll.ts'), { ranks: 4, ppn: 2, args, output: 'pipe', timeoutMs: 120_000, env });
      assert.equal(r.exitCode, 0, `${args.join(' ')}: ${r.failure}\n${r.stderr}`);
      const got = r.ranks.map((x) => x.result as number);
      if (args[0] === 'twolevel') assert.deepEqual(got, [56, 56, 56, 56]);
      else assert.ok(got.every((c) => c === got[0] && c > 150), `checks per rank: ${got.join(', ')}`);
    }
  });

  test('offloaded allreduce gives bitwise the same result as the host executor, for every algorithm', T, async () => {
    for (const [n, ppn] of [[4, 4], [5, 2]] as Array<[number, number]>) {
      const r = await runOk('coll.ts', n, ppn, ['offloadbits']);
      for (const x of r.ranks) assert.deepEqual(x.result, ['recursive-doubling', 'knomial:3', 'rabenseifner', 'ring', 'hier']);
    }
  });

  test('reductions over comm.alloc buffers (sent from in place, folded privately) give plain arrays\' bits and the reference', T, async () => {
    for (const [n, ppn] of [[2, 2], [3, 3], [4, 2]] as Array<[number, number]>) {
      const r = await runOk('coll.ts', n, ppn, ['lent']);
      const checks = r.ranks.map((x) => x.result as number);
      assert.ok(checks.every((c) => c === checks[0] && c >= 12), `${n} ranks: checks per rank ${checks.join(', ')}`);
    }
  });

  test('an offloaded iallreduce completes while the rank computes, before wait(); a host-executed one cannot', T, async () => {
    for (const [n, ppn] of [[2, 2], [2, 1], [4, 2]] as Array<[number, number]>) {
      const r = await runOk('coll.ts', n, ppn, ['completes']);
      for (const x of r.ranks) {
        const got = x.result as { offload: boolean; host: boolean; hostChecked: number };
        // Rank 0 starts late: its partners may have sent everything it needs already (with 4
        // ranks, rank 2 sends its round-1 partial without waiting for rank 0), so only the
        // ranks that started on time, which need rank 0's late contribution, are checked, and
        // only in the attempts where their call returned before rank 0 made its own.
        assert.ok(got.hostChecked >= 1, `${n} ranks, ppn ${ppn}, rank ${x.rank}: no attempt where its call returned before rank 0's`);
        const want = x.rank === 0 ? { offload: true, host: got.host, hostChecked: got.hostChecked } : { offload: true, host: false, hostChecked: got.hostChecked };
        assert.deepEqual(got, want, `${n} ranks, ppn ${ppn}, rank ${x.rank}`);
      }
    }
  });

  for (const [n, ppn] of [[1, 1], [4, 4], [3, 1], [6, 3], [7, 3]] as Array<[number, number]>) {
    test(`two-level offloaded allreduce, reduce, bcast, allgather, alltoall and barrier match the reference on ${n} ranks over ${Math.ceil(n / ppn)} node(s), also on a split communicator, in flight together and restarted`, T, async () => {
      const r = await runOk('coll.ts', n, ppn, ['twolevel']);
      assert.deepEqual(r.ranks.map((x) => x.result), new Array(n).fill(56));
    });
  }

  test('hier alltoall on m nodes sends exactly one inter-node message per ordered node pair, and hier barrier and allreduce send O(log m) per node, not per rank (comm.stats(), also with uneven nodes)', T, async () => {
    const log2 = (m: number): number => Math.ceil(Math.log2(m));
    // recursive doubling among m leaders: pairs folded in and out around log2 of the power of two below m
    const doubling = (m: number): number => {
      const pp = 2 ** Math.floor(Math.log2(m));
      return 2 * (m - pp) + pp * Math.log2(pp);
    };
    for (const [n, ppn] of [[8, 2], [8, 4], [6, 2], [7, 3]] as Array<[number, number]>) {
      const r = await runOk('coll.ts', n, ppn, ['hiercount']);
      const got = r.ranks[0]!.result as Record<string, number>;
      // 'uneven' is world without its last rank, so its last node holds fewer ranks
      for (const [c, m] of [['world', Math.ceil(n / ppn)], ['uneven', Math.ceil((n - 1) / ppn)]] as const) {
        const where = `${c}, ${n} ranks on ${m} nodes`;
        assert.equal(got[`${c} alltoall hier`], m * (m - 1), `${where}: packed alltoall`);
        assert.equal(got[`${c} barrier hier`], m * log2(m), `${where}: hier barrier`);
        assert.equal(got[`${c} allreduce hier`], doubling(m), `${where}: hier allreduce`);
        for (const op of ['alltoall', 'barrier', 'allreduce']) {
          assert.ok(got[`${c} ${op} hier`]! <= got[`${c} ${op} flat`]!, `${where}: hier ${op} sends no more inter-node messages than flat (${JSON.stringify(got)})`);
        }
      }
    }
  });

  test('hier alltoall on nodes of equal size runs its leaders\' exchange as an alltoall, Bruck included (NBC_ALLTOALL_ALGORITHM=bruck reaches the leaders), and matches the reference', T, async () => {
    for (const [n, ppn] of [[8, 2], [6, 3]] as Array<[number, number]>) {
      const r = await launch(jobPath('coll.ts'), { ranks: n, ppn, args: ['props', 'alltoall'], output: 'pipe', timeoutMs: 60_000, env: { NBC_ALLTOALL_ALGORITHM: 'bruck' } });
      assert.equal(r.exitCode, 0, `${n} ranks, ppn ${ppn}: ${r.failure}\n${r.stderr}`);
    }
    // The leaders did run Bruck: on 4 nodes it sends each leader's blocks in ceil(log2 4) = 2
    // messages, 8 in all, where the pairwise exchange sends 4 x 3 = 12.
    const r = await launch(jobPath('coll.ts'), { ranks: 8, ppn: 2, args: ['hiercount'], output: 'pipe', timeoutMs: 60_000, env: { NBC_ALLTOALL_ALGORITHM: 'bruck' } });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    assert.equal((r.ranks[0]!.result as Record<string, number>)['world alltoall hier'], 4 * 2, 'inter-node messages of the leaders\' Bruck alltoall');
  });

  test('a persistent hier allreduce restarted 1,000 times gives the right sum every time (2 nodes, uneven)', T, async () => {
    const r = await runOk('coll.ts', 5, 3, ['persistent', '1000', 'host', 'hier']);
    assert.deepEqual(r.ranks.map((x) => x.result), new Array(5).fill(1000));
  });

  test('persistent collectives in waitAll, testAll, waitAny and testAny beside plain requests; inactive ones complete with an empty status (host and offload, 2 nodes)', T, async () => {
    for (const executor of ['host', 'offload']) {
      const r = await runOk('coll.ts', 4, 2, ['persistentall', executor]);
      assert.deepEqual(r.ranks.map((x) => x.result), new Array(4).fill(20), executor);
    }
  });

  test('a user-defined op cannot be offloaded: NBC_ERR_OP on every rank, also where its schedule reduces nothing (3 and 6 ranks)', T, async () => {
    for (const [n, ppn] of [[2, 2], [3, 2], [6, 3]] as const) {
      const r = await runOk('coll.ts', n, ppn, ['offloaduserop']);
      for (const x of r.ranks) {
        assert.deepEqual(x.result, {
          'allreduce, matmul': 'NBC_ERR_OP', 'allreduce, commutative': 'NBC_ERR_OP', 'iallreduce two-level': 'NBC_ERR_OP',
          reduce: 'NBC_ERR_OP', scan: 'NBC_ERR_OP', reduceScatterBlock: 'NBC_ERR_OP', allreduceInit: 'NBC_ERR_OP',
        }, `${n} ranks, ppn ${ppn}, rank ${x.rank}`);
      }
    }
  });

  test('24 outstanding collectives on world, a dup and a split complete in scrambled order', T, async () => {
    const r = await runOk('coll.ts', 6, 2, ['scrambled']);
    assert.deepEqual(r.ranks.map((x) => x.result), new Array(6).fill(24));
  });

  test('the engine stays responsive: 24 offloaded collectives per rank on 3 communicators, 8 ranks on 2 nodes, scrambled waits', T, async () => {
    const r = await runOk('coll.ts', 8, 4, ['scrambled', 'offload']);
    assert.deepEqual(r.ranks.map((x) => x.result), new Array(8).fill(24));
  });

  test('a persistent allreduce restarted 1,000 times gives the right sum every time', T, async () => {
    const r = await runOk('coll.ts', 4, 2, ['persistent', '1000']);
    assert.deepEqual(r.ranks.map((x) => x.result), new Array(4).fill(1000));
  });

  test('an offloaded persistent allreduce restarted 300 times gives the right sum every time (1 and 2 nodes)', T, async () => {
    for (const ppn of [4, 2]) {
      const r = await runOk('coll.ts', 4, ppn, ['persistent', '300', 'offload']);
      assert.deepEqual(r.ranks.map((x) => x.result), new Array(4).fill(300));
    }
  });

  test('allreduce of random floats: every rank holds identical bits, and reruns repeat them', T, async () => {
    const r = await runOk('coll.ts', 7, 3, ['determinism']);
    const digests = new Set(r.ranks.map((x) => x.result));
    assert.equal(digests.size, 1, 'all ranks report the same values');
  });

  test('a collective whose ranks disagree on sizes completes with NBC_ERR_TRUNCATE instead of hanging', T, async () => {
    for (const ppn of [3, 1]) {
      const r = await runOk('coll.ts', 3, ppn, ['mismatch']);
      assert.deepEqual(r.ranks.map((x) => x.result), ['ok', 'NBC_ERR_TRUNCATE', 'NBC_ERR_TRUNCATE']);
    }
  });

  // A job stopping while a rank sends over UCX: the rank's thread is terminated with an
  // exception pending, and the addon got no endpoint from N-API. It used to pass NULL to UCX and
  // kill its node with SIGSEGV in about 3 of 10 runs (exit 139, the culprit not named).
  test('ranks that disagree on a count across nodes fail the job naming it, exit 1, and never crash a node (10 runs, default transport)', T, async () => {
    for (let k = 0; k < 10; k++) {
      const r = await run('coll.ts', 4, 2, ['countmismatch']);
      assert.equal(r.exitCode, 1, `run ${k}: ${r.failure}\n${r.stderr}`);
      assert.match(r.failure ?? '', /rank \d \(node \d\) failed: Nbc(Count|Truncate)Error: .*disagree on the count/, `run ${k}`);
    }
  });

  test('two-level offload: when one node\'s members disagree, every rank fails (the other nodes get its data flagged invalid), none completes with it', T, async () => {
    const r = await runOk('coll.ts', 4, 2, ['twolevelmismatch']);
    assert.deepEqual(r.ranks.map((x) => x.result), ['NBC_ERR_ARG', 'NBC_ERR_ARG', 'NBC_ERR_ARG', 'NBC_ERR_ARG']);
  });

  test('chaos, cut link (wrong result): check and continue never passes on data that did not arrive: what a failed rank forwards fails its receivers with NBC_ERR_PEER_FAILED (host and offload, 1 and 4 nodes)', T, async () => {
    for (const executor of ['host', 'offload']) {
      for (const ppn of [4, 1]) {
        const r = await runOk('coll.ts', 4, ppn, ['invalid', executor]);
        const got = r.ranks.map((x) => x.result);
        // The engine reports a rank's own failed receive as NBC_ERR_ARG (ranks disagree on sizes).
        assert.equal(got[2], executor === 'host' ? 'NBC_ERR_TRUNCATE' : 'NBC_ERR_ARG', `${executor}, ppn ${ppn}: ${got.join(', ')}`);
        assert.equal(got[3], 'NBC_ERR_PEER_FAILED (not valid)', `${executor}, ppn ${ppn}: ${got.join(', ')}`);
        assert.equal(got[0], 'NBC_ERR_PEER_FAILED (not valid)', `${executor}, ppn ${ppn}: ${got.join(', ')}`);
        assert.equal(got[1], executor === 'host' ? 'NBC_ERR_COUNT' : 'NBC_ERR_ARG', `${executor}, ppn ${ppn}: ${got.join(', ')}`);
      }
    }
  });

  test('a remembered plan started again before its earlier starts finish gives each start its own buffers', T, async () => {
    for (const [n, ppn] of [[5, 5], [5, 2]] as const) {
      const r = await runOk('coll.ts', n, ppn, ['reuse']);
      for (const x of r.ranks) assert.equal(x.result, 22 + 10);
    }
  });

  test('lean blocking allreduce and barrier: a message that came early or behind another still matches; disagreeing counts fail on both sides', T, async () => {
    for (const ppn of [2, 1]) {
      const r = await runOk('coll.ts', 2, ppn, ['lean']);
      const codes = ['NBC_ERR_COUNT', 'NBC_ERR_TRUNCATE'];
      r.ranks.forEach((x, rank) => {
        const { rendezvous, ...rest } = x.result as Record<string, unknown>;
        assert.deepEqual(rest, {
          early: [3, 30], behind: [2, 20, 1 - rank, 1 - rank], disagree: codes[rank], after: 3, afterRendezvous: 3,
        }, `rank ${rank}, ${ppn} per node`);
        // a collective's receives take exactly their length: rank 0's is too long for rank 1's
        // message, rank 1's too short for rank 0's
        assert.equal(rendezvous, codes[rank], `rank ${rank}, ${ppn} per node`);
      });
    }
  });

  test('bad input raises the right NbcError code before any message is sent', T, async () => {
    const r = await runOk('coll.ts', 3, 2, ['badinput']);
    for (const x of r.ranks) {
      assert.deepEqual(x.result, {
        'allreduce length mismatch': 'NBC_ERR_COUNT',
        'allreduce type mismatch': 'NBC_ERR_TYPE',
        'bad root': 'NBC_ERR_ROOT',
        'negative root': 'NBC_ERR_ROOT',
        'band on Float64Array': 'NBC_ERR_OP',
        'unknown op': 'NBC_ERR_OP',
        'minloc odd count': 'NBC_ERR_COUNT',
        'allgatherv counts short': 'NBC_ERR_COUNT',
        'allgatherv counts overflow': 'NBC_ERR_COUNT',
        'reduceScatter counts do not add up': 'NBC_ERR_COUNT',
        'unknown algorithm': 'NBC_ERR_ARG',
        'ring with non-commutative op': 'NBC_ERR_OP',
        'unknown executor': 'NBC_ERR_ARG',
        'neighbor on a plain communicator': 'NBC_ERR_COMM',
        'alltoall indivisible': 'NBC_ERR_COUNT',
        'alloc negative': 'NBC_ERR_COUNT',
        'alloc fraction': 'NBC_ERR_COUNT',
        'alloc 2 GiB': 'NBC_ERR_COUNT',
        'alloc 8 GB': 'NBC_ERR_COUNT',
        'freeMem of a plain array': 'NBC_ERR_ARG',
        'alloc of no typed array class': 'NBC_ERR_TYPE',
        'alloc of undefined': 'NBC_ERR_TYPE',
        'waitAll of undefined': 'NBC_ERR_ARG',
        'waitAll with a null entry': 'NBC_ERR_ARG',
        'testAny with a plain object': 'NBC_ERR_ARG',
        'create from a plain object': 'NBC_ERR_ARG',
        'algorithmFor a bogus collective': 'NBC_ERR_ARG',
        'persistent started after free': 'NBC_ERR_REQUEST',
        messagesSentMeanwhile: '0',
        'persistent started twice': 'NBC_ERR_REQUEST',
        'gatherv and scatterv, null counts off the root': 'right',
      });
    }
  });
});
