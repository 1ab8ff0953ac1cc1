/**
 * The schedule interpreter: the one loop that runs a schedule, whoever executes it.
 *
 * An executor is a port (MPICH gentran's transport table, UCC's executor interface): it knows
 * how to post a send or a receive, run a reduction or a copy, and what to do once the whole
 * schedule is done. The interpreter knows when: it issues an action only when it is new and
 * nothing it depends on is pending, and completing an action releases what waits for it —
 * the next round (rounds mode), or the action's dependents from the schedule's precomputed
 * inverted edges (DAG mode), never by rescanning the schedule. It never asks which executor
 * it runs under.
 *
 * Completion may arrive at any time: at once (an eager send that found ring space, a local
 * action), or later from the port's own event source (a transport request's listener, an
 * engine frame). Every arrival goes through `settle`; work discovered meanwhile is queued and
 * drained by one loop, so nothing recurses however long the schedule.
 *
 * Order: a round's actions are issued in the order the builder wrote them; a DAG's ready
 * actions first in, first out: its roots in builder order, then what each completion releases,
 * in builder order, after what was ready before (MPICH gentran appends to its issued list). So
 * a send that a reduction released goes before the next reduction runs, and the simulator
 * (sim/release.ts) issues every schedule in this very order (test/sched.test.ts proves it).
 *
 * Errors (MPICH's "check and continue"): a failed action records the collective's first error
 * and then counts as done, so the schedule goes on and still sends what its peers wait for;
 * the collective completes with that error once every action is done, and nobody hangs.
 * Core code: no node:* imports.
 */
import { NbcInternalError } from '../errors.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, type Schedule } from './schedule.js';

/** How one executor touches the world. */
export interface Port<R extends Run> {
  /**
   * Posts action i's send (or receive). True when it completed at once; otherwise the port
   * calls `run.settled(i, error)` when it completes. Throwing fails the action.
   */
  send(run: R, i: number): boolean;
  recv(run: R, i: number): boolean;
  /** Runs action i's reduction (inout = in ⊕ inout) or copy, at once. Throwing fails the action. */
  reduce(run: R, i: number): void;
  copy(run: R, i: number): void;
  /** Every action is done; `error` is the first failure, or null. */
  finished(run: R, error: Error | null): void;
}

/**
 * One execution of a schedule: the interpreter's state for it. Executors extend it with what
 * their port needs (buffers, tags, a request).
 */
export class Run {
  /** Actions not yet done. */
  remaining: number;
  /** The first failure, if any. */
  failure: Error | null = null;
  finishedRun = false;
  /** Rounds mode: the round in progress, its actions not yet done, and the next to issue. */
  round = 0;
  roundLeft = 0;
  next = 0;
  end = 0;
  /**
   * DAG mode: per action, dependencies not yet done; and the actions ready to issue, a FIFO:
   * ready[readyHead .. nReady) (an action enters it once, so it never wraps).
   */
  waiting: Int32Array | null = null;
  ready: Int32Array | null = null;
  readyHead = 0;
  nReady = 0;
  /** On the interpreter's work list. */
  queued = false;
  interp: Interpreter<never> | null = null;

  constructor(readonly sched: Schedule) {
    this.remaining = sched.nActions;
  }

  /** Action i completed (a port's asynchronous completion). */
  settled(i: number, error: Error | null): void {
    this.interp!.settle(this as never, i, error);
  }
}

export class Interpreter<R extends Run> {
  /** Runs with actions to issue. */
  private readonly work: R[] = [];
  private draining = false;

  constructor(private readonly port: Port<R>) {}

  /** Starts a run: issues round 0 (or the DAG's roots) before returning, as far as they go. */
  start(run: R): void {
    const s = run.sched;
    run.interp = this as unknown as Interpreter<never>;
    if (s.nActions === 0) {
      this.finish(run);
      return;
    }
    if (s.isDag) {
      const edges = s.dependents();
      const waiting = edges.count.slice();
      const ready = new Int32Array(s.nActions);
      let n = 0;
      for (let i = 0; i < s.nActions; i++) if (waiting[i] === 0) ready[n++] = i;
      run.waiting = waiting;
      run.ready = ready;
      run.nReady = n;
    } else {
      this.openRound(run, 0);
    }
    this.enqueue(run);
  }

  /** Action i of `run` completed later (the port's event source); `error` fails it, the run goes on. */
  settle(run: R, i: number, error: Error | null): void {
    this.release(run, i, error);
    if (run.remaining === 0) this.finish(run);
    else this.enqueue(run);
  }

  /** Counts action i done and makes ready what waited for it. */
  private release(run: R, i: number, error: Error | null): void {
    if (error !== null) run.failure ??= error;
    run.remaining--;
    const s = run.sched;
    if (run.waiting !== null) {
      const edges = s.dependents();
      const waiting = run.waiting;
      const ready = run.ready!;
      for (let e = edges.start[i]!; e < edges.start[i + 1]!; e++) {
        const j = edges.list[e]!;
        if (--waiting[j]! === 0) ready[run.nReady++] = j;
      }
    } else if (--run.roundLeft === 0 && run.round + 1 < s.nRounds) {
      this.openRound(run, run.round + 1);
    }
  }

  private openRound(run: R, r: number): void {
    const s = run.sched;
    run.round = r;
    run.next = s.rounds[r]!;
    run.end = s.rounds[r + 1]!;
    run.roundLeft = run.end - run.next;
    // An empty round (a builder's round() with nothing in it) is done at once.
    if (run.roundLeft === 0 && r + 1 < s.nRounds) this.openRound(run, r + 1);
  }

  private enqueue(run: R): void {
    if (!run.queued && !run.finishedRun && (run.readyHead < run.nReady || run.next < run.end)) {
      run.queued = true;
      this.work.push(run);
    }
    if (!this.draining) this.drain();
  }

  /** Issues every ready action of every queued run; completions found meanwhile queue more. */
  private drain(): void {
    this.draining = true;
    try {
      let run: R | undefined;
      while ((run = this.work.pop()) !== undefined) {
        run.queued = false;
        for (;;) {
          let i: number;
          if (run.readyHead < run.nReady) i = run.ready![run.readyHead++]!;
          else if (run.next < run.end) i = run.next++;
          else break;
          if (!this.issue(run, i)) continue;
          this.release(run, i, null);
          if (run.remaining === 0) {
            this.finish(run);
            break;
          }
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Issues action i: true when it is done at once. A throwing port fails the action. */
  private issue(run: R, i: number): boolean {
    const port = this.port;
    try {
      switch (run.sched.kind[i]!) {
        case A_SEND: return port.send(run, i);
        case A_RECV: return port.recv(run, i);
        case A_REDUCE: port.reduce(run, i); return true;
        case A_COPY: port.copy(run, i); return true;
        default: throw new NbcInternalError(`unknown action kind ${run.sched.kind[i]} in schedule ${run.sched.algorithm}`);
      }
    } catch (err) {
      run.failure ??= err as Error;
      return true; // counted done: the schedule goes on (check and continue)
    }
  }

  private finish(run: R): void {
    if (run.finishedRun) return;
    run.finishedRun = true;
    this.port.finished(run, run.failure);
  }
}
