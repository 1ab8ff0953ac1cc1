/**
 * A rank in a Web Worker (started by launchWeb, index.ts): attaches to the page's shared
 * memory, builds the world communicator, imports the job module and runs its default export,
 * and reports the result. The same core as a Node rank (runtime/rank-main.ts) without what
 * needs Node: no engine (one node, host executor), no addon (waits park with Atomics.wait,
 * which workers may), console output posted to the page.
 *
 * It is also the module a job imports as 'nbcoll' (the page maps the specifier to this
 * file's URL), so the job and the bootstrap share one copy of the library.
 *
 * Core code only: no node:* imports.
 */
import type { RankContext } from '../comm/comm.js';
import { Communicator } from '../coll/communicator.js';
import { DEFAULT_CONFIG } from '../config.js';
import { NbcError } from '../errors.js';
import { Transport } from '../p2p/transport.js';
import type { WebRankBoot, WebRankReport } from './protocol.js';
import { setWorld } from './world.js';

export * from './api.js';

interface WorkerScope {
  postMessage(msg: WebRankReport): void;
  addEventListener(type: 'message', fn: (e: { data: WebRankBoot }) => void, opts?: { once: boolean }): void;
}

const scope = globalThis as unknown as WorkerScope & { WorkerGlobalScope?: unknown; document?: unknown };
// Loaded by a job (or a page) rather than as a worker's own script: only the API.
const isRankWorker = scope.WorkerGlobalScope !== undefined && scope.document === undefined && !('__nbcollRank' in globalThis);

if (isRankWorker) {
  (globalThis as Record<string, unknown>).__nbcollRank = true;
  scope.addEventListener('message', (e) => void run(e.data), { once: true });
}

function text(args: unknown[]): string {
  return args.map((a) => (typeof a === 'string' ? a : a instanceof Error ? a.stack ?? String(a) : safeJson(a))).join(' ');
}

function safeJson(a: unknown): string {
  try {
    return typeof a === 'bigint' ? `${a}n` : JSON.stringify(a) ?? String(a);
  } catch {
    return String(a);
  }
}

async function run(boot: WebRankBoot): Promise<void> {
  const rank = boot.placement.worldRank;
  const post = (m: WebRankReport): void => scope.postMessage(m);
  // The job's console lines go to the page, which prints them as `nbc run` does.
  console.log = (...a: unknown[]) => post({ type: 'log', rank, stream: 'out', text: text(a) });
  console.info = console.log;
  console.error = (...a: unknown[]) => post({ type: 'log', rank, stream: 'err', text: text(a) });
  console.warn = console.error;
  try {
    if (boot.waitAsyncHelper || typeof Atomics.waitAsync !== 'function') installWaitAsyncHelper();
    const transport = new Transport(boot.shared, boot.placement, { eagerLimit: boot.eagerLimit, spinUs: boot.spinUs });
    const rc: RankContext = {
      transport, worldRank: rank, worldSize: boot.placement.worldSize, nodeId: 0, nextCtx: 2,
      config: { ...DEFAULT_CONFIG, oversubscribed: boot.oversubscribed, engine: false },
    };
    const world = new Communicator(rc, Array.from({ length: rc.worldSize }, (_, i) => i), 0);
    setWorld(world);
    post({ type: 'ready', rank });
    const mod = (await import(/* @vite-ignore */ boot.entry)) as { default?: unknown };
    let result: unknown = null;
    if (typeof mod.default === 'function') result = await (mod.default as (w: Communicator, a: string[]) => unknown)(world, boot.args);
    // What is owed to peers leaves before the rank reports (a peer waiting for it then fails at once).
    transport.announceFinished();
    try {
      post({ type: 'result', rank, result });
    } catch {
      post({ type: 'result', rank, result: String(result) });
    }
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    post({ type: 'error', rank, name: e.name, code: err instanceof NbcError ? err.code : null, message: e.message, stack: e.stack ?? null });
  }
}

/** The helper's whole program: block in Atomics.wait, then say how it ended. */
const HELPER = `onmessage = (e) => {
  const { id, buffer, index, value, timeout } = e.data;
  postMessage({ id, result: Atomics.wait(new Int32Array(buffer), index, value, timeout) });
};`;

/**
 * Atomics.waitAsync through a helper worker (one per rank: the core arms one asynchronous
 * wait at a time, p2p/wait.ts parkAsync): the helper blocks in Atomics.wait on the same shared
 * word and posts the outcome, which settles the promise. For engines without waitAsync.
 */
function installWaitAsyncHelper(): void {
  const g = globalThis as unknown as {
    Worker: new (url: string) => { postMessage(m: unknown): void; onmessage: ((e: { data: { id: number; result: string } }) => void) | null };
    URL: { createObjectURL(b: unknown): string };
    Blob: new (parts: string[], o: { type: string }) => unknown;
  };
  const helper = new g.Worker(g.URL.createObjectURL(new g.Blob([HELPER], { type: 'text/javascript' })));
  const pending = new Map<number, (r: string) => void>();
  let next = 0;
  // What the helper did, for tests: waits armed, and those the doorbell ended (it rang during
  // the wait, 'ok', or between the post and the wait, 'not-equal'), not the timeout.
  const counts = { waits: 0, woken: 0 };
  (globalThis as Record<string, unknown>).__nbcollWaitAsyncHelper = counts;
  helper.onmessage = (e) => {
    const settle = pending.get(e.data.id);
    pending.delete(e.data.id);
    if (e.data.result !== 'timed-out') counts.woken++;
    settle?.(e.data.result);
  };
  const waitAsyncByHelper = (ia: Int32Array, index: number, value: number, timeout?: number) => {
    if (Atomics.load(ia, index) !== value) return { async: false as const, value: 'not-equal' as const };
    const id = next++;
    counts.waits++;
    const value2 = new Promise<'ok' | 'timed-out'>((resolve) => pending.set(id, resolve as (r: string) => void));
    helper.postMessage({ id, buffer: ia.buffer, index, value, timeout: timeout ?? Infinity });
    return { async: true as const, value: value2 };
  };
  (Atomics as unknown as { waitAsync: typeof waitAsyncByHelper }).waitAsync = waitAsyncByHelper;
}
