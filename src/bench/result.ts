/**
 * The shape of one benchmark run as `nbc bench --json` writes it and the report, chart and
 * compare tools read it. Plain data only: no runtime imports, so every part of nbcoll (and
 * outside tools) can share these types.
 *
 * All times are microseconds. Non-blocking figures follow the OSU overlap method described in
 * PERFORMANCE.md: the operation is timed once alone (`pureUs`) and once with a compute loop of
 * the same length between start and wait (`overallUs`).
 */

/** The figures measured at one message size. */
export interface BenchRow {
  /** Message size per rank, in bytes. */
  bytes: number;
  /** Blocking ops: the op's latency. Non-blocking and persistent ops: the same as `pureUs`. */
  latencyUs: number;
  // Non-blocking / persistent ops only (OSU overlap method):
  /** Time in the initiating call (`iallreduce(...)` / `start()`). */
  initUs?: number;
  /** Total time inside `test()` calls during the compute. */
  testUs?: number;
  /** Time inside `wait()`. */
  waitUs?: number;
  /** `initUs + testUs + waitUs`. */
  overheadUs?: number;
  /** The op alone: start .. wait returns, no compute in between. */
  pureUs?: number;
  /** Start .. wait returns, with compute in between. */
  overallUs?: number;
  /** Measured compute time (excluding `test()` calls). */
  computeUs?: number;
  /** `100 * (1 - (overall - compute) / pure)`, clamped to 0..100. */
  overlapPct?: number;
  /** With `--per-rank`: each rank's `latencyUs` (blocking) or `overallUs` (non-blocking). */
  perRank?: number[];
}

/** One benchmark run: what was measured, where and how, and the figures per message size. */
export interface BenchResult {
  /** The operation: 'allreduce', 'iallreduce', 'allreduce-persistent', 'p2p', ... */
  op: string;
  /** How the operation was called. */
  kind: 'blocking' | 'nonblocking' | 'persistent' | 'p2p';
  /** Number of ranks in the job. */
  ranks: number;
  /** Ranks per node. */
  ppn: number;
  /** Who progresses the schedule: 'host' | 'offload' | 'agg'. */
  executor: string;
  /** The algorithm forced for the run, or 'auto'. */
  algorithm: string;
  /** Emulated network spec, e.g. 'latency=50us,bandwidth=1gbit'; null for none. */
  link: string | null;
  /** Where the emulated nodes sat (`--topology`: 'flat', 'fat-tree:radix=4'); null without a link. Absent in older results. */
  topology?: string | null;
  /** How the link was emulated (NBC_WIRE: 'stamp' or 'queue'); null without a link. Absent in older results. */
  wire?: 'stamp' | 'queue' | null;
  /**
   * How ranks reached other nodes: 'ucx (UCX_TLS=...)' or 'tcp'; null on one node. Absent in
   * results written before the UCX transport.
   */
  transport?: string | null;
  /** The compute loop run between start and wait (non-blocking only); null for none. */
  compute: 'busy' | 'dgemm' | null;
  /** '0' = no `test()` calls during the compute, or an interval such as '10us' / '64KiB'. */
  testInterval: string;
  /** Injected OS noise, e.g. '100us@1kHz'; null for none. */
  noise: string | null;
  /** The statistic over iterations that each figure reports. */
  stat: 'median' | 'min' | 'max' | 'avg';
  /** Legend label for charts; by default derived from executor, algorithm and testInterval. */
  label?: string;
  /** The machine the run was measured on. */
  machine: { cpu: string; cores: number; node: string };
  /** Physical limits measured in the same run (name -> figure), printed next to the results. */
  limits: Record<string, number>;
  /** One row per message size, in increasing size. */
  results: BenchRow[];
}
