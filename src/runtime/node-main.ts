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
import { createHash, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { NbcError, NbcLaunchError } from '../errors.js';
import { LinkManager } from '../net/link.js';
import { createNodeShared, DEFAULT_RING_BYTES, DEFAULT_SLICE_BYTES } from '../shm/node-shared.js';
import { kAbortWord, endpointWord, kDoorbell } from '../shm/layout.js';
import type { Placement } from '../p2p/transport.js';
import { Engine } from './engine.js';
import type { Wireup } from './env.js';
import type { LinkSpec } from './link-spec.js';
import type { RankBoot, RankReport } from './rank-main.js';
import { RendezvousClient, RendezvousServer } from './rendezvous.js';
import { configFromEnv } from './config.js';
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
  spinUs?: number;
  /** The yield phase of a wait on an oversubscribed host (us); default DEFAULT_YIELD_US. */
  yieldUs?: number;
}

/**
 * How long a waiting rank on an oversubscribed host calls sched_yield between polls before it
 * parks (with the native addon; BENCHMARKS.md, "Waits that yield").
 */
export const DEFAULT_YIELD_US = 1000;

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
    if (nodes > 1) {
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
  let engine: Engine | null = null;
  let control: Int32Array | null = null;

  const stop = async (code: number): Promise<void> => {
    if (control !== null) {
      // Wake every parked rank so it sees the abort word and stops waiting.
      Atomics.store(control, kAbortWord, code === 0 ? 1 : code);
      for (let e = 0; e <= o.ranks; e++) {
        Atomics.add(control, endpointWord(e, kDoorbell), 1);
        Atomics.notify(control, endpointWord(e, kDoorbell));
      }
    }
    engine?.stop();
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
  let counts = [o.ranks];
  if (nodes > 1) {
    links = new LinkManager({ nodeId: nodeRank, secret, host: o.bindHost, log: rawLog, emulate: o.link });
    const addr = await links.listen();
    let masterPort = o.wireup.masterPort;
    if (nodeRank === 0) {
      server = new RendezvousServer({ secret, nodes, host: o.bindHost ?? '127.0.0.1', port: masterPort, log: rawLog });
      masterPort = await server.listen();
      toParent({ type: 'master', port: masterPort });
    }
    client = new RendezvousClient();
    client.on('abort', (m) => follow(m.exitCode));
    client.on('lost', (err: Error) => fail(`node ${nodeRank}: lost contact with the rendezvous master (node 0): ${err.message}`, 1));
    const table = await client.connect({
      secret, nodeId: nodeRank, host: nodeRank === 0 ? '127.0.0.1' : o.wireup.masterAddr, port: masterPort,
      hello: { host: addr.host, port: addr.port, nranks: o.ranks },
      timeoutMs: 30_000,
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
  const enginePlacement: Placement = { worldRank: -1, worldSize, nodeId: nodeRank, nodeOfRank, localOfRank };
  engine = new Engine(shared, enginePlacement, links, (err) => fail(`node ${nodeRank} engine failed: ${formatError(err)}`, 1), configFromEnv());
  engine.start();

  // Spin budget before parking. When the job's ranks on this host fit its cores, waiting ranks
  // poll for up to 2 ms, as MPI ranks busy-poll: a parked thread takes tens of microseconds to
  // wake here, which would otherwise dominate every round trip. On an oversubscribed host
  // (e.g. 16 ranks on 2 cores) they spin 20 us and park, so waiting never starves the ranks
  // that have work. Measured in BENCHMARKS.md ("Waiting"); NBC_SPIN_US overrides.
  const hostRanks = Number(process.env.NBC_HOST_RANKS ?? o.ranks);
  const oversubscribed = hostRanks > availableParallelism();
  // Oversubscribed, with the native addon, a waiting rank yields its core from its first idle
  // poll (BENCHMARKS.md, "Waits that yield": spinning first only delays the rank it waits for),
  // for NBC_YIELD_US before it parks.
  const canYield = oversubscribed && nativeAddon().addon !== null;
  const spinUs = o.spinUs ?? (oversubscribed ? (canYield ? 0 : 20) : 2000);
  const yieldUs = o.yieldUs ?? DEFAULT_YIELD_US;

  const results: Array<{ rank: number; result: unknown }> = [];
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
      spinUs,
      oversubscribed,
      yieldUs,
    };
    const w = new Worker(rankMain, { workerData: boot, argv: o.args, stdout: true, stderr: true, name: `nbc rank ${rank}` });
    workers.push(w);
    const streamsOpen = { n: 2 };
    let exitCode: number | null = null;
    const settle = (): void => {
      if (exitCode === null || streamsOpen.n > 0) return;
      if (exitCode !== 0) {
        fail(`rank ${rank} (node ${nodeRank}) exited with code ${exitCode}`, exitCode);
        return;
      }
      if (--running === 0 && !ending) allDone();
    };
    pipeOutput(w.stdout, process.stdout, o.tagOutput ? `[${rank}] ` : '', () => { streamsOpen.n--; settle(); });
    pipeOutput(w.stderr, process.stderr, o.tagOutput ? `[${rank}] ` : '', () => { streamsOpen.n--; settle(); });
    w.on('message', (m: RankReport) => {
      if (m.type === 'result') results.push({ rank: m.rank, result: m.result });
    });
    w.on('error', (err) => fail(`rank ${rank} (node ${nodeRank}) failed: ${formatError(err)}`, 1));
    w.on('exit', (code) => {
      exitCode = code;
      settle();
    });
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
