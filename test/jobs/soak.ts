/**
 * Regression jobs for what the soak (`npm run soak`) found.
 *
 * Modes (args[0]):
 *   schedwindow N   N offloaded allgatherv calls (per-rank counts: a new schedule every call)
 *                   between uses of one cached allreduce schedule, so the engine's window of
 *                   registered schedules turns over many times; every result checked.
 */
import assert from 'node:assert/strict';
import type { Communicator } from 'nbcoll';

function scheduleWindow(w: Communicator, calls: number): number {
  const ex = { executor: 'offload' } as const;
  const sum = new Float64Array(4);
  const allreduce = (k: number): void => {
    w.allreduce(new Float64Array(4).fill(w.rank + k), sum, 'sum', ex);
    assert.equal(sum[0], (w.size * (w.size - 1)) / 2 + w.size * k, `allreduce ${k}`);
  };
  const counts = Array.from({ length: w.size }, (_, q) => q + 1);
  const displs = counts.map((_, q) => (q * (q + 1)) / 2);
  const total = counts.reduce((a, b) => a + b, 0);
  let checked = 0;
  for (let round = 0; round < 3; round++) {
    allreduce(round); // the same cached schedule each round: registered again once forgotten
    for (let k = 0; k < calls; k++) {
      const send = new Int32Array(w.rank + 1).fill(w.rank * 1000 + k);
      const recv = new Int32Array(total);
      w.allgatherv(send, recv, counts, displs, ex);
      for (let q = 0; q < w.size; q++) assert.equal(recv[displs[q]!], q * 1000 + k, `allgatherv ${k} block ${q}`);
      checked++;
    }
  }
  return checked + 3;
}

export default function main(w: Communicator, args: string[]): unknown {
  switch (args[0]) {
    case 'schedwindow': return scheduleWindow(w, Number(args[1] ?? 600));
    default: throw new Error(`unknown mode ${args[0]}`);
  }
}
