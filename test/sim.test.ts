import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScheduleBuilder, RECV, SEND, type Schedule } from '../src/sched/schedule.ts';
import { select } from '../src/coll/select.ts';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { barrierLoopSpread, buildProgram, programOf, runProgram, simulate, toGoal, PRESETS, parseSimParams, crowdedParams, DEFAULT_SIM_PARAMS, type CallSpec, type SimNoise, type SimParams } from '../src/sim/index.ts';
import { parseSimOp } from '../src/cli/sim.ts';
import { fitLogGOPS, lentOf, modelOneWay, refitLogGP, splitAtSpread, stalledCall } from '../src/sim/calibrate.ts';
import { EventQueue } from '../src/sim/heap.ts';
import { jitterQuantiles, type BarrierSpreadResult, type LogGPJobArgs, type LogGPJobResult } from '../src/sim/loggp-job.ts';
import { fileURLToPath } from 'node:url';
import { launch } from 'nbcoll';

/** Round numbers, so every expected time below can be checked by hand. */
const P: SimParams = {
  source: 'test',
  net: { L: 5, o: 1, g: 2, G: 0.01, O: 0, S: 1000 },
  shm: { L: 1, o: 0.5, g: 0.5, G: 0.001, O: 0.001, S: 1000 },
  reduceUsPerByte: 0.002,
  copyUsPerByte: 0.001,
  postUs: 0.3,
  agg: { radix: 2, levels: 1, payload: 256, slots: 4, linkUs: 0.5, hopUs: 0.7, hopPerByteUs: 0.01 },
};

const near = (actual: ArrayLike<number>, expected: number[], what: string): void => {
  assert.equal(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i]! - expected[i]!) < 1e-9, `${what}: rank ${i} done at ${actual[i]}, expected ${expected[i]}`);
  }
};

function ping(bytes: number): Schedule[] {
  const a = new ScheduleBuilder('ping');
  a.send(1, { buf: SEND, offset: 0, bytes });
  const b = new ScheduleBuilder('ping');
  b.recv(0, { buf: RECV, offset: 0, bytes });
  return [a.build(), b.build()];
}

test('a 2-rank eager ping takes o + (s-1)G + L + o + (s-1)O, LogGP by hand', { timeout: 5_000 }, () => {
  // 101 B over the network: leaves at o = 1, arrives 100 x 0.01 + 5 later (7), received by 8.
  near(runProgram(programOf(ping(101)), P).done, [1, 8], 'net');
  // Same node (ppn 2): o 0.5, G = O = 0.001: arrives 0.5 + 0.1 + 1 = 1.6, received 1.6 + 0.5 + 0.1.
  near(runProgram(programOf(ping(101), 2), P).done, [0.6, 2.2], 'shm');
});

test('on a shared host (hostCores) the ranks queue for its cores', { timeout: 5_000 }, () => {
  const exchange = [0, 1].map((r) => {
    const b = new ScheduleBuilder('exchange');
    b.send(1 - r, { buf: SEND, offset: 0, bytes: 101 });
    b.recv(1 - r, { buf: RECV, offset: 0, bytes: 101 });
    return b.build();
  });
  // A core each: both sends leave at 1, arrive at 1 + 1 + 5 = 7, are taken in by 8.
  near(runProgram(programOf(exchange), P).done, [8, 8], 'a core each');
  near(runProgram(programOf(exchange), { ...P, hostCores: 2 }).done, [8, 8], 'as many cores as ranks');
  // One core: rank 1's send waits for rank 0's (leaves at 2, arrives 8); rank 1 takes rank 0's
  // message in at 7..8, rank 0 rank 1's at 8..9.
  near(runProgram(programOf(exchange), { ...P, hostCores: 1 }).done, [9, 8], 'one core');
});

test('a rank that gave up its core pays the wake-up (W) for the message that brings it back; a busy one does not', { timeout: 5_000 }, () => {
  const W: SimParams = { ...P, net: { ...P.net, W: 3 }, hostCores: 1 };
  // Idle since 0, the receiver pays W before o: 7 + 3 + 1.
  near(runProgram(programOf(ping(101)), W).done, [1, 11], 'woken');
  // Without a shared host W is not paid.
  near(runProgram(programOf(ping(101)), { ...W, hostCores: undefined }).done, [1, 8], 'a core each');
  // Busy with a 10 us copy (after the sender's o on the one core: 1..11) when the message comes at 7: no wake-up, taken in at 11..12.
  const a = new ScheduleBuilder('ping');
  a.send(1, { buf: SEND, offset: 0, bytes: 101 });
  const b = new ScheduleBuilder('ping');
  b.copy({ buf: SEND, offset: 0, bytes: 10_000 }, { buf: RECV, offset: 200 });
  b.recv(0, { buf: RECV, offset: 0, bytes: 101 });
  near(runProgram(programOf([a.build(), b.build()]), W).done, [1, 12], 'busy');
  // Rendezvous: the request wakes the receiver (6 + 3 + 1 = 10), the clear-to-send (at 15) the
  // sender (18, data leaves 19, arrives 19 + 20 + 5), and the data the receiver again: 44 + 3 + 1.
  near(runProgram(programOf(ping(2001)), W).done, [19, 48], 'rendezvous');
});

test('a 2-rank rendezvous ping adds the request and clear-to-send round trip', { timeout: 5_000 }, () => {
  // 2001 B > S: request leaves at 1, arrives 6; the receiver answers (o) at 7, CTS arrives 12;
  // data leaves at 13, arrives 13 + 20 + 5 = 38, received at 39. The send completes at 13.
  near(runProgram(programOf(ping(2001)), P).done, [13, 39], 'rendezvous');
});

test('a 4-rank recursive-doubling allreduce of 8 B matches the hand-computed LogGP time', { timeout: 5_000 }, () => {
  const prog = buildProgram({ coll: 'allreduce', ranks: 4, ppn: 1, bytes: 8, executor: 'host', algorithm: 'recursive-doubling' }, P);
  // copy in (0.008), two exchanges of o + 7G + L + o = 7.07 each, and the reduce (0.016) plus,
  // on the lower rank of a pair, the copy back (0.008) after each. Rank 0 is the lower twice:
  // 0.008 + 7.07 + 0.024 + 7.07 + 0.024 = 14.196; its send of step 2 waits for step 1's fold.
  const r = runProgram(prog, P);
  near(r.done, [14.196, 14.188, 14.188, 14.18], 'recursive doubling');
  assert.ok(Math.abs(r.latencyUs - 14.196) < 1e-9);
});

test('ranks that start late receive what arrived before, and nbcbench timing measures each from its own barrier exit', { timeout: 5_000 }, () => {
  // Rank 0 starts at 3: the message leaves at 4 and arrives 4 + 100 x 0.01 + 5 = 10. Rank 1
  // posts its receive at 10 (or long before, at 1): either way it receives from 10 to 11.
  near(runProgram(programOf(ping(101)), P, { startAt: new Float64Array([3, 10]) }).done, [4, 11], 'late receiver');
  near(runProgram(programOf(ping(101)), P, { startAt: new Float64Array([3, 1]) }).done, [4, 11], 'early receiver');
  // 4 ranks on 2 nodes, all starting at 0: the hier barrier lets the leaders (0, 2) out at 9.5
  // and the others at 11; a binomial bcast from rank 0 ends on rank 3 at 9.084.
  const exits = runProgram(buildProgram({ coll: 'barrier', ranks: 4, ppn: 2, executor: 'host', bytes: 0 }, P), P).done;
  near(exits, [9.5, 11, 9.5, 11], 'barrier exits');
  assert.ok(Math.abs(simulate({ coll: 'bcast', ranks: 4, ppn: 2, executor: 'host', algorithm: 'binomial' }, [8], P)[0]!.latencyUs - 9.084) < 1e-9, 'all start together');
});

test("nbcbench's loop: a rank a call lets go early leaves the next barrier early and waits that much longer", { timeout: 5_000 }, () => {
  // 2 ranks on 2 nodes, binomial bcast of 8 B; each run starts its NICs idle.
  // Round 1: the barrier (send o, L, receive o) lets both out at 7; the root sends [7, 8], the
  // message arrives 8 + 7 x 0.01 + 5 = 13.07, rank 1 receives [13.07, 14.07].
  // Round 2: the root enters the barrier at 8, its message reaches rank 1 at 14; rank 1 enters
  // at 14.07, sends [14.07, 15.07], receives [15.07, 16.07] and leaves; the root receives rank
  // 1's message at 20.07 and leaves at 21.07. So rank 1 calls 5 us before the root: the bcast
  // reaches it at 27.14 and it is done at 28.14, 12.07 after its own call. Round 3 repeats it
  // (the measured call): 12.07, where a simultaneous start gives the one-way time, 7.07.
  const spec = { coll: 'bcast', ranks: 2, ppn: 1, executor: 'host', algorithm: 'binomial' } as const;
  assert.ok(Math.abs(simulate(spec, [8], P)[0]!.latencyUs - 7.07) < 1e-9, 'all start together');
  assert.ok(Math.abs(simulate(spec, [8], P, { afterBarrier: true })[0]!.latencyUs - 12.07) < 1e-9, 'in the loop');
});

test('a call\'s own cost (callUs) delays each rank\'s first action on the host executor', { timeout: 5_000 }, () => {
  // callUs 2: rank 0's send starts at 2, leaves at 3, arrives 3 + 100 x 0.01 + 5 = 9; rank 1,
  // its call done by 2, receives from 9 to 10.
  near(runProgram(programOf(ping(101)), { ...P, callUs: 2 }).done, [3, 10], 'callUs');
  assert.deepEqual(parseSimParams({ ...P, callUs: 2 }, 'c.json').callUs, 2);
  assert.throws(() => parseSimParams({ ...P, callUs: -1 }, 'c.json'), { code: 'NBC_ERR_ARG', message: /callUs is -1/ });
});

test('across nodes a call costs callNetUs where the parameters have it, on one node callUs', { timeout: 5_000 }, () => {
  // callNetUs 4: the send starts at 4, leaves at 5, arrives 5 + 1 + 5 = 11, received by 12.
  near(runProgram(programOf(ping(101)), { ...P, callUs: 2, callNetUs: 4 }).done, [5, 12], 'across nodes');
  // One node: callUs 2, then the shared-memory ping of the first test, 2 later: [2.6, 4.2].
  near(runProgram(programOf(ping(101), 2), { ...P, callUs: 2, callNetUs: 4 }).done, [2.6, 4.2], 'one node');
  assert.throws(() => parseSimParams({ ...P, callNetUs: -1 }, 'c.json'), { code: 'NBC_ERR_ARG', message: /callNetUs is -1/ });
});

test('a collective whose call costs more than the allreduce\'s (callUsByColl) pays the difference on every path', { timeout: 5_000 }, () => {
  const p = { ...P, callUs: 2, callUsByColl: { bcast: 3 } };
  // bcast: 2 + (3 - 2) = 3 before the send: it leaves at 4, arrives 4 + 1 + 5 = 10, received by 11.
  near(runProgram(programOf(ping(101), 1, 'bcast'), p).done, [4, 11], 'bcast, one per node');
  // Across nodes with callNetUs 4: 4 + 1 = 5.
  near(runProgram(programOf(ping(101), 1, 'bcast'), { ...p, callNetUs: 4 }).done, [6, 13], 'bcast, callNetUs');
  // A collective the map does not name costs callUs.
  near(runProgram(programOf(ping(101), 1, 'gather'), p).done, [3, 10], 'gather');
  assert.deepEqual(parseSimParams(p, 'c.json').callUsByColl, { bcast: 3 });
  assert.throws(() => parseSimParams({ ...P, callUsByColl: { scan: -1 } }, 'c.json'), { code: 'NBC_ERR_ARG', message: /callUsByColl.scan is -1/ });
  assert.throws(() => parseSimParams({ ...P, callUsByColl: [1] }, 'c.json'), { code: 'NBC_ERR_ARG', message: /callUsByColl is \[1\]; expected \{ collective: us/ });
});

test('a receiver overhead of its own (oRecv) replaces o on the receiving side', { timeout: 5_000 }, () => {
  // oRecv 3: the 101 B ping arrives at 7 as before and is taken in from 7 to 10.
  near(runProgram(programOf(ping(101)), { ...P, net: { ...P.net, oRecv: 3 } }).done, [1, 10], 'oRecv');
  assert.equal(modelOneWay({ ...P.net, oRecv: 3 }, 101), 1 + 3 + 5 + 100 * 0.01);
  assert.throws(() => parseSimParams({ ...P, net: { ...P.net, oRecv: -1 } }, 'c.json'), { code: 'NBC_ERR_ARG', message: /net.oRecv is -1/ });
});

/** Ranks 0..n-1 of node 0 each send `bytes` to their counterpart n..2n-1 on node 1, all at once. */
function pairsAcross(n: number, bytes: number): Schedule[] {
  const out: Schedule[] = [];
  for (let r = 0; r < n; r++) {
    const b = new ScheduleBuilder('pairs');
    b.send(r + n, { buf: SEND, offset: 0, bytes });
    out.push(b.build());
  }
  for (let r = 0; r < n; r++) {
    const b = new ScheduleBuilder('pairs');
    b.recv(r, { buf: RECV, offset: 0, bytes });
    out.push(b.build());
  }
  return out;
}

test('a node\'s NIC serialises its ranks\' messages at g, less the backlog its slack takes on (seed 004\'s C)', { timeout: 5_000 }, () => {
  const prog = programOf(pairsAcross(4, 1), 4);
  // Without slack: the four sends start at 0, 2, 4, 6 (the NIC's g = 2 each), leave after o = 1,
  // arrive L = 5 later (6, 8, 10, 12), and node 1's NIC takes them in 2 apart: done 7, 9, 11, 13.
  near(runProgram(prog, P).done, [1, 3, 5, 7, 7, 9, 11, 13], 'no slack');
  // Slack 3: a send starts once the backlog is down to 3 us: at 0, 0, 1 (backlog 4) and 3 (6);
  // they arrive at 6, 6, 7, 9, and node 1's NIC takes each once its own backlog is down to 3:
  // at 6, 6 (backlog 8), 7 (10) and 9 (12): done 7, 7, 8, 10.
  near(runProgram(prog, { ...P, net: { ...P.net, slack: 3 } }).done, [1, 1, 2, 4, 7, 7, 8, 10], 'slack 3');
  assert.throws(() => parseSimParams({ ...P, net: { ...P.net, slack: -1 } }, 'c.json'), { code: 'NBC_ERR_ARG', message: /net.slack is -1/ });
});

test('jitter: each flight is L plus a draw from the path\'s quantiles, seeded, never below 0, and a channel keeps its order', { timeout: 10_000 }, () => {
  // J constant 2: the ping arrives 2 later, at 9, and is received by 10; no seed, no jitter.
  const flat = { ...P, net: { ...P.net, J: [2, 2] } };
  near(runProgram(programOf(ping(101)), flat, { jitterSeed: 7 }).done, [1, 10], 'constant jitter');
  near(runProgram(programOf(ping(101)), flat).done, [1, 8], 'without a seed');
  // J -9 would take L below 0: the flight takes 0, arrives 1 + 1 (100 x G), received by 3.
  near(runProgram(programOf(ping(101)), { ...P, net: { ...P.net, J: [-9, -9] } }, { jitterSeed: 7 }).done, [1, 3], 'clamped at 0');
  // Between quantiles: 0..20 us, so the ping is received between 8 and 28, per seed the same.
  const wide = { ...P, net: { ...P.net, J: [0, 20] } };
  const seen = new Set<number>();
  for (let seed = 1; seed <= 20; seed++) {
    const t = runProgram(programOf(ping(101)), wide, { jitterSeed: seed }).done[1]!;
    assert.ok(t >= 8 && t <= 28, `seed ${seed}: ${t}`);
    assert.equal(runProgram(programOf(ping(101)), wide, { jitterSeed: seed }).done[1], t, `seed ${seed} again`);
    seen.add(t);
  }
  assert.ok(seen.size > 15, `the seed moves the draws: ${seen.size} distinct of 20`);
  // Two messages on one channel, 901 B then 1 B, received in that order into receives of those
  // sizes: a draw that let the second overtake the first would match it to the 901 B receive.
  const a = new ScheduleBuilder('two');
  a.send(1, { buf: SEND, offset: 0, bytes: 901 });
  a.send(1, { buf: SEND, offset: 0, bytes: 1 });
  const b = new ScheduleBuilder('two');
  b.recv(0, { buf: RECV, offset: 0, bytes: 901 });
  b.recv(0, { buf: RECV, offset: 0, bytes: 1 });
  const two = programOf([a.build(), b.build()]);
  for (let seed = 1; seed <= 50; seed++) assert.doesNotThrow(() => runProgram(two, wide, { jitterSeed: seed }), `seed ${seed}`);
  // nbcbench timing over draws of zero jitter is the timing without it; jitter: false ignores J.
  const spec = { coll: 'allreduce', ranks: 4, ppn: 2, executor: 'host', algorithm: 'recursive-doubling' } as const;
  const plain = simulate(spec, [8], P, { afterBarrier: true })[0]!.latencyUs;
  const zero = { ...P, net: { ...P.net, J: [0, 0] }, shm: { ...P.shm, J: [0, 0] } };
  assert.equal(simulate(spec, [8], zero, { afterBarrier: true })[0]!.latencyUs, plain);
  assert.equal(simulate(spec, [8], wide, { afterBarrier: true, jitter: false })[0]!.latencyUs, plain);
  assert.ok(simulate(spec, [8], wide, { afterBarrier: true })[0]!.latencyUs > plain, 'a positive jitter lengthens the call');
  assert.throws(() => parseSimParams({ ...P, net: { ...P.net, J: [3, 1] } }, 'c.json'), { code: 'NBC_ERR_ARG', message: /net.J is \[3,1\]; expected .*ascending/ });
});

test('with a measured barrier spread, ranks start that far apart and the median over exit orders is taken', { timeout: 5_000 }, () => {
  // 2 ranks, recursive doubling, 8 B, rank starts 10 us apart: the late rank's message leaves at
  // 10 + 0.008 (copy in) + 1 (o) and reaches the early one 5.07 later, which receives it (o),
  // reduces (0.016) and, if rank 0, copies back (0.008): 17.094-17.102 us after its own start.
  // The late rank finds the early one's message waiting: about 2 us. Either order: the same,
  // but for the loop's own skew (nbcbench's loop, above): rank 0 copies back last, 0.008 per
  // call, and the barrier lets the later rank out first, so by the measured call rank 0 waits
  // 0.016 more: 17.118 at most.
  const spec = { coll: 'allreduce', ranks: 2, ppn: 1, executor: 'host', algorithm: 'recursive-doubling' } as const;
  const us = simulate(spec, [8], { ...P, barrierSpreadUs: 10 }, { afterBarrier: true })[0]!.latencyUs;
  assert.ok(us >= 17.094 - 1e-9 && us <= 17.118 + 1e-9, `${us} us`);
  // Without afterBarrier the spread is not used: both start at 0.
  assert.ok(Math.abs(simulate(spec, [8], { ...P, barrierSpreadUs: 10 })[0]!.latencyUs - 7.102) < 1e-9);
  // Nor on one node whose ranks have a core each (they leave a barrier together): the same as without a spread.
  const oneNode = { ...spec, ppn: 2 };
  assert.equal(simulate(oneNode, [8], { ...P, barrierSpreadUs: 10 }, { afterBarrier: true })[0]!.latencyUs,
    simulate(oneNode, [8], P, { afterBarrier: true })[0]!.latencyUs);
  // On one crowded core they do not: the spread applies (the late rank's message now waits for it).
  const crowdedNode = { ...P, hostCores: 1 };
  assert.ok(simulate(oneNode, [8], { ...crowdedNode, barrierSpreadUs: 10 }, { afterBarrier: true })[0]!.latencyUs >
    simulate(oneNode, [8], crowdedNode, { afterBarrier: true })[0]!.latencyUs + 5);
  // A barrier moves no data: its row is at 0 bytes whatever the sizes, as nbc bench reports it.
  assert.equal(simulate({ coll: 'barrier', ranks: 2, ppn: 1, executor: 'host' }, [8], P)[0]!.bytes, 0);
});

test('a host crowded with ranks takes the calibrated crowd levels, interpolated, and says so', { timeout: 5_000 }, () => {
  const path = (L: number) => ({ L, o: L / 10, g: L / 10, G: 0, O: 0, S: 1000 });
  const crowded: SimParams = { ...P, net: path(5), shm: path(1), crowd: { cores: 2, levels: [{ ranks: 4, shm: path(10), net: path(50) }, { ranks: 16, shm: path(40), net: path(200) }] } };
  assert.deepEqual(parseSimParams(crowded, 'c.json'), crowded);
  assert.equal(crowdedParams(crowded, 2, 2, 1).params, crowded, 'ranks fit the cores: unchanged');
  // 3 ranks on 2 cores = 1.5 per core: halfway from the base (1 per core) to the 4-rank level (2).
  const mid = crowdedParams(crowded, 3, 2, 1);
  assert.equal(mid.params.net.L, 27.5);
  assert.equal(mid.params.shm.L, 5.5);
  assert.match(mid.note, /crowd levels 1 and 2 per core, interpolated/);
  // 10 ranks = 5 per core: halfway between the levels at 2 and 8 per core.
  assert.equal(crowdedParams(crowded, 10, 2, 1).params.net.L, 125);
  // Beyond the last level: the last level, said.
  const far = crowdedParams(crowded, 64, 2, 1);
  assert.equal(far.params.net.L, 200);
  assert.match(far.note, /last crowd level measured is 8/);
  // A 16-core host of the same crowd (same ranks per core) is priced the same.
  assert.equal(crowdedParams(crowded, 80, 16, 1).params.net.L, 125);
  // The barrier spread is interpolated alike (the base level has none).
  const spread: SimParams = { ...crowded, crowd: { cores: 2, levels: [{ ranks: 4, shm: path(10), net: path(50), barrierSpreadUs: 100 }] } };
  assert.equal(crowdedParams(spread, 3, 2, 1).params.barrierSpreadUs, 50);
  assert.equal(crowdedParams(spread, 8, 2, 1).params.barrierSpreadUs, 100);
  assert.equal(crowdedParams(spread, 2, 2, 1).params.barrierSpreadUs, undefined);
  // A one-node layout (ppn >= ranks) takes the levels' spread on one node, or none where they lack it.
  assert.equal(crowdedParams(spread, 8, 2, 8).params.barrierSpreadUs, undefined);
  const node: SimParams = { ...spread, barrierSpreadUs: 7, crowd: { cores: 2, levels: [{ ...spread.crowd!.levels[0]!, nodeBarrierSpreadUs: 30 }] } };
  assert.deepEqual(parseSimParams(node, 'c.json'), node);
  assert.equal(crowdedParams(node, 3, 2, 4).params.barrierSpreadUs, 15, 'the uncrowded one-node level has none');
  assert.equal(crowdedParams(node, 4, 2, 4).params.barrierSpreadUs, 30);
  assert.equal(crowdedParams(node, 4, 2, 2).params.barrierSpreadUs, 100);
  // Crowded, the ranks share the host's cores (hostCores); fitting them, they do not.
  assert.equal(mid.params.hostCores, 2);
  assert.equal(far.params.hostCores, 2);
  assert.equal(crowdedParams(crowded, 2, 2, 1).params.hostCores, undefined);
  // Parameters without levels (a preset) keep their paths, and the note says why.
  const none = crowdedParams(P, 8, 2, 1);
  assert.deepEqual(none.params, { ...P, hostCores: 2 });
  assert.match(none.note, /no crowd levels: the ranks share the cores, their messages are priced as on an idle host/);
  assert.throws(() => parseSimParams({ ...crowded, crowd: { cores: 2, levels: [{ ranks: 2, shm: path(1), net: path(1) }] } }, 'c.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from c.json: crowd.levels[0].ranks is 2; expected an integer above crowd.cores (2)',
  });
  assert.throws(() => parseSimParams({ ...crowded, crowd: { cores: 2, levels: [{ ranks: 4, shm: path(1) }] } }, 'c.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from c.json: crowd.levels[0].net is missing; expected { L, o, g, G, O, S }',
  });
});

test('a binomial bcast over two nodes of two ranks uses the network once and shared memory inside nodes', { timeout: 5_000 }, () => {
  const prog = buildProgram({ coll: 'bcast', ranks: 4, ppn: 2, bytes: 8, executor: 'host', algorithm: 'binomial' }, P);
  // Rank 0 sends to 2 (net: leaves 1, arrives 6.07) then to 1 (shm: starts at 1, leaves 1.5,
  // arrives 2.507, received 3.014); rank 2 receives at 7.07 and forwards to 3 over shm
  // (leaves 7.57, done 7.577; arrives 8.577, received 9.084).
  near(runProgram(prog, P).done, [1.507, 3.014, 7.577, 9.084], 'binomial bcast');
});

test('the agg executor folds on the engine, reduces in the fabric and writes back, priced by hand', { timeout: 5_000 }, () => {
  const prog = buildProgram({ coll: 'allreduce', ranks: 2, ppn: 1, bytes: 8, executor: 'agg' }, P);
  assert.equal(prog.mode, 'agg');
  // post 0.3, the engine sees it at 1.3, folds (a copy of 8 B) by 1.308; the fragment leaves at
  // 2.308 and reaches the AN at 2.878; both there: reduced by 3.658; down at 4.228; the engine
  // takes it by 5.228, writes back by 5.236, and the rank sees it L(shm) later.
  near(runProgram(prog, P).done, [6.236, 6.236], 'agg');
});

test('the simulator picks what the library picks: same selection, same algorithm names', { timeout: 5_000 }, () => {
  for (const bytes of [8, 1 << 20]) {
    const c = select('allreduce', { size: 16, bytes, commutative: true, executor: 'host', nodes: 1, ppn: 16, uniform: true }, undefined, DEFAULT_CONFIG);
    assert.equal(buildProgram({ coll: 'allreduce', ranks: 16, ppn: 16, bytes, executor: 'host' }, P).algorithm, c.name);
  }
  assert.equal(buildProgram({ coll: 'allreduce', ranks: 16, ppn: 4, bytes: 8, executor: 'offload', algorithm: 'two-level' }, P).mode, 'two-level');
  assert.throws(() => buildProgram({ coll: 'allreduce', ranks: 4, ppn: 1, bytes: 8, executor: 'host', algorithm: 'two-level' }, P), { code: 'NBC_ERR_ARG' });
  assert.throws(() => parseSimOp('allreducex'), { code: 'NBC_ERR_ARG', message: /^Cannot simulate 'allreducex': expected one of/ });
  assert.deepEqual(parseSimOp('iallreduce'), { coll: 'allreduce', nonblocking: true });
  // a small non-blocking allreduce on the host executor takes direct, as in the library
  const nb = select('allreduce', { size: 4, bytes: 8, commutative: true, executor: 'host', nodes: 1, ppn: 4, uniform: true, nonblocking: true }, undefined, DEFAULT_CONFIG);
  assert.equal(nb.name, 'direct');
  assert.equal(buildProgram({ coll: 'allreduce', ranks: 4, ppn: 4, bytes: 8, executor: 'host', nonblocking: true }, P).algorithm, 'direct');
  assert.equal(buildProgram({ coll: 'allreduce', ranks: 4, ppn: 4, bytes: 8, executor: 'offload', nonblocking: true }, P).algorithm, 'recursive-doubling', 'the engine progresses offloaded rounds itself');
  assert.equal(buildProgram({ coll: 'allreduce', ranks: 4, ppn: 4, bytes: 8, executor: 'host' }, P).algorithm, 'recursive-doubling', 'blocking');
});

test('allreduce takes Rabenseifner from 16 KiB on 8+ ranks with a core each, the simulator\'s crossover at scale, and not on a crowded host; k-nomial on one node from 16 KiB', { timeout: 5_000 }, () => {
  const at = (size: number, bytes: number, oversubscribed: boolean, commutative = true): string =>
    select('allreduce', { size, bytes, commutative, executor: 'host', nodes: size, ppn: 1, uniform: true }, undefined, { ...DEFAULT_CONFIG, oversubscribed }).name;
  assert.equal(at(8, 16 << 10, false), 'rabenseifner');
  assert.equal(at(1024, 64 << 10, false), 'rabenseifner');
  assert.equal(at(8, 8 << 10, false), 'recursive-doubling', 'below 16 KiB');
  assert.equal(at(4, 64 << 10, false), 'recursive-doubling', 'fewer than 8 ranks');
  assert.equal(at(8, 64 << 10, true), 'recursive-doubling', 'oversubscribed');
  assert.equal(at(8, 64 << 10, false, false), 'recursive-doubling', 'non-commutative');
  // One node, from 16 KiB until the rabenseifner rule at 128 KiB: k-nomial (bench/results/switch),
  // unless the 8+-ranks rule above takes it first; across nodes recursive doubling stays.
  const oneNode = (size: number, bytes: number, oversubscribed: boolean, commutative = true): string =>
    select('allreduce', { size, bytes, commutative, executor: 'host', nodes: 1, ppn: size, uniform: true }, undefined, { ...DEFAULT_CONFIG, oversubscribed }).name;
  assert.equal(oneNode(2, 16 << 10, false), 'knomial');
  assert.equal(oneNode(4, 64 << 10, true), 'knomial', 'crowded');
  assert.equal(oneNode(2, 64 << 10, false, false), 'knomial', 'any op');
  assert.equal(oneNode(2, 8 << 10, false), 'recursive-doubling', 'below 16 KiB');
  assert.equal(oneNode(2, 128 << 10, false), 'rabenseifner', 'from 128 KiB');
  assert.equal(oneNode(8, 16 << 10, false), 'rabenseifner', '8 ranks with a core each');
  assert.equal(at(2, 16 << 10, false), 'recursive-doubling', 'two nodes');
  // allgather: Bruck for small blocks from 3 ranks; 2 ranks and large blocks take the ring.
  const allgather = (size: number, bytes: number): string =>
    select('allgather', { size, bytes, commutative: true, executor: 'host', nodes: 1, ppn: size, uniform: true }, undefined, DEFAULT_CONFIG).name;
  assert.equal(allgather(2, 1024), 'ring');
  assert.equal(allgather(4, 1024), 'bruck');
  assert.equal(allgather(8, 64 << 10), 'ring');
  // The simulator, with a core per rank, agrees where the rule applies.
  const lat = (algorithm: string): number => simulate({ coll: 'allreduce', ranks: 64, ppn: 1, executor: 'host', algorithm }, [64 << 10], DEFAULT_SIM_PARAMS)[0]!.latencyUs;
  assert.ok(lat('rabenseifner') < lat('recursive-doubling'), `64 ranks, 64 KiB: rabenseifner ${lat('rabenseifner')} us, recursive doubling ${lat('recursive-doubling')} us`);
});

test('every collective and executor simulates to completion on 12 ranks over 3 nodes', { timeout: 20_000 }, () => {
  for (const coll of ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall', 'reduceScatterBlock', 'scan', 'exscan', 'gatherv', 'allgatherv', 'alltoallv'] as const) {
    for (const executor of ['host', 'offload', 'agg'] as const) {
      for (const bytes of [8, 4096]) {
        const rows = simulate({ coll, ranks: 12, ppn: 4, executor }, [bytes], PRESETS.switchib2!);
        assert.ok(rows[0]!.latencyUs > 0 && Number.isFinite(rows[0]!.latencyUs), `${coll} on ${executor} at ${bytes} B: ${rows[0]!.latencyUs}`);
      }
    }
  }
  for (const algorithm of ['two-level']) {
    for (const coll of ['barrier', 'bcast', 'reduce', 'allreduce', 'allgather', 'alltoall'] as const) {
      const rows = simulate({ coll, ranks: 12, ppn: 4, executor: 'offload', algorithm }, [64], PRESETS['qdr-cx2']!);
      assert.ok(rows[0]!.latencyUs > 0, `${coll} two-level`);
    }
  }
});

test('a run is deterministic for a seed, also with noise, and the seed moves the noise', { timeout: 10_000 }, () => {
  const spec = { coll: 'allreduce', ranks: 64, ppn: 8, executor: 'host' } as const;
  const noise = { durationUs: 50, periodUs: 100 };
  const a = simulate(spec, [8, 65536], PRESETS['qdr-cx2']!, { noise, seed: 7, compute: true });
  const b = simulate(spec, [8, 65536], PRESETS['qdr-cx2']!, { noise, seed: 7, compute: true });
  const strip = (rows: typeof a) => rows.map(({ wallSeconds: _w, ...r }) => r);
  assert.deepEqual(strip(a), strip(b));
  const c = simulate(spec, [8, 65536], PRESETS['qdr-cx2']!, { noise, seed: 8, compute: true });
  assert.notDeepEqual(strip(a), strip(c));
  const quiet = simulate(spec, [8], PRESETS['qdr-cx2']!);
  assert.ok(a[0]!.latencyUs > quiet[0]!.latencyUs, 'noise slows the call down');
});

test('non-blocking overlap follows nbcbench: the offload engine hides the call, the host executor without test() does not', { timeout: 10_000 }, () => {
  const offload = simulate({ coll: 'allreduce', ranks: 64, ppn: 8, executor: 'offload', algorithm: 'two-level' }, [4096], PRESETS['qdr-cx2']!, { compute: true });
  const host = simulate({ coll: 'allreduce', ranks: 64, ppn: 8, executor: 'host', algorithm: 'recursive-doubling' }, [4096], PRESETS['qdr-cx2']!, { compute: true });
  assert.ok(offload[0]!.overlapPct! > 90, `offload overlap ${offload[0]!.overlapPct}`);
  assert.ok(host[0]!.overlapPct! < 50, `host overlap ${host[0]!.overlapPct}`);
});

test('GOAL export writes every rank\'s schedule with the interpreter\'s dependencies', { timeout: 5_000 }, () => {
  const prog = buildProgram({ coll: 'allreduce', ranks: 2, ppn: 1, bytes: 8, executor: 'host', algorithm: 'recursive-doubling' }, P);
  assert.equal(toGoal(prog, P), [
    'num_ranks 2',
    '',
    'rank 0 {',
    'l0: calc 8',
    'l1: send 8b to 1 tag 0',
    'l2: recv 8b from 1 tag 0',
    'l3: calc 16',
    'l4: calc 8',
    'l1 requires l0',
    'l2 requires l0',
    'l3 requires l1',
    'l3 requires l2',
    'l4 requires l1',
    'l4 requires l2',
    '}',
    '',
    'rank 1 {',
    'l0: calc 8',
    'l1: send 8b to 0 tag 0',
    'l2: recv 8b from 0 tag 0',
    'l3: calc 16',
    'l1 requires l0',
    'l2 requires l0',
    'l3 requires l1',
    'l3 requires l2',
    '}',
    '',
  ].join('\n'));
  assert.throws(() => toGoal(buildProgram({ coll: 'allreduce', ranks: 4, ppn: 1, bytes: 8, executor: 'agg' }, P), P), { code: 'NBC_ERR_ARG', message: /^Cannot export allreduce\/agg as GOAL/ });
});

test('a path\'s size-dependent part (X) is paid half by the sender before the message leaves, half by the receiver', { timeout: 5_000 }, () => {
  const shm = (us: number[]): SimParams => ({ ...P, shm: { ...P.shm, X: { bytes: [1, 1001], us } } });
  // X(501) = 1, halfway between 0 and 2: the sender leaves at o + 0.5 = 1, is busy 0.5 more
  // (O); the message arrives 1 + 0.5 (G) + 1 (L) = 2.5, taken in 0.5 + 0.5 + 0.5 = 1.5 later.
  near(runProgram(programOf(ping(501), 2), shm([0, 2])).done, [1.5, 4], 'interpolated');
  // Outside the sizes the nearest end holds: X(1) = 0 is the plain LogGOPS ping; below sizes
  // 1001 and 2001 a 101 B message pays X(1001) = 2 (leaves at 0.5 + 1 + 0.1 busy; arrives
  // 1.5 + 0.1 + 1 = 2.6, taken in 0.5 + 0.1 + 1 = 1.6 later).
  near(runProgram(programOf(ping(1), 2), shm([0, 2])).done, Array.from(runProgram(programOf(ping(1), 2), P).done), 'X(1) = 0');
  near(runProgram(programOf(ping(101), 2), { ...P, shm: { ...P.shm, X: { bytes: [1001, 2001], us: [2, 4] } } }).done, [1.6, 4.2], 'below the first size');
  // A negative part takes from the overheads, never below zero: half of -2 leaves o 0.5 at 0
  // and the receiver's 0.5 + 0.1 at 0: sent at 0, busy 0.1 (O), arrives 0.1 + 1, taken at once.
  near(runProgram(programOf(ping(101), 2), shm([-2, -2])).done, [0.1, 1.1], 'negative');
  assert.equal(modelOneWay({ ...P.shm, X: { bytes: [1, 1001], us: [0, 2] } }, 501), 2 * 0.5 + 1 + 500 * 0.002 + 1);
  assert.throws(() => parseSimParams(shm([0]), 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.X is .*expected \{ bytes, us \}/ });
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, X: { bytes: [64, 1], us: [0, 1] } } }, 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.X/ });
  assert.deepEqual(parseSimParams(shm([0, 2]), 'x.json').shm.X, { bytes: [1, 1001], us: [0, 2] });
});

test('the LogGP fit keeps, per calibrated size, what the ping-pongs took beyond its line (X)', { timeout: 5_000 }, () => {
  // Shared memory as measured on the reference VM: the first KiB costs more than the next 15.
  const pingPong = [[1, 0.65], [64, 1.07], [1024, 1.41], [4096, 2.34], [16384, 3.05], [65536, 5.8]].map(([bytes, us]) => ({ bytes: bytes!, us: us! }));
  const m = fitLogGOPS({ rounds: 10, pingPong, trains: [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 0.25 * k, totalUs: 1 + 0.4 * k })) }, true, 8192);
  assert.deepEqual(m.X!.bytes, pingPong.map((p) => p.bytes));
  for (const p of pingPong) assert.ok(Math.abs(modelOneWay(m, p.bytes) - p.us) < 1e-9, `${p.bytes} B: ${modelOneWay(m, p.bytes)} against ${p.us} measured`);
  const { X: _, ...line } = m;
  assert.ok(modelOneWay(line, 1024) < 0.8 * 1.41, 'the line alone is far below the measured KiB');
});

test('on shared memory a send of what the call did not write pays the cached per-byte costs, one of what it wrote the fresh ones', { timeout: 5_000 }, () => {
  const cached: SimParams = { ...P, shm: { ...P.shm, cached: { G: 0, O: 0 } } };
  // The caller's input, untouched: o 0.5, nothing per byte (leaves 0.5), arrives 0.5 + 1,
  // taken in 0.5 later; the fresh price of the same ping is [0.6, 2.2] (the LogGP ping above).
  near(runProgram(programOf(ping(101), 2), cached).done, [0.5, 2], 'cached input');
  near(runProgram(programOf(ping(101), 2), { ...P, shm: { ...P.shm, cached: { G: 0, O: 0, X: { bytes: [1, 1001], us: [1, 1] } } } }).done, [1, 3], 'cached X');
  near(runProgram(programOf(ping(101)), cached).done, [1, 8], 'the network has no cached price');
  // Copied into RECV first, then sent from there: written by the call, so fresh (the copy
  // costs 101 x 0.001 first: [0.701, 2.301]).
  const a = new ScheduleBuilder('copy-then-send');
  a.copy({ buf: SEND, offset: 0, bytes: 101 }, { buf: RECV, offset: 0 });
  a.round();
  a.send(1, { buf: RECV, offset: 0, bytes: 101 });
  const prog = programOf([a.build(), ping(101)[1]!], 2);
  assert.deepEqual(Array.from(prog.cached), [0, 0, 0]);
  near(runProgram(prog, cached).done, [0.701, 2.301], 'written by the call');
  // The library's schedules: a binomial bcast's root sends the caller's buffer, rank 2
  // forwards what it received; recursive doubling sends what it copied and reduced; alltoall
  // sends the caller's blocks; `inputs: 'fresh'` marks nothing.
  const sends = (spec: CallSpec, rank: number): number[] => {
    const pr = buildProgram(spec, P);
    const out: number[] = [];
    for (let i = pr.procAct[rank]!; i < pr.procAct[rank + 1]!; i++) if (pr.kind[i] === 1) out.push(pr.cached[i]!);
    return out;
  };
  const bcast: CallSpec = { coll: 'bcast', ranks: 4, ppn: 4, bytes: 64, executor: 'host', algorithm: 'binomial' };
  assert.deepEqual(sends(bcast, 0), [1, 1]);
  assert.deepEqual(sends(bcast, 2), [0]);
  assert.deepEqual(sends({ ...bcast, inputs: 'fresh' }, 0), [0, 0]);
  assert.deepEqual(sends({ coll: 'allreduce', ranks: 4, ppn: 4, bytes: 64, executor: 'host', algorithm: 'recursive-doubling' }, 1), [0, 0]);
  assert.deepEqual(sends({ coll: 'alltoall', ranks: 4, ppn: 4, bytes: 64, executor: 'host', algorithm: 'pairwise' }, 3), [1, 1, 1]);
  // Validated like the path itself.
  assert.deepEqual(parseSimParams(cached, 'x.json').shm.cached, { G: 0, O: 0 });
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, cached: { G: -1, O: 0 } } }, 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.cached.G is -1/ });
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, cached: { G: 0, O: 0, X: { bytes: [2, 1], us: [0, 0] } } } }, 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.cached.X/ });
});

test('a write into memory the rank lent to a peer of its node pays the lent price: a fold foldUsPerByte, a copy or receive copyUsPerByte', { timeout: 5_000 }, () => {
  const lent: SimParams = { ...P, shm: { ...P.shm, lent: { above: 1000, foldUsPerByte: 0.01, copyUsPerByte: 0.004 } } };
  // Rank 0 sends RECV[0:2000] (rendezvous, lent), then writes it: a fold, or a copy.
  const sendThen = (write: 'fold' | 'copy', bytes = 2000): Schedule[] => {
    const a = new ScheduleBuilder('lend');
    a.send(1, { buf: RECV, offset: 0, bytes });
    a.round();
    if (write === 'fold') a.reduce(0, 8, { buf: SEND, offset: 0, bytes }, { buf: RECV, offset: 0 });
    else a.copy({ buf: SEND, offset: 0, bytes }, { buf: RECV, offset: 0 });
    const b = new ScheduleBuilder('lend');
    b.recv(0, { buf: RECV, offset: 0, bytes });
    return [a.build(), b.build()];
  };
  const fold = programOf(sendThen('fold'), 2, 'allreduce', 1000);
  assert.deepEqual(Array.from(fold.lentBytes), [0, 2000, 0]);
  // Request leaves at 0.5, arrives 1.5; clear-to-send 2.0, back at 3.0; the data leaves at 3.5
  // and the send completes at 3.5 + 1999 x O = 5.499; the fold: 2000 x (0.002 + 0.01) = 24.
  near(runProgram(fold, lent).done, [29.499, 8.998], 'fold into lent memory');
  near(runProgram(fold, P).done, [9.499, 8.998], 'without a lent price');
  assert.match(toGoal(fold, lent), /l1: calc 24000\n/, 'GOAL: the fold with its lent price, ns');
  near(runProgram(programOf(sendThen('copy'), 2, 'allreduce', 1000), lent).done, [5.499 + 2000 * 0.005, 8.998], 'copy into lent memory');
  // Nothing lent: across nodes, at or below `above` (eager), or without lending at all.
  assert.deepEqual(Array.from(programOf(sendThen('fold'), 1, 'allreduce', 1000).lentBytes), [0, 0, 0]);
  assert.deepEqual(Array.from(programOf(sendThen('fold', 1000), 2, 'allreduce', 1000).lentBytes), [0, 0, 0]);
  assert.deepEqual(Array.from(programOf(sendThen('fold'), 2).lentBytes), [0, 0, 0]);
  // A region pays once (the write takes it back); a benchmark loop's next call pays for what
  // the last one lent and left: recursive doubling copies TMP into RECV, which it lent, and the
  // next call's first copy into RECV finds it taken back.
  const twice = new ScheduleBuilder('twice');
  twice.send(1, { buf: RECV, offset: 0, bytes: 2000 });
  twice.round();
  twice.copy({ buf: SEND, offset: 0, bytes: 1500 }, { buf: RECV, offset: 500 });
  twice.round();
  twice.copy({ buf: SEND, offset: 0, bytes: 2000 }, { buf: RECV, offset: 0 });
  assert.deepEqual(Array.from(programOf([twice.build(), sendThen('fold')[1]!], 2, 'allreduce', 1000).lentBytes), [0, 1500, 500, 0]);
  const rd = (ppn: number, executor: 'host' | 'offload' = 'host'): number[] => {
    const pr = buildProgram({ coll: 'allreduce', ranks: 2, ppn, bytes: 16384, executor, algorithm: 'recursive-doubling' }, lent);
    return Array.from(pr.lentBytes.subarray(pr.procAct[0]!, pr.procAct[1]!));
  };
  // copy SEND -> RECV, send RECV, recv TMP, reduce RECV into TMP, copy TMP -> RECV.
  assert.deepEqual(rd(2), [0, 0, 0, 0, 16384]);
  assert.deepEqual(rd(1), [0, 0, 0, 0, 0], 'across nodes');
  assert.deepEqual(rd(2, 'offload'), [0, 0, 0, 0, 0], 'one engine runs both ranks\' schedules');
  // The fit: the slope through the origin of the extra cost over sizes, never below 0.
  const w = [16384, 65536].map((bytes) => ({ bytes, foldLentUs: 3 + bytes * 1e-4, foldUs: 3, copyLentUs: 1, copyUs: 1.5 }));
  const fitted = lentOf({ rounds: 10, pingPong: [], trains: [], lentWrite: w }, 8192).lent!;
  assert.equal(fitted.above, 8192);
  assert.ok(Math.abs(fitted.foldUsPerByte - 1e-4) < 1e-12, `fold ${fitted.foldUsPerByte}`);
  assert.equal(fitted.copyUsPerByte, 0);
  assert.deepEqual(lentOf({ rounds: 10, pingPong: [], trains: [] }, 8192), {});
  // Validated and interpolated like the rest of the path.
  assert.deepEqual(parseSimParams(lent, 'x.json').shm.lent, lent.shm.lent);
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, lent: { above: 1000, foldUsPerByte: -1, copyUsPerByte: 0 } } }, 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.lent.foldUsPerByte is -1/ });
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, lent: 3 } }, 'x.json'), { code: 'NBC_ERR_ARG', message: /shm.lent is 3; expected \{ above, foldUsPerByte, copyUsPerByte \}/ });
  const level = (ranks: number, f: number): { ranks: number; shm: SimParams['shm']; net: SimParams['net'] } => ({ ranks, shm: { ...P.shm, lent: { above: 1000, foldUsPerByte: f, copyUsPerByte: 0 } }, net: P.net });
  const crowded = crowdedParams({ ...lent, crowd: { cores: 2, levels: [level(4, 0.002), level(8, 0.004)] } }, 6, 2, 1);
  assert.ok(Math.abs(crowded.params.shm.lent!.foldUsPerByte - 0.003) < 1e-12, `fold ${crowded.params.shm.lent!.foldUsPerByte}`);
});

test('the LogGP fit prices unchanged payloads from their own ping-pongs, at every calibrated size', { timeout: 5_000 }, () => {
  const fresh = [[1, 0.65], [64, 1.07], [1024, 1.41], [4096, 2.34], [16384, 3.05], [65536, 5.8]].map(([bytes, us]) => ({ bytes: bytes!, us: us! }));
  const kept = fresh.map((p) => ({ bytes: p.bytes, us: p.bytes >= 16384 ? p.us / 2 : p.us }));
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 0.25 * k, totalUs: 1 + 0.4 * k }));
  const m = fitLogGOPS({ rounds: 10, pingPong: fresh, pingPongCached: kept, trains }, true, 8192);
  const { X: _, cached: __, ...line } = m;
  const asCached = { ...line, G: m.cached!.G, O: m.cached!.O, X: m.cached!.X! };
  for (const p of kept) assert.ok(Math.abs(modelOneWay(asCached, p.bytes) - p.us) < 1e-9, `${p.bytes} B cached: ${modelOneWay(asCached, p.bytes)} against ${p.us}`);
  for (const p of fresh) assert.ok(Math.abs(modelOneWay(m, p.bytes) - p.us) < 1e-9, `${p.bytes} B fresh`);
  assert.equal(fitLogGOPS({ rounds: 10, pingPong: fresh, pingPongCached: kept, trains }, false, 8192).cached, undefined, 'not on the network');
  // A crowd level between two calibrated levels interpolates the cached costs like the rest.
  const level = (ranks: number, G: number): { ranks: number; shm: SimParams['shm']; net: SimParams['net'] } => ({ ranks, shm: { ...P.shm, cached: { G, O: 0 } }, net: P.net });
  const crowded = crowdedParams({ ...P, shm: { ...P.shm, cached: { G: 0, O: 0 } }, crowd: { cores: 2, levels: [level(4, 0.002), level(8, 0.004)] } }, 6, 2, 1);
  assert.ok(Math.abs(crowded.params.shm.cached!.G - 0.003) < 1e-12, `G ${crowded.params.shm.cached!.G}`);
});

test('a shared host\'s cores and a path\'s wake-up are validated', { timeout: 5_000 }, () => {
  assert.deepEqual(parseSimParams({ ...P, hostCores: 2, net: { ...P.net, W: 4 } }, 'p.json'), { ...P, hostCores: 2, net: { ...P.net, W: 4 } });
  assert.throws(() => parseSimParams({ ...P, hostCores: 1.5 }, 'p.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from p.json: hostCores is 1.5; expected an integer >= 1',
  });
  assert.throws(() => parseSimParams({ ...P, shm: { ...P.shm, W: -1 } }, 'p.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from p.json: shm.W is -1; expected a finite number >= 0',
  });
});

test('parameters are validated field by field, and every preset is valid', { timeout: 5_000 }, () => {
  for (const [name, p] of Object.entries(PRESETS)) assert.deepEqual(parseSimParams(p, name), p);
  assert.deepEqual(parseSimParams(DEFAULT_SIM_PARAMS, 'defaults'), DEFAULT_SIM_PARAMS);
  assert.throws(() => parseSimParams({ ...P, net: { ...P.net, L: -1 } }, 'x.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from x.json: net.L is -1; expected a finite number >= 0',
  });
});

// Its speed is a benchmark's (BENCHMARKS.md, "The simulator": events per second at 10^5 ranks).
test('4096 ranks of recursive doubling: every exchange is an event, and the latency is 12 rounds of LogGP', { timeout: 60_000 }, () => {
  const rows = simulate({ coll: 'allreduce', ranks: 4096, ppn: 1, executor: 'host', algorithm: 'recursive-doubling' }, [8], DEFAULT_SIM_PARAMS);
  const row = rows[0]!;
  // 12 exchanges: 12 x (send done, arrival, receive done, reduce) per rank, plus the copies.
  assert.ok(row.events > 4096 * 12 * 4, `${row.events} events`);
  // 12 rounds of 2o + L (+ tiny per-byte and kernel costs) on the defaults' network.
  const round = 2 * DEFAULT_SIM_PARAMS.net.o + DEFAULT_SIM_PARAMS.net.L;
  assert.ok(row.latencyUs > 12 * round && row.latencyUs < 12 * round * 1.5, `${row.latencyUs} us`);
});

/**
 * Simulated results pinned bit for bit: latency, events, and a fingerprint of every rank's
 * completion (and, with compute, initiation and compute-end) times, computed by the engine
 * before its hot path was rewritten for speed (issue #15). A change to the engine that is
 * meant to be a pure optimisation must leave every number here as it is; a change to the
 * model must update them, and say why.
 */
const PINNED: { name: string; spec: CallSpec; params: string; noise?: SimNoise; seed?: number; compute?: boolean; latencyUs: number; events: number; fingerprint: string }[] = [
  { name: 'allreduce recursive-doubling, 1000 ranks, 8 B', spec: { coll: 'allreduce', ranks: 1000, ppn: 1, bytes: 8, executor: 'host', algorithm: 'recursive-doubling' }, params: 'default',
    latencyUs: 132.08570000000003, events: 26152, fingerprint: '3ea8ff25' },
  { name: 'allreduce recursive-doubling, 96 ranks x 8 per node, 64 KiB (rendezvous), noise', spec: { coll: 'allreduce', ranks: 96, ppn: 8, bytes: 65536, executor: 'host', algorithm: 'recursive-doubling' }, params: 'qdr-cx2', noise: { durationUs: 50, periodUs: 100 }, seed: 7,
    latencyUs: 1295.425215806797, events: 3040, fingerprint: 'b8b33283' },
  { name: 'allreduce ring, 48 ranks x 8, 4 KiB', spec: { coll: 'allreduce', ranks: 48, ppn: 8, bytes: 4096, executor: 'host', algorithm: 'ring' }, params: 'switchib2',
    latencyUs: 28.50187000000002, events: 15888, fingerprint: '61a1c385' },
  { name: 'allreduce rabenseifner, 40 ranks x 4, 64 KiB', spec: { coll: 'allreduce', ranks: 40, ppn: 4, bytes: 65536, executor: 'host', algorithm: 'rabenseifner' }, params: 'default',
    latencyUs: 448.9145912280705, events: 1544, fingerprint: 'f18f21a5' },
  { name: 'iallreduce auto with compute, 64 ranks x 8', spec: { coll: 'allreduce', ranks: 64, ppn: 8, bytes: 1024, executor: 'host' }, params: 'qdr-cx2', compute: true,
    latencyUs: 11.537599999999996, events: 1160, fingerprint: '30680585' },
  { name: 'bcast binomial, 100 ranks x 4, 16 KiB', spec: { coll: 'bcast', ranks: 100, ppn: 4, bytes: 16384, executor: 'host', algorithm: 'binomial' }, params: 'clovertown-ddr',
    // 150.03 us (fingerprint 915c7691) before clovertown-ddr's HCA overlapped 10 us of start-ups (LogGOPS.slack, seed 004 Sec. 5's C).
    latencyUs: 142.43752499999997, events: 595, fingerprint: '21f45095' },
  { name: 'alltoall auto, 32 ranks x 4, 1 KiB', spec: { coll: 'alltoall', ranks: 32, ppn: 4, bytes: 1024, executor: 'host' }, params: 'default',
    latencyUs: 230.91078596491076, events: 2688, fingerprint: 'c73a29e5' },
  { name: 'allgather ring, 24 ranks x 6, 512 B', spec: { coll: 'allgather', ranks: 24, ppn: 6, bytes: 512, executor: 'host', algorithm: 'ring' }, params: 'default',
    latencyUs: 63.314147368421146, events: 1704, fingerprint: 'c15f7135' },
  { name: 'gatherv, 30 ranks x 3, 256 B, noise', spec: { coll: 'gatherv', ranks: 30, ppn: 3, bytes: 256, executor: 'host' }, params: 'default', noise: { durationUs: 20, periodUs: 1000 }, seed: 3,
    latencyUs: 67.44249999999997, events: 118, fingerprint: 'c666bd04' },
  { name: 'reduceScatter ring, 16 ranks x 4, 8 KiB', spec: { coll: 'reduceScatter', ranks: 16, ppn: 4, bytes: 8192, executor: 'host', algorithm: 'ring' }, params: 'default',
    latencyUs: 149.79243508771927, events: 1008, fingerprint: '4c26ad25' },
  { name: 'scan, 50 ranks x 5, 64 B', spec: { coll: 'scan', ranks: 50, ppn: 5, bytes: 64, executor: 'host' }, params: 'switchib2',
    // 6.70 us and 1480 events before the scan's partials travelled only to partners that use them.
    latencyUs: 6.179475000000003, events: 1236, fingerprint: 'a87eb251' },
  { name: 'allreduce hier, 64 ranks x 8, 8 B', spec: { coll: 'allreduce', ranks: 64, ppn: 8, bytes: 8, executor: 'hier' }, params: 'clovertown-ddr',
    latencyUs: 12.096634999999996, events: 580, fingerprint: '94859d8d' },
  { name: 'iallreduce offload two-level with compute, 64 ranks x 8, 4 KiB', spec: { coll: 'allreduce', ranks: 64, ppn: 8, bytes: 4096, executor: 'offload', algorithm: 'two-level' }, params: 'qdr-cx2', compute: true,
    // 28.42 us before qdr-cx2 priced the engine's loop-back per reduction (offloadReduceUs, seed 000 Fig. 8a).
    latencyUs: 38.76960000000001, events: 248, fingerprint: '373877f5' },
  { name: 'allreduce offload flat, 32 ranks x 4, 8 B', spec: { coll: 'allreduce', ranks: 32, ppn: 4, bytes: 8, executor: 'offload' }, params: 'qdr-cx2',
    // 6.63 us before the loop-back, as above.
    latencyUs: 27.33166666666666, events: 324, fingerprint: 'fe1df099' },
  { name: 'allreduce agg, 128 ranks, 4 KiB', spec: { coll: 'allreduce', ranks: 128, ppn: 1, bytes: 4096, executor: 'agg' }, params: 'switchib2',
    latencyUs: 16.5412, events: 4352, fingerprint: '5599f8c5' },
  { name: 'alltoall offload two-level, 24 ranks x 4, 256 B', spec: { coll: 'alltoall', ranks: 24, ppn: 4, bytes: 256, executor: 'offload', algorithm: 'two-level' }, params: 'default',
    latencyUs: 41.4456, events: 96, fingerprint: '8d8709c5' },
];

/** FNV-1a over the arrays' bytes: any bit of any rank's time changes it. */
function fingerprint(...arrays: Float64Array[]): string {
  let h = 0x811c9dc5;
  for (const a of arrays) {
    const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

test('simulated latencies, event counts and every rank\'s times stay bit-identical to the pinned ones', { timeout: 30_000 }, () => {
  for (const p of PINNED) {
    const params = p.params === 'default' ? DEFAULT_SIM_PARAMS : PRESETS[p.params]!;
    const prog = buildProgram(p.spec, params);
    const pure = runProgram(prog, params, { noise: p.noise ?? null, seed: p.seed });
    const c = p.compute === true ? runProgram(prog, params, { noise: p.noise ?? null, seed: p.seed, computeUs: pure.latencyUs }) : pure;
    assert.equal(pure.latencyUs, p.latencyUs, `${p.name}: latency`);
    assert.equal(pure.events + (c === pure ? 0 : c.events), p.events, `${p.name}: events`);
    assert.equal(fingerprint(pure.done, c.done, c.initEnd, c.computeEnd), p.fingerprint, `${p.name}: per-rank times`);
  }
});

test('the event queue pops by time, and events with equal times in the order they were pushed', { timeout: 10_000 }, () => {
  // Against a reference: a (time, push number) order over the same pushes, with heavy ties
  // (times drawn from a few values), pushes at the current time while a bucket drains, and
  // enough distinct times to grow the heap and the time table.
  let seed = 12345;
  const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) | 0) >>> 0) / 4294967296;
  const q = new EventQueue();
  const pending: { t: number; seq: number }[] = [];
  let seq = 0;
  let now = 0;
  const push = (t: number): void => {
    q.push(t, seq % 8, seq, 2 * seq + 1);
    pending.push({ t, seq: seq++ });
  };
  for (let i = 0; i < 2000; i++) push(Math.floor(rand() * 5));
  let popped = 0;
  while (q.pop()) {
    let best = 0;
    for (let j = 1; j < pending.length; j++) {
      const a = pending[j]!;
      const b = pending[best]!;
      if (a.t < b.t || (a.t === b.t && a.seq < b.seq)) best = j;
    }
    const want = pending.splice(best, 1)[0]!;
    assert.equal(q.t, want.t);
    assert.equal(q.x, want.seq);
    assert.equal(q.y, 2 * want.seq + 1);
    assert.equal(q.k, want.seq % 8);
    assert.ok(q.t >= now);
    now = q.t;
    popped++;
    if (seq < 20_000) {
      const r = rand();
      if (r < 0.3) push(now); // at the current time: after every pending event of this time
      else if (r < 0.9) push(now + Math.floor(rand() * 4) * 0.25);
      else push(now + rand() * 1000); // distinct times
    }
    assert.equal(q.size, pending.length);
  }
  assert.equal(popped, seq);
});

test('the LogGP fit takes G from the ping-pong slope, g from the trains, and keeps 2o + L at the one-way time', { timeout: 5_000 }, () => {
  const job = {
    rounds: 10,
    pingPong: [{ bytes: 1, us: 10 }, { bytes: 1001, us: 11 }, { bytes: 2001, us: 12 }],
    trains: [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k })),
  };
  const net = fitLogGOPS(job, false, 8192);
  assert.deepEqual(net, { L: 6, o: 2, g: 3, G: 0.001, O: 0, S: 8192 }, 'the network path: no size-dependent part');
  const { X } = fitLogGOPS(job, true, 8192);
  assert.deepEqual(X?.bytes, [1, 1001, 2001], 'shared memory: on a straight line nothing is left for the size-dependent part');
  for (const u of X!.us) assert.ok(Math.abs(u) < 1e-9);
  const slow = fitLogGOPS({ ...job, trains: job.trains.map((t) => ({ ...t, postUs: 8 * t.messages })) }, true, 4096);
  assert.ok(Math.abs(slow.o - 4.5) < 1e-12 && Math.abs(slow.L - 1) < 1e-12, 'o capped at 0.45 x one way');
  assert.ok(Math.abs(slow.G - 0.0005) < 1e-12 && Math.abs(slow.O - 0.0005) < 1e-12, 'shm splits the slope between G and O');
  assert.equal(slow.g, 4.5, 'g is never below o');
});

test('the LogGP fit keeps a handshake above the eager limit only where the ping-pongs show one', { timeout: 5_000 }, () => {
  // o 2, L 6, G 0.001: eager one way 10 + (s-1) x 0.001; a handshake adds 2(o + L) = 16.
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k }));
  const sizes = [1, 1001, 4001, 16001, 64001];
  const oneWay = (s: number, handshake: boolean): number => 10 + (s - 1) * 0.001 + (handshake && s > 8192 ? 16 : 0);
  const pushed = fitLogGOPS({ rounds: 10, trains, pingPong: sizes.map((bytes) => ({ bytes, us: oneWay(bytes, false) })) }, false, 8192);
  assert.equal(pushed.S, 64001, 'no handshake: eager up to the largest size measured');
  assert.ok(Math.abs(pushed.G - 0.001) < 1e-9);
  const shaken = fitLogGOPS({ rounds: 10, trains, pingPong: sizes.map((bytes) => ({ bytes, us: oneWay(bytes, true) })) }, false, 8192);
  assert.equal(shaken.S, 8192, 'a handshake: rendezvous above the eager limit');
  assert.ok(Math.abs(shaken.G - 0.001) < 1e-9, 'G from the eager sizes only');
  for (const bytes of sizes) assert.ok(Math.abs(modelOneWay(shaken, bytes) - oneWay(bytes, true)) < 1e-9, `${bytes} B`);
});

test('the network path takes L from the barrier spread beside it, the receiver the rest of the one-way time', { timeout: 5_000 }, () => {
  // Fitted: o 2, L 6 (one way 10). A spread of 7: L 7, oRecv 10 - 2 - 7 = 1, nothing left over.
  const m = { L: 6, o: 2, g: 3, G: 0.001, O: 0, S: 8192 };
  const job = (barrierSpreadUs?: number): LogGPJobResult => ({ rounds: 1, pingPong: [], trains: [], ...(barrierSpreadUs === undefined ? {} : { barrierSpreadUs }) });
  assert.deepEqual(splitAtSpread(m, job(7)), { path: { ...m, L: 7, oRecv: 1 }, spreadUs: 0 });
  // Short: L 3, oRecv 5. Long: L at most one way less o (8), oRecv 0, and 4 us left as spread.
  assert.deepEqual(splitAtSpread(m, job(3)), { path: { ...m, L: 3, oRecv: 5 }, spreadUs: 0 });
  assert.deepEqual(splitAtSpread(m, job(12)), { path: { ...m, L: 8, oRecv: 0 }, spreadUs: 4 });
  for (const s of [3, 7, 12]) assert.equal(modelOneWay(splitAtSpread(m, job(s)).path, 1), 10, `the one-way time is kept (spread ${s})`);
  assert.deepEqual(splitAtSpread(m, job()), { path: m });
});

test('a crowd level draws no jitter and keeps of its measured barrier spread what the simulated loop does not show', { timeout: 10_000 }, () => {
  // 2 ranks on 2 nodes leave a loop of barriers together: both send, both receive, symmetric.
  assert.equal(barrierLoopSpread(2, 1, P), 0);
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k }));
  const job = (oneWayUs: number, jitterUs: number[]): LogGPJobResult => ({ rounds: 10, trains, jitterUs, pingPong: [1, 1001, 16001].map((bytes) => ({ bytes, us: oneWayUs + (bytes - 1) * 0.001 })) });
  const level = (barrierSpreadUs: number) => ({ ranks: 8, shm: job(20, [-5, 0, 50]), net: { ...job(100, [-5, 0, 50]), barrierSpreadUs } });
  const file = (barrierSpreadUs: number) => ({ version: 1, measuredAt: 'then', host: 'h', params: P,
    samples: { shm: job(10, [-1, 0, 1]), net: job(10, [-1, 0, 1]), crowd: [level(barrierSpreadUs)], call: { measuredUs: 50, modelUs: 0, callUs: 0 }, cores: 2, eagerLimit: 8192, reduceUsPerByte: 0.002, copyUsPerByte: 0.001 } });
  const fitted = refitLogGP(file(5000)).params;
  assert.deepEqual(fitted.net.J, [-1, 0, 1], 'the uncrowded paths keep their jitter');
  const lv = fitted.crowd!.levels[0]!;
  assert.equal(lv.net.J, undefined);
  assert.equal(lv.shm.J, undefined);
  // The loop of 8 ranks, 2 per node, on the level's paths (on the shared host of 2 cores it was
  // measured on) spreads them some (cross-node rounds of one way 100 us): the level keeps the
  // rest of the 5 ms measured.
  const own = barrierLoopSpread(8, 2, { ...DEFAULT_SIM_PARAMS, shm: lv.shm, net: lv.net, reduceUsPerByte: 0.002, copyUsPerByte: 0.001, hostCores: 2 });
  assert.ok(own > 0 && own < 5000, `own spread ${own} us`);
  assert.ok(Math.abs(lv.barrierSpreadUs! - (5000 - own)) < 1e-9, `${lv.barrierSpreadUs} us kept`);
  // None of a spread that the loop exceeds even with no wake-ups at all.
  assert.equal(refitLogGP(file(0)).params.crowd!.levels[0]!.barrierSpreadUs, 0);
  assert.equal(lv.nodeBarrierSpreadUs, undefined, 'no spread on one node measured: none fitted');
  // Measured on one node too: the level keeps what the loop of its 8 ranks on one node does not show.
  const f = file(5000);
  const withNode = refitLogGP({ ...f, samples: { ...f.samples, crowd: [{ ...level(5000), nodeBarrierSpreadUs: 3000 }] } }).params.crowd!.levels[0]!;
  const ownNode = barrierLoopSpread(8, 8, { ...DEFAULT_SIM_PARAMS, shm: lv.shm, net: lv.net, reduceUsPerByte: 0.002, copyUsPerByte: 0.001, hostCores: 2 });
  assert.ok(ownNode > 0 && ownNode < 3000, `own spread on one node ${ownNode} us`);
  assert.ok(Math.abs(withNode.nodeBarrierSpreadUs! - (3000 - ownNode)) < 1e-9, `${withNode.nodeBarrierSpreadUs} us kept`);
  assert.equal(withNode.barrierSpreadUs, lv.barrierSpreadUs, 'the spread across nodes is unchanged');
});

test('a crowd level takes its extra latency as wake-ups, as much as its barriers\' measured spread allows', { timeout: 20_000 }, () => {
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k }));
  const job = (oneWayUs: number): LogGPJobResult => ({ rounds: 10, trains, pingPong: [1, 1001, 16001].map((bytes) => ({ bytes, us: oneWayUs + (bytes - 1) * 0.001 })) });
  const file = (barrierSpreadUs: number) => ({ version: 1, measuredAt: 'then', host: 'h', params: P,
    samples: { shm: job(10), net: job(10), crowd: [{ ranks: 8, shm: job(20), net: { ...job(100), barrierSpreadUs } }], call: { measuredUs: 50, modelUs: 0, callUs: 0 }, cores: 2, eagerLimit: 8192, reduceUsPerByte: 0.002, copyUsPerByte: 0.001 } });
  const uncrowded = refitLogGP(file(1e6)).params;
  // A spread larger than any share makes: the whole of the extra latency is wake-ups (W), L is the uncrowded one.
  const all = uncrowded.crowd!.levels[0]!;
  assert.ok(Math.abs(all.net.W! - (100 - 10)) < 1e-6 && Math.abs(all.net.L - uncrowded.net.L - 0) < 10, `net W ${all.net.W}, L ${all.net.L}`);
  assert.ok(Math.abs(all.shm.W! - (20 - 10)) < 1e-6, `shm W ${all.shm.W}`);
  for (const lv of [all.net, all.shm]) assert.ok(Math.abs(modelOneWay(lv, 1) + lv.W! - (lv === all.net ? 100 : 20)) < 1e-6, 'an unqueued ping-pong keeps its one-way time');
  // A measured spread below what the whole share makes: the largest share whose loop stays within it.
  const at = (p: SimParams) => barrierLoopSpread(8, 2, { ...DEFAULT_SIM_PARAMS, shm: p.crowd!.levels[0]!.shm, net: p.crowd!.levels[0]!.net, reduceUsPerByte: 0.002, copyUsPerByte: 0.001, hostCores: 2 });
  const full = at(uncrowded);
  const part = refitLogGP(file(full / 2)).params;
  const lv = part.crowd!.levels[0]!;
  assert.ok(lv.net.W! > 0 && lv.net.W! < all.net.W!, `a share: W ${lv.net.W} of ${all.net.W}`);
  assert.ok(at(part) <= full / 2 + 1e-6 && at(part) > full / 4, `the loop spreads ${at(part)} us, measured ${full / 2}`);
  assert.ok(Math.abs(lv.net.L + lv.net.W! - (all.net.L + all.net.W!)) < 1e-6, 'L takes the rest');
  assert.equal(lv.barrierSpreadUs, full / 2 - at(part));
});

test('a crowd level prices a byte at most at the uncrowded G times the ranks per core', { timeout: 10_000 }, () => {
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k }));
  const job = (gUsPerByte: number): LogGPJobResult => ({ rounds: 10, trains, pingPong: [1, 1001, 16001].map((bytes) => ({ bytes, us: 50 + (bytes - 1) * gUsPerByte })) });
  const file = (crowdG: number) => ({ version: 1, measuredAt: 'then', host: 'h', params: P,
    samples: { shm: job(0.0001), net: job(0.001), crowd: [{ ranks: 8, shm: job(0.0001), net: job(crowdG) }], call: { measuredUs: 50, modelUs: 0, callUs: 0 }, cores: 2, eagerLimit: 8192, reduceUsPerByte: 0.002, copyUsPerByte: 0.001 } });
  // 8 ranks on 2 cores: a rank has a quarter of a core, so a byte costs at most 4x the uncrowded 0.001 us.
  const capped = refitLogGP(file(0.011)).params.crowd!.levels[0]!.net;
  assert.ok(Math.abs(capped.G - 0.004) < 1e-9, `G ${capped.G}: the measured 11x is capped at 4x`);
  assert.ok(Math.abs(capped.L - refitLogGP(file(0.002)).params.crowd!.levels[0]!.net.L) < 1e-6, 'latency and overheads stay as measured');
  // Measured below the cap: kept.
  assert.ok(Math.abs(refitLogGP(file(0.002)).params.crowd!.levels[0]!.net.G - 0.002) < 1e-9);
});

test('the jitter quantiles are 0 .. 99 % of the samples less their median', { timeout: 5_000 }, () => {
  const J = jitterQuantiles(Array.from({ length: 101 }, (_, i) => 100 - i));
  assert.equal(J.length, 100);
  J.forEach((v, k) => assert.ok(Math.abs(v - (k - 50)) < 1e-12, `quantile ${k} %: ${v}`));
});

test('a calibration fits again from the samples it keeps; one without samples is refused', { timeout: 5_000 }, () => {
  const trains = [1, 2, 3, 4].map((k) => ({ messages: k, postUs: 2 * k, totalUs: 10 + 3 * k }));
  const job = { rounds: 10, trains, pingPong: [1, 1001, 16001].map((bytes) => ({ bytes, us: 10 + (bytes - 1) * 0.001 })) };
  const file = { version: 1, measuredAt: 'then', host: 'h', params: { ...P, callUs: 99 },
    samples: { shm: job, net: job, crowd: [], call: { measuredUs: 50, modelUs: 0, callUs: 99 }, cores: 2, eagerLimit: 8192, reduceUsPerByte: 0.002, copyUsPerByte: 0.001 } };
  const again = refitLogGP(file);
  assert.deepEqual(again.params.net, { L: 6, o: 2, g: 3, G: 0.001, O: 0, S: 16001 });
  // The cost per call: the same measurement less what the refitted model charges for it.
  const model = (again.samples as { call: { modelUs: number } }).call.modelUs;
  assert.ok(model > 0 && Math.abs(again.params.callUs! - (50 - model)) < 1e-9);
  // Each collective's call cost likewise, where the calibration measured it.
  const withColl = refitLogGP({ ...file, samples: { ...file.samples, callByColl: [{ coll: 'scan', algorithm: 'recursive-doubling', measuredUs: 60, modelUs: 0, callUs: 0 }] } });
  const scanModel = (withColl.samples as { callByColl: Array<{ modelUs: number }> }).callByColl[0]!.modelUs;
  assert.ok(scanModel > 0 && Math.abs(withColl.params.callUsByColl!.scan! - (60 - scanModel)) < 1e-9);
  assert.throws(() => refitLogGP({ version: 1, measuredAt: 'then', host: 'h', params: P }), { code: 'NBC_ERR_ARG', message: /keeps no samples/ });
});

test('the LogGP job measures every pair at once: XOR 1 inside a node, XOR ppn across nodes', { timeout: 60_000 }, async () => {
  const job = fileURLToPath(new URL('../dist/sim/loggp-job.js', import.meta.url));
  for (const stride of [1, 2]) {
    // Inside a node also the writes into lent payloads (16 KiB: above the eager limit).
    const args: LogGPJobArgs = { sizes: [1, 4096], maxTrain: 4, budgetMs: 100, minRounds: 5, stride, stat: 'median', ...(stride === 1 ? { lent: [16384] } : {}) };
    const r = await launch(job, { ranks: 4, ppn: 2, args: [JSON.stringify(args)], output: 'pipe', timeoutMs: 30_000 });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    // The lower rank of each pair measures: 0 and 1 (stride 1: pairs 0-1, 2-3; stride 2: 0-2, 1-3).
    const leads = r.ranks.filter((x) => x.result !== null).map((x) => x.rank).sort();
    assert.deepEqual(leads, stride === 1 ? [0, 2] : [0, 1], `stride ${stride}`);
    for (const x of r.ranks) {
      const res = x.result as LogGPJobResult | null;
      if (res === null) continue;
      assert.ok(res.rounds >= 5, `rank ${x.rank}: ${res.rounds} rounds`);
      assert.deepEqual(res.pingPong.map((p) => p.bytes), [1, 4096]);
      for (const p of res.pingPong) assert.ok(p.us > 0 && Number.isFinite(p.us), `rank ${x.rank}: ${p.bytes} B one way ${p.us} us`);
      assert.deepEqual(res.trains.map((t) => t.messages), [1, 2, 3, 4]);
      for (const t of res.trains) assert.ok(t.totalUs >= t.postUs && t.postUs > 0, `rank ${x.rank}: train of ${t.messages}`);
      if (stride === 2) {
        assert.equal(res.lentWrite, undefined);
        continue;
      }
      assert.deepEqual(res.lentWrite!.map((w) => w.bytes), [16384]);
      for (const [k, us] of Object.entries(res.lentWrite![0]!)) assert.ok(us > 0 && Number.isFinite(us), `rank ${x.rank}: lent ${k} ${us}`);
    }
  }
  // Barriers alone (a crowd's spread on one node): rank 0 reports the median spread of the exits, nobody pairs.
  const barriers: LogGPJobArgs = { sizes: [], maxTrain: 0, budgetMs: 0, minRounds: 0, barriers: 50, pairs: false };
  const r = await launch(job, { ranks: 3, ppn: 3, args: [JSON.stringify(barriers)], output: 'pipe', timeoutMs: 30_000 });
  assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
  const byRank = r.ranks.sort((a, b) => a.rank - b.rank).map((x) => x.result as BarrierSpreadResult | null);
  assert.deepEqual(byRank.slice(1), [null, null]);
  assert.ok(byRank[0]!.barrierSpreadUs >= 0 && Number.isFinite(byRank[0]!.barrierSpreadUs), `${byRank[0]!.barrierSpreadUs} us`);
  assert.deepEqual(Object.keys(byRank[0]!), ['barrierSpreadUs']);
});

test('the calibration measures a call again when its run stalled (a scheduler tick per call), not when it was merely slow', { timeout: 5_000 }, () => {
  const call = (measuredUs: number, modelUs: number) => ({ measuredUs, modelUs, callUs: Math.max(0, measuredUs - modelUs) });
  // One node: 0.6 us of messages; 2-40 us measured is a call, 4 ms a stall (seen with both cores busy elsewhere).
  assert.equal(stalledCall(call(2.1, 0.6)), false);
  assert.equal(stalledCall(call(40, 0.6)), false);
  assert.equal(stalledCall(call(4028.7, 0.6)), true);
  // Across nodes: 30 us of messages; 90 us is slow, 4.1 ms stalled.
  assert.equal(stalledCall(call(90, 30)), false);
  assert.equal(stalledCall(call(4100, 30)), true);
});
