/**
 * Entry point of a rank worker thread. Attaches to the node's shared memory, builds the world
 * communicator, loads the job file (registering tsx first for TypeScript jobs), runs its
 * default export if it has one, and reports the result to the node.
 *
 * A job file either calls `await init()` at top level, or exports
 * `default async function (world, args) { ... }` whose return value becomes the rank's result
 * (it must be structured-cloneable).
 */
import { once } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { RankContext } from '../comm/comm.js';
import { Communicator } from '../coll/communicator.js';
import { Transport, type Placement } from '../p2p/transport.js';
import { setNativeCopy } from '../shm/copy.js';
import { isUcxAddon, UcxPath, type UcxErrMode } from '../p2p/ucx.js';
import { setFdSignal, type NodeShared } from '../shm/node-shared.js';
import { configFromEnv } from './config.js';
import { nativeAddon } from './native.js';
import { currentJsRuntime } from './js-runtime.js';
import { openHostBoard } from './host-board.js';
import { setRankRuntime } from './init.js';
import { hostClockOriginMs } from './wire-clock.js';
import { train, trainRounds } from './train.js';
import type { WireModel } from '../p2p/wire.js';
import { NbcLaunchError } from '../errors.js';

/**
 * A job file with import/export statements that Node loaded as CommonJS (its package.json
 * says "type": "commonjs", or there is none): the error says what to change, instead of
 * Node's (for TypeScript, ERR_REQUIRE_CYCLE_MODULE). Null for any other failure.
 */
function loadedAsCommonJs(err: unknown, entry: string): NbcLaunchError | null {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const esmInCjs = code === 'ERR_REQUIRE_CYCLE_MODULE' || code === 'ERR_REQUIRE_ESM'
    || (err instanceof SyntaxError && /Cannot use import statement outside a module|Unexpected token 'export'/.test(message));
  if (!esmInCjs) return null;
  return new NbcLaunchError(
    `Cannot load the job file ${entry}: Node loaded it as CommonJS, and it is an ES module (import/export); ` +
    `expected a .mjs or .mts file, or "type": "module" in the package.json nearest to it (${message.split('\n')[0]})`, { cause: err });
}

export interface RankBoot {
  shared: NodeShared;
  placement: Placement;
  entry: string;
  args: string[];
  eagerLimit?: number;
  eagerCredit?: number;
  spinUs?: number;
  /**
   * How long a rank waiting for an offloaded collective spins before parking, where its engine
   * has a core of its own; unset elsewhere (then CoreConfig.offloadSpinUs, NBC_OFFLOAD_SPIN_US).
   */
  offloadSpinUs?: number;
  /** More of the job's ranks on this host than cores (CoreConfig.oversubscribed). */
  oversubscribed?: boolean;
  /** Waits yield the core between polls (the node found its cores crowded and has the addon). */
  yieldFromIdle?: boolean;
  /** Oversubscribed: how long a wait yields the core between polls before parking (us). */
  yieldUs?: number;
  /** Barriers and small allreduces run on the flag boards (TransportOptions.flat). */
  flat?: boolean;
  /** Whether a thread of the node watches the rank's waits (TransportOptions.waitsWatched; default true). */
  waitsWatched?: boolean;
  /** The job's host board (shm/host-board.ts), where its nodes share this host: the rank marks its waits there. */
  hostBoard?: { path: string; ranks: number };
  /** Ranks of other nodes are reached over UCX (the node checked that the addon has it). */
  ucx?: boolean;
  /** How UCX endpoints treat a failed peer (NBC_UCX_ERR_MODE, checked by the node). */
  ucxErrMode?: UcxErrMode;
  /** The emulated network (`--link`, p2p/wire.ts), where the job has one. */
  wire?: WireModel;
}

export type RankReport =
  | { type: 'result'; rank: number; result: unknown }
  /** The rank's UCX worker address, for the wire-up. */
  | { type: 'ucx-address'; rank: number; address: Uint8Array };

/** The node's answer once every rank's address is known: by world rank, null on this node. */
interface UcxTable {
  type: 'ucx-table';
  addresses: Array<Uint8Array | null>;
}

const boot = workerData as RankBoot;
// Where the host's cores are crowded (node-main decides), a waiting rank hands its core over
// with sched_yield (the native addon's) before it parks; without the addon it spins briefly
// and parks.
const yieldFn = boot.yieldFromIdle === true ? nativeAddon().addon?.schedYield ?? null : null;
// Copies that involve shared memory go to the addon's memmove where it is built.
setNativeCopy(nativeAddon().addon?.copy ?? null);
// Under an emulated network a waiting rank sleeps until a stamp (p2p/wait.ts): let the kernel
// defer those sleeps by 1 us rather than its default 50 (docs/wire.md, "What a wait costs").
if (boot.wire !== undefined) nativeAddon().addon?.timerSlack?.(1000);
const eagerLimit = boot.eagerLimit ?? 8192;
let ucx: UcxPath | null = null;
if (boot.ucx === true) {
  // A UCP worker of this thread; its address goes to the node, which trades it with the other
  // nodes through the rendezvous and answers with everyone's, before the job starts.
  const addon = nativeAddon().addon;
  if (!isUcxAddon(addon)) throw new Error('the UCX transport was chosen but this thread has no UCX addon');
  setFdSignal(addon.signalFd);
  ucx = new UcxPath(addon, boot.placement.worldRank, eagerLimit, 'rank', boot.ucxErrMode ?? 'peer');
  const table = once(parentPort!, 'message') as Promise<[UcxTable]>;
  parentPort!.postMessage({ type: 'ucx-address', rank: boot.placement.worldRank, address: ucx.address } satisfies RankReport);
  const [msg] = await table;
  ucx.setAddresses(msg.addresses);
}
const transport = new Transport(boot.shared, boot.placement, {
  eagerLimit, eagerCredit: boot.eagerCredit, spinUs: boot.spinUs, yieldFn, yieldUs: boot.yieldUs, flat: boot.flat === true, ucx, waitsWatched: boot.waitsWatched,
  board: boot.hostBoard === undefined ? null : openHostBoard(boot.hostBoard.ranks, boot.placement.worldRank, boot.hostBoard.path),
  wire: boot.wire === undefined ? null : { model: boot.wire, originMs: hostClockOriginMs() },
});
const rc: RankContext = {
  transport,
  worldRank: boot.placement.worldRank,
  worldSize: boot.placement.worldSize,
  nodeId: boot.placement.nodeId,
  nextCtx: 2,
  config: configFromEnv(process.env, boot.oversubscribed === true, boot.offloadSpinUs),
};
const world = new Communicator(rc, Array.from({ length: rc.worldSize }, (_, i) => i), 0);
setRankRuntime({ world, rc, args: boot.args });
// The library's hot paths warm before the job's first call (train.ts).
train(world, trainRounds(process.env));

// Bun and Deno run TypeScript themselves; Node needs tsx's loader.
if (/\.[cm]?tsx?$/.test(boot.entry) && currentJsRuntime() === 'node') {
  const { register } = await import('tsx/esm/api');
  register();
}
const mod = (await import(pathToFileURL(boot.entry).href).catch((err: unknown) => {
  throw loadedAsCommonJs(err, boot.entry) ?? err;
})) as { default?: unknown };
let result: unknown;
if (typeof mod.default === 'function') {
  result = await (mod.default as (w: Communicator, a: string[]) => unknown)(world, boot.args);
}
// Anything still owed to peers (ACKs, queued sends) must leave before the thread ends, and
// behind it the word that this rank is done: a peer still waiting for one of its messages
// fails at once (NBC_ERR_PEER_FAILED) instead of waiting for the job's timeout.
transport.announceFinished();
try {
  parentPort!.postMessage({ type: 'result', rank: rc.worldRank, result } satisfies RankReport);
} catch {
  parentPort!.postMessage({ type: 'result', rank: rc.worldRank, result: String(result) } satisfies RankReport);
}
// With UCX the node counts this rank done on its result; the worker keeps progressing until
// every rank of the job is done (Transport.linger).
transport.linger();
