/**
 * One node of a job: this process's main thread becomes the node engine, and it runs the
 * node's ranks as worker threads. Started by `nbc run` (one per emulated node) or by any
 * launcher through `nbc node` (one per host).
 *
 * Lifecycle, one step each (`runNode`): wire-up (node-wireup.ts: rendezvous with node 0, which
 * hosts it) -> wait policy (wait-policy.ts: from how the host's cores are shared) -> shared
 * memory and engine -> the aggregation fabric -> rank workers (node-ranks.ts) -> when every
 * local rank has finished, DONE to the master -> SHUTDOWN from the master once every node is
 * done -> exit 0. Any failure (a rank throws or exits non-zero, a node or link is lost) is
 * reported once, by whoever saw it, and stops every node (node-life.ts).
 */
import { createHmac } from 'node:crypto';
import { NbcArgError, NbcLaunchError } from '../errors.js';
import { createNodeShared, DEFAULT_RING_BYTES, DEFAULT_SLICE_BYTES, setFdSignal, waitWatcher, type NodeShared } from '../shm/node-shared.js';
import { isUcxAddon, UcxPath, type UcxErrMode } from '../p2p/ucx.js';
import { OF_MAX_BYTES } from '../sched/offload-records.js';
import type { Placement } from '../p2p/transport.js';
import { setNativeCopy } from '../shm/copy.js';
import { AggClient } from '../agg/client.js';
import { fabricFromEnv } from '../agg/fabric.js';
import { AggNode } from './agg-node.js';
import { Engine } from './engine.js';
import type { Wireup } from './env.js';
import { wireModelOf, type LinkSpec } from './link-spec.js';
import { Wire, type WireModel } from '../p2p/wire.js';
import { hostClockOriginMs, wireModeFromEnv } from './wire-clock.js';
import type { RankBoot } from './rank-main.js';
import { configFromEnv, ucxErrModeFromEnv } from './config.js';
import { nativeAddon } from './native.js';
import { ucxUnsupported } from './js-runtime.js';
import { formatError, log, NodeLife, rawLog, toParent } from './node-life.js';
import { startRanks } from './node-ranks.js';
import { checkTransport, jobSecret, parseFinished, UcxWireup, wireUp } from './node-wireup.js';
import { flatBoardWanted, hostCores, waitPolicy, waitsWatched, type HostCores, type WaitPolicy } from './wait-policy.js';

export { DEFAULT_ENGINE_SPIN_US, DEFAULT_ENGINE_YIELD_US, DEFAULT_YIELD_US } from './wait-policy.js';

export interface NodeOptions {
  entry: string;
  args: string[];
  /** Ranks on this node. */
  ranks: number;
  wireup: Wireup;
  tagOutput?: boolean;
  /** Address this node's links listen on (default 127.0.0.1). */
  bindHost?: string;
  link?: LinkSpec;
  /** Where the emulated nodes sit (`--topology`: flat or fat-tree:radix=R[,levels=L]; runtime/link-spec.ts). */
  topology?: string;
  ringBytes?: number;
  sliceBytes?: number;
  eagerLimit?: number;
  /** Eager credit per ordered pair of ranks, bytes (p2p/transport.ts EAGER_CREDIT_BYTES). */
  eagerCredit?: number;
  spinUs?: number;
  /** The yield phase of a wait on an oversubscribed host (us); default DEFAULT_YIELD_US. */
  yieldUs?: number;
  /**
   * How long the engine keeps polling after its last work before it parks (us); default
   * DEFAULT_ENGINE_SPIN_US where every rank and engine of the host has a core,
   * DEFAULT_ENGINE_YIELD_US where the host is crowded, its engines carry the TCP traffic and the
   * native addon is there (the engine then yields its core between turns), else 0.
   */
  engineSpinUs?: number;
  /** How ranks reach ranks of other nodes (`--transport`, NBC_TRANSPORT); default 'auto'. */
  transport?: TransportChoice;
  /**
   * Once wired up, a node (or, for the others, node 0) not heard from for this long (ms) stops
   * the job, named: stopped (SIGSTOP) or hung (NBC_NODE_SILENCE_MS; default 10000; 0: never).
   */
  silenceMs?: number;
}

/**
 * How ranks reach ranks of other nodes: 'tcp' through the node engines' authenticated TCP
 * links (pure JS), 'ucx' straight from rank to rank over UCX (the native addon built with
 * libucx-dev), 'auto' UCX when every node has it and no link is emulated, else TCP.
 */
export type TransportChoice = 'ucx' | 'tcp' | 'auto';
export const TRANSPORT_CHOICES: readonly TransportChoice[] = ['ucx', 'tcp', 'auto'];

export function parseTransport(value: string, what = '--transport'): TransportChoice {
  if ((TRANSPORT_CHOICES as readonly string[]).includes(value)) return value as TransportChoice;
  throw new NbcArgError(`${what} '${value}': expected one of ${TRANSPORT_CHOICES.join(', ')}`);
}

/** Why this process cannot run the UCX transport, or null when it can. */
export function ucxUnavailable(): string | null {
  const runtime = ucxUnsupported();
  if (runtime !== null) return runtime;
  const { addon, why } = nativeAddon();
  if (addon === null) return `the native addon is ${why.startsWith('/') ? 'missing' : why}`;
  if (!isUcxAddon(addon)) return 'the native addon was built without UCX (install libucx-dev, then npx nbc build-native)';
  return null;
}

/** Messages to a parent `nbc run` over the IPC channel. */
export type NodeToLauncher =
  | { type: 'master'; port: number }
  | { type: 'results'; node: number; ranks: Array<{ rank: number; result: unknown }> }
  | { type: 'failure'; node: number; reason: string; exitCode: number };

/** Runs this node until the job ends; resolves with the process exit code. */
export async function runNode(o: NodeOptions): Promise<number> {
  const { nodeRank, nodes } = o.wireup;
  if (!Number.isInteger(o.ranks) || o.ranks < 1) {
    throw new NbcLaunchError(`Cannot start node ${nodeRank}: it was given ${o.ranks} ranks; expected at least 1 (--ppn)`);
  }
  const secret = jobSecret(o.wireup);
  const life = new NodeLife(nodeRank, o.ranks);
  life.watchProcess();

  // ---- wire-up ----------------------------------------------------------------------
  const noUcx = ucxUnavailable();
  const ucxErrMode = ucxErrModeFromEnv();
  const choice = checkTransport(o, noUcx);
  const cores = hostCores(o.ranks);
  // The engine's copies between rings, arenas and frames go to the addon's memmove where built.
  setNativeCopy(nativeAddon().addon?.copy ?? null);
  // The emulated wire waits out a frame's last microseconds polling; it yields between its
  // polls only while a rank of this node waits (set once the shared memory exists): beside a
  // computing rank a yielding thread runs only when the rank's time slice ends.
  let ranksWaited: () => boolean = () => false;
  const { yieldCore, board } = cores;
  const wireYield = yieldCore === null ? null : (): void => { if (ranksWaited() && (board === null || board.idle())) yieldCore(); };
  const ucx = new UcxWireup(nodes, nodeRank, o.ranks);
  const broadcast = (payload: unknown): void => {
    const fin = parseFinished(payload, nodes);
    if (fin === null) ucx.heard(payload);
    else if (fin.nodes.includes(nodeRank)) life.finishedElsewhere(fin.rank);
  };
  const { counts, useUcx } = nodes > 1
    ? await wireUp(o, life, secret, choice, noUcx, wireYield, broadcast)
    : { counts: [o.ranks], useUcx: false };
  const engineUcx = useUcx ? engineWorker(nodeRank, ucxErrMode) : null;

  // ---- shared memory, wait policy, engine, fabric ---------------------------------------
  const place = placeRanks(counts, nodeRank);
  const shared = createNodeShared({
    ranks: o.ranks,
    ringBytes: o.ringBytes ?? DEFAULT_RING_BYTES,
    sliceBytes: o.sliceBytes ?? DEFAULT_SLICE_BYTES,
  }, process.env.NBC_WASM !== '0');
  life.control = new Int32Array(shared.control);
  ranksWaited = waitWatcher(life.control, o.ranks);
  const policy = waitPolicy(o, cores, nodes, useUcx);
  const engine = startEngine(life, shared, place, cores, policy);
  const wire = o.link !== undefined && wireModeFromEnv() === 'stamp' ? wireModelOf(o.link, o.topology, nodes) : null;
  if (wire !== null) engine.wire = new Wire(wire, life.control, nodeRank, nodes, hostClockOriginMs());
  // Joined before the ranks start, so a rank's first agg call finds the node's answer ready.
  life.aggNode = await joinFabric(o, secret, engine.wire);
  engine.useAgg(life.aggNode);

  // ---- ranks ------------------------------------------------------------------------
  if (engineUcx !== null) {
    // Once every node's addresses are in, the engine and each rank get the table.
    ucx.onComplete((table, engines) => {
      if (table.length !== place.worldSize) {
        life.fail(`node ${nodeRank}: the UCX wire-up gave ${table.length} worker addresses for ${place.worldSize} ranks`, 1);
        return;
      }
      engineUcx.setAddresses(engines);
      engine.useUcx(engineUcx);
      for (const w of life.workers) w.postMessage({ type: 'ucx-table', addresses: table });
    });
  }
  startRanks(life, rankBoots(o, shared, place, policy, cores, useUcx, ucxErrMode, wire), o.tagOutput === true, {
    // Every local rank has its worker: the node tells the other nodes, through the
    // authenticated rendezvous, so only members of the job learn the addresses.
    ucxAddress: (i, address) => ucx.localAddress(i, address, life.client!, engineUcx!.address),
    done: (results) => {
      toParent({ type: 'results', node: nodeRank, ranks: results });
      if (life.client === null) life.follow(0);
      else life.client.done();
    },
  });
  return life.ended;
}

/**
 * With UCX the engine carries the offloaded schedules' frames over UCX too: its own worker, on
 * this thread, tagged with the node id.
 */
function engineWorker(nodeRank: number, errMode: UcxErrMode): UcxPath | null {
  const addon = nativeAddon().addon!;
  setFdSignal(addon.signalFd!);
  return isUcxAddon(addon) ? new UcxPath(addon, nodeRank, OF_MAX_BYTES, 'engine', errMode) : null;
}

/** Where the job's ranks live: ranks are numbered node by node, `counts[n]` on node n. */
interface RankPlacement {
  worldSize: number;
  nodeOfRank: Int32Array;
  localOfRank: Int32Array;
  /** This node's first world rank. */
  first: number;
}

function placeRanks(counts: number[], nodeRank: number): RankPlacement {
  const worldSize = counts.reduce((a, b) => a + b, 0);
  const nodeOfRank = new Int32Array(worldSize);
  const localOfRank = new Int32Array(worldSize);
  let first = 0;
  for (let n = 0, r = 0; n < counts.length; n++) {
    if (n === nodeRank) first = r;
    for (let i = 0; i < counts[n]!; i++, r++) {
      nodeOfRank[r] = n;
      localOfRank[r] = i;
    }
  }
  return { worldSize, nodeOfRank, localOfRank, first };
}

/** The node's engine, started; a rank's word that it has finished reaches unlinked nodes through the rendezvous. */
function startEngine(life: NodeLife, shared: NodeShared, p: RankPlacement, cores: HostCores, policy: WaitPolicy): Engine {
  const nodeRank = life.nodeRank;
  const placement: Placement = { worldRank: -1, worldSize: p.worldSize, nodeId: nodeRank, nodeOfRank: p.nodeOfRank, localOfRank: p.localOfRank };
  const board = cores.board;
  const engine = new Engine(shared, placement, life.links, (err) => life.fail(`node ${nodeRank} engine failed: ${formatError(err)}`, 1), configFromEnv(),
    { spinUs: policy.engineSpinUs, yieldCore: cores.yieldCore, hostIdle: board === null ? null : () => board.idle() });
  engine.start();
  // A rank's word that it has finished, for nodes this one has no link with (engine.ts).
  const relay = life.client;
  if (relay !== null) {
    engine.relayFinished = (rank, to) => {
      if (!life.ending) relay.broadcast({ fin: { rank, nodes: to } });
    };
  }
  life.setEngine(engine);
  return engine;
}

/** The node's side of the aggregation fabric (the agg executor), where the job has one. */
async function joinFabric(o: NodeOptions, secret: Buffer, wire: Wire | null): Promise<AggNode> {
  const nodeRank = o.wireup.nodeRank;
  const fabric = fabricFromEnv(process.env);
  if (fabric === null) {
    return new AggNode(null, 'no aggregation fabric is configured for this job (nbc run --agg radix=R,levels=L, or NBC_AGG_MANAGER)', log);
  }
  try {
    const jobKey = createHmac('sha256', secret).update(`nbc-agg-v1|${o.wireup.jobId}`).digest();
    const client = await AggClient.connect({
      manager: fabric.manager, fabricSecret: fabric.secret, jobId: o.wireup.jobId, jobKey, nodeId: nodeRank, link: o.link, wire, log: rawLog,
    });
    return new AggNode(client, '', log);
  } catch (err) {
    const why = `node ${nodeRank} could not join the aggregation fabric at ${fabric.manager.host}:${fabric.manager.port}: ${(err as Error).message}`;
    log(why);
    return new AggNode(null, why, log);
  }
}

/** What each rank worker starts with (rank-main.ts), in local rank order. */
function rankBoots(o: NodeOptions, shared: NodeShared, p: RankPlacement, policy: WaitPolicy, cores: HostCores, ucx: boolean,
  ucxErrMode: UcxErrMode, wire: WireModel | null): RankBoot[] {
  const watched = waitsWatched(policy, cores, o.wireup.nodes);
  // A one-node job of more ranks than cores runs its barriers and small allreduces on the flag boards (coll/flat.ts).
  const flat = flatBoardWanted(process.env, policy, o.wireup.nodes);
  return Array.from({ length: o.ranks }, (_, i): RankBoot => ({
    shared,
    placement: { worldRank: p.first + i, worldSize: p.worldSize, nodeId: o.wireup.nodeRank, nodeOfRank: p.nodeOfRank, localOfRank: p.localOfRank },
    entry: o.entry,
    args: o.args,
    eagerLimit: o.eagerLimit,
    eagerCredit: o.eagerCredit,
    spinUs: policy.spinUs,
    offloadSpinUs: policy.offloadSpinUs,
    oversubscribed: policy.oversubscribed,
    yieldFromIdle: policy.yieldFromIdle,
    yieldUs: policy.yieldUs,
    flat,
    waitsWatched: watched,
    ...(cores.boardPath === undefined || !watched ? {} : { hostBoard: { path: cores.boardPath, ranks: cores.hostRanks } }),
    ucx,
    ucxErrMode,
    ...(wire === null ? {} : { wire }),
  }));
}
