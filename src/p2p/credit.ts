/**
 * Eager credit (back-pressure): an eager message is buffered by its receiver until a receive
 * takes it, so a receiver that does not receive would otherwise let its senders fill its memory
 * without limit. Each rank holds `max` bytes of credit toward each other rank; an eager send
 * spends its payload plus EAGER_MESSAGE_COST, and the receiver gives the credit back
 * (KIND_EAGER_CREDIT, in batches of a quarter, on the path the messages came by) as its
 * receives take the messages. A small send without credit goes by rendezvous instead: its RTS
 * still travels, so it can be matched in any order (a legal MPI program never deadlocks on
 * credit), but its payload waits at the sender until a receive matches it, and the send
 * completes only then (MPI's standard mode allows exactly that). What a non-receiving rank
 * holds is thus bounded: the credit per sender, plus one RTS per send its senders have
 * outstanding.
 */
import { NbcInternalError } from '../errors.js';
import type { TransportStats } from './messages.js';

/**
 * Eager credit each rank holds toward each other rank, bytes (NBC_EAGER_CREDIT_KB): what one
 * sender can make a receiver buffer at most, in messages no receive has taken yet. 4 MiB is
 * 500 messages at the 8 KiB eager limit, about 16,000 of 8 bytes: programs that send a few
 * thousand small messages before their peer receives any (unsafe in MPI's terms, but they run
 * on every MPI) still run, while a receiver that never receives holds at most this per sender.
 */
export const EAGER_CREDIT_BYTES = 4 * 1024 * 1024;
/**
 * What an eager message costs its sender's credit besides its payload: the receiver's record
 * of it while it waits unexpected (an object and a copy, ~200 bytes of heap).
 */
export const EAGER_MESSAGE_COST = 256;

export class EagerCredit {
  /** Credit toward each world rank (bytes), and credit owed to each, not yet returned. */
  private readonly credit: Int32Array;
  private readonly owed: Int32Array;
  private readonly batch: number;

  constructor(ranks: number, readonly max: number, private readonly stats: TransportStats) {
    this.batch = Math.max(1, max >> 2);
    this.credit = new Int32Array(ranks).fill(max);
    this.owed = new Int32Array(ranks);
  }

  /** Whether an eager message of `bytes` to `dst` fits the credit now (nothing spent, nothing counted). */
  has(dst: number, bytes: number): boolean {
    return this.credit[dst]! >= bytes + EAGER_MESSAGE_COST;
  }

  /** Spends what an eager message of `bytes` to `dst` costs; the caller checked `has`. */
  take(dst: number, bytes: number): void {
    this.credit[dst]! -= bytes + EAGER_MESSAGE_COST;
  }

  /**
   * Spends the credit an eager message of `bytes` to `dst` costs; false (nothing spent, the
   * message goes by rendezvous, counted) when the receiver has not given enough back yet.
   */
  spend(dst: number, bytes: number): boolean {
    const cost = bytes + EAGER_MESSAGE_COST;
    const c = this.credit[dst]!;
    if (c < cost) {
      this.stats.creditRendezvous++;
      return false;
    }
    this.credit[dst] = c - cost;
    return true;
  }

  /**
   * A receive took an eager message of `bytes` from world rank `from`: its credit is owed back.
   * Returns the bytes to give back now (a batch has gathered: one record per quarter of the
   * credit), else 0.
   */
  owe(from: number, bytes: number): number {
    const n = this.owed[from]! + bytes + EAGER_MESSAGE_COST;
    if (n < this.batch) {
      this.owed[from] = n;
      return 0;
    }
    this.owed[from] = 0;
    return n;
  }

  /** Credit given back by world rank `from` (a KIND_EAGER_CREDIT record or header). */
  credited(from: number, n: number): void {
    if (!(from >= 0 && from < this.credit.length) || !(n > 0)) {
      throw new NbcInternalError(`malformed eager credit (${n} bytes from rank ${from})`);
    }
    this.credit[from] = Math.min(this.max, this.credit[from]! + n);
  }
}
