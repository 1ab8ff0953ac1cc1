/**
 * The measurement job of `nbc calibrate` (seed 004, Section 5), run on one path at a time:
 * `--ranks 2 --ppn 2` is shared memory, `--ppn 1` puts every rank on its own node (TCP).
 *
 * - ping-pong between ranks 0 and 1 at every size: one-way = round trip / 2. Its slope over
 *   sizes is the path's beta.
 * - direct scatter, as the paper profiles it: the root isends k messages one after another
 *   (message i to rank 1 + i mod (size-1); with 2 ranks all of them go to rank 1, whose path
 *   they share) and waits for all; the rank that gets the last message answers with a 1-byte
 *   ack. The scatter latency is the time from the first isend until the ack arrived, minus
 *   the ack's one-way time (the 1-byte ping-pong): the time until the last message arrived.
 *   Timed for k = 1..maxMessages at each scatter size. Its slope over k at a small size is
 *   T_startup (eq. 2); at a large size, one message's transmission time (eq. 3).
 *
 * Every point is measured once per round and the rounds repeat, so a burst of interference
 * from other programs (a shared 2-core machine has them) spreads over all points instead of
 * spoiling a few. Each point reports the fastest iteration and the median: the fit uses the
 * fastest, the path's own cost, which other programs only ever add to.
 *
 * Buffers are registered (comm.alloc), as in the p2p benchmark. Rank 0 returns the result.
 */
import type { Communicator } from '../coll/communicator.js';
import { waitAll, type Request } from '../p2p/request.js';

export interface CalibrateJobArgs {
  /** Ping-pong message sizes in bytes; the smallest also times the scatter's ack. */
  sizes: number[];
  /** Scatter message sizes in bytes (a start-up bound one, then a transmission bound one). */
  scatterSizes: number[];
  /** The scatter is timed with 1..maxMessages messages. */
  maxMessages: number;
  /** Measured rounds (every point once per round), after `warmup` rounds. */
  iters: number;
  warmup: number;
  /** Stop after this many milliseconds of measuring, once `minIters` rounds are done. */
  budgetMs: number;
  minIters: number;
}

/** One point's timings in microseconds. */
export interface Timing {
  minUs: number;
  medianUs: number;
}

export interface CalibrateJobResult {
  ranks: number;
  /** Measured rounds (fewer than asked when the time budget ran out). */
  rounds: number;
  /** One-way time per message size. */
  pingPong: Array<{ bytes: number } & Timing>;
  /** Time until the last of `messages` messages of `bytes` arrived. */
  scatter: Array<{ bytes: number; messages: number } & Timing>;
}

const TAG_GO = 1;
const TAG_PING = 2;
const TAG_DATA = 3;
const TAG_ACK = 4;

function timing(samples: Float64Array, scale: number): Timing {
  const s = Array.from(samples).sort((a, b) => a - b);
  const m = s.length >> 1;
  const median = s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  return { minUs: s[0]! * scale, medianUs: median * scale };
}

export default function calibrateJob(world: Communicator, argv: string[]): CalibrateJobResult | null {
  const a = JSON.parse(argv[0]!) as CalibrateJobArgs;
  const me = world.rank;
  const peers = world.size - 1;
  const dest = (i: number): number => 1 + (i % peers);
  const K = a.maxMessages;
  const maxBytes = Math.max(...a.sizes, ...a.scatterSizes);
  const out = world.alloc(Uint8Array, maxBytes).fill(7);
  const inb = world.alloc(Uint8Array, maxBytes);
  const one = new Uint8Array(1);
  const reqs: Request[][] = [];
  for (let k = 1; k <= K; k++) reqs.push(new Array<Request>(k));
  // Round-trip samples (us) per ping-pong size, and per scatter (size, k) until the ack.
  const pp = a.sizes.map(() => new Float64Array(a.iters));
  const sc = a.scatterSizes.map(() => Array.from({ length: K }, () => new Float64Array(a.iters)));

  const go = new Uint8Array(1);
  const deadline = performance.now() + a.budgetMs;
  let rounds = 0;
  for (let it = -a.warmup; it < a.iters; it++) {
    // Rank 0 says whether another round runs (the time budget), so all ranks agree.
    if (me === 0) {
      go[0] = it < a.minIters || performance.now() < deadline ? 1 : 0;
      for (let r = 1; r <= peers; r++) world.send(go, r, TAG_GO);
    } else {
      world.recv(go, 0, TAG_GO);
    }
    if (go[0] === 0) break;
    if (me <= 1) {
      const peer = 1 - me;
      for (let j = 0; j < a.sizes.length; j++) {
        const s = out.subarray(0, a.sizes[j]!);
        const r = inb.subarray(0, a.sizes[j]!);
        if (me === 0) {
          const t0 = performance.now();
          world.send(s, peer, TAG_PING);
          world.recv(r, peer, TAG_PING);
          if (it >= 0) pp[j]![it] = (performance.now() - t0) * 1000;
        } else {
          world.recv(r, peer, TAG_PING);
          world.send(s, peer, TAG_PING);
        }
      }
    }
    for (let j = 0; j < a.scatterSizes.length; j++) {
      const s = out.subarray(0, a.scatterSizes[j]!);
      const r = inb.subarray(0, a.scatterSizes[j]!);
      for (let k = 1; k <= K; k++) {
        const last = dest(k - 1);
        if (me === 0) {
          const kr = reqs[k - 1]!;
          const ack = world.irecv(one, last, TAG_ACK);
          const t0 = performance.now();
          for (let i = 0; i < k; i++) kr[i] = world.isend(s, dest(i), TAG_DATA);
          waitAll(kr);
          ack.wait();
          if (it >= 0) sc[j]![k - 1]![it] = (performance.now() - t0) * 1000;
        } else {
          // This rank gets messages me-1, me-1+peers, ... of the k.
          for (let i = me - 1; i < k; i += peers) world.recv(r, 0, TAG_DATA);
          if (me === last) world.send(one, 0, TAG_ACK);
        }
      }
    }
    if (it >= 0) rounds++;
  }
  if (me !== 0) return null;

  const pingPong = a.sizes.map((bytes, j) => ({ bytes, ...timing(pp[j]!.subarray(0, rounds), 0.5) }));
  // The ack's one-way time, fastest with fastest and median with median: the smallest
  // ping-pong's, or half the round trip of a one-message scatter of the smallest size when
  // that was faster (the same exchange, and twice the chances of a clean iteration).
  const smallest = pingPong.reduce((x, y) => (y.bytes < x.bytes ? y : x));
  const jSmall = a.scatterSizes.indexOf(Math.min(...a.scatterSizes));
  const oneMessage = timing(sc[jSmall]![0]!.subarray(0, rounds), 0.5);
  const ack: Timing = oneMessage.minUs < smallest.minUs ? oneMessage : smallest;
  const scatter: CalibrateJobResult['scatter'] = [];
  for (let j = 0; j < a.scatterSizes.length; j++) {
    for (let k = 1; k <= K; k++) {
      const t = timing(sc[j]![k - 1]!.subarray(0, rounds), 1);
      scatter.push({ bytes: a.scatterSizes[j]!, messages: k, minUs: t.minUs - ack.minUs, medianUs: t.medianUs - ack.medianUs });
    }
  }
  return { ranks: world.size, rounds, pingPong, scatter };
}
