/**
 * The global `performance`, read once. Node defines it on the global object as a lazy getter,
 * so every bare `performance.now()` calls that getter first (about 10 ns in a worker, and a
 * load V8 cannot fold); the waits and the transport read the clock at every idle step. A
 * module binding is a constant load. The same object in every runtime.
 */
export const perf: typeof globalThis.performance = globalThis.performance;
