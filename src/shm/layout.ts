/**
 * Every shared-memory slot nbcoll uses, named in one place (never `Atomics.load(a, 2)`).
 *
 * A node shares three kinds of SharedArrayBuffer between its engine (main thread) and its
 * rank workers. Endpoints are numbered 0..P-1 for the ranks, P for the engine.
 *
 * control  Int32 words: one 64-byte line per endpoint (doorbell, sleeping flag) after a
 *          64-byte line of node-wide words (abort), then the flag boards (33 lines per
 *          endpoint on each of BOARDS boards; coll/flat.ts).
 * rings    one single-producer/single-consumer record ring per ordered endpoint pair
 *          (from, to), including (i, i) for self-sends. Each ring has a 192-byte header of
 *          three lines (consumer head, a spare line, producer-waiting flag) so producer and
 *          consumer never write the same cache line, then `ringBytes` of data: stamped slots,
 *          each a whole number of lines (ring.ts).
 * slices   one arena slice per endpoint: the memory `comm.alloc` hands out and the staging
 *          area for large messages. Only the owning endpoint allocates from and frees into its
 *          slice; every endpoint of the node may read and write any slice.
 */

/** Int32 words per cache line. */
export const LINE_WORDS = 16;

// ---- control buffer -----------------------------------------------------------------
/** Node-wide: non-zero once the node is aborting; holds the exit code. */
export const kAbortWord = 0;
/**
 * Node-wide, under an emulated network (p2p/wire.ts): the tick at which the node's adapter
 * has sent everything handed to it so far, as a 64-bit word (Int32 words 2 and 3; its index
 * in a BigInt64Array view is kNicBusy / 2). The node's ranks and its engine share it, so their
 * concurrent sends queue on one adapter. 64 bits, not a wrapping 32-bit tick: an adapter idle
 * for minutes must not read as busy far into the future.
 */
export const kNicBusy = 2;
/** First word of endpoint e's line is kEndpointBase + e * LINE_WORDS. */
export const kEndpointBase = LINE_WORDS;
/** Per endpoint: bumped (only) when a producer finds the endpoint asleep; parking waits on it. */
export const kDoorbell = 0;
/** Per endpoint: 1 while the endpoint is parked or about to park, 0 while it polls. */
export const kSleeping = 1;
/**
 * Per endpoint: 0, or the eventfd of a rank that sleeps in poll(2) on its UCX worker (the UCX
 * transport); `wake` rings it besides the futex.
 */
export const kWakeFd = 2;
/**
 * Per endpoint: a count (wrapping) of the rank's yielding wait steps. Whoever sees it move
 * knows the rank waited since it last looked, without clearing it for other readers: an engine
 * that shares its core with ranks polls on after its work, and its emulated wire yields, only
 * while one of them waits (engine.ts, waitWatcher).
 */
export const kWaiting = 3;
/**
 * Per endpoint: 1 once the rank has returned from its job and told its peers (KIND_FIN). Its
 * peers then send it nothing more: records queued for it are dropped instead of waited on.
 */
export const kFinished = 4;

export function controlWords(endpoints: number): number {
  return kEndpointBase + endpoints * LINE_WORDS;
}

export function endpointWord(endpoint: number, slot: number): number {
  return kEndpointBase + endpoint * LINE_WORDS + slot;
}

// ---- the flag board (coll/flat.ts) ------------------------------------------------------
/**
 * After the endpoint lines, the control buffer holds the node's flag boards: per board,
 * `BOARD_LINES` lines per endpoint, where a communicator of every rank of a one-node job with
 * more ranks than cores runs its blocking barrier and small allreduce (coll/flat.ts). Line 0: the endpoint's call number (kBoardSeq,
 * the only word others wait on) and, per parity of the call number, what it called (kBoardDesc:
 * bytes, or -1 for a barrier; then the dtype); then BOARD_DATA_LINES lines of its contribution
 * to calls of parity 0, and as many for parity 1.
 */
export const BOARD_DATA_LINES = 16;
export const BOARD_LINES = 1 + 2 * BOARD_DATA_LINES;
/** The largest allreduce the board carries: 1 KiB. */
export const BOARD_DATA_BYTES = BOARD_DATA_LINES * LINE_WORDS * 4;
/** Word offsets in an endpoint's first board line. */
export const kBoardSeq = 0;
/** Parity k's description: words kBoardDesc + 2k (bytes, -1: barrier) and kBoardDesc + 2k + 1 (dtype). */
export const kBoardDesc = 1;

/**
 * Boards per node: one for each of the first BOARDS communicators that hold every rank of a
 * one-node job (the world first), in the order the ranks create them.
 */
export const BOARDS = 4;

/** First word of the flag boards. */
export function boardBase(endpoints: number): number {
  return controlWords(endpoints);
}

/** First word of endpoint `e`'s lines on board `b`, the boards starting at `base`. */
export function boardLine(base: number, b: number, endpoints: number, e: number): number {
  return base + (b * endpoints + e) * BOARD_LINES * LINE_WORDS;
}

/** The control buffer's size in bytes: the endpoint lines and the flag boards. */
export function controlBytes(endpoints: number): number {
  return (controlWords(endpoints) + BOARDS * endpoints * BOARD_LINES * LINE_WORDS) * 4;
}

// ---- rings ---------------------------------------------------------------------------
export const RING_HEADER_BYTES = 3 * LINE_WORDS * 4;
/** Word offsets inside a ring header. */
export const kRingHead = 0;
/** (Unused: the producer's tail lives in the slots' stamps. The line stays as padding.) */
export const kRingSpare = LINE_WORDS;
export const kRingProducerWaiting = 2 * LINE_WORDS;

/** Byte offset of ring (from -> to) in the rings buffer. */
export function ringBase(from: number, to: number, endpoints: number, ringBytes: number): number {
  return (from * endpoints + to) * (RING_HEADER_BYTES + ringBytes);
}

// ---- message records -----------------------------------------------------------------
/**
 * A message record: a 48-byte header of Int32 words, then the payload, padded to 8 bytes.
 * The same header travels inside TCP frames between engines and as UCX header messages.
 * shm/record.ts encodes and decodes every kind (nothing else writes these words). The words
 * per kind (-: unused, written -1 or 0):
 *
 *   word        EAGER  RTS          ACK    PULL     DATA    FRAG     E_CREDIT CREDIT UCX_PULL FIN  POST/SCHED/COMM
 *   0 KIND      kind ------------------------------------------------------------------------------------------->
 *   1 LEN       record bytes, header included, padded to 8 ------------------------------------------------------>
 *   2 CTX       ctx    ctx          -      -        pull id ctx      -        -      -        -    ctx
 *   3 SRC       src    src          -      -        -       src      -        -      -        -    rank
 *   4 TAG       tag    tag          -      -        -       tag      -        -      -        -    tag (COMM: release)
 *   5 BYTES     bytes  bytes        -      bytes    bytes   bytes    0        credit 0        0    payload bytes
 *   6 DST       dst    dst          -      sender   -       dst      to       -      to       dst  schedule id
 *   7 TOKEN     -      token|msg id token  msg id   token   msg id   credit   -      token    -    -
 *   8 SLICE     -      slice|-1     slice  pull id  slice   pushed   -        -      -        -    POST: slot
 *   9 OFFSET    -      offset|node|held -  node     offset  frag off -        -      -        -    POST: slot offset
 *   10 SRC_WORLD from  from         -      from     -       from     from     -      from     rank from
 *   11 ARRIVE   the tick the emulated network delivers it (p2p/wire.ts), or 0: delivered as it comes -------->
 *
 * RTS: `slice|-1`, `offset|node|held`, `token|msg id`: a payload in an arena slice of this node,
 * or (H_SLICE = -1) one that waits on node `node` under its engine's message id (TCP) or at the
 * sender under `token` (UCX; `held` 1 until a UCX_PULL asks for it). PULL's `node` and `pull id` only rank -> engine.
 * A UCX RTS's SLICE is instead the tick its payload arrives at on an emulated network (0: none;
 * record.ts ucxRtsPayloadArrive).
 */
export const H_KIND = 0;
/** Record length in bytes, header included, padded to 8. */
export const H_LEN = 1;
/** Communicator context id. */
export const H_CTX = 2;
/** Sender's rank in the communicator. */
export const H_SRC = 3;
export const H_TAG = 4;
/** Payload length in bytes (for RTS: the whole message; for FRAG: the whole message). */
export const H_BYTES = 5;
/** Destination world rank (engines route by it). */
export const H_DST = 6;
/** Sender-chosen id: names the send request in RTS/ACK, the message in FRAG and PULL. */
export const H_TOKEN = 7;
/** RTS/ACK: endpoint whose arena slice holds the data. */
export const H_SLICE = 8;
/** RTS: byte offset of the data in that slice. FRAG: byte offset of this fragment. */
export const H_OFFSET = 9;
/** Sender's world rank. */
export const H_SRC_WORLD = 10;
/**
 * Under an emulated network (p2p/wire.ts): the tick (0.1 us of the host's monotonic clock,
 * modulo 2^32) at which the wire delivers the record; the reader treats it as not yet arrived
 * until then. 0: no stamp (within a node, or no emulation). It keeps the header at twelve
 * words, so an 8-byte eager message with its ring stamp is one 64-byte line.
 */
export const H_ARRIVE = 11;
export const HEADER_WORDS = 12;
export const HEADER_BYTES = HEADER_WORDS * 4;

/** Filler to the end of the ring; the consumer skips it. */
export const KIND_PAD = 1;
/** Payload inline after the header. */
export const KIND_EAGER = 2;
/** Ready-to-send: the payload waits in an arena slice; the receiver copies it and ACKs. */
export const KIND_RTS = 3;
/** The receiver has copied an RTS payload; the slice owner may complete and free. */
export const KIND_ACK = 4;
/** TCP only: a fragment of a large message, reassembled by the receiving engine. */
export const KIND_FRAG = 5;
/** Rank -> engine: run a registered schedule on the engine (the offload executor). */
export const KIND_POST = 6;
/** Rank -> engine: a schedule, serialised (sched/wire.ts), under an id. */
export const KIND_SCHED = 7;
/** Rank -> engine: a communicator's members (world ranks), under its collective context. */
export const KIND_COMM = 8;
/**
 * The inter-node rendezvous pulls (TCP): an RTS from another node arrives with H_SLICE = -1
 * (the payload still waits at the sender, H_OFFSET naming the sender's node and H_TOKEN the
 * sender engine's message id). Once it is matched, the receiving rank asks its engine to PULL
 * it (H_SLICE: the rank's pull id); the engine reserves arena room, forwards the PULL to the
 * sender's engine, which streams the fragments, and hands the reassembled payload to the rank
 * as DATA (H_SLICE/H_OFFSET: where it lies, H_TOKEN: what to ACK, H_CTX: the pull id).
 */
export const KIND_PULL = 9;
export const KIND_DATA = 10;
/**
 * Engine -> engine: `H_BYTES` of push credit returned (a pushed payload was taken and its room
 * freed). Within its credit a sending engine pushes a large message's fragments with its RTS,
 * as a pull would bring them, saving the round trip; past it, the receiver pulls.
 */
export const KIND_CREDIT = 11;
/**
 * Rank -> rank: eager credit returned (p2p/credit.ts): the receiving rank
 * (H_SRC_WORLD) gives the sending rank (H_DST) back H_TOKEN bytes of credit, as its receives
 * took the sender's eager messages. No payload. Engines forward it like an eager message;
 * over UCX it is a header message.
 */
export const KIND_EAGER_CREDIT = 12;
/**
 * UCX only, rank -> rank: send the payload of held rendezvous H_TOKEN now (the receiver has
 * matched it and posted the receive for it). See p2p/ucx.ts.
 */
export const KIND_UCX_PULL = 13;
/**
 * Rank -> everyone: rank H_SRC_WORLD has returned from its job, and this record follows the
 * last message it sent to the reader. A receive that only that rank could match, posted or
 * posted later, can no longer complete, so it fails (NBC_ERR_PEER_FAILED) instead of hanging.
 * The rank writes it into its rings to the ranks of its node; its engine (H_DST = -1) sends it
 * to every other node, whose engine hands it to each of its ranks behind what came before; over
 * UCX it is a header message to each rank of the other nodes.
 */
export const KIND_FIN = 14;

export function align8(n: number): number {
  return (n + 7) & ~7;
}
