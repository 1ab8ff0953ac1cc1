/**
 * An offloaded allreduce under an emulated network (`--link`, p2p/wire.ts): each rank reports
 * when it posted and when its wait returned, on the host's monotonic clock (which every process
 * of the host shares, as the wire's stamps do), and whether the sum was right.
 *
 * Args: the algorithm ('auto': the executor's choice; 'two-level'), then elements per rank.
 */
import type { Communicator } from 'nbcoll';

/** The host's monotonic clock, ms (CLOCK_MONOTONIC: the same in every process of the host). */
const hostMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export default function offloadWire(w: Communicator, args: string[]): { posted: number; done: number; right: boolean } {
  const algorithm = args[0] === 'auto' ? undefined : args[0];
  const n = Number(args[1] ?? 1);
  const send = Float64Array.from({ length: n }, (_, i) => w.rank * 1000 + i);
  const recv = new Float64Array(n);
  w.barrier();
  const posted = hostMs();
  w.iallreduce(send, recv, 'sum', { executor: 'offload', algorithm }).wait();
  const done = hostMs();
  const ranks = (w.size * (w.size - 1)) / 2;
  const right = recv.every((v, i) => v === ranks * 1000 + w.size * i);
  return { posted, done, right };
}
