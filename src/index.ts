/**
 * nbcoll: MPI-class collectives for TypeScript on Node.js.
 * The public API; see docs/architecture.md for how it works.
 */
export { init, initSync } from './runtime/init.js';
export { launch } from './runtime/launcher.js';
export type { LaunchOptions, LaunchResult, RankResult } from './runtime/launcher.js';
export type { JsRuntime } from './runtime/js-runtime.js';
export type { LinkSpec } from './runtime/link-spec.js';
export type { TransportChoice } from './runtime/node-main.js';
export { Comm, Group, UNDEFINED } from './comm/comm.js';
export type { RankContext, CartTopology, DistGraphTopology, CommStats } from './comm/comm.js';
export type { ExecutorStats, AggExecutorStats, ExecutorsStats } from './sched/executor.js';
export { Communicator, PersistentRequest } from './coll/communicator.js';
export type { CartComm, CollOptions, DistGraphComm } from './coll/communicator.js';
export type { Buf, BufOrInPlace, Counts } from './coll/args.js';
export type { ExecutorName } from './coll/options.js';
export { ALGORITHMS, RULES } from './coll/select.js';
export type { CollName } from './coll/select.js';
export type { Schedule } from './sched/schedule.js';
export { Op } from './ops/op.js';
export { BinnedSum } from './ops/binned.js';
export { binnedSumOp } from './coll/reproducible.js';
export type { UcxErrMode } from './p2p/ucx.js';
export type { BuiltinOpName, OpLike, OpOptions, UserOpFunction } from './ops/op.js';
export type { ReduceKernel } from './ops/loops.js';
export type { DType } from './ops/dtype.js';
export { dimsCreate } from './comm/topology.js';
export type { DistGraphOptions } from './comm/topology.js';
export type { TypedArray, TypedArrayConstructor } from './comm/validate.js';
export { ANY_SOURCE, ANY_TAG, IN_PLACE, PROC_NULL, TAG_UB } from './p2p/constants.js';
export type { InPlace } from './p2p/constants.js';
export { Request, waitAll, testAll, waitAny, testAny } from './p2p/request.js';
export type { AnyRequest, Status } from './p2p/request.js';
export type { MessageTrace, TransportStats } from './p2p/transport.js';
export * from './errors.js';
