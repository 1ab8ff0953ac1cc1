/**
 * One-way times under an emulated `--link`, read on the host's monotonic clock, which every
 * node process of the host shares: rank 0 writes its send time into the message, rank 1 reads
 * the clock once the receive completes. args: the receiving rank, then sizes in bytes; for each
 * size the least of a few sends, in ms, which the receiver returns. Its 1-byte reply keeps the
 * sends one at a time. Other ranks take no part.
 */
import type { Communicator } from 'nbcoll';

const SENDS = 4;

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export default function main(world: Communicator, args: string[]): unknown {
  const dst = Number(args[0]);
  const sizes = args.slice(1).map(Number);
  if (world.rank !== 0 && world.rank !== dst) return null;
  const peer = world.rank === 0 ? dst : 0;
  const ack = new Uint8Array(1);
  const oneWayMs: number[] = [];
  for (const bytes of sizes) {
    // At least 8 bytes: the send time travels in the message's first Float64.
    const buf = new Uint8Array(Math.max(8, bytes));
    const at = new Float64Array(buf.buffer, 0, 1);
    let least = Infinity;
    for (let i = 0; i < SENDS; i++) {
      if (world.rank === 0) {
        at[0] = nowMs();
        world.send(buf, peer, 1);
        world.recv(ack, peer, 2);
      } else {
        world.recv(buf, peer, 1);
        least = Math.min(least, nowMs() - at[0]!);
        world.send(ack, peer, 2);
      }
    }
    oneWayMs.push(least);
  }
  return world.rank === dst ? oneWayMs : null;
}
