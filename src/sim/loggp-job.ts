/**
 * The measurement job of `nbc calibrate --loggp` (Netgauge's LogGP method, Hoefler et al.,
 * "LogGP in theory and practice", 2009), on pairs of ranks, one path at a time. Rank i pairs
 * with i XOR `stride`: stride 1 with ppn 2 pairs ranks of one node (shared memory), stride ppn
 * pairs ranks of different nodes (the job's transport). Every pair measures at once, so a job
 * with more ranks than cores measures the paths as a crowded host runs them (Netgauge's
 * many-pairs mode). Per pair, the lower rank measures:
 * - ping-pong at every size: one way = round trip / 2 = 2o + L + (s-1)G; its slope over sizes
 *   (least squares) is G. Each round writes the payload before it is sent, as a collective
 *   sends what it has just computed or received; with `cached`, every size is also
 *   ping-ponged from a payload written once (a benchmark loop's unchanged input);
 * - message trains: it isends k 1-byte messages back to back and waits for its partner's ack
 *   of the last. The time inside the k isend calls over k is o_s; the train's time over k has
 *   slope max(o, g) (the injector's gap shows once it exceeds the CPU's overhead);
 * - with `lent` (shared memory), writes into a payload the partner has just copied out by
 *   rendezvous, the library's way, beside the same writes into a buffer never lent (lentWrite).
 * Every point is measured once per round and rounds repeat until the budget is spent; each
 * point keeps the statistic `stat` of its samples: `min` (the path's own cost, which other
 * programs only add to) or `median` (what nbcbench reports by default, and what a crowded
 * host really charges). The measuring ranks return their points, and beside them how the
 * smallest message's one-way time spreads over rounds (jitterUs): the simulator draws each
 * message's latency from that spread.
 */
import type { Communicator } from '../coll/communicator.js';
import { statOf, type Stat } from '../bench/metrics.js';
import { DType } from '../ops/dtype.js';
import { OpCode } from '../ops/op.js';
import { reduceRegions } from '../ops/regions.js';
import { waitAll, type Request } from '../p2p/request.js';
import { copyBytes } from '../shm/copy.js';

export interface LogGPJobArgs {
  sizes: number[];
  /** Trains of 1..maxTrain messages. */
  maxTrain: number;
  budgetMs: number;
  minRounds: number;
  /** Partner = rank XOR stride (default 1). */
  stride?: number;
  /** Per point, over rounds (default min). */
  stat?: Stat;
  /**
   * Also ping-pong every size with a payload that no round writes (pingPongCached): what a
   * benchmark loop sends from its unchanged input, whose lines stay cached on both cores.
   */
  cached?: boolean;
  /**
   * Sizes (above the eager limit, so sent by rendezvous) at which to time writes into lent
   * memory (lentWrite): each round the lead sends a fresh payload, which its partner copies
   * straight out of it, then writes into that payload the way the library does, timed; and
   * again into a buffer of its own instead. Default none.
   */
  lent?: number[];
  /**
   * Then every rank runs this many barriers (after as many to warm up), notes when it left
   * each (performance.timeOrigin + now(): one clock for every process of the host), and rank 0
   * reports the median spread between the first and the last rank to leave. Default 0.
   */
  barriers?: number;
  /**
   * false: no pairs measure, only the barriers run (a crowd's spread on one node); rank 0
   * returns a BarrierSpreadResult. Default true.
   */
  pairs?: boolean;
}

/** The job's result with `pairs: false` (rank 0). */
export interface BarrierSpreadResult {
  barrierSpreadUs: number;
}

export interface LogGPJobResult {
  rounds: number;
  /** One-way time per size, us: payloads written just before they are sent. */
  pingPong: Array<{ bytes: number; us: number }>;
  /** With `cached`: the same with a payload written once, before the first round. */
  pingPongCached?: Array<{ bytes: number; us: number }>;
  /** Per train length: time inside the isend calls, and until the last message's ack, us. */
  trains: Array<{ messages: number; postUs: number; totalUs: number }>;
  /**
   * With `lent`, per size, us: a fold (float64 sum) into the payload just lent, by the host
   * executor's route (copy it out to private memory, fold there, copy it back), against a fold
   * in place into a buffer of the lead's own after the same send; and a copy (the library's
   * copyBytes) into the payload just lent, against one into the lead's own buffer (LogGOPS.lent).
   */
  lentWrite?: Array<{ bytes: number; foldLentUs: number; foldUs: number; copyLentUs: number; copyUs: number }>;
  /** With `barriers`: the median spread of the ranks' barrier exits, us (rank 0 only). */
  barrierSpreadUs?: number;
  /**
   * The smallest size's one-way time over rounds at the quantiles 0, 1, .., 99 %, less its
   * median (us): 100 values, the 51st 0. The top 1 % is left out: GC pauses and scheduler
   * hiccups of milliseconds, which nbcbench's median over calls does not see, but which drawn
   * from a last segment of 1 % up to the maximum would land in every hundredth message.
   */
  jitterUs?: number[];
}

/** Quantiles 0, 1, .., 99 % of the samples (linear between order statistics), less their median. */
export function jitterQuantiles(samples: readonly number[]): number[] {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => {
    const x = q * (s.length - 1);
    const i = Math.floor(x);
    return i + 1 < s.length ? s[i]! + (s[i + 1]! - s[i]!) * (x - i) : s[i]!;
  };
  const mid = at(0.5);
  return Array.from({ length: 100 }, (_, k) => at(k / 100) - mid);
}

const TAG_GO = 11;
const TAG_PING = 12;
const TAG_TRAIN = 13;
const TAG_ACK = 14;
const TAG_LENT = 15;

export default function loggpJob(world: Communicator, argv: string[]): LogGPJobResult | BarrierSpreadResult | null {
  const a = JSON.parse(argv[0]!) as LogGPJobArgs;
  const me = world.rank;
  if (a.pairs === false) {
    const barrierSpreadUs = barrierSpread(world, a.barriers ?? 0);
    return me === 0 ? { barrierSpreadUs } : null;
  }
  const peer = me ^ (a.stride ?? 1);
  const paired = peer < world.size;
  const lead = paired && me < peer;
  const points = paired ? pairPoints(world, a, peer, lead) : null;
  const spread = (a.barriers ?? 0) > 0 ? barrierSpread(world, a.barriers!) : undefined;
  if (!lead || points === null) return null;
  return spread === undefined ? points : { ...points, barrierSpreadUs: spread };
}

/** The median over `n` barriers of the time between the first and the last rank's exit (rank 0; others NaN). */
function barrierSpread(world: Communicator, n: number): number {
  const exits = new Float64Array(n);
  for (let i = -n; i < n; i++) {
    world.barrier();
    if (i >= 0) exits[i] = performance.timeOrigin + performance.now();
  }
  const all = world.rank === 0 ? new Float64Array(n * world.size) : null;
  world.gather(exits, all, 0);
  if (all === null) return NaN;
  const spreads = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = 0; r < world.size; r++) {
      lo = Math.min(lo, all[r * n + i]!);
      hi = Math.max(hi, all[r * n + i]!);
    }
    spreads[i] = (hi - lo) * 1000;
  }
  return statOf(spreads, 'median');
}

/** One pair's ping-pongs and trains; the lead's points, else null. */
function pairPoints(world: Communicator, a: LogGPJobArgs, peer: number, lead: boolean): LogGPJobResult | null {
  const lentSizes = a.lent ?? [];
  const maxBytes = Math.max(...a.sizes, ...lentSizes);
  const out = world.alloc(Uint8Array, maxBytes).fill(1);
  const inb = world.alloc(Uint8Array, maxBytes);
  const lentLen = Math.max(0, ...lentSizes);
  const writes = lead && lentLen > 0 ? lentWrites(world, lentLen) : null;
  const lentUs = lentSizes.map(() => ({ foldLent: [] as number[], fold: [] as number[], copyLent: [] as number[], copy: [] as number[] }));
  const kept = a.cached === true ? world.alloc(Uint8Array, maxBytes).fill(2) : null;
  const one = out.subarray(0, 1);
  const ack = new Uint8Array(1);
  const go = new Uint8Array(1);
  const pp: number[][] = a.sizes.map(() => []);
  const ppCached: number[][] = a.sizes.map(() => []);
  const post: number[][] = Array.from({ length: a.maxTrain }, () => []);
  const total: number[][] = Array.from({ length: a.maxTrain }, () => []);
  const reqs: Request[] = [];
  const deadline = performance.now() + a.budgetMs;
  let rounds = 0;
  for (;;) {
    if (lead) {
      go[0] = rounds < a.minRounds || performance.now() < deadline ? 1 : 0;
      world.send(go, peer, TAG_GO);
    } else {
      world.recv(go, peer, TAG_GO);
    }
    if (go[0] === 0) break;
    for (let j = 0; j < a.sizes.length; j++) {
      const s = out.subarray(0, a.sizes[j]!);
      const r = inb.subarray(0, a.sizes[j]!);
      // Fresh payloads, written outside the timed region: a collective sends what it has just
      // computed or received, whose lines sit dirty in the sender's core. Sent unchanged, the
      // payload would stay cached on both cores and copy at cache speed (docs/sim.md, "G").
      s.fill((rounds + j) & 255);
      pingPong(world, s, r, peer, lead, pp[j]!);
      if (kept !== null) pingPong(world, kept.subarray(0, a.sizes[j]!), r, peer, lead, ppCached[j]!);
    }
    for (let j = 0; j < lentSizes.length; j++) {
      const payload = out.subarray(0, lentSizes[j]!);
      const r = inb.subarray(0, lentSizes[j]!);
      const fill = (rounds + j) & 255;
      const t = lentUs[j]!;
      lentWrite(world, payload, r, peer, fill, writes === null ? null : (p) => writes.foldLent(p), t.foldLent);
      lentWrite(world, payload, r, peer, fill, writes === null ? null : (p) => writes.fold(p.byteLength), t.fold);
      lentWrite(world, payload, r, peer, fill, writes === null ? null : (p) => writes.copyLent(p), t.copyLent);
      lentWrite(world, payload, r, peer, fill, writes === null ? null : (p) => writes.copy(p.byteLength), t.copy);
    }
    for (let k = 1; k <= a.maxTrain; k++) {
      if (lead) {
        const done = world.irecv(ack, peer, TAG_ACK);
        reqs.length = 0;
        const t0 = performance.now();
        for (let i = 0; i < k; i++) reqs.push(world.isend(one, peer, TAG_TRAIN));
        const t1 = performance.now();
        waitAll(reqs);
        done.wait();
        const t2 = performance.now();
        post[k - 1]!.push((t1 - t0) * 1000);
        total[k - 1]!.push((t2 - t0) * 1000);
      } else {
        for (let i = 0; i < k; i++) world.recv(inb.subarray(0, 1), peer, TAG_TRAIN);
        world.send(ack, peer, TAG_ACK);
      }
    }
    rounds++;
  }
  if (!lead) return null;
  const stat = a.stat ?? 'min';
  const smallest = a.sizes.indexOf(Math.min(...a.sizes));
  return {
    rounds,
    jitterUs: jitterQuantiles(pp[smallest]!),
    pingPong: a.sizes.map((bytes, j) => ({ bytes, us: statOf(pp[j]!, stat) })),
    ...(kept === null ? {} : { pingPongCached: a.sizes.map((bytes, j) => ({ bytes, us: statOf(ppCached[j]!, stat) })) }),
    ...(lentSizes.length === 0 ? {} : {
      lentWrite: lentSizes.map((bytes, j) => {
        const t = lentUs[j]!;
        return { bytes, foldLentUs: statOf(t.foldLent, stat), foldUs: statOf(t.fold, stat), copyLentUs: statOf(t.copyLent, stat), copyUs: statOf(t.copy, stat) };
      }),
    }),
    trains: Array.from({ length: a.maxTrain }, (_, i) => ({ messages: i + 1, postUs: statOf(post[i]!, stat), totalUs: statOf(total[i]!, stat) })),
  };
}

/** One round trip of `s` (the lead sends first; the partner answers into `r`); the lead notes half of it, us. */
function pingPong(world: Communicator, s: Uint8Array, r: Uint8Array, peer: number, lead: boolean, samples: number[]): void {
  if (lead) {
    const t0 = performance.now();
    world.send(s, peer, TAG_PING);
    world.recv(r, peer, TAG_PING);
    samples.push((performance.now() - t0) * 500);
  } else {
    world.recv(r, peer, TAG_PING);
    world.send(s, peer, TAG_PING);
  }
}

/**
 * The lead's four ways to write up to `max` bytes (lentWrite): into a lent payload, a fold by
 * the host executor's route (sched/host.ts, HostExecutor.reduce: copy out, fold in private
 * memory, copy back) and a copy; into a buffer of its own (from the arena, as the library's
 * buffers are, never lent), a fold in place and a copy.
 */
function lentWrites(world: Communicator, max: number): {
  foldLent(p: Uint8Array): void; fold(bytes: number): void; copyLent(p: Uint8Array): void; copy(bytes: number): void;
} {
  const addend = world.alloc(Uint8Array, max);
  new Float64Array(addend.buffer, addend.byteOffset, max / 8).fill(1);
  const own = world.alloc(Uint8Array, max);
  const priv = new Uint8Array(max);
  const sum = (input: Uint8Array, inout: Uint8Array): void => reduceRegions(OpCode.sum, DType.Float64, input, inout);
  return {
    foldLent(p) {
      const n = p.byteLength;
      copyBytes(p, priv, 0, n);
      sum(addend.subarray(0, n), priv.subarray(0, n));
      copyBytes(priv.subarray(0, n), p, 0, n);
    },
    fold(bytes) { sum(addend.subarray(0, bytes), own.subarray(0, bytes)); },
    copyLent(p) { copyBytes(addend.subarray(0, p.byteLength), p, 0, p.byteLength); },
    copy(bytes) { copyBytes(addend.subarray(0, bytes), own, 0, bytes); },
  };
}

/**
 * The lead writes `payload` afresh and sends it (by rendezvous: the partner copies it into
 * `r`), then times `write(payload)`, us; the partner (`write` null) only receives.
 */
function lentWrite(world: Communicator, payload: Uint8Array, r: Uint8Array, peer: number, fill: number,
  write: ((payload: Uint8Array) => void) | null, samples: number[]): void {
  if (write === null) {
    world.recv(r, peer, TAG_LENT);
    return;
  }
  payload.fill(fill);
  world.send(payload, peer, TAG_LENT);
  const t0 = performance.now();
  write(payload);
  samples.push((performance.now() - t0) * 1000);
}
