/**
 * The host board: one word per rank of a job whose nodes share this host (`nbc run`'s local
 * emulated cluster), in a file that every node process maps (the native addon's mapShared; a
 * SharedArrayBuffer does not cross processes). Two words per rank: a count of its blocking
 * waits, odd while it waits in the library and even while it computes, and when it last left
 * one (hostClockUs).
 *
 * What reads it: the node threads that poll on when idle, handing their core over between
 * polls (sched_yield) instead of parking: a node's engine and its emulated wire. Beside a
 * thread that computes, a yielding one gets its core back only when that thread's time slice
 * ends: about 4 ms on this VM (bench/HISTORY.md, "Yields beside a computing rank"), where a parked
 * one is woken by its socket. Each node's own ranks were already watched (kWaiting); on an
 * emulated cluster the computing rank may belong to another node, so they poll on only while
 * no rank of the host computes.
 *
 * runtime/host-board.ts maps the file; this module is only the words' meaning.
 */
import { perf } from '../perf.js';

/** How long a rank may be out of a wait before it counts as computing (us). */
export const HOST_BOARD_GRACE_US = 50;

const WRAP = 2 ** 31;

/**
 * Microseconds on a clock that every process and thread of the host reads alike (the epoch
 * clock, as perf.timeOrigin anchors each one's monotonic clock), modulo 2^31: two
 * processes' readings agreed within 0-3 us on this VM (bench/HISTORY.md, "Yields beside a
 * computing rank").
 */
export function hostClockUs(): number {
  return Math.round((perf.timeOrigin + perf.now()) * 1000) % WRAP;
}

export class HostBoard {
  private count = 0;

  /**
   * `words`: the board, two Int32 per rank of the host; `index`: this rank's (a rank's view),
   * or -1 (a node's engine or wire, which only read it). `clock`: hostClockUs unless a test
   * steps it.
   */
  constructor(
    private readonly words: Int32Array,
    private readonly index = -1,
    private readonly clock: () => number = hostClockUs,
  ) {}

  get ranks(): number {
    return this.words.length >> 1;
  }

  /** Whether rank `r` is in a blocking wait now. */
  waiting(r: number): boolean {
    return (Atomics.load(this.words, 2 * r) & 1) === 1;
  }

  /** The rank starts waiting (idempotent until `leave`). */
  enter(): void {
    if ((this.count & 1) === 0) Atomics.store(this.words, 2 * this.index, ++this.count);
  }

  /** The rank stops waiting: the time first, so that a reader who sees it out sees when. */
  leave(): void {
    if ((this.count & 1) === 1) {
      Atomics.store(this.words, 2 * this.index + 1, this.clock());
      Atomics.store(this.words, 2 * this.index, ++this.count);
    }
  }

  /**
   * Whether no rank of the host computes: each waits, or left its wait less than `graceUs`
   * ago (a collective's own work between two waits). A rank that never waited computes.
   */
  idle(graceUs = HOST_BOARD_GRACE_US): boolean {
    const w = this.words;
    const n = w.length >> 1;
    const now = this.clock();
    for (let r = 0; r < n; r++) {
      const count = Atomics.load(w, 2 * r);
      if ((count & 1) === 1) continue;
      if (count === 0) return false;
      let since = now - Atomics.load(w, 2 * r + 1);
      if (since < 0) since += WRAP;
      if (since > graceUs) return false;
    }
    return true;
  }
}

/** The size of a board for `ranks` ranks. */
export function hostBoardBytes(ranks: number): number {
  return Math.max(64, ranks * 8);
}
