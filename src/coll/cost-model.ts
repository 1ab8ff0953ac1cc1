/**
 * Seed 004's aggregation model (Section 5), with parameters per path, and the predictors that
 * decide hier vs flat and packing vs no packing.
 *
 * The paper models a direct scatter (the root sends one message to each of n-1 ranks, one
 * after another) as
 *
 *     T_lat = T_serialization + T_constant                                    (1)
 *     T_lat = (n-1) T_startup + T_transmission + C   if T_startup > T_transmission   (2)
 *     T_lat = T_startup + (n-1) T_transmission       if T_startup < T_transmission   (3)
 *     T_transmission = msg_size * beta                                        (4)
 *
 * Small messages are start-up bound: every message adds one start-up (the cost of
 * serialising start-ups on the path, not the whole latency of one), and only the last one's
 * transmission shows. Large messages are transmission bound: every message adds its
 * transmission, and only the first start-up shows. Aggregating k messages into one saves
 * (k-1) start-ups and adds nothing but copies, so it pays while a start-up costs more than a
 * transmission, i.e. below the switch point
 *
 *     x * beta = T_startup                                                    (5)
 *
 * (seed 004: T_startup = 2.098 us, beta = 0.000935 us/B, C = -10 us on InfiniBand, x = 2243 B).
 *
 * Paths: 'shm' (the rings between ranks of one node), 'tcp' (engine-to-engine links) and
 * 'ucx' (optional). `nbc calibrate` measures each on the machine at hand and stores them as
 * JSON (`ParamsFile`, read back with `parseParams`); DEFAULT_PARAMS stand in until it has run.
 * This module is core code: pure arithmetic, no runtime APIs.
 */
import { NbcArgError } from '../errors.js';

export type PathName = 'shm' | 'tcp' | 'ucx';
/** The paths between nodes. */
export type NetPath = Exclude<PathName, 'shm'>;
export const PATH_NAMES: readonly PathName[] = ['shm', 'tcp', 'ucx'];

/** One path's parameters, in microseconds. */
export interface PathParams {
  /** T_startup: what one more message adds while start-ups are the bottleneck. */
  startupUs: number;
  /** beta: transmission time per byte (1 / bandwidth). */
  perByteUs: number;
  /**
   * C: the part of eq. 1 that does not depend on the number of messages. Fitted, so it holds
   * whatever the other terms leave out: for us mostly the path's latency (the time the last
   * message spends travelling); in the paper -10 us, the overlap of the HCA's DMA engines.
   */
  constantUs: number;
}

export interface CostParams {
  shm: PathParams;
  tcp: PathParams;
  ucx?: PathParams;
}

/**
 * Until `nbc calibrate` has run: figures of the reference machine kind (2-core VM, Node 20).
 * - shm: one-way 8 B 0.33 us and 28 GB/s between two ranks of a node (README, PERFORMANCE.md,
 *   `nbc bench p2p --ppn 2`). A further message of a burst costs about 0.3 us (an isend into
 *   the ring; `nbc calibrate` measured 0.54-0.58 us on a busy machine); C is the rest of the
 *   0.33 us.
 * - tcp: one-way 10-24 us for raw Node TCP on loopback (PERFORMANCE.md; nbcoll's engine path
 *   1.15x that) and 0.4 GB/s through the engine path (1 MiB, 2 nodes). A further message of a
 *   burst costs about 3 us (records through the engine's ring into one socket; `nbc
 *   calibrate` measured 1.5-4 us); C takes the rest of a ~20 us one-way latency.
 * Cut-offs (eq. 5): shm 8400 B, tcp 1200 B.
 */
export const DEFAULT_PARAMS: CostParams = {
  shm: { startupUs: 0.3, perByteUs: 1 / 28_000, constantUs: 0.03 },
  tcp: { startupUs: 3, perByteUs: 1 / 400, constantUs: 17 },
};

/** Seed 004's parameters for its InfiniBand cluster (Section 5), to check the model against. */
export const SEED_004_PARAMS: PathParams = { startupUs: 2.098, perByteUs: 0.000935, constantUs: -10 };

// ---------------------------------------------------------------------------------------------
// The model

/**
 * Latency in microseconds of a direct scatter of `bytes`-byte messages from one root to
 * n-1 ranks over `path` (eq. 2 and 3); n-1 is also any burst of messages that serialise on
 * one path. Two departures from the paper, both so that the latency grows with bytes and
 * messages without jumps:
 * - C is added in both cases, as eq. 1 says (eq. 3 as printed leaves it out, so with the
 *   paper's C the latency would jump by 10 us at the switch point, where both cases give
 *   n * T_startup + C);
 * - a scatter takes at least one start-up and one transmission: a negative C (fitted on 32
 *   processes in the paper) must not make a 2-process scatter faster than its one message.
 */
export function scatterLatency(path: PathParams, n: number, bytes: number): number {
  if (n <= 1) return 0;
  const tx = bytes * path.perByteUs; // eq. 4
  const serialization = path.startupUs > tx
    ? (n - 1) * path.startupUs + tx // eq. 2: the start-ups serialise; the last message's transmission shows
    : path.startupUs + (n - 1) * tx; // eq. 3: the transmissions serialise; the first start-up shows
  return Math.max(serialization + path.constantUs, path.startupUs + tx);
}

/**
 * Eq. 5: the message size (bytes) above which aggregating messages no longer pays on `path`,
 * where one message's transmission costs as much as a start-up. Infinity for a path with no
 * per-byte cost.
 */
export function packingCutoffBytes(path: PathParams): number {
  return path.perByteUs > 0 ? Math.floor(path.startupUs / path.perByteUs) : Infinity;
}

/** Where a job runs and what it moves; `net` picks the path between nodes (default tcp). */
export interface Topology {
  nodes: number;
  /** Ranks per node. */
  ppn: number;
  params: CostParams;
  net?: NetPath;
}

function netParams(t: Topology): PathParams {
  const name = t.net ?? 'tcp';
  const p = t.params[name];
  if (p === undefined) throw new NbcArgError(`Cannot predict over ${name}: the cost-model parameters have no '${name}' path; expected tcp, or parameters that include ${name}`);
  return p;
}

function checkTopology(what: string, t: Topology, bytes: number): void {
  if (!Number.isInteger(t.nodes) || t.nodes < 1 || !Number.isInteger(t.ppn) || t.ppn < 1) {
    throw new NbcArgError(`Cannot predict ${what} on ${t.nodes} nodes x ${t.ppn} ranks: expected positive integers`);
  }
  if (!(bytes >= 0)) throw new NbcArgError(`Cannot predict ${what} for ${bytes} bytes: expected a size >= 0`);
}

/** Rounds of a binary tree, recursive doubling or dissemination over k participants. */
function log2Steps(k: number): number {
  return k <= 1 ? 0 : Math.ceil(Math.log2(k));
}

/**
 * Direct alltoall on `nodes` x `ppn` ranks with `blockBytes` per destination, flat vs
 * packed (seed 004's message aggregation), in microseconds. Ranks are numbered node by node.
 *
 * - flat: every rank sends p-1 messages. The ppn-1 to its node mates go over shm; the
 *   (nodes-1)*ppn to other nodes leave through the node's one network path, together with
 *   those of the node's other ranks: ppn*(nodes-1)*ppn start-ups serialise there. Both paths
 *   work at once, so the slower one decides.
 * - packed: the node's ranks hand their off-node blocks to the leader over shm (ppn-1
 *   messages of (nodes-1)*ppn blocks, arriving one after another: a scatter in reverse, and
 *   the copy that packs them); the leader sends one message of ppn*ppn blocks to each other
 *   node; then hands each rank what came for it (the unpack). The node-local blocks go
 *   directly, meanwhile.
 */
export function predictAlltoall(o: Topology & { blockBytes: number }): { flatUs: number; packedUs: number } {
  checkTopology('alltoall', o, o.blockBytes);
  const { nodes, ppn, blockBytes } = o;
  const shm = o.params.shm;
  const local = scatterLatency(shm, ppn, blockBytes);
  if (nodes === 1) return { flatUs: local, packedUs: local };
  const net = netParams(o);
  const offNode = (nodes - 1) * ppn; // blocks each rank sends to other nodes
  const flatUs = Math.max(local, scatterLatency(net, 1 + ppn * offNode, blockBytes));
  const pack = scatterLatency(shm, ppn, offNode * blockBytes);
  const exchange = scatterLatency(net, nodes, ppn * ppn * blockBytes);
  const unpack = scatterLatency(shm, ppn, offNode * blockBytes);
  return { flatUs, packedUs: Math.max(local, pack + exchange + unpack) };
}

export type HierColl = 'barrier' | 'allreduce' | 'bcast';

/**
 * Flat vs hierarchical (node phase in shm + leaders over the network + node phase) barrier,
 * allreduce or bcast of `bytes` on `nodes` x `ppn` ranks, in microseconds. Log-tree models:
 * a round costs one message on its path, and a round in which m ranks of a node send to
 * other nodes at once costs m start-ups serialised on the node's network path, i.e.
 * scatterLatency(net, m + 1, bytes). Reductions cost the same in both forms (log2 p
 * combining steps either way), so they are left out.
 *
 * Flat, ranks numbered node by node (exact for powers of two, close otherwise):
 * - barrier, dissemination: round r sends to rank + 2^r. While 2^r < ppn, the last 2^r
 *   ranks of each node cross to the next node and the others stay in the node; from then on
 *   every rank crosses, all ppn at once.
 * - allreduce, recursive doubling: partner rank XOR 2^r is in the node while 2^r < ppn,
 *   else on another node, for all ppn ranks at once.
 * - bcast, binomial from rank 0: a round at distance d >= ppn has at most one sender per
 *   node, so it is one network message; the rounds below ppn stay in the nodes. (So a
 *   binomial bcast is already hierarchical, and the model says so.)
 *
 * Hier: one leader per node. barrier: fan-in to the leader (log2 ppn shm rounds),
 * dissemination among leaders (log2 nodes network rounds, one message per node), fan-out.
 * allreduce: node reduce + leaders' recursive doubling + node bcast, the same counts. bcast:
 * leaders' binomial, then node bcast.
 */
export function predictHier(coll: HierColl, o: Topology & { bytes: number }): { flatUs: number; hierUs: number } {
  const bytes = coll === 'barrier' ? 0 : o.bytes;
  checkTopology(coll, o, bytes);
  const { nodes, ppn } = o;
  const shmRound = scatterLatency(o.params.shm, 2, bytes);
  const net = nodes > 1 ? netParams(o) : o.params.shm;
  const netRound = (senders: number): number => scatterLatency(net, senders + 1, bytes);
  const nodeSteps = log2Steps(ppn);
  const leaderSteps = log2Steps(nodes);
  const rounds = log2Steps(nodes * ppn);

  let flatUs = 0;
  for (let r = 0; r < rounds; r++) {
    const d = 2 ** r;
    if (nodes === 1) flatUs += shmRound;
    else if (coll === 'barrier') flatUs += d < ppn ? Math.max(netRound(d), shmRound) : netRound(ppn);
    else if (coll === 'allreduce') flatUs += d < ppn ? shmRound : netRound(ppn);
    else flatUs += d < ppn ? shmRound : netRound(1);
  }
  const leaders = leaderSteps * netRound(1);
  const hierUs = coll === 'bcast' ? leaders + nodeSteps * shmRound : 2 * nodeSteps * shmRound + leaders;
  return { flatUs, hierUs };
}

/**
 * How much faster the hierarchical or packed form must be predicted before it is chosen. The
 * model is not finer than this, and the flat form needs no node communicator or packing
 * buffer; it also keeps a tie that rounding split (a binomial bcast's sum taken in another
 * order) on the flat side.
 */
export const MIN_GAIN = 0.02;

/** True when the model predicts the hierarchical form to be faster by MIN_GAIN (ties stay flat). */
export function chooseHier(coll: HierColl, o: Topology & { bytes: number }): boolean {
  const t = predictHier(coll, o);
  return t.hierUs < t.flatUs * (1 - MIN_GAIN);
}

/** True when the model predicts a packed (aggregated) alltoall to be faster by MIN_GAIN (ties stay flat). */
export function choosePacking(o: Topology & { blockBytes: number }): boolean {
  const t = predictAlltoall(o);
  return t.packedUs < t.flatUs * (1 - MIN_GAIN);
}

// ---------------------------------------------------------------------------------------------
// Fitting (what `nbc calibrate` measures -> PathParams)

/** Least-squares line y = slope * x + intercept through the points (at least two distinct x). */
export function fitLine(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number } {
  const n = xs.length;
  if (n < 2 || ys.length !== n) throw new NbcArgError(`Cannot fit a line to ${n} points (and ${ys.length} values): expected at least two, one value each`);
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i]!;
    sy += ys[i]!;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - mx;
    sxx += dx * dx;
    sxy += dx * (ys[i]! - my);
  }
  if (sxx === 0) throw new NbcArgError('Cannot fit a line: every point has the same x');
  const slope = sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

/** One path's measurements, in microseconds. */
export interface PathSamples {
  /** One-way ping-pong time per message size. */
  pingPong: ReadonlyArray<{ bytes: number; us: number }>;
  /** A direct scatter of `bytes`-byte messages, start-up bound: time until the last of `messages` arrived. */
  scatter: { bytes: number; points: ReadonlyArray<{ messages: number; us: number }> };
}

/**
 * Fits a path: beta is the ping-pong's slope over sizes (least squares); T_startup is the
 * small scatter's slope over the number of messages (eq. 2: each adds one start-up); C is
 * what eq. 2 leaves of the scatter's intercept: intercept - bytes * beta. A slope that noise
 * made negative is taken as 0.
 */
export function fitPath(s: PathSamples): PathParams {
  const beta = fitLine(s.pingPong.map((p) => p.bytes), s.pingPong.map((p) => p.us)).slope;
  const sc = fitLine(s.scatter.points.map((p) => p.messages), s.scatter.points.map((p) => p.us));
  const perByteUs = Math.max(0, beta);
  return { startupUs: Math.max(0, sc.slope), perByteUs, constantUs: sc.intercept - s.scatter.bytes * perByteUs };
}

// ---------------------------------------------------------------------------------------------
// The parameters file

export const PARAMS_VERSION = 1;

/** What `nbc calibrate` writes (JSON); unknown keys are ignored, so later versions may add some. */
export interface ParamsFile {
  version: typeof PARAMS_VERSION;
  /** ISO 8601 time of the measurement. */
  measuredAt: string;
  /** Host name the parameters were measured on. */
  host: string;
  /** Node.js version (process.version). */
  node: string;
  paths: CostParams;
}

const PATH_FIELDS = ['startupUs', 'perByteUs', 'constantUs'] as const;

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'an array' : 'an object';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates a parameters file (JSON text or the parsed value) and returns it typed. Throws
 * NbcArgError naming the first bad field, e.g. "paths.tcp.perByteUs is -1; expected a
 * number >= 0". `source` (a file name) goes into the message.
 */
export function parseParams(json: unknown, source = 'the cost-model parameters'): ParamsFile {
  const fail = (field: string, v: unknown, expected: string): never => {
    throw new NbcArgError(`Cannot use ${source}: ${field} is ${describe(v)}; expected ${expected}`);
  };
  let v = json;
  if (typeof json === 'string') {
    try {
      v = JSON.parse(json);
    } catch (err) {
      throw new NbcArgError(`Cannot use ${source}: not JSON (${(err as Error).message})`, { cause: err });
    }
  }
  if (!isObject(v)) return fail('the top level', v, 'an object');
  if (v.version !== PARAMS_VERSION) fail('version', v.version, `${PARAMS_VERSION} (run nbc calibrate again to rewrite the file)`);
  if (typeof v.measuredAt !== 'string' || Number.isNaN(Date.parse(v.measuredAt))) fail('measuredAt', v.measuredAt, 'an ISO 8601 date string');
  for (const k of ['host', 'node'] as const) if (typeof v[k] !== 'string') fail(k, v[k], 'a string');
  const paths = v.paths;
  if (!isObject(paths)) return fail('paths', paths, 'an object with shm and tcp');
  const out: Partial<Record<PathName, PathParams>> = {};
  for (const name of PATH_NAMES) {
    const p = paths[name];
    if (p === undefined && name === 'ucx') continue;
    if (!isObject(p)) return fail(`paths.${name}`, p, `an object with ${PATH_FIELDS.join(', ')}`);
    for (const f of PATH_FIELDS) {
      const x = p[f];
      const ok = typeof x === 'number' && Number.isFinite(x) && (f === 'constantUs' || x >= 0);
      if (!ok) fail(`paths.${name}.${f}`, x, f === 'constantUs' ? 'a finite number' : 'a number >= 0');
    }
    out[name] = { startupUs: p.startupUs as number, perByteUs: p.perByteUs as number, constantUs: p.constantUs as number };
  }
  return {
    version: PARAMS_VERSION, measuredAt: v.measuredAt as string, host: v.host as string, node: v.node as string,
    paths: out as CostParams,
  };
}
