/**
 * The API a job file sees in a Web Worker rank (`import ... from 'nbcoll'` there): the core's
 * public surface, the same names as the Node entry (src/index.ts) less what needs Node
 * (launch, the runtime's types), with nbcoll/testing's helpers. `init()` returns the rank's
 * world communicator.
 *
 * Core code only: no node:* imports.
 */
export { init, initSync } from './world.js';
export * from '../api.js';
// nbcoll/testing's helpers too (the page maps both specifiers to this module).
export { referenceReduce } from '../ops/reference.js';
export { DType, dtypeOf, dtypeName, bytesPerElement, ctorOf, isBigInt, isFloat } from '../ops/dtype.js';
export { BUILTIN_OP_NAMES } from '../ops/op.js';
