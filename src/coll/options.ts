/** The options every collective takes last, and how a remembered call compares them. */

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
}

/**
 * A call's options as remembered: a copy of their values, since the caller may change its
 * object between calls. Every field of CollOptions: a field added there must be added here
 * and in sameOptions.
 */
export function keptOptions(o: CollOptions | undefined): CollOptions | undefined {
  return o === undefined ? undefined : { algorithm: o.algorithm, executor: o.executor };
}

/**
 * Whether a call's options choose the same plan as remembered ones (by value, so a fresh
 * object literal per call still finds its plan).
 */
export function sameOptions(kept: CollOptions | undefined, given: CollOptions | undefined): boolean {
  if (kept === undefined || given === undefined) return kept === given;
  return kept.algorithm === given.algorithm && kept.executor === given.executor;
}
