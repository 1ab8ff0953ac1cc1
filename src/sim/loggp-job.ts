/**
 * The measurement job of `nbc calibrate --loggp` (Netgauge's LogGP method, Hoefler et al.,
 * "LogGP in theory and practice", 2009), on two ranks, one path at a time (`--ppn 2`: shared
 * memory; `--ppn 1`: between nodes, over the job's transport):
 * - ping-pong at every size: one way = round trip / 2 = 2o + L + (s-1)G; its slope over sizes
 *   (least squares) is G;
 * - message trains: rank 0 isends k 1-byte messages back to back and waits for rank 1's ack
 *   of the last. The time inside the k isend calls over k is o_s; the train's time over k has
 *   slope max(o, g) (the injector's gap shows once it exceeds the CPU's overhead).
 * Every point is measured once per round, rounds repeat until the budget is spent, and each
 * point keeps its fastest sample (the path's own cost, which other programs only add to).
 * Rank 0 returns the samples.
 */
import type { Communicator } from '../coll/communicator.js';
import { waitAll, type Request } from '../p2p/request.js';

export interface LogGPJobArgs {
  sizes: number[];
  /** Trains of 1..maxTrain messages. */
  maxTrain: number;
  budgetMs: number;
  minRounds: number;
}

export interface LogGPJobResult {
  rounds: number;
  /** Fastest one-way time per size, us. */
  pingPong: Array<{ bytes: number; us: number }>;
  /** Per train length: fastest time inside the isend calls, and until the last message's ack, us. */
  trains: Array<{ messages: number; postUs: number; totalUs: number }>;
}

const TAG_GO = 11;
const TAG_PING = 12;
const TAG_TRAIN = 13;
const TAG_ACK = 14;

export default function loggpJob(world: Communicator, argv: string[]): LogGPJobResult | null {
  const a = JSON.parse(argv[0]!) as LogGPJobArgs;
  const me = world.rank;
  if (me > 1) return null;
  const peer = 1 - me;
  const maxBytes = Math.max(...a.sizes);
  const out = world.alloc(Uint8Array, maxBytes).fill(1);
  const inb = world.alloc(Uint8Array, maxBytes);
  const one = out.subarray(0, 1);
  const ack = new Uint8Array(1);
  const go = new Uint8Array(1);
  const pp = a.sizes.map(() => Infinity);
  const post = new Float64Array(a.maxTrain).fill(Infinity);
  const total = new Float64Array(a.maxTrain).fill(Infinity);
  const reqs: Request[] = [];
  const deadline = performance.now() + a.budgetMs;
  let rounds = 0;
  for (;;) {
    if (me === 0) {
      go[0] = rounds < a.minRounds || performance.now() < deadline ? 1 : 0;
      world.send(go, peer, TAG_GO);
    } else {
      world.recv(go, peer, TAG_GO);
    }
    if (go[0] === 0) break;
    for (let j = 0; j < a.sizes.length; j++) {
      const s = out.subarray(0, a.sizes[j]!);
      const r = inb.subarray(0, a.sizes[j]!);
      if (me === 0) {
        const t0 = performance.now();
        world.send(s, peer, TAG_PING);
        world.recv(r, peer, TAG_PING);
        pp[j] = Math.min(pp[j]!, (performance.now() - t0) * 500);
      } else {
        world.recv(r, peer, TAG_PING);
        world.send(s, peer, TAG_PING);
      }
    }
    for (let k = 1; k <= a.maxTrain; k++) {
      if (me === 0) {
        const done = world.irecv(ack, peer, TAG_ACK);
        reqs.length = 0;
        const t0 = performance.now();
        for (let i = 0; i < k; i++) reqs.push(world.isend(one, peer, TAG_TRAIN));
        const t1 = performance.now();
        waitAll(reqs);
        done.wait();
        const t2 = performance.now();
        post[k - 1] = Math.min(post[k - 1]!, (t1 - t0) * 1000);
        total[k - 1] = Math.min(total[k - 1]!, (t2 - t0) * 1000);
      } else {
        for (let i = 0; i < k; i++) world.recv(inb.subarray(0, 1), peer, TAG_TRAIN);
        world.send(ack, peer, TAG_ACK);
      }
    }
    rounds++;
  }
  if (me !== 0) return null;
  return {
    rounds,
    pingPong: a.sizes.map((bytes, j) => ({ bytes, us: pp[j]! })),
    trains: Array.from({ length: a.maxTrain }, (_, i) => ({ messages: i + 1, postUs: post[i]!, totalUs: total[i]! })),
  };
}
