/**
 * The emulated network (p2p/wire.ts, runtime/link-spec.ts): path latencies through flat and
 * fat-tree topologies by hand-computed values, the node adapter's queue, the parsers, and
 * launched jobs whose messages are never delivered before the model says they arrive.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { NbcError } from '../src/errors.ts';
import { commonLevel, isAfter, pathLatencyUs, upLatencyUs, Wire, type WireModel } from '../src/p2p/wire.ts';
import { kNicBusy } from '../src/shm/layout.ts';
import { checkTopology, LINK_PRESETS, parseLinkSpec, parseTopology, wireModelOf } from '../src/runtime/link-spec.ts';
import { ucxUnavailable } from '../src/runtime/node-main.ts';
import { jobPath } from './helpers.ts';

const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const T = { timeout: 120_000 };

const near = (actual: number, expected: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

const isArgError = (pattern: RegExp) => (e: unknown): boolean =>
  e instanceof NbcError && e.code === 'NBC_ERR_ARG' && pattern.test(e.message);

describe('path latency', () => {
  const flat: WireModel = { latencyUs: 1.5, bandwidthBytesPerSec: Infinity, switchUs: 0.1, radix: 0 };
  const tree: WireModel = { ...flat, radix: 4 };

  test('commonLevel() is 1 between any two nodes of a flat network', () => {
    assert.equal(commonLevel(0, 0, 1), 1);
    assert.equal(commonLevel(0, 0, 1000), 1);
  });

  test('commonLevel() in a radix-4 fat tree: 1 on one leaf, 2 across leaves of one level-2 switch, 3 beyond', () => {
    assert.equal(commonLevel(4, 0, 3), 1);
    assert.equal(commonLevel(4, 5, 6), 1);
    assert.equal(commonLevel(4, 3, 4), 2);
    assert.equal(commonLevel(4, 0, 15), 2);
    assert.equal(commonLevel(4, 15, 16), 3);
    assert.equal(commonLevel(4, 0, 63), 3);
    assert.equal(commonLevel(4, 0, 64), 4);
  });

  test('pathLatencyUs() adds two switch hops per level above the leaf, and is 0 to the node itself', () => {
    assert.equal(pathLatencyUs(tree, 7, 7), 0);
    near(pathLatencyUs(tree, 0, 1), 1.5, 'same leaf');
    near(pathLatencyUs(tree, 0, 4), 1.5 + 2 * 0.1, 'level 2');
    near(pathLatencyUs(tree, 0, 16), 1.5 + 4 * 0.1, 'level 3');
    near(pathLatencyUs(tree, 16, 0), pathLatencyUs(tree, 0, 16), 'symmetric');
    near(pathLatencyUs(flat, 0, 16), 1.5, 'flat: one hop');
  });

  test('upLatencyUs() is half a host-to-host hop to the leaf, then a switch hop per level', () => {
    near(upLatencyUs(tree, 1), 0.75, 'leaf');
    near(upLatencyUs(tree, 3), 0.75 + 2 * 0.1, 'level 3');
  });
});

describe('the node adapter (Wire.take)', () => {
  // 1e9 B/s: 1000 bytes occupy the adapter for 1 us, 10 ticks.
  const model: WireModel = { latencyUs: 2, bandwidthBytesPerSec: 1e9, switchUs: 0, radix: 0 };
  const fresh = (): { wire: Wire; control: Int32Array } => {
    const control = new Int32Array(4);
    return { wire: new Wire(model, control, 0, 2, 0), control };
  };

  test('two back-to-back takes on one control word serialise: the second leaves after the first', () => {
    const { wire, control } = fresh();
    assert.equal(wire.take(100, 1000), 110);
    assert.equal(wire.take(100, 1000), 120);
    assert.equal(control[kNicBusy], 120);
    // Handed over while the adapter is still busy: queued behind it; after it is free: at once.
    assert.equal(wire.take(115, 1000), 130);
    assert.equal(wire.take(500, 1000), 510);
  });

  test('two Wires of one node share the adapter through the control word', () => {
    const control = new Int32Array(4);
    const a = new Wire(model, control, 0, 2, 0);
    const b = new Wire(model, control, 0, 2, 0);
    assert.equal(a.take(100, 1000), 110);
    assert.equal(b.take(100, 1000), 120);
  });

  test('an adapter idle for longer than a 32-bit tick spans (1000 s) does not delay: its word is a whole 64-bit tick', () => {
    const control = new Int32Array(4);
    const origin = 1e8; // a host up for about a day: ticks far past 2^32
    const wire = new Wire(model, control, 0, 2, origin);
    const nic = new BigInt64Array(control.buffer);
    const now = wire.now();
    nic[kNicBusy >> 1] = BigInt(Math.floor((performance.now() + origin) * 1e4)) - 10_000_000_000n;
    assert.equal(wire.take(now, 1000), (now + 10) | 0);
    assert.equal(wire.take(now, 1000), (now + 20) | 0, 'and then queues as before');
  });

  test('ticks wrap modulo 2^32: a take across the wrap still queues behind the one before', () => {
    const { wire } = fresh();
    const after = 2 ** 31 - 5;
    const first = wire.take(after, 1000);
    assert.equal(first, -(2 ** 31) + 5);
    assert.ok(isAfter(first, after), 'the wrapped end is after the start');
    assert.equal(wire.take(after, 1000), -(2 ** 31) + 15);
  });

  test('every message occupies the adapter for at least a tick; with no bandwidth cap, none', () => {
    const { wire } = fresh();
    assert.equal(wire.serialTicks(1), 1);
    const free = new Wire({ ...model, bandwidthBytesPerSec: Infinity }, new Int32Array(4), 0, 2, 0);
    assert.equal(free.take(100, 1 << 20), 100);
  });

  test('a stamp is the adapter time plus the path latency; arrived() holds later stamps and notes the earliest', () => {
    const { wire } = fresh();
    const before = wire.now();
    const stamp = wire.stamp(1, 1000);
    assert.ok(!isAfter(before + 10 + 20, stamp), 'leaves after 10 ticks, arrives 20 ticks (2 us) later');
    assert.equal(wire.arrived(0), true, '0 is unstamped');
    assert.equal(wire.arrived(before - 5), true);
    const far = (wire.now() + 1_000_000) | 0;
    assert.equal(wire.arrived(far), false);
    assert.equal(wire.arrived((far + 50) | 0), false);
    assert.equal(wire.held, far);
    assert.ok(wire.heldMs() > 90 && wire.heldMs() <= 100);
  });
});

describe('the learnt park lateness (Wire.learnParkLate)', () => {
  test('settles at the lower quartile of the readings, not their mean, and ignores impossible ones', () => {
    const wire = new Wire({ latencyUs: 1000, bandwidthBytesPerSec: Infinity, switchUs: 0, radix: 0 }, new Int32Array(4), 0, 2, 0);
    // Readings of 40..49 us, and one in ten delayed to 300 us by a busy core: the lower
    // quartile is about 42 us, the mean 70.
    const readings: number[] = [];
    for (let i = 0; i < 4000; i++) readings.push(i % 10 === 9 ? 0.3 : 0.04 + (((i * 7919) % 10) / 1000));
    for (const r of readings) wire.learnParkLate(r);
    const sorted = [...readings].sort((a, b) => a - b);
    const q25 = sorted[sorted.length >> 2]!;
    assert.ok(Math.abs(wire.parkLateMs - q25) <= 0.005, `learnt ${wire.parkLateMs} ms against a lower quartile of ${q25}`);
    const learnt = wire.parkLateMs;
    for (const bad of [-0.01, 1, 5, Number.NaN]) wire.learnParkLate(bad);
    assert.equal(wire.parkLateMs, learnt, 'a negative, NaN or over-1-ms reading teaches nothing');
  });
});

describe('--link and --topology', () => {
  test('the presets are the specs they name, with their switch hops', () => {
    assert.deepEqual(parseLinkSpec('gige'), { latencyUs: 50, bandwidthBytesPerSec: 125e6 });
    assert.deepEqual(parseLinkSpec('ib'), { latencyUs: 1.5, bandwidthBytesPerSec: 4.5e9, switchUs: 0.1 });
    assert.deepEqual(parseLinkSpec('edr'), { latencyUs: 0.7, bandwidthBytesPerSec: 12.5e9, switchUs: 0.09 });
    assert.deepEqual(parseLinkSpec('ddr'), { latencyUs: 3, bandwidthBytesPerSec: 2e9, switchUs: 0.2 });
    for (const [name, spec] of Object.entries(LINK_PRESETS)) assert.deepEqual(parseLinkSpec(name), parseLinkSpec(spec));
  });

  test('switch= takes a time; a rate or an unknown key is refused, naming the presets', () => {
    assert.deepEqual(parseLinkSpec('latency=1ms,bandwidth=8mbit,switch=90ns'), { latencyUs: 1000, bandwidthBytesPerSec: 1e6, switchUs: 0.09 });
    assert.throws(() => parseLinkSpec('latency=1us,switch=1gbit'), isArgError(/switch=1gbit.*gige or ib/));
    assert.throws(() => parseLinkSpec('hops=3'), isArgError(/hops=3/));
  });

  test('parseTopology() reads flat and fat-tree:radix=R[,levels=L], in either order', () => {
    assert.deepEqual(parseTopology(undefined), { radix: 0, levels: null });
    assert.deepEqual(parseTopology('flat'), { radix: 0, levels: null });
    assert.deepEqual(parseTopology('fat-tree:radix=4'), { radix: 4, levels: null });
    assert.deepEqual(parseTopology('fat-tree:radix=4,levels=2'), { radix: 4, levels: 2 });
    assert.deepEqual(parseTopology('fat-tree:levels=3, radix=2'), { radix: 2, levels: 3 });
    assert.equal(wireModelOf('ib', 'fat-tree:radix=8').radix, 8);
  });

  test('parseTopology() refuses what it cannot read, saying why and what it expects', () => {
    for (const [text, why] of [
      ['ring', /unknown kind/], ['fat-tree:radix=1', /radix 1 is below 2/], ['fat-tree:levels=2', /radix missing/],
      ['fat-tree:radix=4,levels=0', /levels 0 is below 1/], ['fat-tree:radix=4,radix=8', /radix given twice/],
      ['fat-tree:radix=4,depth=2', /cannot read 'depth=2'/], ['fat-tree:radix=four', /cannot read/],
    ] as const) {
      assert.throws(() => parseTopology(text), isArgError(new RegExp(`'${text}'.*${why.source}.*fat-tree:radix=R\\[,levels=L\\]`)), text);
    }
  });

  test('checkTopology() needs a link, and a fat tree of L levels to hold the nodes in its R^L hosts', () => {
    assert.throws(() => checkTopology('fat-tree:radix=4', undefined, 2), isArgError(/without --link/));
    assert.throws(() => checkTopology('fat-tree:radix=4,levels=2', 'ib', 17), isArgError(/17 nodes.*16 hosts/));
    checkTopology('fat-tree:radix=4,levels=2', 'ib', 16);
    checkTopology('fat-tree:radix=4', 'ib', 1000);
    checkTopology(undefined, undefined, 5);
    assert.throws(() => wireModelOf('ib', 'fat-tree:radix=2,levels=1', 3), isArgError(/3 nodes/));
  });

  test('the CLI refuses --topology without --link, and a fat tree too small for the job, before starting anything', T, () => {
    const nbc = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
    const run = nbc('run', '-n', '2', '--ppn', '1', '--topology', 'fat-tree:radix=4', jobPath('hello.ts'));
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /without --link/);
    const bench = nbc('bench', 'p2p', '--ranks', '4', '--ppn', '1', '--link', 'ib', '--topology', 'fat-tree:radix=2,levels=1');
    assert.equal(bench.status, 2, bench.stderr);
    assert.match(bench.stderr, /Cannot place 4 nodes.*2 hosts/);
    const cg = nbc('cg', '--ranks', '2', '--ppn', '1', '--topology', 'flat');
    assert.equal(cg.status, 2, cg.stderr);
    assert.match(cg.stderr, /without --link/);
  });
});

/** One-way times (ms) from rank 0 to rank `dst`, each the least of a few sends (test/jobs/wire.ts). */
async function oneWayMs(opts: { ranks: number; link: string; topology?: string; transport: 'tcp' | 'ucx' }, dst: number, sizes: number[]): Promise<number[]> {
  const r = await launch(jobPath('wire.ts'), {
    ranks: opts.ranks, ppn: 1, link: opts.link, topology: opts.topology, transport: opts.transport,
    args: [String(dst), ...sizes.map(String)], output: 'pipe', timeoutMs: 60_000,
  });
  assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
  return r.ranks[dst]!.result as number[];
}

describe('launched: a message is never delivered before its stamp', () => {
  const transports: Array<'tcp' | 'ucx'> = ucxUnavailable() === null ? ['tcp', 'ucx'] : ['tcp'];
  for (const transport of transports) {
    const opts = T;
    test(`over ${transport}, --link latency=2ms: 8 B take at least 2 ms one way`, opts, async () => {
      const [small] = await oneWayMs({ ranks: 2, link: 'latency=2ms', transport }, 1, [8]);
      assert.ok(small! >= 2, `8 B one way in ${small} ms`);
    });

    test(`over ${transport}, --link latency=2ms,bandwidth=1gbit: 1 MiB takes at least its 8.39 ms on the wire plus 2 ms`, opts, async () => {
      const [small, big] = await oneWayMs({ ranks: 2, link: 'latency=2ms,bandwidth=1gbit', transport }, 1, [8, 1 << 20]);
      assert.ok(small! >= 2, `8 B one way in ${small} ms`);
      // 2^20 B at 125e6 B/s: 8.389 ms of serialisation, then the 2 ms of latency.
      assert.ok(big! >= 8.3 + 2, `1 MiB one way in ${big} ms`);
    });
  }

  test('--topology fat-tree:radix=2 adds two switch hops between nodes on different leaves', T, async () => {
    // Nodes 0 and 2 meet at level 2: 1 ms + 2 x 1 ms.
    const [across] = await oneWayMs({ ranks: 3, link: 'latency=1ms,switch=1ms', topology: 'fat-tree:radix=2', transport: 'tcp' }, 2, [8]);
    assert.ok(across! >= 3, `8 B across leaves in ${across} ms`);
  });
});
