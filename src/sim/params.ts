/**
 * The machine the simulator models: LogGOPS parameters per path (Hoefler, Schneider, Lumsdaine,
 * "LogGOPSim", HPDC 2010), the speed of the reduction and copy kernels, what an offload engine
 * and the aggregation fabric cost, and presets for the seeds' hardware with the source of every
 * number.
 *
 * LogGOPS, per path (`shm`: between ranks of one node; `net`: between nodes), in microseconds
 * and bytes:
 * - L: latency, the time a message's first byte travels;
 * - o: CPU overhead per message (send and receive each pay it);
 * - g: gap per message: the injector (a rank on shm, the node's NIC on net) can start the next
 *   message only g after the previous one;
 * - G: gap per byte on the wire (1 / bandwidth);
 * - O: CPU overhead per byte (copies the CPU makes to send or receive);
 * - S: messages larger than S bytes go by rendezvous (request, clear-to-send, data), smaller
 *   ones eagerly.
 * A message of s bytes, eager, on an idle machine: the sender's CPU is busy o + (s-1)O, its
 * first byte leaves after o, arrives (s-1)G + L later, and the receiver's CPU spends o + (s-1)O
 * on it: one way 2o + L + (s-1)(G + O), LogGP's o + (s-1)G + L + o when O = 0.
 *
 * Pure data and validation: no node:* imports (the file lives in params-file.ts).
 */
import { NbcArgError } from '../errors.js';
import { ODIN_COMPUTE, SEED000_COMPUTE } from './app-compute.js';
import type { AppCompute } from './apps.js';

export interface LogGOPS {
  L: number;
  o: number;
  g: number;
  G: number;
  O: number;
  S: number;
  /**
   * The receiver's CPU overhead per message where it differs from o (optional; absent: o). A
   * calibration of the network path splits the one-way time this way: L is what the barrier
   * spread shows (barrierSpreadUs), the send's o is measured, and the receiver pays the rest.
   */
  oRecv?: number;
  /**
   * Jitter (optional): the path's one-way time at evenly spaced quantiles (at least 2,
   * ascending; a calibration writes 0, 1, .., 99 %) less its median, us. With it, nbcbench
   * timing (afterBarrier) draws each message's flight from L + J (linear between quantiles,
   * never below 0) over many runs.
   */
  J?: number[];
  /**
   * The size-dependent part (optional; absent: none), as PLogP measures it (Kielmann, Bal,
   * Verstoep, "Fast Measurement of LogP Parameters for Message Passing Platforms", IPDPS 2000
   * workshops): at each of `bytes` (ascending), what a message of that size costs one way beyond
   * the linear model above, us (`us`, same length; may be negative). Linear between the sizes,
   * the nearest end's value outside them. Half is the sender's CPU before the message leaves,
   * half the receiver's as it takes it in. A calibration writes the ping-pong's residuals: on
   * shared memory a copy of a few cache lines costs far more per byte than a long one, whose
   * lines the hardware prefetches (1 KiB measured 0.77 us above 1 byte, 16 KiB 2.4 us).
   */
  X?: { bytes: number[]; us: number[] };
  /**
   * Wake-up (optional; absent: 0): on a shared host (SimParams.hostCores) what a message, a
   * rendezvous request or a clear-to-send costs a rank that had nothing left to do when it
   * came (it had given up its core), us, before the rank handles it: the context switch and
   * time slice that bring it back. A rank still busy pays none. It is core time, so the ranks
   * of a crowded host queue for it: a round in which every rank waits costs each core its
   * ranks' wake-ups one after the other. A calibration's crowd levels carry it (the share of
   * their extra latency that their barriers' measured spread allows); a host with a core per
   * rank pays none.
   */
  W?: number;
  /**
   * Injector slack (optional; absent: 0): how much queued work an injector takes on without
   * delaying the next message, us. Seed 004's fit of a one-to-all scatter (Sec. 5,
   * T = (n - 1) T_startup + T_tx + C) has C = -10 us: "the serialization overhead is not present
   * for all the transactions", the HCA's several DMA engines overlapping the first start-ups.
   * A message then goes (is sent, or taken in) once the injector's backlog (g + (s-1)G per
   * message before it) is down to this much, where without slack it waits for the whole backlog.
   */
  slack?: number;
  /**
   * The per-byte costs of a payload the call did not write (optional; absent: G, O and X as
   * above): a collective's send from its input buffer, which a benchmark loop leaves unchanged,
   * so its lines sit cached on both cores and a shared-memory copy of it runs at cache speed,
   * where data just written (received, reduced, copied) moves from the core that wrote it. A
   * calibration measures it on shared memory by ping-ponging an unchanged payload beside a
   * fresh one (Program.cached says which sends it applies to).
   */
  cached?: { G: number; O: number; X?: { bytes: number[]; us: number[] } };
  /**
   * Lent memory (optional; absent: free): a send of more than `above` bytes on this path lends
   * its buffer (shared memory's rendezvous: the receiver copies straight out of it, so the
   * receiver's core then holds those lines, and the sender's core must take each back before
   * it writes it). The sender's later writes into what it lent cost its core more per byte than
   * the same writes elsewhere: `foldUsPerByte` for a reduction (the host executor folds such a
   * region through private memory: copy out, fold, copy back, which beats an element loop
   * taking the lines back one by one), `copyUsPerByte` for a copy or a receive into it. A
   * calibration measures both on shared memory, the library's own way, beside the same writes
   * into a buffer never lent (Program.lentBytes says which writes pay, and for how many bytes).
   */
  lent?: { above: number; foldUsPerByte: number; copyUsPerByte: number };
}

/** Path `m` as it charges a payload the call did not write (LogGOPS.cached); `m` itself where it has no such costs. */
export function cachedPath(m: LogGOPS): LogGOPS {
  const c = m.cached;
  if (c === undefined) return m;
  const { X: _, cached: __, ...rest } = m;
  return { ...rest, G: c.G, O: c.O, ...(c.X === undefined ? {} : { X: c.X }) };
}

/**
 * What a reduction (`fold`) or a copy of `bytes` costs a rank's CPU, us: the kernel's speed, and
 * for the `lentBytes` of them that land in memory the rank lent, the shared-memory path's lent
 * price (LogGOPS.lent).
 */
export function localUs(params: SimParams, fold: boolean, bytes: number, lentBytes: number): number {
  const lent = params.shm.lent;
  const kernel = bytes * (fold ? params.reduceUsPerByte : params.copyUsPerByte);
  return lent === undefined || lentBytes === 0 ? kernel : kernel + lentBytes * (fold ? lent.foldUsPerByte : lent.copyUsPerByte);
}

/** What a message of `s` bytes costs on path `m` beyond the linear model (LogGOPS.X), us. */
export function sizeExtraUs(m: LogGOPS, s: number): number {
  const x = m.X;
  if (x === undefined) return 0;
  const b = x.bytes;
  const u = x.us;
  const n = b.length;
  if (s <= b[0]!) return u[0]!;
  if (s >= b[n - 1]!) return u[n - 1]!;
  let i = 1;
  while (b[i]! < s) i++;
  return u[i - 1]! + ((u[i]! - u[i - 1]!) * (s - b[i - 1]!)) / (b[i]! - b[i - 1]!);
}

/** The aggregation fabric (seed 003): a tree of radix `radix` and `levels` levels of ANs. */
export interface AggParams {
  radix: number;
  levels: number;
  /** Bytes per fragment (payloadPerSlot): larger operations are split and pipelined. */
  payload: number;
  /** Credit window per node, in fragments. */
  slots: number;
  /** What one link of the tree costs a fragment (host to AN, AN to AN), us. */
  linkUs: number;
  /** What a fragment spends at an AN once all its children's copies arrived: latency hopUs, and hopPerByteUs per byte during which the AN's ALU is busy. */
  hopUs: number;
  hopPerByteUs: number;
}

export interface SimParams {
  /** Where the numbers come from (a preset's name, or the calibration's host and date). */
  source: string;
  shm: LogGOPS;
  net: LogGOPS;
  /** The reduction kernel (sum of float64), us per byte of input. */
  reduceUsPerByte: number;
  /** A memory copy, us per byte. */
  copyUsPerByte: number;
  /** Offload and agg: a rank's cost to post a call to its node engine (the engine learns of it L(shm) later). */
  postUs: number;
  /**
   * Host executor: the library's own CPU cost per collective call on each rank (argument
   * checks, the schedule cache, the request, the progress loop's turns), paid before its
   * schedule starts. Calibrated (nbc calibrate --loggp); absent: 0.
   */
  callUs?: number;
  /**
   * The same where the call's ranks span nodes: the transport's progress and wake-ups in every
   * wait add to it. Calibrated on 2 ranks over 2 nodes; absent: callUs.
   */
  callNetUs?: number;
  /**
   * Per collective, its call cost measured as callUs is (2 ranks of one node, 8 B). A call of
   * that collective costs callUsByColl[coll] - callUs more than the allreduce's, on every path
   * (a vector collective checks and copies its count arrays, a scan keeps a running value).
   * Absent for a collective: the same as the allreduce.
   */
  callUsByColl?: Partial<Record<string, number>>;
  /**
   * Offload and two-level: what each reduction step costs a node's engine beyond the kernel
   * (seed 000's ConnectX-2 returns a step's result to its own host by a network loop-back,
   * Sec. III-B and IV). Absent: 0.
   */
  offloadReduceUs?: number;
  /**
   * Host executor: what one test() call costs the rank while it computes with a collective
   * outstanding (RunOptions.testEveryUs; seed 001's test interval). Absent: 0.
   */
  testUs?: number;
  /** What the applications' kernels cost on this machine (`nbc sim pcg|cg`, sim/apps.ts). Absent: measured when asked. */
  compute?: AppCompute;
  agg: AggParams;
  /**
   * Only a calibration of an emulated cluster writes this: how the paths behave when the
   * host's ranks outnumber its cores (`nbc calibrate --loggp` measures pairs of ranks at
   * several crowd sizes; `nbc sim --host-cores N` applies it, crowdedParams()).
   */
  crowd?: Crowd;
  /**
   * How far apart (us), beyond what the simulated barrier itself leaves them, ranks on
   * different nodes leave a barrier. The calibration measures the median spread between the
   * first and the last on the network pair (2 ranks, 2 nodes) and per crowd level; of it, the
   * path's L shows in the simulated loop (in a loop of 2-rank barriers the later rank's message
   * reaches the other L after it left), and the rest is written here (crowdedParams()
   * interpolates). nbcbench timing (afterBarrier) then starts the ranks of a layout that spans
   * nodes that much further apart. Ranks of one node are threads of one process and leave a
   * shared-memory barrier together (0 us median) while they have a core each, so such a layout
   * keeps the simulated barrier's own exits; on a crowded host they do not, and crowdedParams()
   * sets what the calibration measured on one node (Crowd, nodeBarrierSpreadUs). Absent: the
   * simulated barrier's own exits.
   */
  barrierSpreadUs?: number;
  /**
   * The ranks share one host of this many cores (an emulated cluster, as `nbc bench` runs it on
   * one machine; crowdedParams() sets it when the ranks outnumber the cores): every rank's CPU
   * work (overheads, copies, reductions, the call) also needs one of these cores, first free
   * first taken, so ranks that work at once on a crowded host queue for the cores. Absent:
   * every rank has a core of its own.
   */
  hostCores?: number;
}

/**
 * The paths of one host at several crowd sizes: with `ranks` ranks busy on its `cores` cores at
 * once (pairs exchanging messages), each path's LogGOPS as measured. A rank that waits then
 * yields its core and parks (the launcher's spin budget is 0 when ranks and node processes
 * outnumber the cores), so a message costs wake-ups and time slices, not only the path. The
 * calibration gives crowd levels no jitter (J): there the spread of a message's time is the
 * time slices of the ranks, which barrierSpreadUs holds, shared by every message of a call
 * rather than drawn for each. Of each level's latency beyond the uncrowded path's, the share
 * its barriers allow is wake-ups (LogGOPS.W), core time that the ranks queue for.
 */
export interface Crowd {
  cores: number;
  /**
   * Per level, also the barrier spread beyond the simulated loop's own (us,
   * SimParams.barrierSpreadUs), where measured: of the level's ranks on nodes of 2
   * (barrierSpreadUs), and of the level's ranks on one node (nodeBarrierSpreadUs).
   */
  levels: Array<{ ranks: number; shm: LogGOPS; net: LogGOPS; barrierSpreadUs?: number; nodeBarrierSpreadUs?: number }>;
}

export const SIM_PARAMS_VERSION = 1;

/** LogGOPS between `a` (at x = 0) and `b` (at x = 1); S from `a`; J quantile by quantile and X size by size where both have it alike, else none; W from 0 where one lacks it; cached and lent where both have them. */
function between(a: LogGOPS, b: LogGOPS, x: number): LogGOPS {
  const at = (u: number, v: number): number => u + (v - u) * x;
  const J = a.J !== undefined && b.J !== undefined && a.J.length === b.J.length ? a.J.map((u, k) => at(u, b.J![k]!)) : undefined;
  const oRecv = a.oRecv === undefined && b.oRecv === undefined ? undefined : at(a.oRecv ?? a.o, b.oRecv ?? b.o);
  const betweenX = (xa: { bytes: number[]; us: number[] }, xb: { bytes: number[]; us: number[] }): LogGOPS['X'] =>
    (xa.bytes.length === xb.bytes.length && xa.bytes.every((v, k) => v === xb.bytes[k]) ? { bytes: xa.bytes, us: xa.us.map((u, k) => at(u, xb.us[k]!)) } : undefined);
  const X = a.X !== undefined && b.X !== undefined ? betweenX(a.X, b.X) : undefined;
  const W = a.W === undefined && b.W === undefined ? undefined : at(a.W ?? 0, b.W ?? 0);
  const slack = a.slack === undefined && b.slack === undefined ? undefined : at(a.slack ?? 0, b.slack ?? 0);
  const ca = a.cached;
  const cb = b.cached;
  const cachedX = ca?.X !== undefined && cb?.X !== undefined ? betweenX(ca.X, cb.X) : undefined;
  const cached = ca === undefined || cb === undefined ? undefined
    : { G: at(ca.G, cb.G), O: at(ca.O, cb.O), ...(cachedX === undefined ? {} : { X: cachedX }) };
  const lent = a.lent === undefined || b.lent === undefined ? undefined
    : { above: a.lent.above, foldUsPerByte: at(a.lent.foldUsPerByte, b.lent.foldUsPerByte), copyUsPerByte: at(a.lent.copyUsPerByte, b.lent.copyUsPerByte) };
  return {
    L: at(a.L, b.L), o: at(a.o, b.o), g: at(a.g, b.g), G: at(a.G, b.G), O: at(a.O, b.O), S: a.S,
    ...(oRecv === undefined ? {} : { oRecv }), ...(J === undefined ? {} : { J }), ...(X === undefined ? {} : { X }), ...(W === undefined ? {} : { W }),
    ...(slack === undefined ? {} : { slack }),
    ...(cached === undefined ? {} : { cached }), ...(lent === undefined ? {} : { lent }),
  };
}

/**
 * The parameters for `ranks` ranks of an emulated cluster whose every node shares one host of
 * `hostCores` cores (as `nbc bench` runs it): unchanged while the ranks fit the cores, else the
 * calibration's crowd levels at the same ranks per core, interpolated linearly between the two
 * nearest levels (the base parameters count as the level of one rank per core) and held at
 * the last level beyond it. The barrier spread is the levels' across nodes (barrierSpreadUs)
 * where the ranks span nodes (`ppn` < `ranks`), else their spread on one node
 * (nodeBarrierSpreadUs; none where a level lacks it). `note` says what was done (for the
 * user's stderr).
 */
export function crowdedParams(params: SimParams, ranks: number, hostCores: number, ppn: number): { params: SimParams; note: string } {
  const perCore = ranks / hostCores;
  if (perCore <= 1) return { params, note: `${ranks} ranks fit ${hostCores} cores: no crowding` };
  const crowd = params.crowd;
  if (crowd === undefined || crowd.levels.length === 0) {
    return { params: { ...params, hostCores }, note: `${ranks} ranks on ${hostCores} cores, but the parameters (${params.source}) have no crowd levels: the ranks share the cores, their messages are priced as on an idle host (run nbc calibrate --loggp on the host)` };
  }
  // One node: an uncrowded one leaves a barrier together (SimParams.barrierSpreadUs).
  const oneNode = ppn >= ranks;
  const points = [
    { perCore: 1, shm: params.shm, net: params.net, spread: oneNode ? 0 : params.barrierSpreadUs ?? 0 },
    ...crowd.levels.map((l) => ({ perCore: l.ranks / crowd.cores, shm: l.shm, net: l.net, spread: (oneNode ? l.nodeBarrierSpreadUs : l.barrierSpreadUs) ?? 0 })),
  ].sort((x, y) => x.perCore - y.perCore);
  const spread = (us: number): { barrierSpreadUs?: number } => (us > 0 ? { barrierSpreadUs: us } : {});
  let hi = points.findIndex((p) => p.perCore >= perCore);
  if (hi === -1) {
    const last = points[points.length - 1]!;
    return { params: { ...params, shm: last.shm, net: last.net, ...spread(last.spread), hostCores }, note: `${perCore} ranks per core: the last crowd level measured is ${last.perCore}; its parameters are used` };
  }
  if (hi === 0) hi = 1;
  const lo = points[hi - 1]!;
  const up = points[hi]!;
  const x = up.perCore === lo.perCore ? 1 : (perCore - lo.perCore) / (up.perCore - lo.perCore);
  return {
    params: { ...params, shm: between(lo.shm, up.shm, x), net: between(lo.net, up.net, x), ...spread(lo.spread + (up.spread - lo.spread) * x), hostCores },
    note: `${ranks} ranks on ${hostCores} cores (${perCore} per core): crowd levels ${lo.perCore} and ${up.perCore} per core, interpolated`,
  };
}

/** The file `nbc calibrate --loggp` writes and `nbc sim` reads. */
export interface SimParamsFile {
  version: number;
  measuredAt: string;
  host: string;
  params: SimParams;
  [extra: string]: unknown;
}

/**
 * Software aggregation daemons on this machine (docs/agg.md): a fragment crosses a TCP
 * connection between processes (tens of us on loopback) and a JS reduction. Rough figures of
 * the reference VM, used until calibration measures them.
 */
const SOFTWARE_AGG: AggParams = { radix: 4, levels: 2, payload: 256, slots: 64, linkUs: 25, hopUs: 5, hopPerByteUs: 1 / 1000 };

/**
 * Until `nbc calibrate --loggp` has run: the 2-core reference VM (Node 20), README
 * "Benchmarks" and BENCHMARKS.md.
 * - shm: one way 8 B 0.33 us (o + L + o with o = 0.1, L = 0.13), 28.6 GB/s at 4 MiB, split
 *   evenly between the wire (G) and the receiver's copy (O); S = NBC_EAGER_LIMIT's default 8192.
 * - net: UCX, one way 8 B 12 us (o = 2, L = 8), 1.6-3.1 GB/s at 1 MiB (G = 1/2000 us/B).
 * - reduce: a sum of float64 in JS runs at about 2 GB/s on this VM (ops/kernels.ts loops);
 *   copy: TypedArray.set at about 10 GB/s.
 * - postUs: an offloaded post is one ring record to the engine (about a shm send).
 */
export const DEFAULT_SIM_PARAMS: SimParams = {
  source: 'default (2-core reference VM figures; run nbc calibrate --loggp to measure this machine)',
  shm: { L: 0.13, o: 0.1, g: 0.1, G: 1 / 57_000, O: 1 / 57_000, S: 8192 },
  net: { L: 8, o: 2, g: 2, G: 1 / 2000, O: 0, S: 8192 },
  reduceUsPerByte: 1 / 2000,
  copyUsPerByte: 1 / 10_000,
  postUs: 0.3,
  agg: SOFTWARE_AGG,
};

/**
 * Presets for the seeds' hardware. Every number says where it comes from; "assumed" marks a
 * figure neither the seed nor a measurement we can cite gives, chosen as typical of the era.
 */
export const PRESETS: Record<string, SimParams> = {
  /**
   * Seed 000 (Kandalla et al., IPDPS 2012): 8-core 2.53 GHz Xeon nodes (two sockets of four),
   * MT26428 QDR ConnectX-2 HCAs, one 171-port QDR switch.
   */
  'qdr-cx2': {
    source: 'preset qdr-cx2 (seed 000: QDR InfiniBand, ConnectX-2, 8-core 2.53 GHz Xeon nodes)',
    // net: seed 000 Sec. II-A: "36 Gbps end-to-end bandwidth and about 1.0 to 1.5 us latency":
    // G = 8 bit / 36 Gbit/s; one way 1.3 us = 2o + L with o = 0.3 (assumed: verbs-level send
    // and completion costs of the time); g = 0.3 (assumed: one message per o on the HCA);
    // S = 8192 (assumed: MVAPICH2's eager threshold on QDR was 8-12 KiB).
    net: { L: 0.7, o: 0.3, g: 0.3, G: 8 / 36_000, O: 0, S: 8192 },
    // shm: assumed, typical MVAPICH2 intra-node figures on Nehalem/Westmere (0.3-0.5 us one
    // way, ~5 GB/s copies).
    shm: { L: 0.2, o: 0.1, g: 0.1, G: 1 / 10_000, O: 1 / 10_000, S: 8192 },
    // reduce: assumed memory-bound sum of doubles on one 2.53 GHz core, ~4 GB/s; copy 5 GB/s.
    reduceUsPerByte: 1 / 4000,
    copyUsPerByte: 1 / 5000,
    // The ConnectX-2 task list is posted by one doorbell write: assumed 0.5 us.
    postUs: 0.5,
    // Each offloaded reduction step's network loop-back (Sec. III-B, IV): Sec. VII-A gives the
    // most expensive offloaded Iallreduce of one double, the flat recursive doubling on 256
    // processes, as about 250 us (Fig. 8a). A node's 8 processes loop back through the one HCA
    // they share (the model's engine), 68 reductions a node in that call, which takes 14.2 us
    // without them: (250 - 14.2) / 68 = 3.45 us a loop-back. Fig. 8a at its other process
    // counts is not in the text: this is its one figure, taken at one process count.
    offloadReduceUs: 3.45,
    // The applications' kernels: Table I's phases (app-compute.ts SEED000_COMPUTE).
    compute: SEED000_COMPUTE,
    agg: SOFTWARE_AGG,
  },
  /**
   * Seed 003 (Graham et al., SHArP, COM-HPC 2016): 128 dual-socket 2.6 GHz Haswell hosts,
   * ConnectX-4 HCAs, SwitchIB-2 switches, two-level fat tree of 8 leaf switches, 100 Gb/s links.
   */
  switchib2: {
    source: 'preset switchib2 (seed 003: SwitchIB-2 fat tree, ConnectX-4, 100 Gb/s, 128 hosts)',
    // net: G = 8 bit / 100 Gbit/s (Sec. VI-A). Table IV/V: host-based 8 B allreduce on 128
    // hosts 5.82-6.01 us = 7 rounds of recursive doubling, 0.83-0.86 us a round = 2o + L +
    // a reduction of 8 B; o = 0.15 (assumed), so L = 0.55. g = 0.2 (assumed; ConnectX-4 message
    // rates of ~10^7/s per port put it below that); S = 16384 (assumed, HPC-X UCX's rndv
    // threshold of the time).
    net: { L: 0.55, o: 0.15, g: 0.2, G: 8 / 100_000, O: 0, S: 16_384 },
    // shm: assumed (Haswell, ~0.2 us one way, ~8 GB/s copies).
    shm: { L: 0.1, o: 0.05, g: 0.05, G: 1 / 16_000, O: 1 / 16_000, S: 8192 },
    reduceUsPerByte: 1 / 8000, // assumed: AVX2 sum of doubles, memory bound
    copyUsPerByte: 1 / 10_000, // assumed
    postUs: 0.2, // Table III: the MPI layer adds 0.2-0.4 us to the native SHArP call
    agg: {
      // Sec. VI-A: 8 leaf switches under one root, up to 16 hosts per leaf at 128 hosts:
      // radix 16, two levels (nodes n -> leaf floor(n/16)).
      radix: 16, levels: 2,
      // Sec. VI-B: "the switch can perform reductions on payloads of up to 256 bytes";
      // "hundreds of outstanding aggregation operations" per AN (Sec. IV): 64 (assumed).
      payload: 256, slots: 64,
      // Table I: native 0-byte SHArP allreduce on 128 hosts 2.63 us = host post and completion
      // (2 x 0.15) + 4 link traversals (host-leaf, leaf-root, and down) + 2 AN reductions:
      // linkUs 0.2 (assumed: ~0.1 us SwitchIB-2 port-to-port plus wire), hopUs 0.77.
      linkUs: 0.2, hopUs: 0.77,
      // Table I: 8 B -> 256 B adds 1.42 us on 128 hosts, over 2 AN levels: 0.0029 us/B per AN.
      hopPerByteUs: 0.0029,
    },
  },
  /**
   * Seed 004 (Mamidala et al., OSU-CISRC-6/07-TR49): cluster A, dual quad-core Xeon
   * Clovertown nodes, MT25208 HCAs in DDR mode.
   */
  'clovertown-ddr': {
    source: 'preset clovertown-ddr (seed 004: Clovertown 2x4-core nodes, MT25208 DDR InfiniBand)',
    // net: Sec. 5 fits T_startup = 2.098 us (the cost of serialising one more message's
    // start-up on the HCA: LogGP's g), beta = 0.000935 us/B (G) and C = -10 us, the start-ups
    // the HCA's DMA engines overlap (slack 10; applied to the receiving side as well, assumed:
    // the text speaks of "network transactions"). L, o: assumed from MVAPICH's published DDR
    // one-way latency of the time, ~3 us = 2o + L with o = 0.5. S = 8192 (assumed, MVAPICH's
    // eager threshold).
    net: { L: 2.0, o: 0.5, g: 2.098, G: 0.000935, O: 0, S: 8192, slack: 10 },
    // shm: assumed, MVAPICH shared-memory channel on Clovertown (~0.5 us one way, ~2 GB/s
    // across the front-side bus).
    shm: { L: 0.3, o: 0.1, g: 0.1, G: 1 / 4000, O: 1 / 4000, S: 8192 },
    reduceUsPerByte: 1 / 2000, // assumed: SSE2 sum of doubles over the FSB
    copyUsPerByte: 1 / 2000, // assumed
    postUs: 0.5, // assumed
    agg: SOFTWARE_AGG,
  },
};

/**
 * Seed 001 (Hoefler, Gottschling, Lumsdaine, Rehm, 2007): the odin cluster, 128 dual 2 GHz
 * Opteron 246 nodes with Gigabit Ethernet and InfiniBand. The paper gives neither network's
 * figures; both are the era's typical MPI numbers (assumed), and the compute model is assumed
 * too (app-compute.ts ODIN_COMPUTE). One process a node, as the paper's runs.
 */
const ODIN_BASE = {
  // shm: assumed (one process a node: barely used).
  shm: { L: 0.5, o: 0.2, g: 0.2, G: 1 / 2000, O: 1 / 2000, S: 8192 },
  reduceUsPerByte: 1 / 1000, // assumed: 2 GHz Opteron, sum of doubles
  copyUsPerByte: 1 / 1500, // assumed
  postUs: 1, // no offload on odin; assumed
  // LibNBC's NBC_TEST: an MPI_Testall over a round's requests: assumed 1 us.
  testUs: 1,
  compute: ODIN_COMPUTE,
  agg: SOFTWARE_AGG,
};
PRESETS['odin-gige'] = {
  source: 'preset odin-gige (seed 001: odin, 2 GHz Opteron 246 nodes, Gigabit Ethernet; figures assumed)',
  // assumed: MPI over TCP on GigE of 2006, ~45 us one way (2o + L, o = 10 us of kernel TCP
  // stack a side), 1 Gbit/s (G = 8 bit / 1 Gbit/s, of which ~110 MB/s usable: 0.009 us/B);
  // S = 65536 (assumed: Open MPI's TCP eager limit of the time was 64 KiB).
  net: { L: 25, o: 10, g: 10, G: 0.009, O: 0, S: 65_536 },
  ...ODIN_BASE,
};
PRESETS['odin-ib'] = {
  source: 'preset odin-ib (seed 001: odin, 2 GHz Opteron 246 nodes, SDR InfiniBand; figures assumed)',
  // assumed: MPI over SDR InfiniBand (InfiniHost) of 2006, ~5 us one way (o = 1), ~900 MB/s;
  // S = 12288 (assumed: the era's eager limits).
  net: { L: 3, o: 1, g: 1, G: 1 / 900, O: 0, S: 12_288 },
  ...ODIN_BASE,
};

const PATH_FIELDS = ['L', 'o', 'g', 'G', 'O', 'S'] as const;
const AGG_FIELDS = ['radix', 'levels', 'payload', 'slots', 'linkUs', 'hopUs', 'hopPerByteUs'] as const;

function finiteNonNegative(v: unknown, where: string, field: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${field} is ${JSON.stringify(v)}; expected a finite number >= 0`);
  }
  return v;
}

function positiveInteger(v: unknown, where: string, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${field} is ${JSON.stringify(v)}; expected an integer >= 1`);
  }
  return v;
}

/** One path's LogGOPS, each field finite and >= 0; `name` is where it sits in the file. */
function parsePath(value: unknown, where: string, name: string): LogGOPS {
  const p = value as Record<string, unknown> | null | undefined;
  if (p === undefined || p === null || typeof p !== 'object') {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${name} is missing; expected { L, o, g, G, O, S }`);
  }
  const out = {} as LogGOPS;
  for (const f of PATH_FIELDS) out[f] = finiteNonNegative(p[f], where, `${name}.${f}`);
  if (p.oRecv !== undefined) out.oRecv = finiteNonNegative(p.oRecv, where, `${name}.oRecv`);
  if (p.W !== undefined) out.W = finiteNonNegative(p.W, where, `${name}.W`);
  if (p.slack !== undefined) out.slack = finiteNonNegative(p.slack, where, `${name}.slack`);
  if (p.J !== undefined) {
    const J = p.J;
    if (!Array.isArray(J) || J.length < 2 || !J.every((v, k) => typeof v === 'number' && Number.isFinite(v) && (k === 0 || v >= (J[k - 1] as number)))) {
      throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${name}.J is ${JSON.stringify(J)}; expected at least 2 finite numbers in ascending order (us)`);
    }
    out.J = J as number[];
  }
  if (p.X !== undefined) {
    out.X = parseX(p.X, where, `${name}.X`);
  }
  if (p.cached !== undefined) {
    const c = p.cached as Record<string, unknown> | null;
    if (c === null || typeof c !== 'object') {
      throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${name}.cached is ${JSON.stringify(p.cached)}; expected { G, O } and optionally X`);
    }
    out.cached = {
      G: finiteNonNegative(c.G, where, `${name}.cached.G`), O: finiteNonNegative(c.O, where, `${name}.cached.O`),
      ...(c.X === undefined ? {} : { X: parseX(c.X, where, `${name}.cached.X`) }),
    };
  }
  if (p.lent !== undefined) {
    const l = p.lent as Record<string, unknown> | null;
    if (l === null || typeof l !== 'object') {
      throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${name}.lent is ${JSON.stringify(p.lent)}; expected { above, foldUsPerByte, copyUsPerByte }`);
    }
    out.lent = {
      above: finiteNonNegative(l.above, where, `${name}.lent.above`),
      foldUsPerByte: finiteNonNegative(l.foldUsPerByte, where, `${name}.lent.foldUsPerByte`),
      copyUsPerByte: finiteNonNegative(l.copyUsPerByte, where, `${name}.lent.copyUsPerByte`),
    };
  }
  return out;
}

/** A size-dependent part (LogGOPS.X): sizes ascending, as many finite costs. */
function parseX(value: unknown, where: string, name: string): { bytes: number[]; us: number[] } {
  const X = value as { bytes?: unknown; us?: unknown } | null;
  const bytes = X?.bytes;
  const us = X?.us;
  const ok = Array.isArray(bytes) && Array.isArray(us) && bytes.length >= 1 && us.length === bytes.length &&
    bytes.every((v, k) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && (k === 0 || v > (bytes[k - 1] as number))) &&
    us.every((v) => typeof v === 'number' && Number.isFinite(v));
  if (!ok) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: ${name} is ${JSON.stringify(value)}; expected { bytes, us }: message sizes (integers, ascending) and as many finite extra costs (us)`);
  }
  return { bytes: bytes as number[], us: us as number[] };
}

/** Validates simulator parameters (from a file, a preset or a caller), naming the bad field. */
export function parseSimParams(value: unknown, where: string): SimParams {
  const o = value as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object') throw new NbcArgError(`Cannot use the simulator parameters from ${where}: expected an object`);
  const path = (name: 'shm' | 'net'): LogGOPS => parsePath(o[name], where, name);
  const a = o.agg as Record<string, unknown> | undefined;
  if (a === undefined || a === null || typeof a !== 'object') {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: agg is missing; expected { ${AGG_FIELDS.join(', ')} }`);
  }
  const agg = {} as AggParams;
  for (const f of AGG_FIELDS) agg[f] = finiteNonNegative(a[f], where, `agg.${f}`);
  if (!Number.isInteger(agg.radix) || agg.radix < 2 || !Number.isInteger(agg.levels) || agg.levels < 1 ||
    !Number.isInteger(agg.payload) || agg.payload < 8 || !Number.isInteger(agg.slots) || agg.slots < 1) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: agg radix ${agg.radix}, levels ${agg.levels}, payload ${agg.payload}, slots ${agg.slots}; expected integers radix >= 2, levels >= 1, payload >= 8, slots >= 1`);
  }
  return {
    source: typeof o.source === 'string' ? o.source : where,
    shm: path('shm'),
    net: path('net'),
    reduceUsPerByte: finiteNonNegative(o.reduceUsPerByte, where, 'reduceUsPerByte'),
    copyUsPerByte: finiteNonNegative(o.copyUsPerByte, where, 'copyUsPerByte'),
    postUs: finiteNonNegative(o.postUs, where, 'postUs'),
    agg,
    ...(o.crowd === undefined ? {} : { crowd: parseCrowd(o.crowd, where) }),
    ...(o.barrierSpreadUs === undefined ? {} : { barrierSpreadUs: finiteNonNegative(o.barrierSpreadUs, where, 'barrierSpreadUs') }),
    ...(o.callUs === undefined ? {} : { callUs: finiteNonNegative(o.callUs, where, 'callUs') }),
    ...(o.callNetUs === undefined ? {} : { callNetUs: finiteNonNegative(o.callNetUs, where, 'callNetUs') }),
    ...(o.callUsByColl === undefined ? {} : { callUsByColl: parseCallUsByColl(o.callUsByColl, where) }),
    ...(o.hostCores === undefined ? {} : { hostCores: positiveInteger(o.hostCores, where, 'hostCores') }),
    ...(o.testUs === undefined ? {} : { testUs: finiteNonNegative(o.testUs, where, 'testUs') }),
    ...(o.offloadReduceUs === undefined ? {} : { offloadReduceUs: finiteNonNegative(o.offloadReduceUs, where, 'offloadReduceUs') }),
    ...(o.compute === undefined ? {} : { compute: parseCompute(o.compute, where) }),
  };
}

const COMPUTE_FIELDS = ['matvec27RowUs', 'matvec7RowUs', 'dotRowUs', 'axpyRowUs', 'scaleRowUs', 'divideRowUs', 'packUs', 'spread'] as const;

function parseCompute(value: unknown, where: string): AppCompute {
  const c = value as Record<string, unknown> | null;
  if (c === null || typeof c !== 'object' || Array.isArray(c)) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: compute is ${JSON.stringify(value)}; expected { source, ${COMPUTE_FIELDS.join(', ')}, iterations: { pcg, cg } }`);
  }
  const it = c.iterations as Record<string, unknown> | null | undefined;
  if (it === null || typeof it !== 'object') {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: compute.iterations is ${JSON.stringify(it)}; expected { pcg, cg }`);
  }
  const out = {
    source: typeof c.source === 'string' ? c.source : where,
    iterations: { pcg: finiteNonNegative(it.pcg, where, 'compute.iterations.pcg'), cg: finiteNonNegative(it.cg, where, 'compute.iterations.cg') },
  } as AppCompute;
  for (const f of COMPUTE_FIELDS) out[f] = finiteNonNegative(c[f], where, `compute.${f}`);
  return out;
}

function parseCallUsByColl(value: unknown, where: string): Partial<Record<string, number>> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: callUsByColl is ${JSON.stringify(value)}; expected { collective: us, ... }`);
  }
  const out: Partial<Record<string, number>> = {};
  for (const [coll, us] of Object.entries(value)) out[coll] = finiteNonNegative(us, where, `callUsByColl.${coll}`);
  return out;
}

function parseCrowd(value: unknown, where: string): Crowd {
  const c = value as { cores?: unknown; levels?: unknown } | null;
  if (c === null || typeof c !== 'object' || !Array.isArray(c.levels)) {
    throw new NbcArgError(`Cannot use the simulator parameters from ${where}: crowd is ${JSON.stringify(value)}; expected { cores, levels: [{ ranks, shm, net }] }`);
  }
  const cores = finiteNonNegative(c.cores, where, 'crowd.cores');
  if (!Number.isInteger(cores) || cores < 1) throw new NbcArgError(`Cannot use the simulator parameters from ${where}: crowd.cores is ${cores}; expected an integer >= 1`);
  const levels = c.levels.map((l: unknown, i: number) => {
    const v = l as Record<string, unknown> | null;
    if (v === null || typeof v !== 'object') throw new NbcArgError(`Cannot use the simulator parameters from ${where}: crowd.levels[${i}] is not an object; expected { ranks, shm, net }`);
    const ranks = finiteNonNegative(v.ranks, where, `crowd.levels[${i}].ranks`);
    if (!Number.isInteger(ranks) || ranks <= cores) throw new NbcArgError(`Cannot use the simulator parameters from ${where}: crowd.levels[${i}].ranks is ${ranks}; expected an integer above crowd.cores (${cores})`);
    return {
      ranks, shm: parsePath(v.shm, where, `crowd.levels[${i}].shm`), net: parsePath(v.net, where, `crowd.levels[${i}].net`),
      ...(v.barrierSpreadUs === undefined ? {} : { barrierSpreadUs: finiteNonNegative(v.barrierSpreadUs, where, `crowd.levels[${i}].barrierSpreadUs`) }),
      ...(v.nodeBarrierSpreadUs === undefined ? {} : { nodeBarrierSpreadUs: finiteNonNegative(v.nodeBarrierSpreadUs, where, `crowd.levels[${i}].nodeBarrierSpreadUs`) }),
    };
  });
  return { cores, levels };
}

/** Parses a params file's text (or object), checking its version. */
export function parseSimParamsFile(text: string | unknown, where: string): SimParamsFile {
  let v: unknown = text;
  if (typeof text === 'string') {
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw new NbcArgError(`Cannot read the simulator parameters from ${where}: ${(err as Error).message}; expected JSON`, { cause: err });
    }
  }
  const f = v as Record<string, unknown> | null;
  if (f === null || typeof f !== 'object' || f.version !== SIM_PARAMS_VERSION) {
    throw new NbcArgError(`Cannot read the simulator parameters from ${where}: version is ${JSON.stringify(f?.version)}; expected ${SIM_PARAMS_VERSION}`);
  }
  return { ...f, version: SIM_PARAMS_VERSION, measuredAt: String(f.measuredAt), host: String(f.host), params: parseSimParams(f.params, where) };
}
