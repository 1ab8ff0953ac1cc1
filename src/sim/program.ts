/**
 * What the simulator runs: the very schedules the library would build for a call, for every
 * rank (or every node engine), flattened into one set of typed arrays.
 *
 * The schedules come from the library's own selection (`select`, with the executor, the
 * communicator's nodes and the cost model, as `Communicator` plans a call) and its own
 * builders, fed the same shape a rank would pass (coll/plan-*.ts: Float64 data, op sum, the
 * topology of `ppn` ranks per node, the leaders' algorithm of `hier`). Composite algorithms
 * (the offload executor's `two-level`, the `agg` fabric) are the engines' schedule from
 * `interNodeSchedule`, plus what the engine does around it (fold, pack, write back), as
 * sched/two-level.ts plans it.
 *
 * Storage: every rank's schedule is built, copied into global struct-of-arrays (kind, peer,
 * bytes, sub-tag per action; round boundaries; a DAG's inverted edges) and dropped, so 10^5
 * ranks of recursive doubling are a few typed arrays of ~6 million entries, not 10^5 objects.
 */
import { DEFAULT_CONFIG, type CoreConfig } from '../config.js';
import { NbcArgError } from '../errors.js';
import { select, ALGORITHMS, interNodeSchedule, type Choice, type CollName } from '../coll/select.js';
import { shape, topologyOf, type CollShape, type Topology } from '../coll/shape.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, grown, type Schedule } from '../sched/schedule.js';
import { engineSteps, TL_AGG, TL_ALLREDUCE, TL_REDUCE, type EngineStep, type EngineWork } from '../sched/two-level.js';
import type { SimParams } from './params.js';

/** Who runs the schedules: each rank (host), its node's engine (offload), or the engines among themselves (two-level, agg). */
export type SimMode = 'host' | 'offload' | 'two-level' | 'agg';
/** The executors `nbc sim` takes: the library's three, and `hier` (the host executor with the `hier` algorithm). */
export type SimExecutor = 'host' | 'offload' | 'agg' | 'hier';
export const SIM_EXECUTORS: readonly SimExecutor[] = ['host', 'offload', 'agg', 'hier'];

/** Collectives the simulator builds (every one nbcbench measures except the neighbourhood ones). */
export const SIM_COLLS: readonly CollName[] = [
  'barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'gatherv', 'scatter', 'scatterv', 'allgather', 'allgatherv',
  'alltoall', 'alltoallv', 'reduceScatterBlock', 'reduceScatter', 'scan', 'exscan',
];

const FLOAT64 = 8;
const OP_SUM = 0;

export interface CallSpec {
  coll: CollName;
  ranks: number;
  ppn: number;
  /** One rank's block in bytes, as nbcbench passes it (rounded down to whole float64s, at least one). */
  bytes: number;
  algorithm?: string;
  executor: SimExecutor;
  /** Selection's configuration (cost model); default: the library's defaults on a host with a core per rank. */
  config?: CoreConfig;
  /**
   * Where the call's input lies: 'cached' (default), as nbcbench's loop leaves it, unchanged
   * since the last call, so a send of it is priced by the path's cached costs (LogGOPS.cached);
   * 'fresh', just computed, as an application's data is.
   */
  inputs?: 'cached' | 'fresh';
  /** A non-blocking call (`nbc sim i<coll>`, Overlap-PCG's inner products): selection sees it as the library does. */
  nonblocking?: boolean;
}

export interface Program {
  coll: CollName;
  /** The algorithm selection chose (with the leaders' one for hier), e.g. 'hier(recursive-doubling)'. */
  algorithm: string;
  mode: SimMode;
  ranks: number;
  nodes: number;
  bytes: number;
  nodeOfRank: Int32Array;
  /** Ranks of each node: node k holds ranks nodeStart[k] .. nodeStart[k+1]-1. */
  nodeStart: Int32Array;
  /** Schedule runners: ranks (host, offload) or node engines (two-level, agg). */
  procs: number;
  procNode: Int32Array;
  /** CPU of each proc: ranks are CPUs 0..ranks-1, node k's engine is CPU ranks + k. */
  procCpu: Int32Array;
  nActions: number;
  kind: Int8Array;
  /** Send/recv: the peer proc; reduce/copy: -1. */
  peer: Int32Array;
  bytesOf: Int32Array;
  /**
   * 1 for a send whose payload the call did not write before it (the proc's own schedule wrote
   * nothing that overlaps it: the caller's input as it was), priced by the path's cached costs
   * (LogGOPS.cached); 0 otherwise, and for every action of an engine's schedule.
   */
  cached: Int8Array;
  sub: Int8Array;
  /**
   * Per receive, reduction and copy: how many of the bytes it writes lie in memory its proc
   * has lent (sent by rendezvous to a peer of its node: LogGOPS.lent) and not written since,
   * which the engine prices at the shared-memory path's LogGOPS.lent; 0 for every other
   * action, and everywhere where the parameters have no lent price or the procs are engines.
   * With cached inputs (a benchmark loop), what the previous call lent counts too: the loop's
   * steady state.
   */
  lentBytes: Int32Array;
  actProc: Int32Array;
  /** Proc p's actions are procAct[p] .. procAct[p+1]-1. */
  procAct: Int32Array;
  /** Proc p's round boundaries (global action indices) are roundBound[procRound[p] .. procRound[p+1]]. */
  procRound: Int32Array;
  roundBound: Int32Array;
  /** Procs whose schedule is a DAG. */
  procDag: Uint8Array;
  /** DAG actions: how many actions each waits for, and who waits for it (depList[depStart[i] .. depStart[i+1]]). */
  depCount: Int32Array;
  depStart: Int32Array;
  depList: Int32Array;
  /** Two-level and agg: the engine's own work per node before the exchange (fold, pack) and after (write back), us. */
  foldUs: Float64Array;
  writebackUs: Float64Array;
  /** Agg: the fabric's fragment bytes, and for reduce only the root's node gets data back. */
  aggBytes: number;
}

/**
 * A growable column (Int32, or Int8 for kinds and sub-tags), doubled as it fills. Rows are
 * appended in bulk (a schedule's column at a time) where they can be; done() hands out the
 * filled part as a view, without a copy (the unfilled rest of a doubled buffer was never
 * touched, so it costs address space, not memory).
 */
class Column<T extends Int32Array | Int8Array> {
  n = 0;
  constructor(public data: T) {}
  /** Room for `extra` more rows. */
  reserve(extra: number): void {
    if (this.n + extra > this.data.length) this.data = grown(this.data, Math.max(this.data.length * 2, this.n + extra));
  }
  push(v: number): void {
    if (this.n === this.data.length) this.reserve(1);
    this.data[this.n++] = v;
  }
  /** Appends the first `count` rows of `src`. */
  append(src: ArrayLike<number>, count: number): void {
    this.reserve(count);
    this.data.set(src.length === count ? src : (src as T).subarray(0, count), this.n);
    this.n += count;
  }
  /** Appends `count` rows of `v`. */
  fill(v: number, count: number): void {
    this.reserve(count);
    this.data.fill(v, this.n, this.n + count);
    this.n += count;
  }
  done(): T {
    return this.data.subarray(0, this.n) as T;
  }
}

/** The bytes nbcbench's float64 buffers hold for a requested size. */
export function benchBytes(bytes: number): number {
  return Math.max(1, Math.floor(bytes / 8)) * 8;
}

/** The shape a rank of `coll` passes its planner (coll/plan-*.ts), for float64 sum. */
function rankShape(coll: CollName, rank: number, size: number, B: number, vec: Int32Array | undefined, displs: Int32Array | undefined): CollShape {
  const red = { dtype: FLOAT64, op: OP_SUM, commutative: true, esize: 8 };
  switch (coll) {
    case 'barrier': return shape({ rank, size });
    case 'bcast': return shape({ rank, size, bytes: B, esize: 8 });
    case 'reduce': case 'allreduce': case 'scan': case 'exscan': return shape({ rank, size, ...red, bytes: B });
    case 'gather': case 'scatter': case 'allgather': case 'alltoall': return shape({ rank, size, bytes: B });
    case 'gatherv': case 'scatterv': case 'allgatherv': return shape({ rank, size, bytes: B, counts: vec, displs });
    case 'alltoallv': return shape({ rank, size, counts: vec, displs, rcounts: vec, rdispls: displs });
    case 'reduceScatterBlock': case 'reduceScatter': return shape({ rank, size, ...red, bytes: B * size, counts: vec });
    default: throw new NbcArgError(`Cannot simulate ${coll}: expected one of ${SIM_COLLS.join(', ')}`);
  }
}

/** The library's choice for this call (select.ts, as Communicator.choose calls it), and the executor's mode. */
export function chooseFor(spec: CallSpec, topo: Topology): Choice & { mode: SimMode } {
  const config = spec.config ?? DEFAULT_CONFIG;
  const executor = spec.executor === 'hier' ? 'host' : spec.executor;
  const algorithm = spec.executor === 'hier' ? spec.algorithm ?? 'hier' : spec.algorithm;
  if (spec.executor === 'hier' && ALGORITHMS[spec.coll].hier === undefined) {
    throw new NbcArgError(`Cannot simulate ${spec.coll} on executor 'hier': ${spec.coll} has no hierarchical algorithm; expected one of barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall`);
  }
  const c = select(spec.coll, {
    size: spec.ranks, bytes: benchBytes(spec.bytes), commutative: true, executor, nodes: topo.nodes, ppn: topo.ppn, uniform: topo.uniform,
    fabricFits: executor === 'agg' ? true : undefined, nonblocking: spec.nonblocking,
  }, algorithm, config);
  // On agg, what the fabric does not take runs a host algorithm (sched/agg-executor.ts).
  let mode: SimMode = executor === 'offload' ? 'offload' : 'host';
  if (c.composite !== undefined) mode = (c.composite & TL_AGG) !== 0 || executor === 'agg' ? 'agg' : 'two-level';
  return { ...c, mode };
}

/**
 * The schedules of one call as the library would run them: selection (chooseFor), who runs
 * them (ranks, or one engine per node for a composite algorithm), and each one's schedule,
 * built on demand. buildProgram() copies them into a Program; tests run them through the
 * interpreter (test/sched.test.ts). Throws NbcArgError for a call the library would refuse
 * (an unknown algorithm, one the executor cannot run).
 */
export interface CallSchedules {
  choice: Choice & { mode: SimMode };
  topo: Topology;
  /** One rank's block in bytes (benchBytes). */
  bytes: number;
  /** Schedule runners: ranks, or node engines where `steps` is set. */
  procs: number;
  /** A composite algorithm: each node engine's step (sched/two-level.ts engineSteps); else null. */
  steps: ((k: number) => EngineStep) | null;
  /** Proc p's schedule: rank p's, or for an engine its step's exchange (empty alone or on the fabric). */
  schedule(p: number, step?: EngineStep): Schedule;
}

export function callSchedules(spec: CallSpec): CallSchedules {
  const { ranks: N, ppn } = spec;
  if (!Number.isInteger(N) || N < 1 || !Number.isInteger(ppn) || ppn < 1) {
    throw new NbcArgError(`Cannot simulate ${spec.coll} on ${N} ranks with ${ppn} per node: expected positive integers`);
  }
  if (!SIM_COLLS.includes(spec.coll)) throw new NbcArgError(`Cannot simulate ${spec.coll}: expected one of ${SIM_COLLS.join(', ')}`);
  const topo = topologyOf(N, (r) => Math.floor(r / ppn));
  const B = benchBytes(spec.bytes);
  const choice = chooseFor(spec, topo);
  if (choice.composite === undefined) {
    const vec = new Int32Array(N).fill(B);
    const displs = Int32Array.from({ length: N }, (_, i) => i * B);
    // Every rank's shape is rank 0's with its own rank: built once, copied per rank.
    const shared = { ...rankShape(spec.coll, 0, N, B, vec, displs), radix: choice.radix, topo, leader: choice.leader };
    return { choice, topo, bytes: B, procs: N, steps: null, schedule: (r) => choice.build({ ...shared, rank: r }) };
  }
  // The engines' plan is the executor's own (sched/two-level.ts engineSteps): the exchange,
  // and the fold, pack and write-back buildProgram prices.
  const kind = choice.composite & ~TL_AGG;
  const steps = engineSteps({ kind, root: 0, op: OP_SUM, dtype: FLOAT64, esize: 8 }, topo, B);
  if (steps === null) {
    throw new NbcArgError(`Cannot simulate the composite algorithm '${choice.name}' of ${spec.coll}: kind ${kind} is not one of the two-level forms`);
  }
  // On agg the fabric's tree is the exchange (engine.ts models it); the engines' schedule is
  // only its fallback.
  const exchange = topo.nodes > 1 && choice.mode !== 'agg';
  const config = spec.config ?? DEFAULT_CONFIG;
  return {
    choice, topo, bytes: B, procs: topo.nodes, steps,
    schedule: (k, step = steps(k)) => (exchange ? interNodeSchedule(step.coll, step.shape, config) : EMPTY_SCHEDULE()),
  };
}

/** Builds the program of one call: its schedules (callSchedules), copied into columns and priced. */
export function buildProgram(spec: CallSpec, params: SimParams): Program {
  const cs = callSchedules(spec);
  const { choice, topo, bytes: B } = cs;
  const N = spec.ranks;
  const nodes = topo.nodes;
  const nodeOfRank = topo.nodeOf;
  const nodeStart = new Int32Array(nodes + 1);
  for (let k = 0; k < nodes; k++) nodeStart[k + 1] = nodeStart[k]! + topo.members[k]!.length;
  const leader = choice.leader;
  const radixed = (name: string, radix: number): string => (ALGORITHMS[spec.coll][name]?.radix === undefined ? name : `${name}:${radix}`);
  const algorithm = leader !== undefined ? `${choice.name}(leaders: ${leader.coll})` : radixed(choice.name, choice.radix);

  const out = new ProgramBuilder(cs.procs);
  const foldUs = new Float64Array(nodes);
  const writebackUs = new Float64Array(nodes);
  let aggBytes = 0;
  if (cs.steps === null) {
    // Ranks lend their buffers to peers of their node (host); an engine runs its node's
    // schedules on one core, so what it lends, it reads itself (offload); a rank alone on its
    // node lends nothing.
    const above = choice.mode === 'host' && nodes < N ? params.shm.lent?.above : undefined;
    const lend = above === undefined ? null : { above, nodeOf: nodeOfRank };
    for (let r = 0; r < N; r++) {
      out.append(r, cs.schedule(r), nodeOfRank[r]!, choice.mode === 'offload' ? N + nodeOfRank[r]! : r, spec.inputs !== 'fresh', lend);
    }
  } else {
    const kind = choice.composite! & ~TL_AGG;
    if (kind === TL_ALLREDUCE || kind === TL_REDUCE) aggBytes = B;
    for (let k = 0; k < nodes; k++) {
      const step = cs.steps(k);
      foldUs[k] = workUs(step.before, params);
      writebackUs[k] = workUs(step.after, params);
      out.append(k, cs.schedule(k, step), k, N + k, false, null);
    }
  }
  return out.done({ coll: spec.coll, algorithm, mode: choice.mode, ranks: N, nodes, bytes: B, nodeOfRank, nodeStart, foldUs, writebackUs, aggBytes });
}

/** An engine's work around the exchange (copies, reductions) on the model's CPU, us. */
function workUs(w: EngineWork, params: SimParams): number {
  const copy = w.copies * params.copyUsPerByte * w.copyBytes;
  return w.reductions === 0 ? copy : copy + w.reductions * (params.reduceUsPerByte * w.reduceBytes);
}

type ProgramHead = Pick<Program, 'coll' | 'algorithm' | 'mode' | 'ranks' | 'nodes' | 'bytes' | 'nodeOfRank' | 'nodeStart' | 'foldUs' | 'writebackUs' | 'aggBytes'>;

/** Copies schedules into the program's columns, proc by proc (in proc order). */
class ProgramBuilder {
  private readonly kind = new Column(new Int8Array(1024));
  private readonly peer = new Column(new Int32Array(1024));
  private readonly bytes = new Column(new Int32Array(1024));
  private readonly sub = new Column(new Int8Array(1024));
  private readonly cached = new Column(new Int8Array(1024));
  private readonly lentBytes = new Column(new Int32Array(1024));
  private readonly actProc = new Column(new Int32Array(1024));
  private readonly roundBound = new Column(new Int32Array(1024));
  private readonly depCount = new Column(new Int32Array(1024));
  private readonly depStart = new Column(new Int32Array(1024));
  private readonly depList = new Column(new Int32Array(1024));
  private readonly procAct: Int32Array;
  private readonly procRound: Int32Array;
  private readonly procDag: Uint8Array;
  private readonly procNode: Int32Array;
  private readonly procCpu: Int32Array;

  constructor(private readonly procs: number) {
    this.procAct = new Int32Array(procs + 1);
    this.procRound = new Int32Array(procs + 1);
    this.procDag = new Uint8Array(procs);
    this.procNode = new Int32Array(procs);
    this.procCpu = new Int32Array(procs);
  }

  /**
   * Proc `p` runs `s`; with `inputsCached`, its sends of what it did not write are marked cached
   * (Program.cached); with `lend`, its writes into what it lent are counted (Program.lentBytes).
   */
  append(p: number, s: Schedule, node: number, cpu: number, inputsCached: boolean, lend: Lend | null): void {
    const { depCount, depStart, depList, roundBound } = this;
    const base = this.kind.n;
    this.procAct[p] = base;
    this.procRound[p] = roundBound.n;
    this.procNode[p] = node;
    this.procCpu[p] = cpu;
    const n = s.nActions;
    this.kind.append(s.kind, n);
    this.peer.append(s.peer, n);
    this.bytes.append(s.bytesA, n);
    this.sub.append(s.sub, n);
    if (inputsCached) this.markCached(s);
    else this.cached.fill(0, n);
    if (lend !== null) this.markLent(s, node, lend, inputsCached);
    else this.lentBytes.fill(0, n);
    this.actProc.fill(p, n);
    const e = s.isDag ? s.dependents() : null;
    if (e === null) {
      depStart.fill(depList.n, n);
      depCount.fill(0, n);
    } else {
      depStart.reserve(n);
      for (let i = 0; i < n; i++) {
        depStart.push(depList.n);
        for (let j = e.start[i]!; j < e.start[i + 1]!; j++) depList.push(base + e.list[j]!);
      }
      depCount.append(e.count, n);
    }
    roundBound.reserve(s.nRounds + 1);
    for (let r = 0; r <= s.nRounds; r++) roundBound.push(base + s.rounds[r]!);
    this.procDag[p] = e !== null ? 1 : 0;
  }

  /**
   * Program.cached for `s`'s actions: in action order (a DAG's too: an action comes after those
   * it depends on), each buffer's written span grows by every receive, reduction and copy into
   * it, and a send outside its buffer's span so far sends what the call found there. A span,
   * not a list of regions: a send between two written regions counts as written (fresh, the
   * dearer price), and the pass stays linear in the actions.
   */
  private markCached(s: Schedule): void {
    const lo = [Infinity, Infinity, Infinity];
    const hi = [-Infinity, -Infinity, -Infinity];
    const write = (buf: number, off: number, bytes: number): void => {
      if (buf < 0 || bytes <= 0) return;
      lo[buf] = Math.min(lo[buf]!, off);
      hi[buf] = Math.max(hi[buf]!, off + bytes);
    };
    const out = this.cached;
    out.reserve(s.nActions);
    for (let i = 0; i < s.nActions; i++) {
      const k = s.kind[i]!;
      const buf = s.bufA[i]!;
      const off = s.offA[i]!;
      const bytes = s.bytesA[i]!;
      out.push(k === A_SEND && (off >= hi[buf]! || off + bytes <= lo[buf]!) ? 1 : 0);
      if (k === A_RECV) write(buf, off, bytes);
      else if (k === A_REDUCE || k === A_COPY) write(s.bufB[i]!, s.offB[i]!, bytes);
    }
  }

  /**
   * Program.lentBytes for `s`'s actions, run by a rank on `node`: in action order, a send of
   * more than `lend.above` bytes to a rank of the same node lends its region, and a later write
   * (receive, reduction, copy) into lent bytes counts them and takes them back. In a loop
   * (`steady`), the pass runs twice and the second one counts, starting from what the first
   * left lent.
   */
  private markLent(s: Schedule, node: number, lend: Lend, steady: boolean): void {
    const lent = new LentRegions();
    const out = this.lentBytes;
    out.reserve(s.nActions);
    for (let pass = steady ? 0 : 1; pass < 2; pass++) {
      for (let i = 0; i < s.nActions; i++) {
        const k = s.kind[i]!;
        const bytes = s.bytesA[i]!;
        let taken = 0;
        if (k === A_SEND) {
          if (bytes > lend.above && lend.nodeOf[s.peer[i]!] === node) lent.add(s.bufA[i]!, s.offA[i]!, bytes);
        } else if (k === A_RECV) {
          taken = lent.take(s.bufA[i]!, s.offA[i]!, bytes);
        } else if (k === A_REDUCE || k === A_COPY) {
          taken = lent.take(s.bufB[i]!, s.offB[i]!, bytes);
        }
        if (pass === 1) out.push(taken);
      }
    }
  }

  done(head: ProgramHead): Program {
    this.procAct[this.procs] = this.kind.n;
    this.procRound[this.procs] = this.roundBound.n;
    this.depStart.push(this.depList.n);
    return {
      ...head, procs: this.procs, procNode: this.procNode, procCpu: this.procCpu, nActions: this.kind.n,
      kind: this.kind.done(), peer: this.peer.done(), bytesOf: this.bytes.done(), cached: this.cached.done(), sub: this.sub.done(), lentBytes: this.lentBytes.done(),
      actProc: this.actProc.done(), procAct: this.procAct, procRound: this.procRound, roundBound: this.roundBound.done(), procDag: this.procDag,
      depCount: this.depCount.done(), depStart: this.depStart.done(), depList: this.depList.done(),
    };
  }
}

/** Which sends lend their buffer: more than `above` bytes to a rank of the sender's node (`nodeOf`: node per rank). */
interface Lend {
  above: number;
  nodeOf: Int32Array;
}

/**
 * What a proc has lent and not written since: per buffer (SEND, RECV, TMP), disjoint byte
 * ranges [lo, hi) as flat pairs. A schedule lends a handful, so lists, not trees.
 */
class LentRegions {
  private readonly ranges: number[][] = [[], [], []];

  add(buf: number, off: number, bytes: number): void {
    if (buf < 0 || bytes <= 0) return;
    this.take(buf, off, bytes); // keeps the ranges disjoint
    this.ranges[buf]!.push(off, off + bytes);
  }

  /** Takes [off, off + bytes) of `buf` back; returns how many of its bytes were lent. */
  take(buf: number, off: number, bytes: number): number {
    const r = buf < 0 || bytes <= 0 ? undefined : this.ranges[buf];
    if (r === undefined || r.length === 0) return 0;
    const lo = off;
    const hi = off + bytes;
    let taken = 0;
    const kept: number[] = [];
    for (let j = 0; j < r.length; j += 2) {
      const a = r[j]!;
      const b = r[j + 1]!;
      const x = Math.max(a, lo);
      const y = Math.min(b, hi);
      if (x >= y) {
        kept.push(a, b);
        continue;
      }
      taken += y - x;
      if (a < x) kept.push(a, x);
      if (y < b) kept.push(y, b);
    }
    this.ranges[buf] = kept;
    return taken;
  }
}

/**
 * A host-mode program from schedules written by hand (tests, examples): proc r runs
 * `schedules[r]`, ranks `ppn` to a node; with `lendAbove`, sends of more than that many bytes
 * to a rank of the same node lend their region (Program.lentBytes, a benchmark loop's).
 */
export function programOf(schedules: readonly Schedule[], ppn = 1, coll: CollName = 'allreduce', lendAbove?: number): Program {
  const N = schedules.length;
  const nodes = Math.ceil(N / ppn);
  const nodeOfRank = Int32Array.from({ length: N }, (_, r) => Math.floor(r / ppn));
  const nodeStart = Int32Array.from({ length: nodes + 1 }, (_, k) => Math.min(N, k * ppn));
  const b = new ProgramBuilder(N);
  const lend = lendAbove === undefined ? null : { above: lendAbove, nodeOf: nodeOfRank };
  schedules.forEach((s, r) => b.append(r, s, nodeOfRank[r]!, r, true, lend));
  return b.done({ coll, algorithm: schedules[0]?.algorithm ?? 'empty', mode: 'host', ranks: N, nodes, bytes: 0, nodeOfRank, nodeStart,
    foldUs: new Float64Array(nodes), writebackUs: new Float64Array(nodes), aggBytes: 0 });
}

/** An engine alone on its node exchanges nothing. */
function EMPTY_SCHEDULE(): Schedule {
  return interNodeEmpty ??= buildEmpty();
}
let interNodeEmpty: Schedule | undefined;
function buildEmpty(): Schedule {
  // A barrier among one participant is an empty schedule (every builder returns one for size 1).
  return ALGORITHMS.barrier.dissemination!.build(shape({ rank: 0, size: 1, radix: 1 }));
}

/** Whether an action runs on the CPU alone (reduce, copy). */
export const isLocal = (k: number): boolean => k === A_REDUCE || k === A_COPY;
