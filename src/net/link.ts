/**
 * Node-to-node links: one authenticated TCP connection per node pair, opened lazily by whichever
 * side sends first, carrying length-prefixed frames (frame.ts) in order.
 *
 * Every connection is an AuthConn (conn.ts) and incoming ones come through an AuthListener
 * (listener.ts): the handshake, framing, writing and rejection log are theirs; this module adds
 * the pairing of nodes. Life of a connection (see docs/protocol.md):
 *   1. TCP connect; the mutual HMAC handshake (auth.ts). Failures on the accepting side are
 *      'rejected' events and log lines; they never touch established links.
 *   2. The acceptor sends one link-control frame (type 0): ACCEPT or DECLINE. The connector
 *      sends nothing until it has read ACCEPT; the acceptor sends nothing before its ACCEPT.
 *      So no frame is ever written on a connection that is later discarded.
 *   3. Frames flow both ways. An orderly close() sends BYE (type 0) before FIN, so the other side
 *      reports 'peer-closed' instead of 'peer-lost'.
 *
 * Tie-break when both nodes dial each other at once: the connection initiated by the LOWER node
 * id wins. The acceptor decides, from what it alone knows, in one event-loop turn:
 *   - acceptor lower than connector, with its own dial to that peer in flight: DECLINE (its own
 *     dial, initiated by the lower id, is the winner);
 *   - acceptor higher than connector: ACCEPT, even with its own dial in flight (the incoming one
 *     was initiated by the lower id); that dial will be declined by the lower node;
 *   - no dial in flight and no link: ACCEPT.
 * A lower node that accepted a connection holds a link and never dials that peer, and a lower
 * node with a dial in flight declines every incoming one, so at most one connection per pair is
 * ever accepted. A higher node whose dial was declined keeps its frames queued and waits for the
 * lower node's connection (bounded by connectTimeoutMs).
 *
 * Back-pressure: `send` never refuses for volume; `writableBytesPending(node)` reports everything
 * buffered for a peer (queued before the link opened, in the emulated wire, in the socket), and
 * 'drain' (node) says it has fallen back below the socket's high-water mark.
 */
import type { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import {
  NbcArgError, NbcInternalError, NbcLaunchError, NbcPeerFailedError, NbcTimeoutError,
} from '../errors.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS, SECRET_BYTES } from './auth.js';
import { AuthConn, reasonOf, type WriteCallback } from './conn.js';
import { checkEmulation, type LinkEmulation } from './emulate.js';
import { encodeFrame, FRAME_HEADER_BYTES, MAX_FRAME_BODY } from './frame.js';
import { AuthListener } from './listener.js';

export type { WriteCallback } from './conn.js';

/** Frame type reserved for link control (ACCEPT, DECLINE, BYE); user frames use 1..255. */
export const LINK_CONTROL_TYPE = 0;
/** Default deadline for a dialled link to open (connect, handshake, verdict). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** How long close() waits for peers to finish the orderly close before destroying sockets. */
const CLOSE_GRACE_MS = 2000;

/** Body byte of a link-control frame. */
const Control = { Accept: 1, Decline: 2, Bye: 3 } as const;
const ACCEPT_BODY: readonly Uint8Array[] = [Uint8Array.of(Control.Accept)];
const DECLINE_FRAME = encodeFrame(LINK_CONTROL_TYPE, Uint8Array.of(Control.Decline));
const BYE_FRAME = encodeFrame(LINK_CONTROL_TYPE, Uint8Array.of(Control.Bye));

export interface PeerAddress {
  nodeId: number;
  host: string;
  port: number;
}

export interface LinkManagerOptions {
  nodeId: number;
  /** The 256-bit job secret. */
  secret: Buffer;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Port to bind (default 0: ephemeral). */
  port?: number;
  /** Where rejections and link failures are reported (default: a line on stderr). */
  log?: (msg: string) => void;
  /** Added latency and bandwidth cap on every outgoing frame. */
  emulate?: LinkEmulation;
  /**
   * Called between the emulated wire's sub-millisecond re-checks (emulate.ts): where the
   * process shares its core with ranks that wait, sched_yield, so that waiting out a frame's
   * last microseconds does not hold the core they need.
   */
  yieldCore?: (() => void) | null;
  /** Handshake deadline (default 5000 ms). */
  handshakeTimeoutMs?: number;
  /** Deadline for a link to open after the first send to a peer (default 10000 ms). */
  connectTimeoutMs?: number;
}

export type LinkEvents = {
  /**
   * A frame from `fromNode`. `body` stays valid after the listener returns (it may be a view of
   * a larger socket chunk: copy it if you keep it long). A listener that throws drops the link,
   * reported as 'peer-lost' with that error as the cause.
   */
  frame: [fromNode: number, type: number, body: Buffer];
  /** The link to `nodeId` failed (closed without BYE, errored, or could not be opened). */
  'peer-lost': [nodeId: number, err: Error];
  /** `nodeId` closed its links in order (BYE); sends to it now throw. */
  'peer-closed': [nodeId: number];
  /** An incoming connection failed authentication or was refused. */
  rejected: [remote: string, reason: string];
  /** Everything buffered for `nodeId` has drained below the socket's high-water mark. */
  drain: [nodeId: number];
};

/** Which TCP connection carries a link, for stats and tests. */
export interface LinkInfo {
  nodeId: number;
  /** Node id of the side that dialled the connection. */
  initiator: number;
  local: string;
  remote: string;
}

const ConnState = {
  /** TCP connect and handshake in progress. */
  Handshake: 0,
  /** Authenticated dial waiting for the acceptor's ACCEPT or DECLINE. */
  AwaitVerdict: 1,
  /** The pair's link: frames flow. */
  Open: 2,
  /** Declined, failed or closed; ignored from now on. */
  Discarded: 3,
} as const;
type ConnState = (typeof ConnState)[keyof typeof ConnState];

interface QueuedFrame {
  type: number;
  parts: readonly Uint8Array[];
  bytes: number;
  onWritten: WriteCallback | undefined;
}

/** One connection of the pair's: the authenticated connection and where the pairing stands. */
class Conn {
  state: ConnState = ConnState.Handshake;
  byeReceived = false;
  /**
   * `peer`: the other node's id, known up front for dials, from the handshake for accepted ones.
   */
  constructor(readonly auth: AuthConn, readonly outgoing: boolean, readonly peer: number) {}

  get remote(): string {
    return this.auth.remote;
  }
}

class Peer {
  host: string | null = null;
  port = 0;
  /** The open link, once the pair agreed on one. */
  link: Conn | null = null;
  /** Our own dial, until it is accepted, declined or fails. */
  dial: Conn | null = null;
  /** Our dial was declined; the lower node is connecting to us. */
  awaitingPeer = false;
  /** Frames sent before the link opened, in order. */
  queue: QueuedFrame[] = [];
  queuedBytes = 0;
  /** Deadline for the link to open. */
  timer: NodeJS.Timeout | null = null;
  /** Set once the peer is lost or closed; permanent. */
  gone: Error | null = null;
  constructor(readonly nodeId: number) {}
}

function defaultLog(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

export class LinkManager extends EventEmitter<LinkEvents> {
  readonly nodeId: number;
  private readonly secret: Buffer;
  private readonly host: string;
  private readonly port: number;
  private readonly log: (msg: string) => void;
  private readonly emulation: LinkEmulation | null;
  private readonly yieldCore: (() => void) | null;
  private readonly handshakeTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private listening = false;
  private readonly peers = new Map<number, Peer>();
  private readingPaused = false;
  /** Every socket not yet closed, past the listener's handshake (dials from their start). */
  private readonly conns = new Set<Conn>();
  private closed = false;
  private closing: Promise<void> | null = null;
  /** The accept path: handshakes, and the rejection log (one line each, floods summarised). */
  private readonly listener: AuthListener;

  constructor(opts: LinkManagerOptions) {
    super();
    if (!Number.isInteger(opts.nodeId) || opts.nodeId < 0 || opts.nodeId > 0xffff_ffff) {
      throw new NbcArgError(`Cannot create link manager: node id ${opts.nodeId} is not an integer in 0..2^32-1`);
    }
    if (!(opts.secret instanceof Uint8Array) || opts.secret.byteLength !== SECRET_BYTES) {
      throw new NbcArgError(`Cannot create link manager: the job secret must be ${SECRET_BYTES} bytes`);
    }
    if (opts.emulate !== undefined) checkEmulation(opts.emulate);
    this.nodeId = opts.nodeId;
    this.secret = opts.secret;
    this.host = opts.host ?? '127.0.0.1';
    this.port = opts.port ?? 0;
    this.log = opts.log ?? defaultLog;
    const e = opts.emulate;
    this.emulation = e !== undefined && ((e.latencyUs ?? 0) > 0 || e.bandwidthBytesPerSec !== undefined) ? e : null;
    this.yieldCore = opts.yieldCore ?? null;
    this.handshakeTimeoutMs = opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.listener = new AuthListener({
      secret: this.secret, host: this.host, port: this.port, handshakeTimeoutMs: this.handshakeTimeoutMs, log: this.log,
      rejectPrefix: `nbc: node ${this.nodeId}: `, errorPrefix: `nbc: link listener of node ${this.nodeId}: `,
      onConnection: (auth, peerId) => this.onAccepted(auth, peerId),
      onRejected: (remote, reason) => this.emit('rejected', remote, reason),
    });
  }

  /** Starts accepting links. Resolves with the bound address (the actual port when port is 0). */
  async listen(): Promise<{ host: string; port: number }> {
    if (this.closed) throw new NbcInternalError(`Cannot listen on node ${this.nodeId}: the link manager is closed`);
    if (this.listening) throw new NbcInternalError(`Cannot listen on node ${this.nodeId}: already listening`);
    this.listening = true;
    try {
      return await this.listener.listen();
    } catch (err) {
      this.listening = false;
      throw new NbcLaunchError(
        `Cannot listen for links on ${this.host}:${this.port}: ${reasonOf(err)}`, { cause: err });
    }
  }

  /** Where to dial each node. Entries may be updated; this node's own entry is ignored. */
  setPeers(table: readonly PeerAddress[]): void {
    for (const entry of table) {
      const { nodeId, host, port } = entry;
      if (!Number.isInteger(nodeId) || nodeId < 0 || typeof host !== 'string' || host === ''
        || !Number.isInteger(port) || port <= 0 || port > 0xffff) {
        throw new NbcArgError(
          `Cannot set peers of node ${this.nodeId}: entry ${JSON.stringify(entry)} needs an integer nodeId >= 0, `
          + 'a host and a port in 1..65535');
      }
      if (nodeId === this.nodeId) continue;
      const peer = this.peerFor(nodeId);
      peer.host = host;
      peer.port = port;
    }
  }

  /**
   * Sends one frame of `type` (1..255) to `nodeId` whose body is the concatenation of `parts`
   * (written as separate buffers, never concatenated). Frames to one node arrive in send order.
   * The parts must stay unchanged until `onWritten` runs. Opens the link on first use; until it is
   * open, frames queue. Throws NbcPeerFailedError once the peer is lost or closed.
   */
  send(nodeId: number, type: number, parts: readonly Uint8Array[], onWritten?: WriteCallback): void {
    if (this.closed) {
      throw new NbcInternalError(`Cannot send to node ${nodeId}: the link manager of node ${this.nodeId} is closed`);
    }
    if (nodeId === this.nodeId) {
      throw new NbcInternalError(
        `Cannot send to node ${nodeId}: it is this node; node-local traffic goes through shared memory`);
    }
    if (!Number.isInteger(type) || type < 1 || type > 0xff) {
      throw new NbcArgError(`Cannot send to node ${nodeId}: frame type ${type} is not an integer in 1..255`);
    }
    let bytes = 0;
    for (let i = 0; i < parts.length; i++) bytes += parts[i]!.byteLength;
    if (bytes > MAX_FRAME_BODY) {
      throw new NbcArgError(
        `Cannot send to node ${nodeId}: frame body of ${bytes} bytes exceeds MAX_FRAME_BODY (${MAX_FRAME_BODY}); `
        + 'split the message');
    }
    const peer = this.peers.get(nodeId);
    if (peer?.gone) {
      throw new NbcPeerFailedError(`Cannot send to node ${nodeId}: ${peer.gone.message}`, { cause: peer.gone });
    }
    if (peer?.link) {
      peer.link.auth.send(type, parts, onWritten, bytes);
      return;
    }
    if (peer === undefined || (peer.dial === null && !peer.awaitingPeer && peer.host === null)) {
      throw new NbcArgError(
        `Cannot send to node ${nodeId}: its address is unknown; setPeers() has not listed it`);
    }
    peer.queue.push({ type, parts: parts.slice(), bytes, onWritten });
    peer.queuedBytes += FRAME_HEADER_BYTES + bytes;
    if (peer.dial === null && !peer.awaitingPeer) this.startDial(peer);
  }

  /**
   * Stops reading from every link (and from links opened later) until resumeReading(): the
   * receiver's half of back-pressure. TCP flow control then holds the senders back, and their
   * writableBytesPending() grows.
   */
  pauseReading(): void {
    if (this.readingPaused) return;
    this.readingPaused = true;
    for (const peer of this.peers.values()) peer.link?.auth.pauseReading();
  }

  resumeReading(): void {
    if (!this.readingPaused) return;
    this.readingPaused = false;
    for (const peer of this.peers.values()) peer.link?.auth.resumeReading();
  }

  /** Bytes buffered for `nodeId` and not yet taken by the kernel (0 for unknown nodes). */
  writableBytesPending(nodeId: number): number {
    const peer = this.peers.get(nodeId);
    if (peer === undefined) return 0;
    let n = peer.queuedBytes;
    const link = peer.link;
    if (link !== null) n += link.auth.pendingBytes;
    return n;
  }

  /** The connection carrying the link to `nodeId`, or null while none is open. */
  linkInfo(nodeId: number): LinkInfo | null {
    const link = this.peers.get(nodeId)?.link;
    if (!link) return null;
    const s = link.auth.socket;
    return {
      nodeId,
      initiator: link.outgoing ? this.nodeId : nodeId,
      local: `${s.localAddress}:${s.localPort}`,
      remote: `${s.remoteAddress}:${s.remotePort}`,
    };
  }

  /**
   * Whether frames to `nodeId` already have a way there (an open link, a dial, or frames queued
   * for one): a frame sent now goes behind every earlier one. False where this node never sent
   * it anything, nor it this node.
   */
  carries(nodeId: number): boolean {
    const peer = this.peers.get(nodeId);
    return peer !== undefined && (peer.link !== null || peer.dial !== null || peer.awaitingPeer || peer.queue.length > 0);
  }

  /** Node ids with an open link. */
  connectedPeers(): number[] {
    const ids: number[] = [];
    for (const peer of this.peers.values()) if (peer.link !== null) ids.push(peer.nodeId);
    return ids.sort((a, b) => a - b);
  }

  /**
   * Orderly close: flushes what the links hold, sends BYE, ends every connection and stops
   * listening. Frames still queued for links that never opened are dropped (their onWritten gets
   * an error). No events are emitted once close() has been called.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closed = true;
    const dropped = new NbcPeerFailedError(`Link manager of node ${this.nodeId} closed`);
    const waits: Promise<void>[] = [];
    for (const peer of this.peers.values()) {
      this.clearTimer(peer);
      this.dropQueue(peer, dropped);
    }
    for (const conn of this.conns) {
      const socket = conn.auth.socket;
      waits.push(new Promise<void>((resolve) => socket.once('close', () => resolve())));
      if (conn.state === ConnState.Open) conn.auth.finish(BYE_FRAME);
      else conn.auth.close();
    }
    waits.push(this.listener.close());
    const grace = setTimeout(() => {
      for (const conn of this.conns) conn.auth.close();
    }, CLOSE_GRACE_MS);
    this.closing = Promise.all(waits).then(() => clearTimeout(grace));
    return this.closing;
  }

  /**
   * Abrupt teardown, as if the process died: destroys every socket without BYE (peers report
   * 'peer-lost'). For fatal paths and tests. No events are emitted afterwards.
   */
  destroy(): void {
    this.closed = true;
    for (const peer of this.peers.values()) this.clearTimer(peer);
    for (const conn of this.conns) conn.auth.close();
    void this.listener.close();
    this.closing ??= Promise.resolve();
  }

  // ---------------------------------------------------------------------------------------------
  // Connections

  private peerFor(nodeId: number): Peer {
    let peer = this.peers.get(nodeId);
    if (peer === undefined) {
      peer = new Peer(nodeId);
      this.peers.set(nodeId, peer);
    }
    return peer;
  }

  /** Registers a connection until its socket closes (close() waits for each). */
  private track(conn: Conn): void {
    this.conns.add(conn);
    conn.auth.socket.once('close', () => this.conns.delete(conn));
  }

  /** Delivers the connection's frames and its end here. */
  private startConn(conn: Conn): void {
    conn.auth.start({
      onFrame: (type, body) => this.onFrame(conn, type, body),
      onClose: (reason) => this.onConnClosed(conn, reason),
    });
  }

  /** An authenticated connection from `peerId`: decide ACCEPT or DECLINE (see the tie-break above). */
  private onAccepted(auth: AuthConn, peerId: number): void {
    if (this.closed) {
      auth.close();
      return;
    }
    const conn = new Conn(auth, false, peerId);
    this.track(conn);
    if (peerId === this.nodeId) {
      conn.state = ConnState.Discarded;
      auth.close();
      this.listener.reject(conn.remote, `peer claims this node's own id ${peerId}`);
      return;
    }
    const peer = this.peerFor(peerId);
    if (peer.gone !== null) {
      this.decline(conn);
      this.listener.reject(conn.remote, `node ${peerId} connected again but its link is already lost or closed`);
      return;
    }
    if (this.nodeId < peerId && (peer.dial !== null || peer.link !== null)) {
      // Tie-break: our own dial (in flight, or already accepted by the peer) was initiated by
      // the lower id; it wins. The peer keeps its frames queued until our dial reaches it.
      this.decline(conn);
      return;
    }
    if (peer.link !== null) {
      // A lower node dials only while it has neither link nor dial: a second connection is a bug
      // or an impostor holding the secret; never let it disturb the open link.
      this.decline(conn);
      this.listener.reject(conn.remote, `node ${peerId} connected again but its link is already open`);
      return;
    }
    conn.state = ConnState.Open;
    auth.send(LINK_CONTROL_TYPE, ACCEPT_BODY);
    this.establish(peer, conn);
    this.startConn(conn);
  }

  private decline(conn: Conn): void {
    conn.state = ConnState.Discarded;
    conn.auth.refuse(DECLINE_FRAME);
  }

  private startDial(peer: Peer): void {
    const target = `${peer.host}:${peer.port}`;
    const conn = new Conn(AuthConn.dial(peer.host!, peer.port, { remote: target }), true, peer.nodeId);
    this.track(conn);
    peer.dial = conn;
    this.armTimer(peer, `Cannot open link to node ${peer.nodeId} at ${target}: not open within ${
      this.connectTimeoutMs} ms`);
    conn.auth.authenticateAsConnector(this.secret, this.nodeId, this.handshakeTimeoutMs).then(
      () => {
        if (conn.state !== ConnState.Handshake || this.closed) {
          conn.auth.close();
          return;
        }
        conn.state = ConnState.AwaitVerdict;
        this.startConn(conn);
      },
      (err: unknown) => this.onDialFailed(conn, err));
  }

  private onDialFailed(conn: Conn, err: unknown): void {
    conn.state = ConnState.Discarded;
    const peer = this.peerFor(conn.peer);
    if (peer.dial === conn) peer.dial = null;
    if (this.closed || peer.link !== null || peer.gone !== null || peer.awaitingPeer) return;
    this.fail(peer, new NbcPeerFailedError(
      `Cannot open link to node ${peer.nodeId} at ${conn.remote}: ${reasonOf(err)}`, { cause: err }));
  }

  /** The acceptor's verdict on our dial. */
  private onVerdict(conn: Conn, accepted: boolean): void {
    const peer = this.peerFor(conn.peer);
    if (peer.dial === conn) peer.dial = null;
    if (!accepted) {
      conn.state = ConnState.Discarded;
      conn.auth.finish();
      if (this.closed || peer.link !== null || peer.gone !== null) return;
      if (this.nodeId < peer.nodeId) {
        // The higher node refused a connection initiated by the lower id: it must consider the
        // pair's link already used up (lost or closed on its side).
        this.fail(peer, new NbcPeerFailedError(`Node ${peer.nodeId} declined our link (it has closed or lost it)`));
        return;
      }
      // The lower node is dialling us; its connection will carry our queued frames.
      peer.awaitingPeer = true;
      this.armTimer(peer, `Node ${peer.nodeId} declined our link but did not connect within ${
        this.connectTimeoutMs} ms`);
      return;
    }
    if (peer.link !== null || peer.gone !== null) {
      // Unreachable by the tie-break rule; refuse to run two links rather than reorder frames.
      conn.state = ConnState.Discarded;
      conn.auth.close();
      if (peer.link !== null) {
        this.log(`nbc: internal: node ${peer.nodeId} accepted a second link; dropping it`);
      }
      return;
    }
    conn.state = ConnState.Open;
    this.establish(peer, conn);
  }

  /** `conn` is now the pair's link: flush the queue onto it. */
  private establish(peer: Peer, conn: Conn): void {
    peer.link = conn;
    if (this.readingPaused) conn.auth.pauseReading();
    peer.awaitingPeer = false;
    this.clearTimer(peer);
    conn.auth.emulate(this.emulation, this.yieldCore, () => this.onWireEmpty(conn));
    conn.auth.socket.on('drain', () => this.onSocketDrain(conn));
    const queue = peer.queue;
    if (queue.length === 0) return;
    peer.queue = [];
    peer.queuedBytes = 0;
    for (const f of queue) conn.auth.send(f.type, f.parts, f.onWritten, f.bytes);
    if (conn.auth.wireFrames === 0 && !conn.auth.socket.writableNeedDrain) this.emit('drain', peer.nodeId);
  }

  private onFrame(conn: Conn, type: number, body: Buffer): void {
    if (conn.state === ConnState.Discarded) return; // declined or dropped: whatever still arrives
    if (type === LINK_CONTROL_TYPE) {
      const code = body.length === 1 ? body[0] : -1;
      if (code === Control.Bye) {
        conn.byeReceived = true;
        return;
      }
      if ((code === Control.Accept || code === Control.Decline) && conn.outgoing
        && conn.state === ConnState.AwaitVerdict) {
        this.onVerdict(conn, code === Control.Accept);
        return;
      }
      throw new NbcArgError(`Cannot accept link-control frame ${JSON.stringify([...body.subarray(0, 8)])}: `
        + 'unknown or out of sequence');
    }
    if (conn.state !== ConnState.Open) {
      throw new NbcArgError(`Cannot accept frame of type ${type}: the link is not open yet`);
    }
    if (this.closed || conn.byeReceived) return;
    this.emit('frame', conn.peer, type, body);
  }

  /** The connection ended (AuthConn's onClose): why decides between peer-closed and peer-lost. */
  private onConnClosed(conn: Conn, reason: string): void {
    const state = conn.state;
    conn.state = ConnState.Discarded;
    if (this.closed) return;
    const error = conn.auth.error;
    if (reason.startsWith('bad frame') && state !== ConnState.Discarded) {
      this.log(`nbc: dropping connection ${conn.outgoing ? 'to' : 'from'} node ${conn.peer} (${conn.remote}): ${
        reasonOf(error)}`);
    }
    if (state === ConnState.AwaitVerdict) {
      this.onDialFailed(conn, error ?? new Error('connection closed before the link was accepted'));
      return;
    }
    if (state !== ConnState.Open) return;
    const peer = this.peerFor(conn.peer);
    if (peer.link !== conn) return;
    peer.link = null;
    if (conn.byeReceived && error === null) {
      const err = new NbcPeerFailedError(`Node ${peer.nodeId} has closed its links`);
      peer.gone = err;
      conn.auth.dropQueued(err);
      this.dropQueue(peer, err);
      this.emit('peer-closed', peer.nodeId);
      return;
    }
    const err = new NbcPeerFailedError(
      `Link to node ${peer.nodeId} (${conn.remote}) closed unexpectedly${error ? `: ${error.message}` : ''}`,
      error ? { cause: error } : undefined);
    conn.auth.dropQueued(err);
    this.fail(peer, err);
  }

  /** The peer is lost for good: drop everything and report it once. */
  private fail(peer: Peer, err: Error): void {
    if (peer.gone !== null) return;
    peer.gone = err;
    peer.awaitingPeer = false;
    this.clearTimer(peer);
    for (const conn of [peer.dial, peer.link]) {
      if (conn === null) continue;
      conn.state = ConnState.Discarded;
      conn.auth.close();
    }
    peer.dial = null;
    peer.link = null;
    this.dropQueue(peer, err);
    if (this.closed) return;
    this.log(`nbc: lost link to node ${peer.nodeId}: ${err.message}`);
    this.emit('peer-lost', peer.nodeId, err);
  }

  private dropQueue(peer: Peer, err: Error): void {
    const queue = peer.queue;
    peer.queue = [];
    peer.queuedBytes = 0;
    for (const f of queue) f.onWritten?.(err);
  }

  private armTimer(peer: Peer, message: string): void {
    this.clearTimer(peer);
    peer.timer = setTimeout(() => {
      peer.timer = null;
      if (peer.link === null && !this.closed) this.fail(peer, new NbcTimeoutError(message));
    }, this.connectTimeoutMs);
  }

  private clearTimer(peer: Peer): void {
    if (peer.timer !== null) clearTimeout(peer.timer);
    peer.timer = null;
  }

  // ---------------------------------------------------------------------------------------------
  // Drain

  private onSocketDrain(conn: Conn): void {
    if (this.closed || conn.state !== ConnState.Open) return;
    if (conn.auth.wireFrames > 0) return;
    this.emit('drain', conn.peer);
  }

  private onWireEmpty(conn: Conn): void {
    if (this.closed || conn.state !== ConnState.Open || conn.auth.socket.writableNeedDrain) return;
    this.emit('drain', conn.peer);
  }
}
