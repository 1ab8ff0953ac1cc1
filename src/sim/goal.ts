/**
 * Export to LogGOPSim's GOAL text format (Hoefler, Siebert, Lumsdaine, "Group Operation
 * Assembly Language", 2009), so an independent simulator can replay exactly the schedules
 * nbcoll would run:
 *
 *     num_ranks 2
 *
 *     rank 0 {
 *     l0: send 8b to 1 tag 0
 *     l1: recv 8b from 1 tag 0
 *     l2: calc 4
 *     l2 requires l1
 *     }
 *
 * One label per action (l<index in the rank's schedule>). Sends and receives keep their peer
 * and sub-tag (the library's tag is `sequence * 16 + sub`, and one call has one sequence).
 * Reductions and copies become `calc` with their cost in nanoseconds (LogGOPSim's time unit),
 * from the parameters' kernel speeds and, for bytes written into memory the rank lent, their
 * lent price (a receive's share of that has no place in GOAL and is left out). Dependencies
 * are the interpreter's: in rounds mode every action requires every action of the previous
 * non-empty round; in a DAG, its dependencies.
 * Ranks are the program's procs: the ranks for host and offload, the node engines for the
 * two-level forms (whose fold and write-back are then left out).
 */
import { NbcArgError } from '../errors.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND } from '../sched/schedule.js';
import type { Program } from './program.js';
import { localUs, type SimParams } from './params.js';

export function toGoal(prog: Program, params: SimParams): string {
  if (prog.mode === 'agg') {
    throw new NbcArgError(`Cannot export ${prog.coll}/${prog.algorithm} as GOAL: the aggregation fabric's tree is not a schedule among ranks; expected executor host, offload or hier`);
  }
  const out: string[] = [`num_ranks ${prog.procs}`, ''];
  for (let p = 0; p < prog.procs; p++) {
    const base = prog.procAct[p]!;
    out.push(`rank ${p} {`);
    for (let i = base; i < prog.procAct[p + 1]!; i++) {
      const k = prog.kind[i]!;
      const b = prog.bytesOf[i]!;
      let text: string;
      if (k === A_SEND) text = `send ${b}b to ${prog.peer[i]} tag ${prog.sub[i]}`;
      else if (k === A_RECV) text = `recv ${b}b from ${prog.peer[i]} tag ${prog.sub[i]}`;
      else if (k === A_REDUCE || k === A_COPY) text = `calc ${Math.round(localUs(params, k === A_REDUCE, b, prog.lentBytes[i]!) * 1000)}`;
      else throw new NbcArgError(`Cannot export action ${i - base} of rank ${p} as GOAL: kind ${k} is unknown; expected send, recv, reduce or copy`);
      out.push(`l${i - base}: ${text}`);
    }
    if (prog.procDag[p] === 1) {
      // depList holds who waits for whom; GOAL wants "waiter requires dependency".
      for (let i = base; i < prog.procAct[p + 1]!; i++) {
        for (let e = prog.depStart[i]!; e < prog.depStart[i + 1]!; e++) out.push(`l${prog.depList[e]! - base} requires l${i - base}`);
      }
    } else {
      let prevFrom = -1;
      let prevTo = -1;
      for (let r = prog.procRound[p]!; r < prog.procRound[p + 1]! - 1; r++) {
        const from = prog.roundBound[r]!;
        const to = prog.roundBound[r + 1]!;
        if (from === to) continue;
        if (prevFrom >= 0) {
          for (let i = from; i < to; i++) for (let j = prevFrom; j < prevTo; j++) out.push(`l${i - base} requires l${j - base}`);
        }
        prevFrom = from;
        prevTo = to;
      }
    }
    out.push('}', '');
  }
  return out.join('\n');
}
