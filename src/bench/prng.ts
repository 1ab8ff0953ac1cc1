/**
 * mulberry32: a small seedable PRNG. Every rank seeded alike draws the same stream, so jobs can
 * generate the same plan and data everywhere (the load and soak jobs, the test jobs).
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
