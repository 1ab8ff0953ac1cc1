/**
 * `nbcoll/web`: run a job's ranks as Web Workers of this page.
 *
 *     import { launchWeb } from 'nbcoll/web';
 *     const run = await launchWeb(new URL('./job.js', import.meta.url), { ranks: 4 });
 *     run.results;   // each rank's return value, by rank
 *
 * Every rank is a module worker running rank.ts; they share the page's SharedArrayBuffers
 * (one node: rings, arena slices, doorbells) and wait with Atomics.wait, so the page must be
 * cross-origin isolated (COOP `same-origin`, COEP `require-corp` or `credentialless`). The
 * main thread only launches and listens: it never blocks. A rank that throws, or a worker that
 * dies, stops the job: the others are woken (the abort word) and terminated, and the promise
 * rejects with the rank's error.
 *
 * Core code only: no node:* imports.
 */
import { NbcError, NbcLaunchError } from '../errors.js';
import { kAbortWord } from '../shm/layout.js';
import { createNodeShared, nodeSizeProblem, ringDoorbell, DEFAULT_RING_BYTES } from '../shm/node-shared.js';
import type { WebRankBoot, WebRankReport } from './protocol.js';

export interface WebLaunchOptions {
  /** How many ranks (workers), 1 or more. */
  ranks: number;
  /** Arguments for the job's default export. */
  args?: string[];
  /** Each rank's console lines (default: the page's console, as `[rank] line`). */
  onOutput?: (rank: number, stream: 'out' | 'err', text: string) => void;
  /** Fail the job after this long (default: none). */
  timeoutMs?: number;
  /** Largest message sent inline (default 8192 bytes). */
  eagerLimit?: number;
  /** Each rank's arena for large messages, bytes (default 64 MiB; committed only as used). */
  sliceBytes?: number;
  /** How long a rank's blocking wait polls before it parks, us (default 2000, or 0 with more ranks than cores). */
  spinUs?: number;
  /**
   * Each rank's asynchronous waits (`await req`) go through a helper worker that blocks in
   * Atomics.wait and posts back: the fallback where Atomics.waitAsync is missing (Firefox
   * before 145, Safari before 16.4), taken there whatever this says; true forces it.
   */
  waitAsyncHelper?: boolean;
  /** The rank module's URL (default: rank.js beside this module, or the bundle's own). */
  rankUrl?: string | URL;
}

export interface WebLaunchResult {
  /** Each rank's return value, by rank. */
  results: unknown[];
  /** From the first worker's start to the last result, ms. */
  ms: number;
}

/** What this module needs of the page's Worker (no DOM types in the build). */
interface PageWorker {
  postMessage(msg: WebRankBoot): void;
  terminate(): void;
  onmessage: ((e: { data: WebRankReport }) => void) | null;
  onerror: ((e: { message: string; preventDefault(): void }) => void) | null;
}
type WorkerConstructor = new (url: string | URL, opts: { type: 'module'; name: string }) => PageWorker;

/** Why SharedArrayBuffer is missing on this page, or null. */
export function isolationProblem(): string | null {
  const g = globalThis as { crossOriginIsolated?: boolean; SharedArrayBuffer?: unknown };
  if (g.crossOriginIsolated === false || g.SharedArrayBuffer === undefined) {
    return 'this page is not cross-origin isolated, so it has no SharedArrayBuffer; serve it with the headers ' +
      '"Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp" (or "credentialless")';
  }
  return null;
}

/** The rank module beside this one: rank.js unbundled, nbcoll-rank.js in the bundle. */
const DEFAULT_RANK_URL = new URL(import.meta.url.endsWith('/nbcoll-web.js') ? './nbcoll-rank.js' : './rank.js', import.meta.url);

/** Runs the job module at `job` on `opts.ranks` Web Workers; resolves with every rank's result. */
export function launchWeb(job: string | URL, opts: WebLaunchOptions): Promise<WebLaunchResult> {
  const n = opts.ranks;
  if (!Number.isSafeInteger(n) || n < 1) throw new NbcLaunchError(`Cannot launch ${String(n)} ranks: expected an integer of at least 1`);
  const problem = isolationProblem() ?? nodeSizeProblem(n);
  if (problem !== null) throw new NbcLaunchError(`Cannot launch ranks on this page: ${problem}`);
  const WorkerCtor = (globalThis as { Worker?: WorkerConstructor }).Worker;
  if (WorkerCtor === undefined) throw new NbcLaunchError('Cannot launch ranks here: there is no Worker (launchWeb runs on a web page)');
  const base = (globalThis as { location?: { href: string } }).location?.href;
  const entry = new URL(job, base).href;
  const shared = createNodeShared({ ranks: n, ringBytes: DEFAULT_RING_BYTES, sliceBytes: opts.sliceBytes ?? 64 * 1024 * 1024 });
  const control = new Int32Array(shared.control);
  const nodeOfRank = new Int32Array(n);
  const localOfRank = Int32Array.from({ length: n }, (_, i) => i);
  const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? n;
  const out = opts.onOutput ?? ((rank, stream, text) => (stream === 'out' ? console.log : console.error)(`[${rank}] ${text}`));
  const t0 = performance.now();
  return new Promise<WebLaunchResult>((resolve, reject) => {
    const workers: PageWorker[] = [];
    const results = new Array<unknown>(n);
    let left = n;
    let over = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const end = (err: Error | null): void => {
      if (over) return;
      over = true;
      if (timer !== undefined) clearTimeout(timer);
      if (err !== null) {
        // Every parked rank wakes, sees the abort word and stops waiting; then all go.
        Atomics.store(control, kAbortWord, 2);
        for (let e = 0; e <= n; e++) ringDoorbell(control, e);
      }
      for (const w of workers) w.terminate();
      if (err === null) resolve({ results, ms: performance.now() - t0 });
      else reject(err);
    };
    if (opts.timeoutMs !== undefined && opts.timeoutMs !== null) {
      timer = setTimeout(() => end(new NbcLaunchError(`The job ${entry} did not finish within ${opts.timeoutMs} ms (${left} of ${n} ranks still running)`)), opts.timeoutMs);
    }
    for (let r = 0; r < n; r++) {
      const w = new WorkerCtor(opts.rankUrl ?? DEFAULT_RANK_URL, { type: 'module', name: `nbcoll rank ${r}` });
      workers.push(w);
      w.onmessage = (e) => {
        const m = e.data;
        if (m.type === 'log') out(m.rank, m.stream, m.text);
        else if (m.type === 'result') {
          results[m.rank] = m.result;
          if (--left === 0) end(null);
        } else if (m.type === 'error') {
          const err = new NbcLaunchError(`rank ${m.rank} failed: ${m.name}${m.code === null ? '' : ` [${m.code}]`}: ${m.message}`);
          if (m.stack !== null) err.stack = `${err.message}\n${m.stack}`;
          end(err);
        }
      };
      w.onerror = (e) => {
        e.preventDefault();
        end(new NbcLaunchError(`rank ${r} failed: its worker died: ${e.message || 'the rank module did not load (check its URL and the console)'}`));
      };
      const boot: WebRankBoot = {
        type: 'boot', shared, entry, args: opts.args ?? [], eagerLimit: opts.eagerLimit ?? 8192, oversubscribed: n > cores,
        // A core each: poll 2 ms before parking, as a Node rank (runtime/wait-policy.ts).
        // Crowded: park at once; a worker has no sched_yield to give its core away, and a poll
        // holds the core its partner needs (4 ranks on 2 cores, 8 B allreduce: 37 us parking
        // at once, 115 after 20 us of polls, 445 after 100).
        spinUs: opts.spinUs ?? (n > cores ? 0 : 2000),
        waitAsyncHelper: opts.waitAsyncHelper === true,
        placement: { worldRank: r, worldSize: n, nodeId: 0, nodeOfRank, localOfRank },
      };
      w.postMessage(boot);
    }
  });
}

export { NbcError, NbcLaunchError };
