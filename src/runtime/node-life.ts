/**
 * A node's life and shutdown (runtime/node-main.ts runs the steps): what the node holds (links,
 * rendezvous, engine, rank workers), and the three ways it ends. `fail`: this node saw a
 * failure; it reports it once, tells the master (which aborts every node) and stops. `follow`:
 * another node reported one, or the master says the job is done (SHUTDOWN), or a signal came;
 * this node just stops. Either way `ended` resolves with the exit code once the node stopped:
 * ranks woken through the abort word and terminated, the fabric, links and rendezvous closed.
 */
import type { Worker } from 'node:worker_threads';
import { NbcError } from '../errors.js';
import type { LinkManager } from '../net/link.js';
import { kAbortWord } from '../shm/layout.js';
import { ringDoorbell } from '../shm/node-shared.js';
import type { AggNode } from './agg-node.js';
import type { Engine } from './engine.js';
import type { NodeToLauncher } from './node-main.js';
import type { RendezvousClient, RendezvousServer } from './rendezvous.js';

export const log = (msg: string): void => {
  process.stderr.write(`nbc: ${msg}\n`);
};
/** For net/ and the rendezvous, whose messages carry their own "nbc: " prefix. */
export const rawLog = (msg: string): void => {
  process.stderr.write(`${msg}\n`);
};

/** Messages to the launcher not yet handed to the channel (`parentFlushed`). */
const unsent = new Set<Promise<void>>();

export function toParent(msg: NodeToLauncher): void {
  if (process.send === undefined || !process.connected) return;
  const sent = new Promise<void>((resolve) => process.send!(msg, () => {
    unsent.delete(sent);
    resolve();
  }));
  unsent.add(sent);
}

/**
 * Resolves once every message to the launcher has left (or after `ms`): the node awaits it
 * before process.exit, which on Deno drops a message still queued (a rank's failure, sent
 * milliseconds before, would reach the launcher only as the node's exit code).
 */
export async function parentFlushed(ms = 1000): Promise<void> {
  if (unsent.size === 0) return;
  await Promise.race([Promise.all(unsent), new Promise((resolve) => setTimeout(resolve, ms).unref())]);
}

export function formatError(err: unknown): string {
  if (err instanceof Error) {
    const code = err instanceof NbcError || (err as { code?: unknown }).code !== undefined
      ? ` [${String((err as { code?: unknown }).code)}]` : '';
    return (err.stack ?? `${err.name}: ${err.message}`) + code;
  }
  return String(err);
}

export class NodeLife {
  /** Set once the node has started to stop; nothing is reported after. */
  ending = false;
  /** Resolves with the process exit code once the node has stopped. */
  readonly ended: Promise<number>;
  private finish!: (code: number) => void;
  links: LinkManager | null = null;
  server: RendezvousServer | null = null;
  client: RendezvousClient | null = null;
  readonly workers: Worker[] = [];
  /** Resolve as each rank worker exits. */
  readonly exits: Array<Promise<void>> = [];
  aggNode: AggNode | null = null;
  /** The node's control words, once the shared memory exists (the abort word wakes the ranks). */
  control: Int32Array | null = null;
  private engine: Engine | null = null;
  /** Ranks of other nodes that finished before this node had its engine. */
  private readonly earlyFins: number[] = [];

  constructor(readonly nodeRank: number, readonly ranks: number) {
    this.ended = new Promise<number>((resolve) => { this.finish = resolve; });
  }

  /** Signals stop the node; a lost launcher (nbc run) fails it. */
  watchProcess(): void {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => this.follow(sig === 'SIGINT' ? 130 : 143));
    }
    process.once('disconnect', () => this.fail(`node ${this.nodeRank}: lost the launcher (nbc run); stopping`, 1));
  }

  /** The node's engine, started: the ranks of other nodes that finished before it are handed over. */
  setEngine(engine: Engine): void {
    this.engine = engine;
    for (const rank of this.earlyFins.splice(0)) this.finishedElsewhere(rank);
  }

  /** A rank of another node has finished (a relayed KIND_FIN): the engine tells this node's ranks. */
  finishedElsewhere(rank: number): void {
    // A rank of a quick job may finish before this node has its engine: kept until then.
    if (this.engine === null) {
      this.earlyFins.push(rank);
      return;
    }
    try {
      this.engine.finishedElsewhere(rank);
    } catch (err) {
      this.fail(`node ${this.nodeRank}: ${formatError(err)}`, 1);
    }
  }

  /** Reports a failure (once) and stops the job everywhere. */
  fail(reason: string, exitCode: number): void {
    if (this.ending) return;
    this.ending = true;
    const code = exitCode === 0 ? 1 : exitCode;
    log(reason);
    toParent({ type: 'failure', node: this.nodeRank, reason, exitCode: code });
    void (async () => {
      await this.client?.abort(reason, code);
      await this.stop(code);
      this.finish(code);
    })();
  }

  /** Stops because another node reported a failure (it already printed why), or the job is done (0). */
  follow(exitCode: number): void {
    if (this.ending) return;
    this.ending = true;
    void this.stop(exitCode).then(() => this.finish(exitCode));
  }

  private async stop(code: number): Promise<void> {
    const control = this.control;
    if (control !== null) {
      // Wake every parked rank so it sees the abort word and stops waiting.
      Atomics.store(control, kAbortWord, code === 0 ? 1 : code);
      for (let e = 0; e <= this.ranks; e++) ringDoorbell(control, e);
    }
    this.engine?.stop();
    this.aggNode?.close();
    // On a clean stop, ranks that linger (UCX) leave on their own once they see the abort
    // word, with their output flushed; then anything left is terminated.
    if (code === 0) await Promise.race([Promise.all(this.exits), new Promise((r) => setTimeout(r, 2000).unref())]);
    await Promise.race([
      Promise.all(this.workers.map((w) => w.terminate())),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
    await Promise.allSettled([this.client?.close(), this.links?.close(), this.server?.close()]);
  }
}
