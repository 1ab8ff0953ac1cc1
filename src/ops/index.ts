/**
 * ops/: element datatypes and reduction operations (see docs/ops.md).
 * Core code: no `node:*` imports; the schedule engine, the offload engine and the simulator
 * all load it.
 */
export {
  DType, DTYPE_COUNT, bytesPerElement, ctorOf, dtypeName, dtypeOf, hasDtype, isBigInt, isDType, isFloat,
  isInteger, tryDtypeOf, viewOf,
} from './dtype.js';
export {
  BUILTIN_OP_NAMES, Op, OpCode, USER_OP_ID_BASE, builtinOpById, resolveOp,
} from './op.js';
export type { BuiltinOpName, OpLike, OpOptions, ReduceKernel, UserOpFunction } from './op.js';
export { reduceBytes, reduceInto } from './kernels.js';
