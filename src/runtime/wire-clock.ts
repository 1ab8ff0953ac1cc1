/**
 * The runtime's side of the emulated network (p2p/wire.ts): the host's monotonic clock for a
 * thread, and which emulation a job runs.
 */
import { NbcArgError } from '../errors.js';

/**
 * What to add to this thread's `performance.now()` to read the host's monotonic clock
 * (CLOCK_MONOTONIC, the clock of `process.hrtime`), in ms: every thread of every process on
 * the host then reads the same clock, which the wire's stamps need. Each thread measures its
 * own (its `performance.now()` counts from its own start); the two reads are back to back.
 */
export function hostClockOriginMs(): number {
  let best = Infinity;
  let origin = 0;
  // The smallest gap of a few tries bounds the error (well under a microsecond).
  for (let i = 0; i < 5; i++) {
    const a = performance.now();
    const mono = Number(process.hrtime.bigint()) / 1e6;
    const b = performance.now();
    if (b - a < best) {
      best = b - a;
      origin = mono - (a + b) / 2;
    }
  }
  return origin;
}

/**
 * How `--link` is emulated: 'stamp' (the default), wire time as time (p2p/wire.ts), on every
 * transport; 'queue', the earlier instrument, kept to measure against: each engine's outgoing
 * TCP frames wait in a timer queue (net/emulate.ts), the engines' TCP links only.
 */
export type WireMode = 'stamp' | 'queue';

export function wireModeFromEnv(env: NodeJS.ProcessEnv = process.env): WireMode {
  const v = env.NBC_WIRE ?? 'stamp';
  if (v === 'stamp' || v === 'queue') return v;
  throw new NbcArgError(`NBC_WIRE '${v}': expected stamp (wire time as time, the default) or queue (the engines' timer queue, TCP only)`);
}
