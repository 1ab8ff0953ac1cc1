/**
 * `nbcoll/testing`: the sequential reference reduction and datatype helpers that nbcoll's own
 * property tests compare every collective against. Useful for testing code built on nbcoll.
 */
export { referenceReduce } from './ops/reference.js';
export { DType, dtypeOf, dtypeName, bytesPerElement, ctorOf, isBigInt, isFloat } from './ops/dtype.js';
export { BUILTIN_OP_NAMES } from './ops/op.js';
