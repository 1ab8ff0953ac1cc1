/**
 * What makes a repeated call cheap: the recent calls of each kind, resolved (the lean path's
 * call or the plan), found again by argument identity; and the schedule cache, keyed by the
 * declared shape fields a schedule depends on.
 */
import type { TypedArray } from '../comm/validate.js';
import type { Plan } from '../sched/executor.js';
import type { Schedule } from '../sched/schedule.js';
import { keptOptions, sameOptions, type CollOptions } from './options.js';
import type { CollShape } from './shape.js';

/** Largest buffer a memoised plan may hold on to. */
const MEMO_MAX_BYTES = 256 << 10;

/**
 * A call, resolved: the lean path's call when the call takes it, else its plan. Keyed by up
 * to four arguments (by identity; the buffers a and b by identity and length) and the
 * options (by value).
 */
export interface RecentCall<L> {
  a: unknown;
  b: unknown;
  c: unknown;
  d: unknown;
  la: number;
  lb: number;
  opts: CollOptions | undefined;
  lean: L | null;
  plan: Plan | null;
}

const lengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? (x as TypedArray).length : -1);
export const byteLengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? x.byteLength : 0);

export function findRecent<L>(list: ReadonlyArray<RecentCall<L>>, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined): RecentCall<L> | undefined {
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    if (m.a === a && m.b === b && m.c === c && m.d === d && sameOptions(m.opts, opts) &&
      m.la === lengthOf(a) && m.lb === lengthOf(b)) return m;
  }
  return undefined;
}

/**
 * Remembers a resolved call (the last four per list). Remembering keeps its buffers
 * alive, so only calls of at most MEMO_MAX_BYTES are: small ones, whose per-call cost matters.
 */
export function remember<L>(list: Array<RecentCall<L>>, bytes: number, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined, lean: L | null, plan: Plan | null): void {
  if (bytes > MEMO_MAX_BYTES) return;
  if (plan !== null) plan.reuse = true;
  if (list.length === 4) list.pop();
  list.unshift({ a, b, c, d, la: lengthOf(a), lb: lengthOf(b), opts: keptOptions(opts), lean, plan });
}

/**
 * The shape fields a cached schedule depends on, besides the collective, the algorithm and
 * its degree (rank, size and topology are the communicator's own). Calls with per-rank count
 * arrays are not cached.
 */
const KEY_FIELDS = ['root', 'bytes', 'esize', 'dtype', 'op', 'commutative'] as const satisfies ReadonlyArray<keyof CollShape>;

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
