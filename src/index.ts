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
export type { UcxErrMode } from './p2p/ucx.js';
export * from './api.js';
