/**
 * What the emulated network (`--link`, wire.ts) has not yet delivered to a rank over UCX
 * (path-ucx.ts). UCX itself moves every message at once; the sender stamps each header with
 * its modelled arrival (H_ARRIVE), and the receiving rank keeps what has not arrived here:
 *
 * - headers: a copy per header (the worker's inbox is refilled by the next poll), in one FIFO
 *   per sending rank, so a source's messages stay in order (a FIN or credit that is due stays
 *   behind a message from the same rank that is not). Held headers leave UCX's queue, so the
 *   worker's event fd stays quiet and a waiter sleeps (wait.ts) instead of finding UCX busy;
 * - rendezvous payloads: UCX may have written a payload into the receive buffer before its
 *   modelled arrival; the receive completes only once that tick has passed.
 *
 * Every check goes through `Wire.arrived`, which notes the earliest stamp still held, so the
 * waiter sleeps until then. Nothing here runs without an emulated network.
 */
import type { Request } from './request.js';
import { isAfter, type Wire } from './wire.js';
import { recArrive } from '../shm/record.js';

/** Handles one header (path-ucx.ts): its bytes, the same as Int32 words, and its length. */
export type HeaderHandler = (u8: Uint8Array, i32: Int32Array, len: number) => void;

interface DuePayload {
  req: Request;
  tick: number;
}

/** A kept copy of a header, as bytes and as Int32 words. */
interface Kept {
  u8: Uint8Array;
  i32: Int32Array;
}

export class UcxHold {
  /** Per sending world rank: copies of its headers not yet delivered, oldest first. */
  private readonly queues: Kept[][] = [];
  /** The world ranks whose queue is not empty. */
  private readonly sources: number[] = [];
  /** Receives whose payload UCX brought before the wire delivers it, in no order. */
  private readonly due: DuePayload[] = [];

  constructor(private readonly wire: Wire, private readonly handle: HeaderHandler) {}

  /**
   * A header of `len` bytes from world rank `from` is in `inbox`: true when it must wait (it
   * has not arrived on the wire, or an earlier one from `from` still waits), and then it is
   * kept as a copy.
   */
  keep(from: number, inbox: Uint8Array, i32: Int32Array, len: number): boolean {
    let q = this.queues[from];
    if ((q === undefined || q.length === 0) && this.wire.arrived(recArrive(i32, 0))) return false;
    if (q === undefined) q = this.queues[from] = [];
    if (q.length === 0) this.sources.push(from);
    const u8 = inbox.slice(0, len);
    q.push({ u8, i32: new Int32Array(u8.buffer, 0, len >> 2) });
    return true;
  }

  /**
   * Hands every kept header that has now arrived to the handler, in order per source. True
   * when any. (Handling never polls, so nothing is kept meanwhile.)
   */
  release(): boolean {
    const sources = this.sources;
    if (sources.length === 0) return false;
    let any = false;
    let kept = 0;
    for (let s = 0; s < sources.length; s++) {
      const from = sources[s]!;
      const q = this.queues[from]!;
      let n = 0;
      while (n < q.length && this.wire.arrived(recArrive(q[n]!.i32, 0))) {
        const k = q[n++]!;
        this.handle(k.u8, k.i32, k.u8.byteLength);
      }
      if (n > 0) {
        any = true;
        q.splice(0, n);
      }
      if (q.length > 0) sources[kept++] = from;
    }
    sources.length = kept;
    return any;
  }

  /**
   * Completes `req` (with `err`) once tick `arrive` has passed: now when it has (or when
   * `err` is set, or `arrive` is 0), else on the first `releaseDue` after it.
   */
  complete(req: Request, arrive: number, err: Error | null): void {
    if (req.done) return;
    if (err !== null || arrive === 0 || !isAfter(arrive, this.wire.now())) {
      req.complete(err);
      return;
    }
    this.wire.arrived(arrive); // notes it held: the waiter sleeps until then
    this.due.push({ req, tick: arrive });
  }

  /** Completes the receives whose payload has arrived on the wire. True when any did. */
  releaseDue(): boolean {
    const due = this.due;
    if (due.length === 0) return false;
    let kept = 0;
    let any = false;
    for (let i = 0; i < due.length; i++) {
      const d = due[i]!;
      if (this.wire.arrived(d.tick)) {
        any = true;
        if (!d.req.done) d.req.complete();
      } else {
        due[kept++] = d;
      }
    }
    due.length = kept;
    return any;
  }
}
