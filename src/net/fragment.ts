/**
 * The one fragmenter for messages between node engines: a message larger than a frame crosses
 * as fragments of at most FRAGMENT_BYTES, in order, each a view of the sender's bytes (no
 * copy). Both kinds of engine traffic use it: point-to-point payloads (runtime/engine-large.ts,
 * FRAG records) and the offload executor's messages (sched/offload.ts, offload frames).
 *
 * Invariant: the fragments of a `total`-byte message cover [0, total) exactly, back to back,
 * every one FRAGMENT_BYTES long but the last (1..FRAGMENT_BYTES bytes); an empty message is one
 * empty fragment, so that its receiver still hears of it. A frame body (net/frame.ts
 * MAX_FRAME_BODY) holds one fragment and the header in front of it.
 *
 *   offset 0          FRAGMENT_BYTES      2 * FRAGMENT_BYTES          total
 *          |-- frag 0 --|---- frag 1 ----|-- ... --|-- last (short) --|
 *
 * Core code: no node:* imports.
 */

/** Largest fragment of a message on the wire (1 MiB). */
export const FRAGMENT_BYTES = 1 << 20;

/** How many fragments a `total`-byte message crosses in: at least one. */
export function fragmentCount(total: number, size = FRAGMENT_BYTES): number {
  return total <= 0 ? 1 : Math.ceil(total / size);
}

/**
 * Calls `each(offset, bytes, last)` for every fragment of a `total`-byte message, in order
 * (`size`: the fragment size; tests use small ones).
 */
export function forEachFragment(total: number, each: (offset: number, bytes: number, last: boolean) => void,
  size = FRAGMENT_BYTES): void {
  let offset = 0;
  do {
    const bytes = Math.min(size, total - offset);
    const last = offset + bytes >= total;
    each(offset, bytes, last);
    offset += bytes;
  } while (offset < total);
}
