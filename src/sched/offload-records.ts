/**
 * What the offload executor exchanges, laid out in one place: the records a rank writes to its
 * engine (KIND_SCHED, KIND_COMM, KIND_POST: sched/offload-client.ts encodes them here, the
 * executor decodes them here, sched/offload.ts `onRecord`), and the header of the frames that
 * engines exchange for offloaded schedules (FRAME_OFFLOAD, over TCP links or UCX).
 *
 * Rank -> engine records share the ring record header (shm/record.ts encodeOffload writes it,
 * through the rank's `toEngine`; its readers decode it). Per kind, after the header:
 *
 *   KIND_SCHED  schedule `id`: the schedule's words (sched/wire.ts)
 *   KIND_COMM   communicator `ctx` (tag 0, or COMM_RELEASE): its members' world ranks (none to release)
 *   KIND_POST   schedule `id` (0: a two-level call) on `ctx`, completing at (slot, slot offset):
 *               the post's arguments (encodePost)
 *
 * The completion (slot, slot offset) is two words (COMPLETION_BYTES): the completion value,
 * and after it the tick the collective completes at in the emulated network's time (0: now),
 * which the engine stores first; the rank takes the value only once the wire has that tick.
 *
 * An offload frame: OF_WORDS Int32 words, then at most one fragment (net/fragment.ts) of the
 * message. A header whose OF_DST is -1 carries no payload: world rank OF_SRC has returned
 * from its job (over UCX, where no FIN record crosses the engines' links). Under an emulated
 * network (p2p/wire.ts) OF_ARRIVE holds the tick the wire delivers the fragment at (0: none);
 * the receiving engine does not wait for it, it carries it on in virtual time (offload.ts).
 *
 * Core code: no node:* imports.
 */
import { HEADER_BYTES, HEADER_WORDS, KIND_COMM, KIND_POST, KIND_SCHED } from '../shm/layout.js';
import { offBytes, offCtx, offId, offRank, offTag, postSlot, postSlotOffset, recKind, recLen } from '../shm/record.js';
import { FRAGMENT_BYTES } from '../net/fragment.js';
import type { TwoLevelCall } from './two-level.js';

// ---- offload frames between engines ----------------------------------------------------
export const OF_DST = 0;
export const OF_CTX = 1;
export const OF_TAG = 2;
export const OF_SRC = 3;
export const OF_TOTAL = 4;
export const OF_OFFSET = 5;
export const OF_ID = 6;
/** The fragment's modelled arrival (wire.ts ticks; 0: unstamped). */
export const OF_ARRIVE = 7;
export const OF_WORDS = 8;
export const OF_BYTES = OF_WORDS * 4;
/** Largest offload frame: the header and one fragment (the UCX engine's receive buffer). */
export const OF_MAX_BYTES = OF_BYTES + FRAGMENT_BYTES;

/** One fragment's header of message `id` (`total` bytes) to world rank `dst`, at `offset`, arriving at tick `arrive` (0: unstamped). */
export function offloadHeader(dst: number, ctx: number, tag: number, src: number, total: number, offset: number, id: number, arrive = 0): Int32Array {
  const h = new Int32Array(OF_WORDS);
  h[OF_DST] = dst;
  h[OF_CTX] = ctx;
  h[OF_TAG] = tag;
  h[OF_SRC] = src;
  h[OF_TOTAL] = total;
  h[OF_OFFSET] = offset;
  h[OF_ID] = id;
  h[OF_ARRIVE] = arrive;
  return h;
}

/** The header that says world rank `world` has returned from its job (no payload). */
export function finishedHeader(world: number): Int32Array {
  const h = new Int32Array(OF_WORDS);
  h[OF_DST] = -1;
  h[OF_SRC] = world;
  return h;
}

/** A frame body's header, copied out (the body may not be 4-byte aligned); null when too short. */
export function readOffloadHeader(body: Uint8Array): Int32Array | null {
  if (body.byteLength < OF_BYTES) return null;
  const h = new Int32Array(OF_WORDS);
  new Uint8Array(h.buffer).set(body.subarray(0, OF_BYTES));
  return h;
}

/** The world rank a finished-rank header names, or -1 for a message fragment. */
export function finishedRank(h: Int32Array): number {
  return h[OF_DST] === -1 ? h[OF_SRC]! : -1;
}

// ---- rank -> engine records ------------------------------------------------------------
/** A post's completion: the completion word, then its arrival tick (wire.ts; 0: none). */
export const COMPLETION_BYTES = 8;
/** Word of the arrival tick, after the completion word. */
export const COMPLETION_ARRIVE = 1;

/** H_TAG of a KIND_COMM record that releases a communicator (no members follow). */
export const COMM_RELEASE = 1;

/** A region descriptor: arena slice, byte offset, bytes. */
export interface RegionRef {
  slice: number;
  offset: number;
  bytes: number;
}

/**
 * A KIND_POST record's arguments: the send, receive and scratch regions, three words each; a
 * two-level post has no scratch (zeros) and carries its call's op, dtype, item size, kind and
 * root after the regions.
 */
const POST_REGION_WORDS = 3;
const POST_CALL = 3 * POST_REGION_WORDS;
/** Words of a schedule's post, and of a two-level post. */
export const POST_WORDS = POST_CALL;
export const POST_TWO_LEVEL_WORDS = POST_CALL + 5;

/** A KIND_POST record's arguments; `call` for a two-level post, whose `tmp` is ignored. */
export function encodePost(send: RegionRef, recv: RegionRef, tmp: RegionRef | null, call: TwoLevelCall | null): Int32Array {
  const w = new Int32Array(call === null ? POST_WORDS : POST_TWO_LEVEL_WORDS);
  [send, recv, tmp].forEach((r, k) => {
    if (r !== null) w.set([r.slice, r.offset, r.bytes], k * POST_REGION_WORDS);
  });
  if (call !== null) w.set([call.op, call.dtype, call.esize, call.kind, call.root], POST_CALL);
  return w;
}

/** The arguments of a KIND_POST record whose words start at `d` of `i32` (`twoLevel`: it has a call). */
export function decodePost(i32: Int32Array, d: number, twoLevel: boolean): { send: RegionRef; recv: RegionRef; tmp: RegionRef; call: TwoLevelCall | null } {
  const ref = (k: number): RegionRef => {
    const at = d + k * POST_REGION_WORDS;
    return { slice: i32[at]!, offset: i32[at + 1]!, bytes: i32[at + 2]! };
  };
  const c = d + POST_CALL;
  return {
    send: ref(0), recv: ref(1), tmp: ref(2),
    call: twoLevel ? { op: i32[c]!, dtype: i32[c + 1]!, esize: i32[c + 2]!, kind: i32[c + 3]!, root: i32[c + 4]! } : null,
  };
}

/** A rank -> engine offload record, decoded (`words`: where its arguments start in the ring). */
export interface OffloadRecord {
  kind: number;
  ctx: number;
  /** The rank in the communicator. */
  rank: number;
  tag: number;
  /** The schedule id (KIND_SCHED, KIND_POST). */
  id: number;
  /** The completion word (KIND_POST). */
  slotSlice: number;
  slotOffset: number;
  /** Bytes of arguments the record declares, and the record's length (header included). */
  bytes: number;
  len: number;
  words: number;
}

/** The offload record at word `w` of a ring. */
export function decodeOffloadRecord(i32: Int32Array, w: number): OffloadRecord {
  return {
    kind: recKind(i32, w), ctx: offCtx(i32, w), rank: offRank(i32, w), tag: offTag(i32, w), id: offId(i32, w),
    slotSlice: postSlot(i32, w), slotOffset: postSlotOffset(i32, w), bytes: offBytes(i32, w), len: recLen(i32, w), words: w + HEADER_WORDS,
  };
}

/** Where a rank's records to its engine go (p2p/transport.ts `toEngine`). */
export interface EngineSink {
  toEngine(kind: number, ctx: number, src: number, tag: number, dst: number, token: number, slice: number, offset: number, payload: Int32Array): void;
}

/** Registers schedule `id` (serialised: sched/wire.ts) for the rank's posts. */
export function sendSchedule(t: EngineSink, ctx: number, rank: number, id: number, words: Int32Array): void {
  t.toEngine(KIND_SCHED, ctx, rank, 0, id, 0, 0, 0, words);
}

/** Registers communicator `ctx`'s members (world ranks); `worldRanks` empty and `release`: forgets it. */
export function sendComm(t: EngineSink, ctx: number, rank: number, worldRanks: Int32Array, release = false): void {
  t.toEngine(KIND_COMM, ctx, rank, release ? COMM_RELEASE : 0, 0, 0, 0, 0, worldRanks);
}

/** Posts schedule `id` (0: a two-level call) with its arguments (encodePost); it completes at (slice, offset). */
export function sendPost(t: EngineSink, ctx: number, rank: number, tag: number, id: number, slice: number, offset: number, args: Int32Array): void {
  t.toEngine(KIND_POST, ctx, rank, tag, id, 0, slice, offset, args);
}

/** The most argument bytes a record of `len` bytes can hold. */
export function recordRoom(len: number): number {
  return len - HEADER_BYTES;
}
