/**
 * Message records as a union: one encoder and one set of field readers (its decoder) per
 * record kind, beside the word map (shm/layout.ts draws which word holds what for each kind).
 * Nothing else writes header words: rings, TCP frames and UCX headers all carry records
 * written here, and the kinds that reuse a word for another meaning (a remote RTS's node in
 * H_OFFSET, a PULL's id in H_SLICE) name it here once.
 *
 * Every function is a plain function of (i32, w, ...), `w` the record's first Int32 index, so
 * V8 inlines it into the hot paths and no object is made per record. Encoders write every
 * header word (those a kind leaves unused get -1 or 0), so no stale word of an earlier record
 * in the same ring slot survives; each writes its words itself (a shared helper of fourteen
 * arguments was not inlined into the eager send: 10% of its time).
 */
import {
  H_ARRIVE, H_BYTES, H_CTX, H_DST, H_KIND, H_LEN, H_OFFSET, H_SLICE, H_SRC, H_SRC_WORLD, H_TAG, H_TOKEN, HEADER_BYTES,
  KIND_ACK, KIND_CREDIT, KIND_DATA, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN, KIND_FRAG, KIND_PULL, KIND_RTS,
  KIND_UCX_PULL,
} from './layout.js';

/*
 * Header words are indexed by literals here, each named in a comment beside it (H_BYTES: 5),
 * not by layout.ts's H_* constants, whose values the check below holds them to: an imported
 * constant is, at every use, a module variable load and a hole check in V8's bytecode. With
 * them the eager encoder was 182 bytes of bytecode (140 now), and the eager send and the lean
 * receive, which inline these functions, ran out of V8's inlining budget (10-15 % slower on
 * the lean exchange than before the transport was split).
 */
if (H_KIND !== 0 || H_LEN !== 1 || H_CTX !== 2 || H_SRC !== 3 || H_TAG !== 4 || H_BYTES !== 5 || H_DST !== 6 ||
  H_TOKEN !== 7 || H_SLICE !== 8 || H_OFFSET !== 9 || H_SRC_WORLD !== 10 || H_ARRIVE !== 11) {
  throw new Error('shm/record.ts: its header word indices disagree with shm/layout.ts');
}

// ---- every kind ------------------------------------------------------------------------
export function recKind(i32: Int32Array, w: number): number { return i32[w /* + H_KIND */]!; }
/** Record length in bytes, header included, padded to 8. */
export function recLen(i32: Int32Array, w: number): number { return i32[w + 1 /* H_LEN */]!; }
/** Sets the record length (a record copied into a ring with a padded payload). */
export function setRecLen(i32: Int32Array, w: number, len: number): void { i32[w + 1 /* H_LEN */] = len; }
/** The world rank that wrote the record (EAGER, RTS, PULL, EAGER_CREDIT, UCX_PULL, FIN, offload records). */
export function recFrom(i32: Int32Array, w: number): number { return i32[w + 10 /* H_SRC_WORLD */]!; }
/** The destination world rank, by which engines route (EAGER, RTS, FRAG, EAGER_CREDIT, UCX_PULL; -1 for a FIN to all). */
export function recDst(i32: Int32Array, w: number): number { return i32[w + 6 /* H_DST */]!; }
/** The tick the emulated wire delivers the record at (p2p/wire.ts), or 0: no stamp. */
export function recArrive(i32: Int32Array, w: number): number { return i32[w + 11 /* H_ARRIVE */]!; }
/** Stamps the record with the tick the emulated wire delivers it at (never 0: see recArrive). */
export function setRecArrive(i32: Int32Array, w: number, tick: number): void { i32[w + 11 /* H_ARRIVE */] = tick | 0 || 1; }

// ---- EAGER and RTS: a message's envelope (FRAG keeps it) --------------------------------
/** Communicator context id. */
export function msgCtx(i32: Int32Array, w: number): number { return i32[w + 2 /* H_CTX */]!; }
/** Sender's rank in the communicator. */
export function msgSrc(i32: Int32Array, w: number): number { return i32[w + 3 /* H_SRC */]!; }
/** The tag (its sign bit: TAG_INVALID, data a failed collective still sends). */
export function msgTag(i32: Int32Array, w: number): number { return i32[w + 4 /* H_TAG */]!; }
/** Payload bytes of the whole message (EAGER: inline after the header). */
export function msgBytes(i32: Int32Array, w: number): number { return i32[w + 5 /* H_BYTES */]!; }

// ---- EAGER -----------------------------------------------------------------------------
/** EAGER: `bytes` of payload follow the header; `len` = align8(HEADER_BYTES + bytes) in rings. */
export function encodeEager(i32: Int32Array, w: number, len: number, ctx: number, src: number, tag: number,
  bytes: number, dst: number, from: number): void {
  i32[w /* + H_KIND */] = KIND_EAGER;
  i32[w + 1 /* H_LEN */] = len;
  i32[w + 2 /* H_CTX */] = ctx;
  i32[w + 3 /* H_SRC */] = src;
  i32[w + 4 /* H_TAG */] = tag;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = dst;
  i32[w + 7 /* H_TOKEN */] = 0;
  i32[w + 8 /* H_SLICE */] = -1;
  i32[w + 9 /* H_OFFSET */] = 0;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}

// ---- RTS -------------------------------------------------------------------------------
/**
 * RTS within a node (or handed over by the engine): the payload lies at `offset` of endpoint
 * `slice`'s arena slice; the receiver copies it and ACKs `token` to the slice's owner.
 */
export function encodeRts(i32: Int32Array, w: number, ctx: number, src: number, tag: number, bytes: number,
  dst: number, token: number, slice: number, offset: number, from: number): void {
  i32[w /* + H_KIND */] = KIND_RTS;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = ctx;
  i32[w + 3 /* H_SRC */] = src;
  i32[w + 4 /* H_TAG */] = tag;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = dst;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = slice;
  i32[w + 9 /* H_OFFSET */] = offset;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
/**
 * RTS over UCX: the payload comes as a UCX data message tagged with `token`; `held` (1) when
 * the sender sends it only once asked (KIND_UCX_PULL), 0 when it sent it at once (p2p/ucx.ts).
 */
export function encodeUcxRts(i32: Int32Array, w: number, ctx: number, src: number, tag: number, bytes: number,
  dst: number, token: number, held: number, from: number): void {
  i32[w /* + H_KIND */] = KIND_RTS;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = ctx;
  i32[w + 3 /* H_SRC */] = src;
  i32[w + 4 /* H_TAG */] = tag;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = dst;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = 0; // the payload's arrival under an emulated network (setUcxRtsPayloadArrive)
  i32[w + 9 /* H_OFFSET */] = held;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
/**
 * UCX RTS whose payload left with it, under an emulated network (p2p/wire.ts): the tick the
 * payload's last byte arrives at, in H_SLICE (which a UCX RTS does not use otherwise), or 0.
 */
export function ucxRtsPayloadArrive(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }
export function setUcxRtsPayloadArrive(i32: Int32Array, w: number, tick: number): void { i32[w + 8 /* H_SLICE */] = tick | 0 || 1; }
/**
 * Readdresses a copied RTS for another node (engine, TCP): the payload waits at node `node`
 * under the sending engine's message id `message`, to be pulled.
 */
export function setRtsRemote(i32: Int32Array, w: number, node: number, message: number): void {
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 7 /* H_TOKEN */] = message;
  i32[w + 8 /* H_SLICE */] = -1;
  i32[w + 9 /* H_OFFSET */] = node;
}
/** Readdresses an RTS whose payload the engine holds: at `offset` of slice `slice`, ACKed by `token`. */
export function setRtsLocal(i32: Int32Array, w: number, bytes: number, token: number, slice: number, offset: number): void {
  i32[w /* + H_KIND */] = KIND_RTS;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = slice;
  i32[w + 9 /* H_OFFSET */] = offset;
}
/** What the receiver ACKs (local RTS), or the UCX rendezvous token. */
export function rtsToken(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
/** Endpoint whose arena slice holds the payload; -1 when it waits on another node (remote RTS, UCX). */
export function rtsSlice(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }
/** Byte offset of the payload in that slice (local RTS). */
export function rtsOffset(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }
/** Remote RTS (TCP): the node whose engine holds the payload. */
export function rtsNode(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }
/** Remote RTS (TCP): the sending engine's message id, named in the PULL. */
export function rtsMessage(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
/** UCX RTS: 1 when the payload waits for a KIND_UCX_PULL. */
export function rtsHeld(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }

// ---- ACK -------------------------------------------------------------------------------
/** ACK: the RTS payload at slice `slice` named by `token` was copied; its owner may free it. */
export function encodeAck(i32: Int32Array, w: number, token: number, slice: number): void {
  i32[w /* + H_KIND */] = KIND_ACK;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = -1;
  i32[w + 3 /* H_SRC */] = -1;
  i32[w + 4 /* H_TAG */] = -1;
  i32[w + 5 /* H_BYTES */] = 0;
  i32[w + 6 /* H_DST */] = -1;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = slice;
  i32[w + 9 /* H_OFFSET */] = 0;
  i32[w + 10 /* H_SRC_WORLD */] = -1;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
export function ackToken(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
export function ackSlice(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }

// ---- PULL ------------------------------------------------------------------------------
/**
 * PULL (TCP rendezvous): a receive matched message `message` (`bytes` long) of world rank
 * `sender` on node `node`. Rank -> engine it names the rank's pull id `pull`, which the DATA
 * answering it carries; engine -> engine only `sender`, `message` and `bytes` count.
 */
export function encodePull(i32: Int32Array, w: number, bytes: number, sender: number, message: number, pull: number,
  node: number, from: number): void {
  i32[w /* + H_KIND */] = KIND_PULL;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = -1;
  i32[w + 3 /* H_SRC */] = -1;
  i32[w + 4 /* H_TAG */] = -1;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = sender;
  i32[w + 7 /* H_TOKEN */] = message;
  i32[w + 8 /* H_SLICE */] = pull;
  i32[w + 9 /* H_OFFSET */] = node;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
export function pullBytes(i32: Int32Array, w: number): number { return i32[w + 5 /* H_BYTES */]!; }
/** The sending rank (world), on the node that holds the payload. */
export function pullSender(i32: Int32Array, w: number): number { return i32[w + 6 /* H_DST */]!; }
export function pullMessage(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
/** The pulling rank's id for it (rank -> engine). */
export function pullId(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }
/** The node holding the payload (rank -> engine). */
export function pullNode(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }

// ---- DATA ------------------------------------------------------------------------------
/**
 * DATA (engine -> rank): pull `pull` arrived: `bytes` at `offset` of slice `slice`, to be
 * copied out and ACKed with `token`.
 */
export function encodeData(i32: Int32Array, w: number, pull: number, bytes: number, token: number, slice: number,
  offset: number): void {
  i32[w /* + H_KIND */] = KIND_DATA;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = pull;
  i32[w + 3 /* H_SRC */] = -1;
  i32[w + 4 /* H_TAG */] = -1;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = -1;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = slice;
  i32[w + 9 /* H_OFFSET */] = offset;
  i32[w + 10 /* H_SRC_WORLD */] = -1;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
export function dataPull(i32: Int32Array, w: number): number { return i32[w + 2 /* H_CTX */]!; }
export function dataBytes(i32: Int32Array, w: number): number { return i32[w + 5 /* H_BYTES */]!; }
export function dataToken(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
export function dataSlice(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }
export function dataOffset(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }

// ---- FRAG ------------------------------------------------------------------------------
/**
 * FRAG (engine -> engine), written over a copy of the message's RTS (its envelope and H_BYTES,
 * the whole message, stay): the piece at `fragOffset` of message `message`, `len` bytes with
 * its header; `pushed` (1) when sent within push credit, unasked.
 */
export function encodeFrag(i32: Int32Array, w: number, len: number, message: number, fragOffset: number,
  pushed: number): void {
  i32[w /* + H_KIND */] = KIND_FRAG;
  i32[w + 1 /* H_LEN */] = len;
  i32[w + 7 /* H_TOKEN */] = message;
  i32[w + 8 /* H_SLICE */] = pushed;
  i32[w + 9 /* H_OFFSET */] = fragOffset;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
export function fragMessage(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }
export function fragOffset(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }
export function fragPushed(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }

// ---- the control records: EAGER_CREDIT, CREDIT, UCX_PULL, FIN ---------------------------
/**
 * A control record: a header alone, no message envelope (ctx, src and tag -1), naming at most
 * a destination, one count and the writer. The four kinds below differ only in those words.
 */
function encodeControl(i32: Int32Array, w: number, kind: number, bytes: number, dst: number, token: number, from: number): void {
  i32[w /* + H_KIND */] = kind;
  i32[w + 1 /* H_LEN */] = HEADER_BYTES;
  i32[w + 2 /* H_CTX */] = -1;
  i32[w + 3 /* H_SRC */] = -1;
  i32[w + 4 /* H_TAG */] = -1;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = dst;
  i32[w + 7 /* H_TOKEN */] = token;
  i32[w + 8 /* H_SLICE */] = -1;
  i32[w + 9 /* H_OFFSET */] = 0;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}

// ---- EAGER_CREDIT ----------------------------------------------------------------------
/** EAGER_CREDIT: rank `from` gives rank `to` back `n` bytes of eager credit. */
export function encodeEagerCredit(i32: Int32Array, w: number, to: number, n: number, from: number): void {
  encodeControl(i32, w, KIND_EAGER_CREDIT, 0, to, n, from);
}
export function eagerCreditBytes(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }

// ---- CREDIT ----------------------------------------------------------------------------
/** CREDIT (engine -> engine): `bytes` of push credit returned. */
export function encodeCredit(i32: Int32Array, w: number, bytes: number): void {
  encodeControl(i32, w, KIND_CREDIT, bytes, -1, 0, -1);
}
export function creditBytes(i32: Int32Array, w: number): number { return i32[w + 5 /* H_BYTES */]!; }

// ---- UCX_PULL --------------------------------------------------------------------------
/** UCX_PULL: rank `from` asks rank `to` for the held payload of rendezvous `token`. */
export function encodeUcxPull(i32: Int32Array, w: number, to: number, token: number, from: number): void {
  encodeControl(i32, w, KIND_UCX_PULL, 0, to, token, from);
}
export function ucxPullToken(i32: Int32Array, w: number): number { return i32[w + 7 /* H_TOKEN */]!; }

// ---- FIN -------------------------------------------------------------------------------
/** FIN: world rank `rank` has returned from its job; `dst` the reader, or -1 (every rank of a node). */
export function encodeFin(i32: Int32Array, w: number, dst: number, rank: number): void {
  encodeControl(i32, w, KIND_FIN, 0, dst, 0, rank);
}
export function finRank(i32: Int32Array, w: number): number { return i32[w + 10 /* H_SRC_WORLD */]!; }

// ---- POST, SCHED, COMM (rank -> engine, the offload executor) ---------------------------
/**
 * An offload record (KIND_POST, KIND_SCHED, KIND_COMM; sched/offload-client.ts), `bytes` of
 * words after the header: `ctx` the collective context, `rank` the poster's rank in it, `tag`
 * (POST: the collective's tag; COMM: COMM_RELEASE or 0), `id` (POST, SCHED: the schedule id;
 * POST: 0 for a two-level post), `slot`/`slotOffset` (POST: the completion word's slice and
 * byte offset).
 */
export function encodeOffload(i32: Int32Array, w: number, kind: number, len: number, ctx: number, rank: number,
  tag: number, id: number, slot: number, slotOffset: number, bytes: number, from: number): void {
  i32[w /* + H_KIND */] = kind;
  i32[w + 1 /* H_LEN */] = len;
  i32[w + 2 /* H_CTX */] = ctx;
  i32[w + 3 /* H_SRC */] = rank;
  i32[w + 4 /* H_TAG */] = tag;
  i32[w + 5 /* H_BYTES */] = bytes;
  i32[w + 6 /* H_DST */] = id;
  i32[w + 7 /* H_TOKEN */] = 0;
  i32[w + 8 /* H_SLICE */] = slot;
  i32[w + 9 /* H_OFFSET */] = slotOffset;
  i32[w + 10 /* H_SRC_WORLD */] = from;
  i32[w + 11 /* H_ARRIVE */] = 0;
}
export function offCtx(i32: Int32Array, w: number): number { return i32[w + 2 /* H_CTX */]!; }
export function offRank(i32: Int32Array, w: number): number { return i32[w + 3 /* H_SRC */]!; }
export function offTag(i32: Int32Array, w: number): number { return i32[w + 4 /* H_TAG */]!; }
export function offBytes(i32: Int32Array, w: number): number { return i32[w + 5 /* H_BYTES */]!; }
/** POST, SCHED: the schedule id (POST: 0 for a two-level post). */
export function offId(i32: Int32Array, w: number): number { return i32[w + 6 /* H_DST */]!; }
/** POST: the slice of the completion word. */
export function postSlot(i32: Int32Array, w: number): number { return i32[w + 8 /* H_SLICE */]!; }
/** POST: the byte offset of the completion word in it. */
export function postSlotOffset(i32: Int32Array, w: number): number { return i32[w + 9 /* H_OFFSET */]!; }
