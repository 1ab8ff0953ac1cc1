/**
 * Asynchronous waits in a page (test/web.test.ts): rank 0 starts its part of an iallreduce
 * 200 ms late, the others `await` theirs meanwhile, parked asynchronously. Each rank returns
 * the sum and what the helper worker of the waitAsync fallback did (null where there is none).
 */
import type { Communicator } from 'nbcoll';

export default async function webWait(world: Communicator): Promise<{ sum: number; helper: { waits: number; woken: number } | null }> {
  if (world.rank === 0) await new Promise((resolve) => setTimeout(resolve, 200));
  const out = new Float64Array(1);
  await world.iallreduce(Float64Array.of(world.rank + 1), out, 'sum');
  const helper = (globalThis as { __nbcollWaitAsyncHelper?: { waits: number; woken: number } }).__nbcollWaitAsyncHelper ?? null;
  return { sum: out[0]!, helper: helper === null ? null : { ...helper } };
}
