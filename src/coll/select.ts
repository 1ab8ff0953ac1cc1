/**
 * Algorithm selection as data (MPICH's decision tree, UCC's score table): for each collective,
 * the algorithms it has and the rules that choose one. A choice is a pure function of what
 * every rank shares (communicator size, its nodes and ranks per node, bytes per rank, op
 * commutativity, executor), so all ranks pick the same schedule. Overrides: `{ algorithm }`
 * per call, then NBC_<COLLECTIVE>_ALGORITHM (e.g. NBC_ALLREDUCE_ALGORITHM=ring; read by the
 * runtime, passed in as CoreConfig), then these rules. "knomial" takes its degree as
 * "knomial:4" (2..8; default 4), "dissemination" its n as "dissemination:2" (1..8; default 1).
 *
 * Hierarchical algorithms (`hier`) also get the flat algorithm their node leaders run, chosen
 * by the same rules for a communicator of one rank per node; the offload engines' two-level
 * forms get theirs from `interNodeSchedule`. So every inter-node phase is chosen here.
 *
 * Every threshold names the measurement that chose it (bench/HISTORY.md, "Switch points").
 */
import type { CoreConfig } from '../config.js';
import { NbcArgError, NbcOpError } from '../errors.js';
import { chooseHier, choosePacking } from './cost-model.js';
import type { Schedule } from '../sched/schedule.js';
import { TL_ALLGATHER, TL_ALLREDUCE, TL_ALLTOALL, TL_BARRIER, TL_BCAST, TL_REDUCE, type InterNodeColl, type InterNodeShape } from '../sched/two-level.js';
import * as allgather from './allgather.js';
import * as allreduce from './allreduce.js';
import * as alltoall from './alltoall.js';
import * as barrier from './barrier.js';
import * as bcast from './bcast.js';
import * as gather from './gather.js';
import * as hier from './hier.js';
import * as neighbor from './neighbor.js';
import * as reduce from './reduce.js';
import * as reduceScatter from './reduce-scatter.js';
import * as scan from './scan.js';
import { shape, type CollShape } from './shape.js';

export type CollName =
  | 'barrier' | 'bcast' | 'reduce' | 'allreduce' | 'gather' | 'gatherv' | 'scatter' | 'scatterv'
  | 'allgather' | 'allgatherv' | 'alltoall' | 'alltoallv' | 'reduceScatterBlock' | 'reduceScatter'
  | 'scan' | 'exscan' | 'neighborAllgather' | 'neighborAlltoall' | 'neighborAlltoallv';

export interface Algorithm {
  build: (s: CollShape) => Schedule;
  /** Only correct for commutative ops (ring and Rabenseifner reorder the fold). */
  commutativeOnly?: boolean;
  /** Takes a degree (k-nomial k, or dissemination's n): [min, max, default]. */
  radix?: readonly [number, number, number];
  /**
   * Hierarchical (hier.ts): the collective its node leaders run among themselves, or how the
   * topology decides it (alltoall: one block per node pair of equal size only when every node
   * holds the same number of ranks, so Bruck is open to it then).
   */
  leaders?: CollName | ((s: SelectInput) => CollName);
  /**
   * Composed by the executor itself rather than run from a schedule: the kind word it is
   * posted with (the offload engines' two-level forms, sched/two-level.ts).
   */
  composite?: number;
  /** Only these executors can run it. */
  executors?: readonly string[];
  /** The front end runs its blocking form by hand when messages are eager (lean paths, communicator.ts). */
  lean?: boolean;
  /** Reduced by the aggregation fabric: only for calls whose op and type it supports (SelectInput.fabricFits). */
  fabric?: boolean;
}

/** The engines' own composition: no schedule of its own (sched/two-level.ts plans it). */
const composedByEngines = (coll: string) => (): Schedule => {
  throw new Error(`the two-level ${coll} is composed by the node engines; it has no rank schedule`);
};

function twoLevel(coll: CollName, kind: number, reduction = false): Algorithm {
  return { build: composedByEngines(coll), composite: kind, executors: ['offload'], commutativeOnly: reduction };
}

/**
 * Reduced in flight by the aggregation fabric (seed 003; sched/agg-executor.ts): the same
 * engine composition as two-level, the exchange among nodes done by the fabric's daemons.
 */
function aggregated(coll: CollName, kind: number): Algorithm {
  return { build: composedByEngines(coll), composite: kind, executors: ['agg'], commutativeOnly: coll !== 'barrier', fabric: true };
}

const KNOMIAL = [2, 8, 4] as const;

const neighborAll = (s: CollShape): Schedule => neighbor.allgather(s as neighbor.NeighborShape);
const neighborV = (s: CollShape): Schedule => neighbor.alltoallv(s as neighbor.NeighborShape);

/** Every algorithm of every collective, by name. */
export const ALGORITHMS: Record<CollName, Record<string, Algorithm>> = {
  barrier: {
    dissemination: { build: barrier.dissemination, radix: [1, 8, 1], lean: true },
    hier: { build: hier.barrier, leaders: 'barrier' },
    'two-level': twoLevel('barrier', TL_BARRIER),
    agg: aggregated('barrier', TL_BARRIER),
  },
  bcast: {
    binomial: { build: bcast.binomial, lean: true },
    knomial: { build: bcast.knomial, radix: KNOMIAL },
    'scatter-allgather': { build: bcast.scatterAllgather },
    hier: { build: hier.broadcast, leaders: 'bcast' },
    'two-level': twoLevel('bcast', TL_BCAST),
  },
  reduce: {
    binomial: { build: reduce.binomial },
    knomial: { build: reduce.knomial, radix: KNOMIAL },
    'reduce-scatter-gather': { build: reduce.reduceScatterGather, commutativeOnly: true },
    hier: { build: hier.reduceTo, leaders: 'reduce', commutativeOnly: true },
    'two-level': twoLevel('reduce', TL_REDUCE, true),
    agg: aggregated('reduce', TL_REDUCE),
  },
  allreduce: {
    'recursive-doubling': { build: allreduce.recursiveDoubling, lean: true },
    knomial: { build: allreduce.knomialReduceBcast, radix: KNOMIAL },
    rabenseifner: { build: allreduce.rabenseifner, commutativeOnly: true },
    ring: { build: allreduce.ring, commutativeOnly: true },
    direct: { build: allreduce.direct },
    hier: { build: hier.allreduce, leaders: 'allreduce', commutativeOnly: true },
    'two-level': twoLevel('allreduce', TL_ALLREDUCE, true),
    agg: aggregated('allreduce', TL_ALLREDUCE),
  },
  gather: {
    binomial: { build: gather.gatherBinomial },
    linear: { build: gather.gatherLinear },
    hier: { build: hier.gatherTo, leaders: 'gatherv' },
  },
  gatherv: { linear: { build: gather.gathervLinear } },
  scatter: {
    binomial: { build: gather.scatterBinomial },
    linear: { build: gather.scatterLinear },
    hier: { build: hier.scatterFrom, leaders: 'scatterv' },
  },
  scatterv: { linear: { build: gather.scattervLinear } },
  allgather: {
    ring: { build: allgather.ring },
    'recursive-doubling': { build: allgather.recursiveDoubling },
    bruck: { build: allgather.bruck },
    hier: { build: hier.allgather, leaders: 'allgatherv' },
    'two-level': twoLevel('allgather', TL_ALLGATHER),
  },
  allgatherv: { ring: { build: allgather.ringV } },
  alltoall: {
    bruck: { build: alltoall.bruck },
    pairwise: { build: alltoall.pairwise },
    scattered: { build: alltoall.scattered, lean: true },
    hier: { build: hier.alltoall, leaders: (s) => (s.uniform ? 'alltoall' : 'alltoallv') },
    'two-level': twoLevel('alltoall', TL_ALLTOALL),
  },
  alltoallv: { scattered: { build: alltoall.scatteredV } },
  reduceScatterBlock: {
    'reduce-scatterv': { build: reduceScatter.reduceThenScatter, radix: KNOMIAL },
    ring: { build: reduceScatter.ring, commutativeOnly: true },
  },
  reduceScatter: {
    'reduce-scatterv': { build: reduceScatter.reduceThenScatter, radix: KNOMIAL },
    ring: { build: reduceScatter.ring, commutativeOnly: true },
  },
  scan: { 'recursive-doubling': { build: scan.scanRecursiveDoubling } },
  exscan: { 'recursive-doubling': { build: scan.exscanRecursiveDoubling } },
  neighborAllgather: { direct: { build: neighborAll } },
  neighborAlltoall: { direct: { build: neighborV } },
  neighborAlltoallv: { direct: { build: neighborV } },
};

interface Rule {
  algorithm: string;
  radix?: number;
  /** The rule applies when every given bound holds. */
  minBytes?: number;
  maxBytes?: number;
  minSize?: number;
  maxSize?: number;
  /** Bounds on the communicator's nodes and the most ranks per node. */
  minNodes?: number;
  maxNodes?: number;
  minPpn?: number;
  /**
   * The rule applies only where seed 004's cost model (cost-model.ts, with the parameters
   * `nbc calibrate` measured) predicts a gain: of the hierarchy over flat ('hier'), or of
   * packing over direct messages ('packing').
   */
  model?: 'hier' | 'packing';
  /**
   * The rule applies only where every rank has a core of its own (not CoreConfig.oversubscribed):
   * chosen by the simulator for real clusters, where crowded-host measurements disagree.
   */
  ownCores?: true;
  /** The rule applies only to non-blocking and persistent calls on this executor. */
  nonblocking?: 'host';
  commutative?: boolean;
  /** Why this rule and threshold (the measurement that chose it). */
  why: string;
}

const AGG_WHY = 'executor agg (seed 003): the fabric reduces barrier, reduce and allreduce of a predefined op but prod on 32/64-bit types across nodes; anything else on agg runs a host algorithm';

const HIER_WHY = 'seed 004: node phases in shared memory and one leader per node on the network, where the cost model predicts a gain over flat (cost-model.ts predictHier); bench/results/hier/summary.json';

/** First matching rule wins; every list ends with a rule that always matches. */
export const RULES: Record<CollName, Rule[]> = {
  barrier: [
    { algorithm: 'agg', minNodes: 2, why: AGG_WHY },
    { algorithm: 'hier', minNodes: 2, minPpn: 2, model: 'hier', why: HIER_WHY },
    { algorithm: 'dissemination', radix: 1, why: 'ceil(log2 p) rounds of empty messages; n > 1 only adds messages per round on 2 cores' },
  ],
  bcast: [
    { algorithm: 'hier', minNodes: 2, minPpn: 2, model: 'hier', why: HIER_WHY },
    { algorithm: 'binomial', why: 'bench/results/bcast-n4-*.json: binomial or knomial:4 fastest at every size to 2 MiB on 4 ranks; scatter-allgather slower everywhere (2-3x), so it is never chosen automatically here' },
  ],
  reduce: [
    { algorithm: 'agg', minNodes: 2, commutative: true, why: AGG_WHY },
    { algorithm: 'reduce-scatter-gather', minBytes: 512 << 10, minSize: 2, commutative: true, why: 'same halving phase that makes Rabenseifner allreduce win from 128-512 KiB (allreduce-n2/n4-*.json)' },
    { algorithm: 'binomial', why: 'latency-bound default, any op (rank-ordered for non-commutative ops)' },
  ],
  allreduce: [
    { algorithm: 'agg', minNodes: 2, commutative: true, why: AGG_WHY },
    { algorithm: 'direct', maxBytes: 256, maxSize: 8, nonblocking: 'host', why: 'a started iallreduce completes once every rank has started it, where recursive doubling sends its later rounds only from inside a test() or wait(): Overlap-PCG on 4 x 16^3 (4 ranks on 2 cores), warm, 0.40-0.44 ms an iteration against 1.43-1.73 (3 interleaved runs); blocking calls keep the lean recursive doubling (4 ranks 8 B 6.7-9.4 us direct against 7.5-8.2, 2 ranks 0.45 against 0.32)' },
    { algorithm: 'rabenseifner', minBytes: 128 << 10, commutative: true, why: 'allreduce-n2-*.json: 48 vs 59 us at 128 KiB, 134 vs 183 us at 512 KiB against recursive doubling; n4: wins from 512 KiB (529 vs 770 us), 2 MiB 1267 vs 4153 us' },
    { algorithm: 'hier', minNodes: 2, minPpn: 2, commutative: true, model: 'hier', why: HIER_WHY },
    { algorithm: 'rabenseifner', minBytes: 16 << 10, minSize: 8, commutative: true, ownCores: true, why: 'simulated at scale (bench/results/sim-quick4, this VM\'s calibration, a core per rank): 1.3-1.8x faster than recursive doubling from 16 KiB on 8-256 ranks one per node, 2.3-2.7x on 8-16 ranks of one node; recursive doubling sends and reduces the whole vector log2 p times, and past the eager limit each of its messages pays a rendezvous. Not on an oversubscribed host, where every message costs a thread switch (allreduce-n4-*.json: recursive doubling until 512 KiB on 2 cores)' },
    { algorithm: 'knomial', minBytes: 16 << 10, maxNodes: 1, why: 'bench/results/switch (npm run bench:switch, 2 interleaved rounds, medians): one node of 2 ranks 16 KiB 6.9 vs 13.9 us for recursive doubling, 64 KiB 17.5 vs 23.5; 4 ranks on 2 cores 43.8 vs 61.0, 85.8 vs 90.3 (rabenseifner 8.9 / 21.0 and 71.5 / 101.7): past the eager limit recursive doubling exchanges the whole vector by rendezvous both ways at once; from 128 KiB the rabenseifner rule above wins; with the folds in WebAssembly (bench/results/allreduce-n2-wasm, 2 runs): 2 ranks 16/32/64 KiB 4.8/7.4/13.0 us against Rabenseifner 5.5/8.1/13.1 and recursive doubling 8.2/13.7/25.6, and Rabenseifner from 128 KiB (17.5 vs 24.2)' },
    { algorithm: 'recursive-doubling', why: 'allreduce-n2-*.json: fastest or tied below 128 KiB (across nodes: bench/results/switch, 2 x 1 over UCX, to 64 KiB); any op; its blocking small case runs on the lean path' },
  ],
  gather: [
    { algorithm: 'linear', maxSize: 4, why: 'the same messages with no staging: one node, 2 ranks 64 KiB 2.8 vs 14.5 us for binomial, 16 KiB 1.6 vs 5.0, 8 B 0.72 vs 0.78; 4 ranks on 2 cores 8 B 7.9 vs 11.0, 64 KiB 11.9 vs 46.0 (nbc bench --algorithm, one run each)' },
    { algorithm: 'binomial', why: 'log p rounds' },
  ],
  gatherv: [{ algorithm: 'linear', why: 'the only one' }],
  scatter: [
    { algorithm: 'linear', maxSize: 4, why: 'the same messages with no staging: one node, 2 ranks 64 KiB 2.7 vs 13.3 us for binomial, 16 KiB 1.3 vs 4.3, 8 B 0.67 vs 0.86; 4 ranks on 2 cores 8 B 7.4 vs 9.3, 64 KiB 12.6 vs 41.1 (nbc bench --algorithm, one run each)' },
    { algorithm: 'binomial', why: 'log p rounds' },
  ],
  scatterv: [{ algorithm: 'linear', why: 'the only one' }],
  allgather: [
    { algorithm: 'ring', minBytes: 64 << 10, why: 'large blocks: p-1 neighbour steps, no block sent twice (theory; bench/results/switch: ring or recursive doubling within 1.2x of the fastest from 64 KiB on 2 and 4 ranks)' },
    { algorithm: 'bruck', minSize: 3, why: 'ceil(log2 p) rounds for any p (theory); on 4 ranks of 2 cores the measurements split (bench/results/switch/ab-allgather.txt)' },
    { algorithm: 'ring', why: '2 ranks: the same exchange without Bruck\'s final rotation; bench/results/switch/ab-allgather.txt, one node, 3 interleaved rounds: 1 KiB 3.5-3.7 -> 2.4-2.6 us, 16 KiB 7.5-8.3 -> 3.5-4.5 (2 x 1 over UCX alike in bench:switch)' },
  ],
  allgatherv: [{ algorithm: 'ring', why: 'the only one' }],
  alltoall: [
    { algorithm: 'hier', minNodes: 2, minPpn: 2, model: 'packing', why: 'seed 004: packing pays below the cut-off x = T_startup / beta of the network path (cost-model.ts); bench/results/hier/summary.json' },
    { algorithm: 'bruck', maxBytes: 256, minSize: 8, why: 'small blocks on many ranks: log2 p messages instead of p-1 (theory: at 4 ranks, alltoall-n4-*.json shows a tie at <= 256 B, so it only applies from 8 ranks)' },
    { algorithm: 'scattered', why: 'alltoall-n4-*.json: fastest from 2 KiB (126 vs 138/179 us; 158 vs 292/384 us at 32 KiB)' },
  ],
  alltoallv: [{ algorithm: 'scattered', why: 'the only one' }],
  reduceScatterBlock: [
    { algorithm: 'ring', maxSize: 2, commutative: true, why: 'on 2 ranks one exchange where reduce-then-scatter is two messages in a row: 8 B 0.45-0.47 us against 0.79-0.80, 64 KiB 15.7-16.0 against 15.8-16.0 (bench/results/rsb-n2, 2 runs each)' },
    { algorithm: 'ring', minBytes: 128 << 10, commutative: true, why: 'large commutative: each block reduced once, like the Rabenseifner allreduce that wins from 128 KiB' },
    { algorithm: 'reduce-scatterv', radix: 2, why: 'any op, rank-ordered' },
  ],
  reduceScatter: [
    { algorithm: 'ring', maxSize: 2, commutative: true, why: 'on 2 ranks one exchange where reduce-then-scatter is two messages in a row: 8 B 0.45-0.47 us against 0.79-0.80, 64 KiB 15.7-16.0 against 15.8-16.0 (bench/results/rsb-n2, 2 runs each)' },
    { algorithm: 'ring', minBytes: 128 << 10, commutative: true, why: 'large commutative: each block reduced once, like the Rabenseifner allreduce that wins from 128 KiB' },
    { algorithm: 'reduce-scatterv', radix: 2, why: 'any op, rank-ordered' },
  ],
  scan: [{ algorithm: 'recursive-doubling', why: 'the only one' }],
  exscan: [{ algorithm: 'recursive-doubling', why: 'the only one' }],
  neighborAllgather: [{ algorithm: 'direct', why: 'the only one' }],
  neighborAlltoall: [{ algorithm: 'direct', why: 'the only one' }],
  neighborAlltoallv: [{ algorithm: 'direct', why: 'the only one' }],
};

export interface Choice {
  name: string;
  radix: number;
  build: (s: CollShape) => Schedule;
  /** Set for algorithms the executor composes itself (Algorithm.composite). */
  composite?: number;
  /** The front end may run this call's blocking form by hand (Algorithm.lean). */
  lean: boolean;
  /** Hierarchical algorithms: what the node leaders run. */
  leader?: { coll: CollName; build: (s: CollShape) => Schedule; radix: number };
}

/** What selection sees of a call: everything every rank shares. */
export interface SelectInput {
  size: number;
  bytes: number;
  commutative: boolean;
  executor: string;
  /** Nodes the communicator spans, and the most ranks on any of them. */
  nodes: number;
  ppn: number;
  /** Every node holds the same number of the communicator's ranks. */
  uniform: boolean;
  /**
   * The call's op and element type are ones the aggregation fabric reduces (a predefined op
   * but prod, on 32- or 64-bit integers or floats; agg/client.ts aggSupports); barriers always.
   */
  fabricFits?: boolean;
  /** A non-blocking or persistent call (CollShape.nonblocking). */
  nonblocking?: boolean;
}

const envName = (coll: CollName): string => `NBC_${coll.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}_ALGORITHM`;

function parse(coll: CollName, text: string, source: string): { name: string; radix?: number } {
  const [name = '', k] = text.split(':');
  const algs = ALGORITHMS[coll];
  const alg = Object.hasOwn(algs, name) ? algs[name] : undefined;
  if (alg === undefined) {
    throw new NbcArgError(`Cannot run ${coll} with algorithm '${text}' (${source}): expected one of ${Object.keys(algs).join(', ')}`);
  }
  if (k === undefined) return { name };
  const radix = Number(k);
  const range = alg.radix;
  if (range === undefined || !Number.isInteger(radix) || radix < range[0] || radix > range[1]) {
    throw new NbcArgError(`Cannot run ${coll} with algorithm '${text}' (${source}): ${range ? `the degree must be an integer ${range[0]}..${range[1]}` : `'${name}' takes no degree`}`);
  }
  return { name, radix };
}

/** Throws what a call of `coll` forced to `text` would (NbcArgError naming the choices); for checks before a run. */
export function checkAlgorithm(coll: CollName, text: string, source: string): void {
  parse(coll, text, source);
}

/** Whether an algorithm runs on its own, among any ranks (not composed of phases). */
const isFlat = (a: Algorithm): boolean => a.leaders === undefined && a.composite === undefined;

/**
 * Picks the algorithm for a call: override, environment, then the rules. `flatOnly` (the
 * leaders' phase of a hierarchical call) passes over composed algorithms.
 */
export function select(coll: CollName, s: SelectInput, override: string | undefined, config: CoreConfig, flatOnly = false): Choice {
  let pick: { name: string; radix?: number } | undefined;
  if (override !== undefined) pick = parse(coll, override, '{ algorithm }');
  else {
    const env = config.algorithms[coll];
    if (env !== undefined) pick = parse(coll, env, envName(coll));
  }
  if (pick !== undefined && !(flatOnly && !isFlat(ALGORITHMS[coll][pick.name]!))) {
    const alg = ALGORITHMS[coll][pick.name]!;
    if (alg.commutativeOnly && !s.commutative) {
      throw new NbcOpError(`Cannot run ${coll} with algorithm '${pick.name}' and a non-commutative op: '${pick.name}' reorders the reduction; expected a commutative op or another algorithm`);
    }
    if (alg.executors !== undefined && !alg.executors.includes(s.executor)) {
      throw new NbcArgError(`Cannot run ${coll} with algorithm '${pick.name}' on executor '${s.executor}': expected executor ${alg.executors.map((e) => `'${e}'`).join(' or ')}`);
    }
    if (alg.fabric === true && s.fabricFits === false) {
      throw new NbcOpError(`Cannot run ${coll} with algorithm '${pick.name}': the aggregation fabric reduces sum, min, max, minloc, maxloc, band, bor, bxor, land, lor and lxor on 32- and 64-bit integers and floats; expected one of those or another algorithm`);
    }
    return choice(coll, pick.name, pick.radix ?? alg.radix?.[2] ?? 2, s, config);
  }
  for (const r of RULES[coll]) {
    if (r.minBytes !== undefined && s.bytes < r.minBytes) continue;
    if (r.maxBytes !== undefined && s.bytes > r.maxBytes) continue;
    if (r.minSize !== undefined && s.size < r.minSize) continue;
    if (r.maxSize !== undefined && s.size > r.maxSize) continue;
    if (r.minNodes !== undefined && s.nodes < r.minNodes) continue;
    if (r.maxNodes !== undefined && s.nodes > r.maxNodes) continue;
    if (r.minPpn !== undefined && s.ppn < r.minPpn) continue;
    if (r.commutative !== undefined && r.commutative !== s.commutative) continue;
    if (r.model !== undefined && !modelPrefers(r.model, coll, s, config)) continue;
    if (r.ownCores === true && config.oversubscribed) continue;
    if (r.nonblocking !== undefined && (s.nonblocking !== true || s.executor !== r.nonblocking)) continue;
    const alg = ALGORITHMS[coll][r.algorithm]!;
    if (flatOnly && !isFlat(alg)) continue;
    if (alg.executors !== undefined && !alg.executors.includes(s.executor)) continue;
    if (alg.fabric === true && s.fabricFits !== true) continue;
    return choice(coll, r.algorithm, r.radix ?? alg.radix?.[2] ?? 2, s, config);
  }
  throw new NbcArgError(`no selection rule matched ${coll}`);
}

/**
 * What the cost model says of a rule's algorithm for this call. Not consulted on an
 * oversubscribed host: there every hop between ranks costs a thread switch, which the model
 * (one core per rank, as in seed 004) leaves out, and the hierarchy's extra node-phase hops
 * measured 0.6-1.4x of the best flat algorithm (8 ranks on 2 cores, bench/results/hier/
 * summary.json), so flat stays.
 */
function modelPrefers(model: 'hier' | 'packing', coll: CollName, s: SelectInput, config: CoreConfig): boolean {
  if (config.oversubscribed) return false;
  const where = { nodes: s.nodes, ppn: s.ppn, params: config.cost };
  if (model === 'packing') return choosePacking({ ...where, blockBytes: s.bytes });
  if (coll !== 'barrier' && coll !== 'allreduce' && coll !== 'bcast') return false;
  return chooseHier(coll, { ...where, bytes: s.bytes });
}

function choice(coll: CollName, name: string, radix: number, s: SelectInput, config: CoreConfig): Choice {
  const alg = ALGORITHMS[coll][name]!;
  const c: Choice = { name, radix, build: alg.build, lean: alg.lean === true };
  if (alg.composite !== undefined) c.composite = alg.composite;
  if (alg.leaders !== undefined) {
    // One rank per node: the leaders' communicator. Its bytes are the node phase's business
    // (packed blocks), so the per-rank size stands in for choosing among the leaders.
    const coll = typeof alg.leaders === 'function' ? alg.leaders(s) : alg.leaders;
    const inner = select(coll, { ...s, size: s.nodes, ppn: 1, uniform: true }, undefined, config, true);
    c.leader = { coll, build: inner.build, radix: inner.radix };
  }
  return c;
}

/**
 * The schedule the node engines of a two-level collective run among themselves (one
 * participant per node; sched/two-level.ts), chosen by the same rules as any call.
 */
export function interNodeSchedule(coll: InterNodeColl, s: InterNodeShape, config: CoreConfig): Schedule {
  const c = select(coll, { size: s.size, bytes: s.bytes, commutative: true, executor: 'offload', nodes: s.size, ppn: 1, uniform: true }, undefined, config, true);
  return c.build(shape({ ...s, commutative: true, radix: c.radix }));
}
