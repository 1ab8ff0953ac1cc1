/** The options every collective takes last, and how a remembered call compares them. */
import { describeValue } from '../describe.js';
import { NbcArgError } from '../errors.js';

/** An executor of the registry (sched/executors.ts); other names fail with NBC_ERR_ARG. */
export type ExecutorName = 'host' | 'offload' | 'agg' | (string & {});

export interface CollOptions {
  /** Algorithm name (see select.ts), e.g. 'ring' or 'knomial:4'. */
  algorithm?: string;
  /**
   * Who runs the schedule: 'host' (the calling rank, inside its calls; the default),
   * 'offload' (its node's engine) or 'agg' (barrier, reduce and allreduce reduced in flight by
   * the job's aggregation fabric; other calls on a host algorithm).
   */
  executor?: ExecutorName;
  /**
   * Reductions whose bits do not depend on the rank count, the algorithm, the executor or the
   * order of the contributions (allreduce, reduce, reduceScatter(Block), scan, exscan;
   * blocking, non-blocking and persistent; op 'sum' over Float64Array or Float32Array as
   * binned sums, op 'prod' as a fixed tree over ranks): docs/ops.md "Reproducible sums".
   */
  reproducible?: boolean;
  /** With `reproducible`: the binned format's folds, 2 (the default) or 3 (tighter, larger). */
  folds?: 2 | 3;
}

const OPTION_NAMES = ['algorithm', 'executor', 'reproducible', 'folds'];
/** The last options object found valid (a caller that passes one object each call pays nothing). */
let lastValid: object | undefined;
/** The library's own options objects (made once, valid by construction). */
const ownOptions = new WeakSet<object>();

/** Marks an options object the library made itself (frozen): checkOptions passes it at once. */
export function ownOptionsOf<T extends CollOptions>(o: T): Readonly<T> {
  ownOptions.add(Object.freeze(o));
  return o;
}

/**
 * Throws NBC_ERR_ARG for an options object with a key CollOptions does not have, or a
 * `reproducible` that is not a boolean: a misspelt option must not be ignored.
 */
export function checkOptions(o: CollOptions | undefined): void {
  if (o === undefined || o === lastValid || ownOptions.has(o)) return;
  if (o === null || typeof o !== 'object') throw new NbcArgError(`Cannot use collective options ${describeValue(o)}: expected an object { ${OPTION_NAMES.join(', ')} }`);
  for (const k in o) {
    if (!OPTION_NAMES.includes(k)) throw new NbcArgError(`Cannot use collective option '${k}': unknown option; expected one of ${OPTION_NAMES.join(', ')}`);
  }
  if (o.reproducible !== undefined && typeof o.reproducible !== 'boolean') {
    throw new NbcArgError(`Cannot use collective option reproducible ${describeValue(o.reproducible)}: expected true or false`);
  }
  if (o.folds !== undefined && o.reproducible !== true) {
    throw new NbcArgError(`Cannot use collective option folds ${describeValue(o.folds)} without reproducible: true: the folds are the binned format's`);
  }
  lastValid = o;
}

/**
 * A call's options as remembered: a copy of their values, since the caller may change its
 * object between calls. Every field of CollOptions: a field added there must be added here
 * and in sameOptions.
 */
export function keptOptions(o: CollOptions | undefined): CollOptions | undefined {
  return o === undefined ? undefined : { algorithm: o.algorithm, executor: o.executor, reproducible: o.reproducible, folds: o.folds };
}

/**
 * Whether a call's options choose the same plan as remembered ones (by value, so a fresh
 * object literal per call still finds its plan).
 */
export function sameOptions(kept: CollOptions | undefined, given: CollOptions | undefined): boolean {
  if (kept === undefined || given === undefined) return kept === given;
  return kept.algorithm === given.algorithm && kept.executor === given.executor && kept.reproducible === given.reproducible && kept.folds === given.folds;
}
