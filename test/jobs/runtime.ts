/**
 * The same job on Node, Bun, Deno and in a browser's Web Workers (test/js-runtime.test.ts,
 * test/web.test.ts): a blocking allreduce, an
 * awaited iallreduce (ranks park asynchronously while rank 0 is late) and a barrier; each rank
 * prints and returns what it saw and the runtime it ran on.
 */
import type { Communicator } from 'nbcoll';

export default async function main(world: Communicator): Promise<{ sum: number; isum: number; runtime: string }> {
  const g = globalThis as { Bun?: unknown; Deno?: unknown; WorkerGlobalScope?: unknown };
  const runtime = g.Bun !== undefined ? 'bun' : g.Deno !== undefined ? 'deno' : g.WorkerGlobalScope !== undefined ? 'browser' : 'node';
  const sum = new Float64Array(1);
  world.allreduce(new Float64Array([world.rank]), sum, 'sum');
  if (world.rank === 0) await new Promise((resolve) => setTimeout(resolve, 100));
  const isum = new Float64Array(1);
  await world.iallreduce(new Float64Array([world.rank + 1]), isum, 'sum');
  world.barrier();
  console.log(`rank ${world.rank} of ${world.size} on ${runtime}: ${sum[0]} ${isum[0]}`);
  return { sum: sum[0]!, isum: isum[0]!, runtime };
}
