/**
 * What a rank computes while a non-blocking operation is in flight (NBCBench and seed 000):
 * a busy loop, or a JS matrix multiply (DGEMM on 32x32 blocks), either run for a target time,
 * with optional test() calls at an interval and optional noise (stolen CPU time, per rank).
 *
 * Noise is OS noise as seed 000 injects it: the stolen time delays the rank's work, so a
 * phase of `targetUs` of work takes longer on the rank that was disturbed. Each rank's noise
 * has its own phase, so the ranks drift apart, and a collective whose progress depends on
 * every rank (host executor) waits for the slowest.
 */
import type { Noise, TestInterval } from './metrics.js';

export interface ComputeResult {
  /** Compute time, excluding time spent in test() calls (noise counts: the CPU was busy). */
  computeUs: number;
  testUs: number;
  /** Of computeUs, the time stolen by noise. */
  noiseUs: number;
}

/** Something to call test() on: a request or a persistent request. */
export interface Testable {
  test(): boolean;
}

const N = 32;
const BLOCK_BYTES = 3 * N * N * 8;

/** Scratch matrices for the DGEMM kernel (per thread). */
const A = new Float64Array(N * N).map((_, i) => (i % 7) * 0.5);
const B = new Float64Array(N * N).map((_, i) => (i % 5) * 0.25);
const C = new Float64Array(N * N);

/** C += A x B on 32x32 doubles: one block of real floating-point work (~65 kflop). */
function dgemmBlock(): void {
  for (let i = 0; i < N; i++) {
    for (let k = 0; k < N; k++) {
      const a = A[i * N + k]!;
      for (let j = 0; j < N; j++) C[i * N + j]! += a * B[k * N + j]!;
    }
  }
}

/** A checksum that keeps the DGEMM from being optimised away. */
export function dgemmChecksum(): number {
  let s = 0;
  for (let i = 0; i < C.length; i += 97) s += C[i]!;
  return s;
}

export class Computer {
  private nextNoise = 0;

  constructor(readonly kind: 'busy' | 'dgemm', readonly interval: TestInterval, readonly noise: Noise | null, seed: number) {
    // Each rank's noise has its own phase, so ranks are not disturbed in lockstep.
    if (noise !== null) this.nextNoise = performance.now() * 1000 + ((seed * 7919) % 1000) / 1000 * noise.periodUs;
  }

  /**
   * Computes `targetUs` microseconds of work (plus any noise that falls in it), calling
   * `req.test()` as configured.
   */
  run(targetUs: number, req: Testable | null): ComputeResult {
    const now = (): number => performance.now() * 1000;
    const start = now();
    let testUs = 0;
    let noiseUs = 0;
    let sinceTestBytes = 0;
    const iv = this.interval;
    let nextTest = iv.kind === 'time' ? start + iv.us : Infinity;
    for (;;) {
      const t = now();
      if (t - start - testUs - noiseUs >= targetUs) break;
      if (this.noise !== null && t >= this.nextNoise) {
        const until = t + this.noise.durationUs;
        while (now() < until) { /* stolen time */ }
        noiseUs += now() - t;
        this.nextNoise += this.noise.periodUs;
        if (this.nextNoise < until) this.nextNoise = until + this.noise.periodUs; // never catch up in bursts
        continue;
      }
      if (this.kind === 'dgemm') {
        dgemmBlock();
        sinceTestBytes += BLOCK_BYTES;
      } else {
        for (let i = 0; i < 64; i++) { /* spin a little between clock reads */ }
      }
      if (req !== null && ((iv.kind === 'time' && t >= nextTest) || (iv.kind === 'bytes' && sinceTestBytes >= iv.bytes))) {
        const a = now();
        req.test();
        const b = now();
        testUs += b - a;
        nextTest = b + (iv.kind === 'time' ? iv.us : 0);
        sinceTestBytes = 0;
      }
    }
    return { computeUs: now() - start - testUs, testUs, noiseUs };
  }
}
