/**
 * The lean receive between nodes (coll/lean.ts over p2p/path-ucx.ts, which reads the message it
 * waits for where it lies in the UCX inbox; over TCP the same calls through the engines). Run
 * on 2 ranks on 2 nodes. Returns, per rank:
 *   sums      how many of 2000 8 B allreduces (a different value each) gave the exact sum
 *   p2p       a message of another tag, sent by the peer before 100 allreduces and received
 *             after them: its value, which the allreduces' receives must leave alone
 *   mismatch  the error code of an allreduce whose count the ranks disagree on (rank 0 one
 *             element, rank 1 two): NBC_ERR_TRUNCATE where more came, NBC_ERR_COUNT where less
 *   after     an allreduce after that error, on a fresh communicator: its sum
 */
import type { Communicator } from 'nbcoll';
import { outcome } from './common.ts';

export default function leanInbox(w: Communicator): { sums: number; p2p: number; mismatch: string; after: number } {
  const peer = 1 - w.rank;
  const mine = new Float64Array(1);
  const sum = new Float64Array(1);
  let sums = 0;
  for (let i = 0; i < 2000; i++) {
    mine[0] = (w.rank + 1) * (i + 0.25);
    w.allreduce(mine, sum, 'sum');
    if (sum[0] === 1 * (i + 0.25) + 2 * (i + 0.25)) sums++;
  }
  w.send(new Float64Array([42 + w.rank]), peer, 7);
  for (let i = 0; i < 100; i++) w.allreduce(mine, sum, 'sum');
  const got = new Float64Array(1);
  w.recv(got, peer, 7);
  const n = w.rank === 0 ? 1 : 2;
  const mismatch = outcome(() => w.allreduce(new Float64Array(n).fill(1), new Float64Array(n), 'sum'));
  const fresh = w.dup();
  mine[0] = w.rank + 1;
  fresh.allreduce(mine, sum, 'sum');
  fresh.free();
  return { sums, p2p: got[0]!, mismatch, after: sum[0]! };
}
