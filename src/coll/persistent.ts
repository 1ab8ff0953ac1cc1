/**
 * Persistent collectives (`allreduceInit` and friends, MPI-4): a plan made once and started
 * any number of times, without validation, selection or a schedule lookup per start.
 */
import { NbcRequestError } from '../errors.js';
import { emptyStatus, type Request, type Status } from '../p2p/request.js';
import type { Schedule } from '../sched/schedule.js';

/**
 * A persistent collective: start() it any number of times; wait()/test() each start. Before
 * its first start and once freed it is inactive, as in MPI: test() is true, wait() returns an
 * empty status at once, and waitAll and friends (p2p/request.ts) count it complete.
 */
export class PersistentRequest implements PromiseLike<Status> {
  private current: Request | null = null;
  private freed = false;

  /**
   * @param launch starts one instance (the communicator's next sequence number)
   * @param coll the collective, for messages
   * @param sched the schedule every start runs; null for a call that runs several (a
   *   reproducible sum's phases)
   */
  constructor(private readonly launch: () => Request, private readonly coll: string, private readonly sched: Schedule | null) {}

  /** Starts one instance (all ranks must start their persistent collectives in the same order). */
  start(): this {
    if (this.freed) throw new NbcRequestError(`Cannot start a freed persistent ${this.coll}`);
    if (this.current !== null && !this.current.done) {
      throw new NbcRequestError(`Cannot start persistent ${this.coll}: the previous start is still active; wait for it first`);
    }
    this.current = this.launch();
    return this;
  }

  private active(op: string): Request {
    if (this.current === null) throw new NbcRequestError(`Cannot ${op} persistent ${this.coll}: it was never started`);
    return this.current;
  }

  /** The current start's request; null while inactive (never started, or freed). */
  get request(): Request | null {
    return this.freed ? null : this.current;
  }

  get done(): boolean {
    return this.current === null || this.current.done;
  }

  /** True when the current start has finished, without making progress (Request.ready()). */
  ready(): boolean {
    return this.done;
  }

  /** Makes progress; true once the current start is complete. Throws its error. */
  test(): boolean {
    return this.current === null ? true : this.current.test();
  }

  /** Blocks until the current start completes; returns its status (empty when inactive). */
  wait(): Status {
    return this.current === null ? emptyStatus() : this.current.wait();
  }

  free(): void {
    if (this.current !== null && !this.current.done) {
      throw new NbcRequestError(`Cannot free persistent ${this.coll}: an instance is still active; wait for it first`);
    }
    this.freed = true;
  }

  /** The schedule this request runs (for inspection and dumps); null for a reproducible sum, which runs two. */
  get schedule(): Schedule | null {
    return this.sched;
  }

  then<R1 = Status, R2 = never>(onF?: ((v: Status) => R1 | PromiseLike<R1>) | null, onR?: ((e: unknown) => R2 | PromiseLike<R2>) | null): Promise<R1 | R2> {
    return this.active('await').then(onF, onR);
  }
}
