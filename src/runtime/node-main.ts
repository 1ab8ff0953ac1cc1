/**
 * One node of a job: this process's main thread becomes the node engine, and it runs the
 * node's ranks as worker threads. Started by `nbc run` (one per emulated node) or by any
 * launcher through `nbc node` (one per host).
 *
 * Lifecycle: wire-up (rendezvous with node 0, which hosts it) -> shared memory and engine ->
 * rank workers -> when every local rank has finished, DONE to the master -> SHUTDOWN from the
 * master once every node is done -> exit 0. Any failure (a rank throws or exits non-zero, a
 * node or link is lost) is reported once, by whoever saw it, and stops every node.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { NbcArgError, NbcError, NbcLaunchError } from '../errors.js';
import { LinkManager } from '../net/link.js';
import { openHostBoard } from './host-board.js';
import { createNodeShared, DEFAULT_RING_BYTES, DEFAULT_SLICE_BYTES, ringDoorbell, setFdSignal, waitWatcher } from '../shm/node-shared.js';
import { kAbortWord } from '../shm/layout.js';
import { REPORTED_ELSEWHERE } from '../p2p/constants.js';
import { isUcxAddon, UcxPath } from '../p2p/ucx.js';
import { OF_MAX_BYTES } from '../sched/offload-records.js';
import { setNativeCopy, type Placement } from '../p2p/transport.js';
import { AggClient } from '../agg/client.js';
import { fabricFromEnv } from '../agg/fabric.js';
import { AggNode } from './agg-node.js';
import { Engine } from './engine.js';
import type { Wireup } from './env.js';
import type { LinkSpec } from './link-spec.js';
import type { RankBoot, RankReport } from './rank-main.js';
import { isWildcard, RendezvousClient, RendezvousServer } from './rendezvous.js';
import { configFromEnv, ucxErrModeFromEnv } from './config.js';
import { nativeAddon } from './native.js';

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
  const { addon, why } = nativeAddon();
  if (addon === null) return `the native addon is ${why.startsWith('/') ? 'missing' : why}`;
  if (!isUcxAddon(addon)) return 'the native addon was built without UCX (install libucx-dev, then npm run build)';
  return null;
}

/**
 * How long a waiting rank on an oversubscribed host calls sched_yield between polls before it
 * parks (with the native addon; BENCHMARKS.md, "Waits that yield").
 */
export const DEFAULT_YIELD_US = 1000;

/**
 * How long a node holds back a rank's error that only follows from one elsewhere (its message
 * ends with REPORTED_ELSEWHERE) before it reports it as the job's failure: long enough for the
 * rank where the first error happened to finish its collective and its node to report that
 * (chaos: a rank that returned early was otherwise named, in 1 trial of 6 on this VM, only by
 * the flagged data it caused).
 */
const CONSEQUENCE_GRACE_MS = 300;

/**
 * How long an engine with a core of its own polls after its last work before parking (us):
 * long enough to span the gaps inside a collective and between back-to-back calls, short
 * enough that an idle job leaves its cores within a millisecond.
 */
export const DEFAULT_ENGINE_SPIN_US = 1000;

/**
 * How long an engine that shares its core with ranks polls after its last work before parking,
 * yielding the core between turns (us): on 2 nodes of 1 rank on 2 cores, a TCP message of 8 B
 * then costs 50 us one way against 92 us for an engine that parks at once (medians of 5
 * interleaved rounds), a parked engine's event-loop wake-up on each side being most of the
 * difference (BENCHMARKS.md, "The pure-JS path: engines that yield").
 */
export const DEFAULT_ENGINE_YIELD_US = 200;

/** Messages to a parent `nbc run` over the IPC channel. */
export type NodeToLauncher =
  | { type: 'master'; port: number }
  | { type: 'results'; node: number; ranks: Array<{ rank: number; result: unknown }> }
  | { type: 'failure'; node: number; reason: string; exitCode: number };

const log = (msg: string): void => {
  process.stderr.write(`nbc: ${msg}\n`);
};
/** For net/ and the rendezvous, whose messages carry their own "nbc: " prefix. */
const rawLog = (msg: string): void => {
  process.stderr.write(`${msg}\n`);
};

function toParent(msg: NodeToLauncher): void {
  if (process.send !== undefined && process.connected) process.send(msg);
}

export function formatError(err: unknown): string {
  if (err instanceof Error) {
    const code = err instanceof NbcError || (err as { code?: unknown }).code !== undefined
      ? ` [${String((err as { code?: unknown }).code)}]` : '';
    return (err.stack ?? `${err.name}: ${err.message}`) + code;
  }
  return String(err);
}

/** Runs this node until the job ends; resolves with the process exit code. */
export async function runNode(o: NodeOptions): Promise<number> {
  const { nodeRank, nodes } = o.wireup;
  if (!Number.isInteger(o.ranks) || o.ranks < 1) {
    throw new NbcLaunchError(`Cannot start node ${nodeRank}: it was given ${o.ranks} ranks; expected at least 1 (--ppn)`);
  }
  let secret = o.wireup.secret;
  if (secret === null) {
    // Said once for the job (by node 0), not once per node of an mpirun.
    if (nodes > 1 && nodeRank === 0) {
      log('warning: NBC_SECRET is not set; using a secret derived from the job id, which does not ' +
        'keep other local users out. Set NBC_SECRET to 64 hex digits (e.g. from `nbc secret`) on every node.');
    }
    secret = nodes > 1 ? createHash('sha256').update(`nbcoll-derived|${o.wireup.jobId}`).digest() : randomBytes(32);
  }

  let ending = false;
  let finish!: (code: number) => void;
  const ended = new Promise<number>((resolve) => { finish = resolve; });

  let links: LinkManager | null = null;
  let server: RendezvousServer | null = null;
  let client: RendezvousClient | null = null;
  const workers: Worker[] = [];
  /** Resolve as each rank worker exits. */
  const exits: Array<Promise<void>> = [];
  let engine: Engine | null = null;
  let aggNode: AggNode | null = null;
  let control: Int32Array | null = null;

  const stop = async (code: number): Promise<void> => {
    if (control !== null) {
      // Wake every parked rank so it sees the abort word and stops waiting.
      Atomics.store(control, kAbortWord, code === 0 ? 1 : code);
      for (let e = 0; e <= o.ranks; e++) ringDoorbell(control, e);
    }
    engine?.stop();
    aggNode?.close();
    // On a clean stop, ranks that linger (UCX) leave on their own once they see the abort
    // word, with their output flushed; then anything left is terminated.
    if (code === 0) await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 2000).unref())]);
    await Promise.race([
      Promise.all(workers.map((w) => w.terminate())),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
    await Promise.allSettled([client?.close(), links?.close(), server?.close()]);
  };

  /** Reports a failure (once) and stops the job everywhere. */
  const fail = (reason: string, exitCode: number): void => {
    if (ending) return;
    ending = true;
    const code = exitCode === 0 ? 1 : exitCode;
    log(reason);
    toParent({ type: 'failure', node: nodeRank, reason, exitCode: code });
    void (async () => {
      await client?.abort(reason, code);
      await stop(code);
      finish(code);
    })();
  };

  /** A rank of another node has finished (a relayed KIND_FIN): the engine tells this node's ranks. */
  const earlyFins: number[] = [];
  const finishedElsewhere = (rank: number): void => {
    try {
      engine!.finishedElsewhere(rank);
    } catch (err) {
      fail(`node ${nodeRank}: ${formatError(err)}`, 1);
    }
  };

  /** Stops because another node reported a failure (it already printed why). */
  const follow = (exitCode: number): void => {
    if (ending) return;
    ending = true;
    void stop(exitCode).then(() => finish(exitCode));
  };

  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => follow(sig === 'SIGINT' ? 130 : 143));
  }
  process.once('disconnect', () => fail(`node ${nodeRank}: lost the launcher (nbc run); stopping`, 1));

  // ---- wire-up ----------------------------------------------------------------------
  const choice = o.transport ?? 'auto';
  const noUcx = ucxUnavailable();
  const ucxErrMode = ucxErrModeFromEnv();
  if (choice === 'ucx' && o.link !== undefined) {
    throw new NbcArgError(`Cannot emulate links (--link) with --transport ucx: emulation applies to the engines' TCP links; expected --transport tcp or auto`);
  }
  if (choice === 'ucx' && noUcx !== null && nodes > 1) {
    throw new NbcLaunchError(`Cannot use --transport ucx on node ${nodeRank}: ${noUcx}; expected --transport tcp or auto`);
  }
  /** Node -> its ranks' UCX worker addresses (base64), as they arrive through the rendezvous. */
  const ucxAddresses = new Map<number, { addresses: string[]; engine: string }>();
  let onUcxAddresses: () => void = () => {};
  let counts = [o.ranks];
  let useUcx = false;
  // How this host's threads share its cores: the job's ranks on it (NBC_HOST_RANKS) and its
  // node engines (NBC_HOST_NODES; both set by nbc run). Where the engines have no core of their
  // own, whatever in this process waits without work gives its core away (sched_yield, with
  // the native addon) rather than hold it.
  const hostRanks = Number(process.env.NBC_HOST_RANKS ?? o.ranks);
  const hostNodes = Number(process.env.NBC_HOST_NODES ?? 1);
  const engineHasCore = hostRanks + hostNodes <= availableParallelism();
  const yieldCore = engineHasCore ? null : nativeAddon().addon?.schedYield ?? null;
  // The engine's copies between rings, arenas and frames go to the addon's memmove where built.
  setNativeCopy(nativeAddon().addon?.copy ?? null);
  // The emulated wire waits out a frame's last microseconds polling; it yields between its
  // polls only while a rank of this node waits (set once the shared memory exists): beside a
  // computing rank a yielding thread runs only when the rank's time slice ends.
  // Where the job's other nodes share this host too (nbc run), their ranks must not compute
  // either: the host board says whether any rank of the host does (shm/host-board.ts).
  const boardPath = process.env.NBC_HOST_BOARD || undefined;
  const board = yieldCore === null ? null : openHostBoard(hostRanks, -1, boardPath);
  let ranksWaited: () => boolean = () => false;
  const wireYield = yieldCore === null ? null : (): void => { if (ranksWaited() && (board === null || board.idle())) yieldCore(); };
  if (nodes > 1) {
    links = new LinkManager({ nodeId: nodeRank, secret, host: o.bindHost, log: rawLog, emulate: o.link, yieldCore: wireYield });
    const addr = await links.listen();
    let masterPort = o.wireup.masterPort;
    if (nodeRank === 0) {
      server = new RendezvousServer({ secret, nodes, host: o.bindHost ?? '127.0.0.1', port: masterPort, log: rawLog, silenceMs: o.silenceMs });
      // A node that stopped answering: the server aborted the job; this node says why.
      server.on('silent', (m) => fail(m.reason, m.exitCode));
      masterPort = await server.listen();
      toParent({ type: 'master', port: masterPort });
    }
    client = new RendezvousClient();
    client.on('abort', (m) => follow(m.exitCode));
    // Listening before connect: a BROADCAST may arrive in the same read as the table.
    client.on('broadcast', (payload: unknown) => {
      const fin = parseFinished(payload, nodes);
      if (fin !== null) {
        if (!fin.nodes.includes(nodeRank)) return;
        // A rank of a quick job may finish before this node has its engine: kept until then.
        if (engine === null) earlyFins.push(fin.rank);
        else finishedElsewhere(fin.rank);
        return;
      }
      const got = parseUcxAddresses(payload, nodes);
      if (got === null) return;
      if (ucxAddresses.has(got.node)) return;
      ucxAddresses.set(got.node, got);
      onUcxAddresses();
    });
    client.on('lost', (err: Error) => fail(`node ${nodeRank}: lost contact with the rendezvous master (node 0): ${err.message}`, 1));
    // Node 0 reaches its own server where it listens. Links that listen on every interface are
    // dialled, by node 0's peers, at the master address, and, for the others, where the server
    // sees their connection (rendezvous.ts).
    const serverHost = o.bindHost !== undefined && !isWildcard(o.bindHost) ? o.bindHost : '127.0.0.1';
    const advertised = nodeRank === 0 && isWildcard(addr.host) ? o.wireup.masterAddr : addr.host;
    const table = await client.connect({
      secret, nodeId: nodeRank, host: nodeRank === 0 ? serverHost : o.wireup.masterAddr, port: masterPort,
      hello: { host: advertised, port: addr.port, nranks: o.ranks, extra: { ucx: noUcx === null && o.link === undefined, transport: choice } },
      timeoutMs: 30_000,
      silenceMs: o.silenceMs,
    });
    client.on('shutdown', () => {
      if (ending) return;
      ending = true;
      void stop(0).then(() => finish(0));
    });
    links.on('peer-lost', (peer: number, err: Error) => {
      if (!ending) fail(`node ${nodeRank}: lost the link to node ${peer}: ${err.message}`, 1);
    });
    links.setPeers(table.nodes.map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port })));
    counts = table.nodes.map((n) => n.nranks);
    // The transport is a job-wide decision, taken from every node's HELLO: UCX when any node
    // asks for it (and then every node must have it), or 'auto' everywhere and every node can.
    const extras = table.nodes.map((n) => (typeof n.extra === 'object' && n.extra !== null ? n.extra : {}) as { ucx?: unknown; transport?: unknown });
    const wantsUcx = extras.findIndex((e) => e.transport === 'ucx');
    const wantsTcp = extras.some((e) => e.transport === 'tcp');
    const lacking = extras.findIndex((e) => e.ucx !== true);
    if (wantsUcx >= 0 && lacking >= 0) {
      throw new NbcLaunchError(`Cannot use the UCX transport that node ${wantsUcx} asked for: node ${lacking} cannot (no UCX in its native addon, or --link set there); expected --transport tcp or auto`);
    }
    useUcx = wantsUcx >= 0 || (!wantsTcp && lacking < 0);
  }
  // With UCX the engine carries the offloaded schedules' frames over UCX too: its own worker,
  // on this thread, tagged with the node id.
  let engineUcx: UcxPath | null = null;
  if (useUcx) {
    const addon = nativeAddon().addon!;
    setFdSignal(addon.signalFd!);
    if (isUcxAddon(addon)) engineUcx = new UcxPath(addon, nodeRank, OF_MAX_BYTES, 'engine', ucxErrMode);
  }

  // ---- placement --------------------------------------------------------------------
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

  // ---- shared memory, engine, ranks ----------------------------------------------------
  const shared = createNodeShared({
    ranks: o.ranks,
    ringBytes: o.ringBytes ?? DEFAULT_RING_BYTES,
    sliceBytes: o.sliceBytes ?? DEFAULT_SLICE_BYTES,
  });
  control = new Int32Array(shared.control);
  ranksWaited = waitWatcher(control, o.ranks);
  const enginePlacement: Placement = { worldRank: -1, worldSize, nodeId: nodeRank, nodeOfRank, localOfRank };
  // Spin budget before parking. When the job's ranks on this host fit its cores, waiting ranks
  // poll for up to 2 ms, as MPI ranks busy-poll: a parked thread takes tens of microseconds to
  // wake here, which would otherwise dominate every round trip. On an oversubscribed host
  // (e.g. 16 ranks on 2 cores) they spin 20 us and park, so waiting never starves the ranks
  // that have work. Measured in BENCHMARKS.md ("Waiting"); NBC_SPIN_US overrides.
  const oversubscribed = hostRanks > availableParallelism();
  // On the TCP transport every message between nodes passes through both nodes' engines, so
  // the engines need cores too: a rank that spins 2 ms while its engine waits for a core
  // delays the very message it waits for. Counting the host's engines (NBC_HOST_NODES, set by
  // nbc run) decides how waits behave (BENCHMARKS.md, "The pure-JS path between nodes"). With
  // UCX the engines are off the data path.
  const hostEngines = nodes > 1 && !useUcx ? hostNodes : 0;
  const crowded = hostRanks + hostEngines > availableParallelism();
  // Crowded, with the native addon, a waiting rank yields its core from its first idle poll
  // (BENCHMARKS.md, "Waits that yield": spinning first only delays the rank it waits for), for
  // NBC_YIELD_US before it parks.
  const canYield = crowded && nativeAddon().addon !== null;
  const spinUs = o.spinUs ?? (crowded ? (canYield ? 0 : 20) : 2000);
  const yieldUs = o.yieldUs ?? DEFAULT_YIELD_US;
  // Where every rank and every engine of this host has a core of its own (seed 000's NIC
  // processor), the engine keeps polling for a while after it last had work instead of parking,
  // and a rank waiting for an offloaded collective spins as long as any wait: neither then pays
  // a thread wake-up per step (BENCHMARKS.md, "With a core for every engine"). Elsewhere both
  // park at once, since their spin would take the core that the other needs.
  // On a crowded host whose engines carry the TCP traffic, an engine that parks costs every
  // message between nodes an event-loop wake-up on each side; with the addon it polls on for a
  // while instead, while a rank of its node waits, handing its core to any thread with work
  // between turns.
  const engineSpinUs = o.engineSpinUs ??
    (engineHasCore ? DEFAULT_ENGINE_SPIN_US : yieldCore !== null && hostEngines > 0 ? DEFAULT_ENGINE_YIELD_US : 0);
  const offloadSpinUs = engineHasCore ? spinUs : undefined;
  engine = new Engine(shared, enginePlacement, links, (err) => fail(`node ${nodeRank} engine failed: ${formatError(err)}`, 1), configFromEnv(),
    { spinUs: engineSpinUs, yieldCore, hostIdle: board === null ? null : () => board.idle() });
  engine.start();
  // A rank's word that it has finished, for nodes this one has no link with (engine.ts).
  const relay = client;
  if (relay !== null) {
    engine.relayFinished = (rank, to) => {
      if (!ending) relay.broadcast({ fin: { rank, nodes: to } });
    };
  }
  for (const rank of earlyFins.splice(0)) finishedElsewhere(rank);

  // ---- the aggregation fabric (the agg executor), where the job has one -----------------
  // Joined before the ranks start, so a rank's first agg call finds the node's answer ready.
  const fabric = fabricFromEnv(process.env);
  if (fabric !== null) {
    let node: AggNode;
    try {
      const jobKey = createHmac('sha256', secret).update(`nbc-agg-v1|${o.wireup.jobId}`).digest();
      const client = await AggClient.connect({
        manager: fabric.manager, fabricSecret: fabric.secret, jobId: o.wireup.jobId, jobKey, nodeId: nodeRank, link: o.link, log: rawLog,
      });
      node = new AggNode(client, '', log);
    } catch (err) {
      const why = `node ${nodeRank} could not join the aggregation fabric at ${fabric.manager.host}:${fabric.manager.port}: ${(err as Error).message}`;
      log(why);
      node = new AggNode(null, why, log);
    }
    aggNode = node;
  } else {
    aggNode = new AggNode(null, 'no aggregation fabric is configured for this job (nbc run --agg radix=R,levels=L, or NBC_AGG_MANAGER)', log);
  }
  engine.useAgg(aggNode);

  const results: Array<{ rank: number; result: unknown }> = [];
  const localUcx: Uint8Array[] = [];
  let localUcxCount = 0;
  if (useUcx) {
    // Once every node's addresses are in, each rank gets the table (null for its own node).
    onUcxAddresses = () => {
      if (ucxAddresses.size < nodes) return;
      const table: Array<Uint8Array | null> = [];
      for (let n = 0; n < nodes; n++) {
        for (const a of ucxAddresses.get(n)!.addresses) table.push(n === nodeRank ? null : new Uint8Array(Buffer.from(a, 'base64')));
      }
      if (table.length !== worldSize) {
        fail(`node ${nodeRank}: the UCX wire-up gave ${table.length} worker addresses for ${worldSize} ranks`, 1);
        return;
      }
      engineUcx!.setAddresses(Array.from({ length: nodes }, (_, n) => (n === nodeRank ? null : new Uint8Array(Buffer.from(ucxAddresses.get(n)!.engine, 'base64')))));
      engine!.useUcx(engineUcx!);
      for (const w of workers) w.postMessage({ type: 'ucx-table', addresses: table });
    };
  }
  let running = o.ranks;
  const rankMain = new URL('./rank-main.js', import.meta.url);
  for (let i = 0; i < o.ranks; i++) {
    const rank = first + i;
    const boot: RankBoot = {
      shared,
      placement: { worldRank: rank, worldSize, nodeId: nodeRank, nodeOfRank, localOfRank },
      entry: o.entry,
      args: o.args,
      eagerLimit: o.eagerLimit,
      eagerCredit: o.eagerCredit,
      spinUs,
      offloadSpinUs,
      oversubscribed,
      yieldFromIdle: canYield,
      yieldUs,
      ...(boardPath === undefined ? {} : { hostBoard: { path: boardPath, ranks: hostRanks } }),
      ucx: useUcx,
      ucxErrMode,
    };
    const w = new Worker(rankMain, { workerData: boot, argv: o.args, stdout: true, stderr: true, name: `nbc rank ${rank}` });
    workers.push(w);
    const streamsOpen = { n: 2 };
    let exitCode: number | null = null;
    let counted = false;
    /** This rank is done: once, on its exit (or, with UCX, on its result; it lingers after). */
    const finished = (): void => {
      if (counted) return;
      counted = true;
      if (--running === 0 && !ending) allDone();
    };
    /** A consequence error waits to be reported (CONSEQUENCE_GRACE_MS): its exit must not report first. */
    let reportLater = false;
    const settle = (): void => {
      if (exitCode === null || streamsOpen.n > 0 || reportLater) return;
      if (exitCode !== 0) {
        fail(`rank ${rank} (node ${nodeRank}) exited with code ${exitCode}`, exitCode);
        return;
      }
      finished();
    };
    pipeOutput(w.stdout, process.stdout, o.tagOutput ? `[${rank}] ` : '', () => { streamsOpen.n--; settle(); });
    pipeOutput(w.stderr, process.stderr, o.tagOutput ? `[${rank}] ` : '', () => { streamsOpen.n--; settle(); });
    w.on('message', (m: RankReport) => {
      if (m.type === 'result') {
        results.push({ rank: m.rank, result: m.result });
        if (useUcx) finished();
      } else if (m.type === 'ucx-address') localUcx[i] = m.address;
      if (m.type === 'ucx-address' && ++localUcxCount === o.ranks) {
        // Every local rank has its worker: tell the other nodes, through the authenticated
        // rendezvous, so only members of the job learn the addresses.
        client!.broadcast({ ucx: {
          node: nodeRank,
          addresses: localUcx.map((a) => Buffer.from(a).toString('base64')),
          engine: Buffer.from(engineUcx!.address).toString('base64'),
        } });
      }
    });
    w.on('error', (err) => {
      const reason = `rank ${rank} (node ${nodeRank}) failed: ${formatError(err)}`;
      if (!(err instanceof Error && err.message.includes(REPORTED_ELSEWHERE))) {
        fail(reason, 1);
        return;
      }
      // Data flagged invalid, or the job aborting: it follows from an error elsewhere, which
      // its own node reports once that rank's collective ends. Waiting a moment lets that report,
      // which names the cause, come first; if it does, this node just stops.
      reportLater = true;
      setTimeout(() => fail(reason, 1), CONSEQUENCE_GRACE_MS);
    });
    w.on('exit', (code) => {
      exitCode = code;
      settle();
    });
    exits.push(new Promise((resolve) => w.once('exit', () => resolve())));
  }

  const allDone = (): void => {
    results.sort((a, b) => a.rank - b.rank);
    toParent({ type: 'results', node: nodeRank, ranks: results });
    if (client === null) {
      ending = true;
      void stop(0).then(() => finish(0));
    } else {
      client.done();
    }
  };

  return ended;
}

/** Copies a worker's output stream to ours, prefixing every line when asked. */
function pipeOutput(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, prefix: string, onEnd: () => void): void {
  if (prefix === '') {
    from.on('data', (chunk: Buffer) => to.write(chunk));
  } else {
    let partial = '';
    from.setEncoding('utf8');
    from.on('data', (chunk: string) => {
      const text = partial + chunk;
      const lines = text.split('\n');
      partial = lines.pop()!;
      if (lines.length > 0) to.write(lines.map((l) => prefix + l + '\n').join(''));
    });
    from.on('end', () => {
      if (partial !== '') to.write(prefix + partial + '\n');
    });
  }
  from.on('end', onEnd);
}

/** Most bytes of one UCX worker address accepted from the wire-up. */
const MAX_UCX_ADDRESS_BYTES = 16 * 1024;


/** A relayed KIND_FIN (engine.ts relayFinished): rank `rank` has finished; for `nodes`. */
function parseFinished(payload: unknown, nodes: number): { rank: number; nodes: number[] } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const f = (payload as { fin?: unknown }).fin;
  if (typeof f !== 'object' || f === null) return null;
  const { rank, nodes: to } = f as { rank?: unknown; nodes?: unknown };
  const isNode = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < nodes;
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 0 || !Array.isArray(to) || !to.every(isNode)) return null;
  return { rank, nodes: to };
}

/**
 * A node's UCX worker addresses from a rendezvous BROADCAST ({ ucx: { node, addresses } }),
 * checked; null for any other payload.
 */
function parseUcxAddresses(payload: unknown, nodes: number): { node: number; addresses: string[]; engine: string } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const u = (payload as { ucx?: unknown }).ucx;
  if (typeof u !== 'object' || u === null) return null;
  const { node, addresses, engine } = u as { node?: unknown; addresses?: unknown; engine?: unknown };
  const isAddress = (a: unknown): a is string => typeof a === 'string' && a.length > 0 && a.length <= MAX_UCX_ADDRESS_BYTES * 4 / 3 + 4;
  if (typeof node !== 'number' || !Number.isInteger(node) || node < 0 || node >= nodes) return null;
  if (!Array.isArray(addresses) || !addresses.every(isAddress) || !isAddress(engine)) return null;
  return { node, addresses: addresses as string[], engine };
}
