/**
 * NBC_CHECK_CALLS=1: collective calls that the ranks disagree on fail on every rank, before
 * anything is sent, naming the rank and the difference; the communicator stays usable.
 *
 * Each scenario has rank `odd` (the last rank) make a different call from the others; after
 * each, a correct allreduce must give the right sum. Returns, per scenario, 'ok' or the
 * error's code and message, then the calls that must pass.
 */
import type { Communicator } from 'nbcoll';
import { outcome } from './common.ts';

export default function checkCalls(w: Communicator): string[] {
  const odd = w.size - 1;
  const me = w.rank === odd;
  const f64 = (n: number): Float64Array => new Float64Array(n).fill(w.rank + 1);
  const scenarios: Array<[string, () => void]> = [
    ['kind', () => (me ? w.bcast(f64(4), 0) : w.allreduce(f64(4), f64(4), 'sum'))],
    ['root', () => w.bcast(f64(4), me ? 1 : 0)],
    ['op', () => w.allreduce(f64(4), f64(4), me ? 'max' : 'sum')],
    ['type', () => (me ? w.allreduce(new Int32Array(8), new Int32Array(8), 'sum') : w.allreduce(f64(4), f64(4), 'sum'))],
    ['count', () => w.allreduce(f64(me ? 8 : 4), f64(me ? 8 : 4), 'sum')],
    ['executor', () => w.allreduce(f64(4), f64(4), 'sum', { executor: me ? 'offload' : 'host' })],
    ['algorithm', () => w.allreduce(f64(4), f64(4), 'sum', { algorithm: me ? 'ring' : 'recursive-doubling' })],
    ['nonblocking', () => w.iallreduce(f64(4), f64(4), me ? 'min' : 'sum').wait()],
  ];
  const out: string[] = [];
  const expected = (w.size * (w.size + 1)) / 2;
  for (const [name, call] of scenarios) {
    out.push(`${name}: ${outcome(call)}`);
    const sum = new Float64Array(1);
    w.allreduce(Float64Array.of(w.rank + 1), sum, 'sum');
    if (sum[0] !== expected) throw new Error(`after ${name}: allreduce gave ${sum[0]}, expected ${expected}`);
  }
  // Calls the ranks agree on pass, v-collectives with counts that differ by rank included.
  const counts = Array.from({ length: w.size }, (_, r) => r + 1);
  const displs = counts.map((_, r) => (r * (r + 1)) / 2);
  const mine = new Int32Array(w.rank + 1).fill(w.rank);
  const all = new Int32Array(counts.reduce((a, b) => a + b, 0));
  w.allgatherv(mine, all, counts, displs);
  const persistent = w.allreduceInit(f64(2), f64(2), 'sum');
  persistent.start();
  persistent.wait();
  persistent.free();
  w.gatherv(mine, w.rank === 0 ? all : null, w.rank === 0 ? counts : null, w.rank === 0 ? displs : null, 0);
  out.push(`agreed: ${all.join(',')}`);
  return out;
}
