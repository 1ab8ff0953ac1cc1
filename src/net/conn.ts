/**
 * One authenticated connection: a TCP socket that proved the job secret (auth.ts) and then
 * carries length-prefixed frames (frame.ts) both ways. The engine links (link.ts), the
 * rendezvous (runtime/rendezvous-*.ts) and every hop of the aggregation fabric (agg/) are all
 * made of it, so a connection is authenticated, framed, bounded, written and ended one way.
 * Listeners hand these out from one accept path (listener.ts).
 *
 *   new AuthConn ──authenticateAs*──► authenticated ──start(handlers)──► started ──► ended
 *   'error' kept      (leftover bytes kept,         (leftover fed first,      onClose(reason),
 *   from the start     socket paused)                then the socket's)        exactly once
 *
 * Invariants:
 *   - The connection holds an 'error' listener from creation, so no socket error goes unhandled
 *     in any phase; the first error (or bad frame) is kept in `error`.
 *   - Frames reach the owner only after start(), in order, bounded by `maxBody` before anything
 *     is buffered. A bad frame, or an onFrame that throws, ends the connection ("bad frame: ...").
 *   - A started connection ends exactly once and says why: the peer closed it ("connection
 *     closed by the peer"), the socket failed ("connection error: ..."), a frame was bad, or the
 *     owner called close(reason). Nothing is delivered after that; frames sent after it are
 *     dropped, their onWritten called with an error.
 *   - Frames may be sent once authenticated, before start() (an acceptor's verdict goes first).
 *
 * Writes: a frame is a 5-byte header and the caller's parts, written as separate buffers (never
 * concatenated) with the socket corked until the next tick, so the frames of one tick leave in
 * one writev. With an emulated link (emulate.ts) frames wait in an EmulatedWire first.
 */
import { Buffer } from 'node:buffer';
import { connect, type Socket } from 'node:net';
import { NbcArgError, NbcAuthError, NbcInternalError, NbcPeerFailedError } from '../errors.js';
import {
  authenticateAsAcceptor, authenticateAsConnector, NbcHandshakeError, remoteAddressOf, type SecretLookup,
} from './auth.js';
import { EmulatedWire, type LinkEmulation } from './emulate.js';
import { encodeFrameHeader, FRAME_HEADER_BYTES, FrameDecoder, MAX_FRAME_BODY } from './frame.js';

/**
 * Called once the connection no longer references a frame's parts: with no error when the
 * socket has taken the bytes, with an error when the frame was dropped. Either way the parts may
 * be reused afterwards.
 */
export type WriteCallback = (err?: Error | null) => void;

export interface ConnHandlers {
  /** One frame. `body` stays valid after the call. Throwing ends the connection ("bad frame: ..."). */
  onFrame: (type: number, body: Buffer) => void;
  /** The connection ended (see the module comment for the reasons); called once. */
  onClose: (reason: string) => void;
}

export interface AuthConnOptions {
  /** How messages name the other end (default: the socket's remote address). */
  remote?: string;
  /** Largest frame body accepted (default MAX_FRAME_BODY). */
  maxBody?: number;
}

const Phase = {
  /** Created; the handshake has not finished. */
  Handshake: 0,
  /** The other end proved the secret; the leftover bytes wait for start(). */
  Authenticated: 1,
  /** Frames are delivered to the handlers. */
  Started: 2,
  /** Closed, failed, or refused; permanent. */
  Ended: 3,
} as const;
type Phase = (typeof Phase)[keyof typeof Phase];

interface OutFrame {
  header: Buffer;
  parts: readonly Uint8Array[];
  onWritten: WriteCallback | undefined;
}

const EMPTY = Buffer.alloc(0);

function uncork(conn: AuthConn): void {
  conn.uncorkNow();
}

/** "host:port", with brackets around an IPv6 host. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The short reason of a handshake failure, else the error's message. */
export function reasonOf(err: unknown): string {
  if (err instanceof NbcHandshakeError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}

export class AuthConn {
  readonly socket: Socket;
  readonly remote: string;
  /** The first socket error or bad frame; null while there was none. */
  error: Error | null = null;
  private phase: Phase = Phase.Handshake;
  private leftover: Buffer = EMPTY;
  private readonly maxBody: number;
  private decoder: FrameDecoder | null = null;
  private handlers: ConnHandlers | null = null;
  private wire: EmulatedWire<OutFrame> | null = null;
  /** A nextTick uncork is scheduled. */
  private corked = false;
  private socketClosed = false;
  private readingPaused = false;

  constructor(socket: Socket, opts: AuthConnOptions = {}) {
    this.socket = socket;
    this.remote = opts.remote ?? remoteAddressOf(socket);
    this.maxBody = opts.maxBody ?? MAX_FRAME_BODY;
    socket.setNoDelay(true);
    socket.on('error', (err) => {
      this.error ??= err;
    });
    socket.on('close', () => this.onSocketClose());
  }

  /** A connection to host:port, being opened (authenticate it next). */
  static dial(host: string, port: number, opts: AuthConnOptions = {}): AuthConn {
    return new AuthConn(connect({ host, port }), { ...opts, remote: opts.remote ?? hostPort(host, port) });
  }

  /** True once the connection ended (or was refused); it never delivers or sends again. */
  get closed(): boolean {
    return this.phase === Phase.Ended;
  }

  /**
   * Runs the connector's side of the handshake, proving `secret` as `nodeId`. Rejects with
   * NbcHandshakeError (and destroys the socket) on any failure, connection errors included.
   */
  async authenticateAsConnector(secret: Buffer, nodeId: number, timeoutMs?: number): Promise<void> {
    const { leftover } = await authenticateAsConnector(this.socket, secret, nodeId, { timeoutMs, remote: this.remote });
    this.authenticated(leftover);
  }

  /**
   * Runs the acceptor's side; `secret` may be chosen by the id the connector claims. Resolves
   * with the connector's id, proven by its MAC; rejects as authenticateAsConnector does.
   */
  async authenticateAsAcceptor(secret: Buffer | SecretLookup, timeoutMs?: number): Promise<number> {
    const { peerNodeId, leftover } = await authenticateAsAcceptor(this.socket, secret, { timeoutMs, remote: this.remote });
    this.authenticated(leftover);
    return peerNodeId;
  }

  private authenticated(leftover: Buffer): void {
    if (this.phase !== Phase.Handshake) return; // closed meanwhile: stays ended
    this.phase = Phase.Authenticated;
    this.leftover = leftover;
  }

  /**
   * Emulates `emulation` on the outgoing side (no-op for an emulation without latency or
   * bandwidth). `onEmpty` runs when the emulated wire has handed everything to the socket.
   */
  emulate(emulation: LinkEmulation | null | undefined, yieldCore: (() => void) | null = null, onEmpty?: () => void): void {
    if (emulation === null || emulation === undefined) return;
    if ((emulation.latencyUs ?? 0) <= 0 && emulation.bandwidthBytesPerSec === undefined) return;
    this.wire = new EmulatedWire<OutFrame>(emulation, (f) => this.write(f.header, f.parts, f.onWritten), onEmpty, yieldCore);
  }

  /**
   * Starts delivering frames: the bytes that followed the handshake first, then the socket's.
   * Call once, after the handshake. A socket that closed in between ends the connection from a
   * clean stack (next tick).
   */
  start(handlers: ConnHandlers): void {
    if (this.phase === Phase.Ended) {
      process.nextTick(() => handlers.onClose('connection closed before it was started'));
      return;
    }
    if (this.phase !== Phase.Authenticated) {
      throw new NbcInternalError(`Cannot start the connection to ${this.remote}: it is not authenticated`);
    }
    this.phase = Phase.Started;
    this.handlers = handlers;
    this.decoder = new FrameDecoder((type, body) => this.handlers?.onFrame(type, body), this.maxBody);
    this.socket.on('data', (chunk: Buffer) => this.feed(chunk));
    if (this.socketClosed) {
      process.nextTick(() => this.end(this.lostReason()));
      return;
    }
    const leftover = this.leftover;
    this.leftover = EMPTY;
    if (leftover.length > 0) this.feed(leftover);
    if (this.phase === Phase.Started && !this.readingPaused) this.socket.resume();
  }

  /** Stops reading (TCP flow control then holds the sender back) until resumeReading(). */
  pauseReading(): void {
    this.readingPaused = true;
    this.socket.pause();
  }

  resumeReading(): void {
    this.readingPaused = false;
    if (this.phase === Phase.Started) this.socket.resume();
  }

  private feed(chunk: Buffer): void {
    if (this.phase !== Phase.Started) return;
    try {
      this.decoder!.push(chunk);
    } catch (err) {
      this.error ??= err instanceof Error ? err : new Error(String(err));
      this.end(`bad frame: ${reasonOf(err)}`);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Writing

  /**
   * Sends one frame of `type` whose body is the concatenation of `parts`. The parts must stay
   * unchanged until `onWritten` runs. Returns false (and calls onWritten with an error, on the
   * next tick) when the connection can no longer send. Throws NbcArgError for a type outside
   * 0..255 or a body the format cannot carry; bounds of the layer above are its own to check.
   */
  send(type: number, parts: readonly Uint8Array[], onWritten?: WriteCallback, bytes = bodyBytes(parts)): boolean {
    const socket = this.socket;
    if (this.phase === Phase.Ended || this.phase === Phase.Handshake || socket.destroyed || socket.writableEnded) {
      if (onWritten !== undefined) process.nextTick(onWritten, this.droppedError());
      return false;
    }
    const header = encodeFrameHeader(type, bytes);
    if (this.wire === null) this.write(header, parts, onWritten);
    else this.wire.push({ header, parts: parts.slice(), onWritten }, FRAME_HEADER_BYTES + bytes);
    return true;
  }

  /**
   * Writes header and parts as separate buffers. The socket stays corked until the next tick,
   * so all frames written in one tick leave in one writev.
   */
  private write(header: Buffer, parts: readonly Uint8Array[], onWritten: WriteCallback | undefined): void {
    const socket = this.socket;
    if (!this.corked) {
      this.corked = true;
      socket.cork();
      process.nextTick(uncork, this);
    }
    let last = -1;
    for (let i = 0; i < parts.length; i++) if (parts[i]!.byteLength > 0) last = i;
    if (last < 0) {
      socket.write(header, onWritten);
      return;
    }
    socket.write(header);
    for (let i = 0; i < last; i++) {
      const part = parts[i]!;
      if (part.byteLength > 0) socket.write(part);
    }
    socket.write(parts[last]!, onWritten);
  }

  /** @internal The scheduled end of a tick's cork. */
  uncorkNow(): void {
    this.corked = false;
    this.socket.uncork();
  }

  /** Bytes sent and not yet taken by the kernel (in the emulated wire or the socket). */
  get pendingBytes(): number {
    return this.socket.writableLength + (this.wire === null ? 0 : this.wire.pendingBytes);
  }

  /** Frames waiting in the emulated wire (0 without emulation). */
  get wireFrames(): number {
    return this.wire === null ? 0 : this.wire.length;
  }

  /** Drops the frames still in the emulated wire, calling their onWritten with `err`. */
  dropQueued(err: Error): void {
    if (this.wire === null) return;
    for (const f of this.wire.clear()) f.onWritten?.(err);
  }

  private droppedError(): Error {
    return new NbcPeerFailedError(`Cannot send to ${this.remote}: the connection is closed`,
      this.error === null ? undefined : { cause: this.error });
  }

  // ---------------------------------------------------------------------------------------------
  // Ending

  /**
   * Orderly end: hands the emulated wire's frames to the socket, writes `last` (a final frame,
   * already encoded) and half-closes. The connection ends when the other side closes too.
   */
  finish(last?: Uint8Array): void {
    const socket = this.socket;
    if (this.phase === Phase.Ended || socket.destroyed || socket.writableEnded) return;
    this.wire?.flushNow();
    if (last === undefined) socket.end();
    else socket.end(last);
  }

  /** finish(), then resolves once the socket closed; destroys it if the other side lingers. */
  finishAndWait(graceMs: number): Promise<void> {
    const socket = this.socket;
    if (socket.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const grace = setTimeout(() => socket.destroy(), graceMs);
      socket.once('close', () => {
        clearTimeout(grace);
        resolve();
      });
      this.finish();
    });
  }

  /**
   * Turns an authenticated connection away without starting it: writes `last` (the refusal,
   * already encoded), half-closes, and discards whatever still arrives.
   */
  refuse(last: Uint8Array): void {
    this.phase = Phase.Ended;
    this.socket.resume();
    if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.end(last);
  }

  /** Drops the connection now; onClose(reason) runs (once) unless it already ended. */
  close(reason = 'closed locally'): void {
    this.end(reason);
  }

  private onSocketClose(): void {
    this.socketClosed = true;
    if (this.phase === Phase.Started) this.end(this.lostReason());
  }

  private lostReason(): string {
    return this.error === null ? 'connection closed by the peer' : `connection error: ${this.error.message}`;
  }

  private end(reason: string): void {
    if (this.phase === Phase.Ended) return;
    this.phase = Phase.Ended;
    this.socket.destroy();
    const h = this.handlers;
    this.handlers = null;
    h?.onClose(reason);
    // Whatever the owner did not account for is dropped with a generic error.
    if (this.wire !== null && this.wire.length > 0) this.dropQueued(this.droppedError());
  }
}

function bodyBytes(parts: readonly Uint8Array[]): number {
  let n = 0;
  for (let i = 0; i < parts.length; i++) n += parts[i]!.byteLength;
  return n;
}

export interface DialOptions extends AuthConnOptions {
  /** Handshake deadline, connecting included (default 5000 ms). */
  timeoutMs?: number;
}

/**
 * Connects to host:port and proves `secret` as connector `id`: an authenticated connection, not
 * yet started. Rejects with NbcAuthError when the other end answered with another key or
 * garbage, NbcPeerFailedError when it could not be reached (refused, reset, timed out).
 */
export async function dialAuthenticated(
  host: string, port: number, secret: Buffer, id: number, opts: DialOptions = {},
): Promise<AuthConn> {
  const conn = AuthConn.dial(host, port, opts);
  try {
    await conn.authenticateAsConnector(secret, id, opts.timeoutMs);
  } catch (err) {
    conn.close('handshake failed');
    if (!(err instanceof NbcHandshakeError) && err instanceof NbcArgError) throw err;
    // A peer that answers with the wrong key or garbage is an auth failure; one that is not
    // there (refused, reset, timed out) is a failed peer.
    const auth = err instanceof NbcHandshakeError && /^(bad HMAC|garbage)/.test(err.reason);
    const why = reasonOf(err);
    if (auth) throw new NbcAuthError(`Cannot authenticate to ${conn.remote}: ${why}`, { cause: err });
    throw new NbcPeerFailedError(`Cannot connect to ${conn.remote}: ${why}`, { cause: err });
  }
  return conn;
}
