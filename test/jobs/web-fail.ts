/**
 * Failures in a page (test/web.test.ts). args[0] = a rank: it throws, and every other rank
 * blocks on a message that never comes, so only the launcher's abort can end them.
 * args[0] = 'offload': an offloaded allreduce, refused where no engine runs; returns its error.
 */
import type { Communicator } from 'nbcoll';

export default function fail(world: Communicator, args: string[]): unknown {
  if (args[0] === 'offload') {
    try {
      world.allreduce(Float64Array.of(1), new Float64Array(1), 'sum', { executor: 'offload' });
      return 'accepted';
    } catch (err) {
      return `${(err as { code?: string }).code}: ${(err as Error).message}`;
    }
  }
  const who = Number(args[0] ?? 0);
  if (world.rank === who) throw new Error(`boom from rank ${world.rank}`);
  world.recv(new Uint8Array(1), who, 99);
  return null;
}
