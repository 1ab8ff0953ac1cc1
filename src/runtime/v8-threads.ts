/**
 * Whether the node processes of a job run V8 with its background threads (concurrent
 * compilation, concurrent and parallel garbage collection) or without (`--single-threaded`).
 *
 * V8 compiles optimised code and marks the heap on helper threads, expecting spare cores. Where
 * a job's ranks fill the host's cores, there are none: the helpers take cores from the ranks,
 * and a rank whose partner is descheduled waits for it. Every rank is its own isolate, so a
 * fresh job of 4 ranks compiles its hot paths four times over (about 0.2 s of compilation per
 * rank for 6000 allreduces, measured with --trace-opt). On the 2-core VM, without the helpers,
 * the first PCG solve on 4 ranks of 16^3 takes 1.9-2.6 ms an iteration against 2.7-3.3, and
 * a warm one 0.33-0.39 against 0.46-0.72; one rank, which leaves a core free, is faster with
 * them (0.92 against 1.15 cold). BENCHMARKS.md, "Strong scaling".
 *
 * NBC_V8_THREADS: auto (the default: without the helpers where the job's ranks on this host
 * are at least its cores), on, or off. Flags in NBC_NODE_ARGS come after, and win.
 */
import { NbcArgError } from '../errors.js';

export type V8Threads = 'auto' | 'on' | 'off';

export function v8ThreadsFromEnv(env: NodeJS.ProcessEnv = process.env): V8Threads {
  const v = env.NBC_V8_THREADS ?? 'auto';
  if (v === 'auto' || v === 'on' || v === 'off') return v;
  throw new NbcArgError(`NBC_V8_THREADS '${v}': expected auto (V8's helper threads only where the ranks leave a core free, the default), on or off`);
}

/** The V8 flags the node processes start with, for `hostRanks` ranks on a host of `cores` cores. */
export function v8ThreadArgs(mode: V8Threads, hostRanks: number, cores: number): string[] {
  const single = mode === 'off' || (mode === 'auto' && hostRanks >= cores);
  return single ? ['--single-threaded'] : [];
}
