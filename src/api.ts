/**
 * The core's public surface, the same wherever the core runs: the Node entry (index.ts) adds
 * the runtime (init, launch), the browser's (web/api.ts) its own init.
 */
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
