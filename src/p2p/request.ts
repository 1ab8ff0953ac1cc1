/**
 * Requests: the handle of every non-blocking operation. A request is progressed by
 * `test()` and `wait()` (blocking this worker with Atomics, spinning briefly first), and is
 * also a PromiseLike, so `await req` works without blocking the thread.
 */
import { NbcRequestError } from '../errors.js';

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

  constructor(protected readonly engine: Progressor) {}

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
    if (!this.done) this.engine.progress();
    if (this.done && this.error) throw this.error;
    return this.done;
  }

  /** Blocks this worker until the request completes; returns its status or throws its error. */
  wait(): Status {
    if (!this.done) this.engine.waitUntil(this);
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
          else this.engine.parkAsync(poll);
        } catch (err) {
          reject(err);
        }
      };
      poll();
    }).then(onFulfilled, onRejected);
  }
}

/** A request that is already complete (PROC_NULL peers, empty operations). */
export function completedRequest(engine: Progressor, status?: Partial<Status>): Request {
  const r = new Request(engine);
  Object.assign(r.status, status);
  r.complete();
  return r;
}

function progressorOf(reqs: readonly Request[]): Progressor | null {
  for (const r of reqs) if (!r.done) return (r as unknown as { engine: Progressor }).engine;
  return null;
}

/** Waits for every request; returns their statuses. The first error is thrown after all finish. */
export function waitAll(reqs: readonly Request[]): Status[] {
  let firstError: Error | null = null;
  for (const r of reqs) {
    try {
      r.wait();
    } catch (err) {
      firstError ??= err as Error;
    }
  }
  if (firstError) throw firstError;
  return reqs.map((r) => r.status);
}

/** True when every request is complete (progressing each once). */
export function testAll(reqs: readonly Request[]): boolean {
  const p = progressorOf(reqs);
  if (p) p.progress();
  let all = true;
  for (const r of reqs) {
    if (!r.done) all = false;
    else if (r.error) throw r.error;
  }
  return all;
}

/** Blocks until one request completes; returns its index. */
export function waitAny(reqs: readonly Request[]): number {
  if (reqs.length === 0) throw new NbcRequestError('Cannot waitAny on an empty request list: expected at least one request');
  for (;;) {
    for (let i = 0; i < reqs.length; i++) {
      const r = reqs[i]!;
      if (r.done) {
        if (r.error) throw r.error;
        return i;
      }
    }
    progressorOf(reqs)!.waitUntilAny(reqs);
  }
}

/** Returns the index of a complete request, or -1 (progressing once). */
export function testAny(reqs: readonly Request[]): number {
  const p = progressorOf(reqs);
  if (p) p.progress();
  for (let i = 0; i < reqs.length; i++) {
    const r = reqs[i]!;
    if (r.done) {
      if (r.error) throw r.error;
      return i;
    }
  }
  return -1;
}
