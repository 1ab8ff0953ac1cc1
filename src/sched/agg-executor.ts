/**
 * The `agg` executor (seed 003, SHArP): barrier, reduce and allreduce are reduced in flight by
 * the aggregation fabric's daemons. A rank posts its call to its node engine exactly as an
 * offloaded two-level collective (sched/offload-client.ts), flagged TL_AGG: the engine folds
 * its node's members, feeds the node's contribution to the fabric and writes every member's
 * result (runtime/agg-node.ts). Where the fabric refused the communicator (collectively), the
 * engines run the exchange among themselves instead. Every other call named with `agg` (other
 * collectives, ops or types the fabric does not reduce, a communicator on one node) was
 * planned as a flat schedule by selection (coll/select.ts) and runs on the host executor.
 * Core code: no node:* imports.
 */
import { DType } from '../ops/dtype.js';
import { OpCode } from '../ops/loops.js';
import type { Request } from '../p2p/request.js';
import type { Transport } from '../p2p/transport.js';
import type { AggExecutorStats, CollTarget, Executor, Plan } from './executor.js';
import { OffloadClient } from './offload-client.js';
import { TL_AGG } from './two-level.js';

export class AggExecutor implements Executor {
  readonly name = 'agg';
  /** Posts to the node engine, which runs the call with the fabric. */
  private readonly client: OffloadClient;

  /**
   * @param host the transport's host executor (the registry's), which runs the fallbacks (and
   *   counts them)
   * @param stats where the calls posted to the engine are counted, with how each was reduced
   */
  constructor(t: Transport, spinUs: number, private readonly host: Executor, stats: AggExecutorStats = { calls: 0, onFabric: 0, amongEngines: 0 }) {
    this.client = new OffloadClient(t, spinUs, stats);
  }

  start(plan: Plan, target: CollTarget, tag: number): Request {
    const call = plan.composite;
    if (call === undefined) return this.host.start(plan, target, tag);
    return this.client.postTwoLevel(target, plan.send, plan.recv, tag, { ...call, kind: call.kind | TL_AGG });
  }

  release(target: CollTarget): void {
    this.client.release(target);
  }
}

/** The ops the fabric reduces: every predefined op but prod, as SwitchIB-2 (seed 003). */
export const FABRIC_OPS: ReadonlySet<number> = new Set<number>([
  OpCode.sum, OpCode.min, OpCode.max, OpCode.minloc, OpCode.maxloc, OpCode.band, OpCode.bor, OpCode.bxor,
  OpCode.land, OpCode.lor, OpCode.lxor,
]);
/** The element types it reduces: 32- and 64-bit integers and floats. */
export const FABRIC_DTYPES: ReadonlySet<number> = new Set<number>([
  DType.Int32, DType.Uint32, DType.Float32, DType.Float64, DType.BigInt64, DType.BigUint64,
]);

/**
 * Whether the fabric reduces `op` (a predefined op id; user ops are >= 256) on `dtype`. (Bitwise
 * ops on floats never get here: the front end refuses them first.)
 */
export function fabricReduces(op: number, dtype: number): boolean {
  return FABRIC_OPS.has(op) && FABRIC_DTYPES.has(dtype);
}

/** Whether the fabric takes a call of `coll` reducing `op` over `dtype`: barriers always. */
export function fabricTakes(coll: string, op: number, dtype: number): boolean {
  return coll === 'barrier' || fabricReduces(op, dtype);
}
