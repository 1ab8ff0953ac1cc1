/**
 * The simulator's matching: which receive a message meets. The rule is MPI's non-overtaking
 * one, as the library's matching (p2p/transport.ts with p2p/unexpected.ts, the engine's in
 * sched/offload.ts) applies it: per (receiver, sender, sub-tag), messages meet receives in
 * posting order, and whichever comes first waits in its channel's FIFO for the other.
 *
 * Why a structure of its own rather than the library's: the library matches live requests
 * (objects with buffers, wildcards, communicator contexts, arrivals interleaved with a ring's
 * reads), and each arrival is a wall-clock event; the simulator knows every message of the
 * call before it runs, has no wildcards and one context, and matches 10^7 messages in
 * virtual time, so it numbers every (receiver, sender, sub-tag) once (channelsOf) and keeps
 * a FIFO per channel in typed arrays (Channels): two array reads and no allocation per
 * message, where a map per receiver would cost a lookup and an object each. What a message
 * matches is the same either way; when it matches is the engine's virtual time.
 */
import { NbcInternalError } from '../errors.js';
import { A_RECV, A_SEND, grown } from '../sched/schedule.js';
import type { Program } from './program.js';

/** An empty channel, the end of a FIFO. */
export const NONE = -1;
/** match(): nothing of the other kind was waiting (the entry was queued). */
export const NO_MATCH = -2147483648;

/**
 * Numbers the channels of `prog`'s sends and receives: messages match receives per (receiver,
 * sender, sub-tag), so every send and receive with one such triple gets one small integer,
 * and the engine keeps a FIFO per channel. Reduce and copy actions get NONE.
 *
 * Each receiver has a small hash region of its own (a power of two, at least twice its
 * receives; open addressing, linear probing) keyed by sender x 16 + sub-tag: its receives are
 * numbered walking its actions in order, then every send looks its triple up in its
 * receiver's region. A send that no receive will ever match gets a dead-letter channel, which
 * no receive reads (the message waits forever, as it did before). Used once and dropped.
 */
export function channelsOf(prog: Program): { chan: Int32Array; count: number } {
  const { kind, peer, sub, actProc, procAct, procs, nActions } = prog;
  if (procs >= 1 << 27) throw new NbcInternalError(`simulator: ${procs} procs; at most 2^27 - 1 are supported`);
  const regionStart = new Int32Array(procs + 1);
  for (let q = 0; q < procs; q++) {
    let recvs = 0;
    for (let i = procAct[q]!; i < procAct[q + 1]!; i++) if (kind[i] === A_RECV) recvs++;
    let size = 0;
    if (recvs > 0) for (size = 2; size < 2 * recvs; size *= 2);
    regionStart[q + 1] = regionStart[q]! + size;
  }
  const key = new Int32Array(regionStart[procs]!).fill(NONE); // sender x 16 + sub-tag >= 0
  const val = new Int32Array(regionStart[procs]!);
  const chan = new Int32Array(nActions).fill(NONE);
  /** The slot of `srcSub` in receiver q's region: where it is, or the empty one where it goes. */
  const slot = (q: number, srcSub: number): number => {
    const base = regionStart[q]!;
    const mask = regionStart[q + 1]! - base - 1;
    let j = Math.imul(srcSub, 0x9e3779b1) >>> Math.clz32(mask); // the hash's top bits
    while (key[base + j] !== NONE && key[base + j] !== srcSub) j = (j + 1) & mask;
    return base + j;
  };
  let count = 0;
  for (let q = 0; q < procs; q++) {
    for (let i = procAct[q]!; i < procAct[q + 1]!; i++) {
      if (kind[i] !== A_RECV) continue;
      const srcSub = peer[i]! * 16 + sub[i]!;
      const j = slot(q, srcSub);
      if (key[j] === NONE) {
        key[j] = srcSub;
        val[j] = count++;
      }
      chan[i] = val[j]!;
    }
  }
  const deadLetter = count++;
  for (let i = 0; i < nActions; i++) {
    if (kind[i] !== A_SEND) continue;
    const q = peer[i]!;
    if (regionStart[q + 1] === regionStart[q]) {
      chan[i] = deadLetter;
      continue;
    }
    const j = slot(q, actProc[i]! * 16 + sub[i]!);
    chan[i] = key[j] === NONE ? deadLetter : val[j]!;
  }
  return { chan, count };
}


/**
 * Per channel, a FIFO of posted receives or of arrived messages (never both: one meets the
 * other). Entries live in a pool of typed arrays, recycled; a channel keeps its first and
 * last entry (NONE when empty):
 *
 *   head[ch] -> n0 -qNext-> n1 -qNext-> n2 -qNext-> NONE      tail[ch] = n2
 *   qFree -> a free entry -qNext-> ... -> NONE                 qUsed: entries ever taken
 */
export class Channels {
  private readonly head: Int32Array;
  private readonly tail: Int32Array;
  private qVal: Int32Array = new Int32Array(1024);
  private qNext: Int32Array = new Int32Array(1024);
  private qIsRecv: Uint8Array = new Uint8Array(1024);
  private qFree = -1;
  private qUsed = 0;

  constructor(count: number) {
    this.head = new Int32Array(count).fill(NONE);
    this.tail = new Int32Array(count);
  }

  /**
   * Matching: a posted receive (isRecv, value = its action) or an arrived message (value = the
   * send action, or -(send + 1) for a rendezvous request) meets the oldest entry of the other
   * kind on channel `ch`, whose value it returns; else it joins the channel's FIFO and NO_MATCH
   * is returned. Entries live in a pool of typed arrays (value, next, kind), recycled.
   */
  match(ch: number, isRecv: boolean, value: number): number {
    const flag = isRecv ? 1 : 0;
    const h = this.head[ch]!;
    if (h === NONE || this.qIsRecv[h] === flag) {
      let n = this.qFree;
      if (n >= 0) this.qFree = this.qNext[n]!;
      else {
        if (this.qUsed === this.qVal.length) this.growQueues();
        n = this.qUsed++;
      }
      this.qVal[n] = value;
      this.qNext[n] = NONE;
      this.qIsRecv[n] = flag;
      if (h === NONE) this.head[ch] = n;
      else this.qNext[this.tail[ch]!] = n;
      this.tail[ch] = n;
      return NO_MATCH;
    }
    const v = this.qVal[h]!;
    this.head[ch] = this.qNext[h]!; // NONE when it was the last
    this.qNext[h] = this.qFree;
    this.qFree = h;
    return v;
  }

  private growQueues(): void {
    const cap = this.qVal.length * 2;
    this.qVal = grown(this.qVal, cap);
    this.qNext = grown(this.qNext, cap);
    this.qIsRecv = grown(this.qIsRecv, cap);
  }
}
