/**
 * The simulator's release rule: when each proc's actions are issued. It is the interpreter's
 * (sched/interpreter.ts), on the program's flattened columns instead of one Run per schedule:
 * an action is issued only when nothing it depends on is pending (rounds: the whole previous
 * round; DAG: its dependencies, released from the inverted edges), a round's actions in the
 * order the builder wrote them, a DAG's roots in builder order and, when an action completes,
 * the dependents it releases in builder order.
 *
 * Why not the interpreter itself: it completes a reduction or a copy at once, where the
 * simulator's CPU spends virtual time on it, and it keeps a Run per schedule, where the
 * simulator keeps 10^5 schedules as a few typed arrays (program.ts). Instead, the two are
 * proven to issue alike: test/sched.test.ts drives this class and the interpreter through the
 * same completions, for every collective and algorithm selection can pick, and compares their
 * issue orders action by action.
 *
 * The engine (engine.ts) extends it with what issuing and finishing cost. Hot path: no
 * allocation; the counters are typed arrays indexed by proc or action.
 */
import type { Program } from './program.js';

export abstract class Release {
  /** Per proc: the open round (an index into roundBound), its actions not yet done, and actions left overall. */
  protected readonly round: Int32Array;
  protected readonly roundLeft: Int32Array;
  protected readonly remaining: Int32Array;
  /** Per DAG action: dependencies not yet done. */
  protected readonly waiting: Int32Array;

  constructor(protected readonly prog: Program) {
    const procs = prog.procs;
    this.round = new Int32Array(procs);
    this.roundLeft = new Int32Array(procs);
    this.remaining = new Int32Array(procs);
    for (let p = 0; p < procs; p++) this.remaining[p] = prog.procAct[p + 1]! - prog.procAct[p]!;
    this.waiting = prog.depCount.slice();
  }

  /** Issues action i (a global index): its send, receive, reduction or copy starts now. */
  protected abstract issue(i: number): void;
  /** Proc p has completed every action of its schedule. */
  protected abstract finishProc(p: number): void;

  /** Proc p begins its schedule: round 0, or the DAG's roots, in the builder's order. */
  begin(p: number): void {
    const prog = this.prog;
    if (this.remaining[p] === 0) {
      this.finishProc(p);
    } else if (prog.procDag[p] === 1) {
      for (let i = prog.procAct[p]!; i < prog.procAct[p + 1]!; i++) if (this.waiting[i] === 0) this.issue(i);
    } else {
      this.openRound(p, prog.procRound[p]!);
    }
  }

  /** Action i completed: release what waited for it (interpreter.ts release()). */
  complete(i: number): void {
    const prog = this.prog;
    const p = prog.actProc[i]!;
    this.remaining[p]!--;
    if (prog.procDag[p] === 1) {
      for (let e = prog.depStart[i]!; e < prog.depStart[i + 1]!; e++) {
        const j = prog.depList[e]!;
        if (--this.waiting[j]! === 0) this.issue(j);
      }
    } else if (--this.roundLeft[p]! === 0 && this.remaining[p]! > 0) {
      this.openRound(p, this.round[p]! + 1);
    }
    if (this.remaining[p] === 0) this.finishProc(p);
  }

  /** Opens proc p's round r, or the first non-empty one after it (an empty round is done at once). */
  private openRound(p: number, r: number): void {
    const prog = this.prog;
    const last = prog.procRound[p + 1]! - 1; // index of the final boundary
    for (; r < last; r++) {
      const from = prog.roundBound[r]!;
      const to = prog.roundBound[r + 1]!;
      if (to === from) continue;
      this.round[p] = r;
      this.roundLeft[p] = to - from;
      for (let i = from; i < to; i++) this.issue(i);
      return;
    }
  }
}
