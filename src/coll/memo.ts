/**
 * What makes a repeated call cheap: the recent calls of each kind, resolved (the lean path's
 * call or the plan), found again by argument identity; and the schedule cache, keyed by the
 * declared shape fields a schedule depends on.
 */
import type { TypedArray } from '../comm/validate.js';
import type { Plan } from '../sched/executor.js';
import type { Schedule } from '../sched/schedule.js';
import { checkOptions, keptOptions, sameOptions, type CollOptions } from './options.js';
import type { CollShape } from './shape.js';

/** Largest buffer a memoised plan may hold on to. */
const MEMO_MAX_BYTES = 256 << 10;

/**
 * The count and displacement arrays of a v collective's call (counts, displs; or send
 * counts, send displs, receive counts, receive displs). A call is found again only when they
 * hold the same values: a caller may change an array in place between calls. Null where the
 * rank passes none (gatherv's and scatterv's counts off the root, which MPI ignores there).
 */
export type CountArrays = ReadonlyArray<ArrayLike<number> | null | undefined>;

/**
 * A call, resolved: the lean path's call when the call takes it, else its plan. Keyed by up
 * to four arguments (by identity; the buffers a and b by identity and length), the options
 * (by value) and, for a v collective, the values of its count arrays.
 */
export interface RecentCall<L> {
  a: unknown;
  b: unknown;
  c: unknown;
  d: unknown;
  la: number;
  lb: number;
  opts: CollOptions | undefined;
  /** The count arrays' values when remembered, each as its length (-1: none) then its values; null for none. */
  counts: Float64Array | null;
  lean: L | null;
  plan: Plan | null;
}

const NO_CALL: RecentCall<null> = { a: null, b: null, c: null, d: null, la: -1, lb: -1, opts: undefined, counts: null, lean: null, plan: null };

/**
 * An empty list of recent calls. Every list starts with the elements kind it will have once it
 * holds calls (a literal `[]` starts as one of small integers and changes kind at its first
 * call): the lookups, once optimised for one communicator's list, then run on every other
 * communicator's without a deoptimisation ("wrong map"). A job that trained on a duplicate
 * (runtime/train.ts) otherwise recompiled them in its first solve.
 */
export function recentCalls<L>(): Array<RecentCall<L>> {
  const list: Array<RecentCall<L>> = [NO_CALL as RecentCall<L>];
  list.pop();
  return list;
}

const lengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? (x as TypedArray).length : -1);
export const byteLengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? x.byteLength : 0);

function snapshot(v: CountArrays): Float64Array {
  let n = 0;
  for (const a of v) n += 1 + (a?.length ?? 0);
  const out = new Float64Array(n);
  let at = 0;
  for (const a of v) {
    out[at++] = a?.length ?? -1;
    if (a === null || a === undefined) continue;
    for (let i = 0; i < a.length; i++) out[at++] = a[i]!;
  }
  return out;
}

/** Whether `v` holds the values `snap` was taken of (NaN never matches: such a call is planned, and refused, again). */
function sameCounts(snap: Float64Array | null, v: CountArrays | undefined): boolean {
  if (snap === null || v === undefined) return snap === null && v === undefined;
  let at = 0;
  for (const a of v) {
    if (at >= snap.length || snap[at++] !== (a?.length ?? -1)) return false;
    if (a === null || a === undefined) continue;
    for (let i = 0; i < a.length; i++) if (snap[at++] !== a[i]) return false;
  }
  return at === snap.length;
}

export function findRecent<L>(list: ReadonlyArray<RecentCall<L>>, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined, counts?: CountArrays): RecentCall<L> | undefined {
  checkOptions(opts);
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    if (m.a === a && m.b === b && m.c === c && m.d === d && sameOptions(m.opts, opts) &&
      m.la === lengthOf(a) && m.lb === lengthOf(b) && sameCounts(m.counts, counts)) return m;
  }
  return undefined;
}

/**
 * Remembers a resolved call (the last four per list). Remembering keeps its buffers
 * alive, so only calls of at most MEMO_MAX_BYTES are: small ones, whose per-call cost matters.
 */
export function remember<L>(list: Array<RecentCall<L>>, bytes: number, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined, lean: L | null, plan: Plan | null, counts?: CountArrays): void {
  if (bytes > MEMO_MAX_BYTES) return;
  if (plan !== null) plan.reuse = true;
  if (list.length === 4) list.pop();
  list.unshift({ a, b, c, d, la: lengthOf(a), lb: lengthOf(b), opts: keptOptions(opts), counts: counts === undefined ? null : snapshot(counts), lean, plan });
}

/**
 * The shape fields a cached schedule depends on, besides the collective, the algorithm and
 * its degree (rank, size and topology are the communicator's own). Calls with per-rank count
 * arrays are not cached.
 */
const KEY_FIELDS = ['root', 'bytes', 'esize', 'dtype', 'op', 'commutative', 'distinct'] as const satisfies ReadonlyArray<keyof CollShape>;

/**
 * A communicator's schedules by call shape, least recently used out. Hits update a use tick in
 * place (no delete/re-insert: that would leave a dead entry and a promoted key string in a
 * long-lived Map on every call, which is old-space garbage and, in a tight loop, major GCs).
 */
export class ScheduleCache {
  private readonly map = new Map<string, { sched: Schedule; used: number }>();
  private tick = 0;

  constructor(private readonly limit = 128) {}

  /** The key of a call: the collective, the algorithm and degree, then KEY_FIELDS in order. */
  static key(coll: string, algorithm: string, radix: number, s: CollShape): string {
    let key = `${coll}|${algorithm}|${radix}`;
    for (const f of KEY_FIELDS) key += `|${s[f]}`;
    return key;
  }

  get(key: string): Schedule | undefined {
    const hit = this.map.get(key);
    if (hit === undefined) return undefined;
    hit.used = ++this.tick;
    return hit.sched;
  }

  set(key: string, sched: Schedule): void {
    if (this.map.size >= this.limit) {
      let oldest = '';
      let oldestUse = Infinity;
      for (const [k, v] of this.map) {
        if (v.used < oldestUse) {
          oldest = k;
          oldestUse = v.used;
        }
      }
      this.map.delete(oldest);
    }
    this.map.set(key, { sched, used: ++this.tick });
  }
}
