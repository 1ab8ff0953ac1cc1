/**
 * Requests: the handle of every non-blocking operation. A request is progressed by
 * `test()` and `wait()` (blocking this worker with Atomics, spinning briefly first), and is
 * also a PromiseLike, so `await req` works without blocking the thread.
 */
import type { PersistentRequest } from '../coll/persistent.js';
import { describeValue } from '../describe.js';
import { NbcArgError, NbcRequestError } from '../errors.js';
import { ANY_SOURCE, ANY_TAG } from './constants.js';

export interface Status {
  /** Rank of the sender in the communicator (PROC_NULL for a receive from PROC_NULL). */
  source: number;
  tag: number;
  /** Elements received, in the receive buffer's element type (bytes for probe). */
  count: number;
  /** Bytes received. */
  bytes: number;
}

/** What drives requests forward: the rank's transport. */
export interface Progressor {
  progress(): boolean;
  waitUntil(req: Request): void;
  waitUntilAny(reqs: readonly Request[]): void;
  parkAsync(callback: () => void): void;
}

/**
 * Told when a request completes, with the token it was given: how the schedule interpreter
 * learns that an action finished without polling its requests (sched/interpreter.ts).
 */
export interface RequestListener {
  settled(token: number, error: Error | null): void;
}

export class Request implements PromiseLike<Status> {
  /** Who is told on completion (at most one), and the token it is told. */
  listener: RequestListener | null = null;
  listenerToken = 0;
  /**
   * How long a blocking wait spins before parking, if not the transport's default: requests
   * that another thread completes (offloaded collectives) park at once, leaving it the core.
   */
  spinUs: number | undefined = undefined;
  done = false;
  error: Error | null = null;
  status: Status = { source: -1, tag: -1, count: 0, bytes: 0 };

  constructor(protected readonly progressor: Progressor) {}

  /** Marks the request complete. Idempotent completion is a bug, so it is not allowed. */
  complete(error: Error | null = null): void {
    this.done = true;
    this.error = error;
    const l = this.listener;
    if (l !== null) {
      this.listener = null;
      l.settled(this.listenerToken, error);
    }
  }

  /**
   * True when the operation has finished, without making any progress (unlike test()). A
   * request run by the host executor only finishes inside test()/wait() calls; one offloaded
   * to the node engine finishes while the rank does something else entirely. Call test() or
   * wait() to complete it (a staged receive buffer is filled then).
   */
  ready(): boolean {
    return this.done;
  }

  /** Makes progress; true once the request is complete. Throws the request's error. */
  test(): boolean {
    if (!this.done) this.progressor.progress();
    if (this.done && this.error) throw this.error;
    return this.done;
  }

  /** Blocks this worker until the request completes; returns its status or throws its error. */
  wait(): Status {
    if (!this.done) this.progressor.waitUntil(this);
    if (this.error) throw this.error;
    return this.status;
  }

  then<R1 = Status, R2 = never>(
    onFulfilled?: ((value: Status) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return new Promise<Status>((resolve, reject) => {
      const poll = (): void => {
        try {
          if (this.test()) resolve(this.status);
          else this.progressor.parkAsync(poll);
        } catch (err) {
          reject(err);
        }
      };
      poll();
    }).then(onFulfilled, onRejected);
  }
}

/** A request that is already complete (PROC_NULL peers, empty operations). */
export function completedRequest(progressor: Progressor, status?: Partial<Status>): Request {
  const r = new Request(progressor);
  Object.assign(r.status, status);
  r.complete();
  return r;
}

/**
 * What waitAll, testAll, waitAny and testAny take: requests, and persistent collectives, which
 * stand for their current start. One not started yet, or freed, is inactive: as in MPI, it
 * counts as complete, with an empty status (source ANY_SOURCE, tag ANY_TAG, count 0).
 */
export type AnyRequest = Request | PersistentRequest;

/** MPI's empty status: what an inactive persistent request completes with. */
export function emptyStatus(): Status {
  return { source: ANY_SOURCE, tag: ANY_TAG, count: 0, bytes: 0 };
}

/** The request behind `r`: itself, a persistent collective's current start, or null (inactive). */
function instanceOf(r: AnyRequest): Request | null {
  return r instanceof Request ? r : r.request;
}

/** A request list as waitAll and friends take it: an array of requests; else NbcArgError naming the entry. */
function checkList(reqs: readonly AnyRequest[], fn: string): void {
  if (!Array.isArray(reqs)) throw new NbcArgError(`Cannot ${fn} ${describeValue(reqs)}: expected an array of requests`);
  for (let i = 0; i < reqs.length; i++) {
    const x: unknown = reqs[i];
    if (x instanceof Request || (typeof x === 'object' && x !== null && 'request' in x && 'start' in x)) continue;
    throw new NbcArgError(`Cannot ${fn}: entry ${i} of the list is ${describeValue(x)}; expected a Request or a PersistentRequest`);
  }
}

function progressorOf(reqs: readonly AnyRequest[]): Progressor | null {
  for (const x of reqs) {
    const r = instanceOf(x);
    if (r !== null && !r.done) return (r as unknown as { progressor: Progressor }).progressor;
  }
  return null;
}

/** Waits for every request; returns their statuses. The first error is thrown after all finish. */
export function waitAll(reqs: readonly AnyRequest[]): Status[] {
  checkList(reqs, 'waitAll');
  let firstError: Error | null = null;
  const statuses = reqs.map((x) => {
    const r = instanceOf(x);
    if (r === null) return emptyStatus();
    try {
      return r.wait();
    } catch (err) {
      firstError ??= err as Error;
      return r.status;
    }
  });
  if (firstError) throw firstError;
  return statuses;
}

/** True when every request is complete (progressing each once). */
export function testAll(reqs: readonly AnyRequest[]): boolean {
  checkList(reqs, 'testAll');
  const p = progressorOf(reqs);
  if (p) p.progress();
  let all = true;
  for (const x of reqs) {
    const r = instanceOf(x);
    if (r === null) continue;
    if (!r.done) all = false;
    else if (r.error) throw r.error;
  }
  return all;
}

/** Returns the index of a complete request, or -1 (progressing once). */
export function testAny(reqs: readonly AnyRequest[]): number {
  checkList(reqs, 'testAny');
  const p = progressorOf(reqs);
  if (p) p.progress();
  return firstDone(reqs);
}

/** Blocks until one request completes; returns its index. */
export function waitAny(reqs: readonly AnyRequest[]): number {
  checkList(reqs, 'waitAny');
  if (reqs.length === 0) throw new NbcRequestError('Cannot waitAny on an empty request list: expected at least one request');
  for (;;) {
    const i = firstDone(reqs);
    if (i >= 0) return i;
    const active = reqs.map(instanceOf).filter((r): r is Request => r !== null);
    progressorOf(active)!.waitUntilAny(active);
  }
}

/** The index of the first complete (or inactive) request, -1 if none; throws its error. */
function firstDone(reqs: readonly AnyRequest[]): number {
  for (let i = 0; i < reqs.length; i++) {
    const r = instanceOf(reqs[i]!);
    if (r === null) return i;
    if (r.done) {
      if (r.error) throw r.error;
      return i;
    }
  }
  return -1;
}
