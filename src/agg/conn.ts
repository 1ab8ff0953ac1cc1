/**
 * One authenticated fabric connection: a socket after the handshake, a frame decoder, and an
 * optional emulated wire on its outgoing side. Used alike by the manager, the daemons and the
 * client, so that every hop of the fabric is framed, bounded and emulated the same way.
 *
 * A connection reports its end exactly once (`onClose(reason)`), whether the peer closed it, the
 * socket errored, a frame was bad (the handler threw: the reason names the frame), or the owner
 * closed it. Frames handed to `send` after that are dropped.
 */
import { Buffer } from 'node:buffer';
import { connect, type Socket } from 'node:net';
import { NbcAuthError, NbcPeerFailedError } from '../errors.js';
import { authenticateAsConnector, NbcHandshakeError, remoteAddressOf } from '../net/auth.js';
import { EmulatedWire, type LinkEmulation } from '../net/emulate.js';
import { encodeFrameHeader, FrameDecoder } from '../net/frame.js';
import { encodeCtrl, FrameType, MAX_BODY, type Ctrl } from './wire.js';

export interface ConnHandlers {
  /** One frame; throwing drops the connection with the error's message as reason. */
  onFrame: (type: number, body: Buffer) => void;
  onClose: (reason: string) => void;
}

export class AggConn {
  readonly remote: string;
  private readonly decoder: FrameDecoder;
  private readonly wire: EmulatedWire<Uint8Array[]> | null;
  private handlers: ConnHandlers | null = null;
  private ended = false;
  /** Frames and bytes written, for counters. */
  framesOut = 0;
  bytesOut = 0;

  constructor(private readonly socket: Socket, link: LinkEmulation | undefined, remote?: string) {
    this.remote = remote ?? remoteAddressOf(socket);
    this.decoder = new FrameDecoder((type, body) => this.handlers?.onFrame(type, body), MAX_BODY);
    const emulated = link !== undefined && ((link.latencyUs ?? 0) > 0 || link.bandwidthBytesPerSec !== undefined);
    this.wire = emulated ? new EmulatedWire<Uint8Array[]>(link, (parts) => this.writeNow(parts)) : null;
    socket.setNoDelay(true);
  }

  get closed(): boolean {
    return this.ended;
  }

  /**
   * Starts delivering frames: `leftover` (bytes that followed the handshake) first, then the
   * socket's. Call once, right after the handshake.
   */
  start(leftover: Buffer, handlers: ConnHandlers): void {
    this.handlers = handlers;
    this.socket.on('data', (chunk: Buffer) => this.feed(chunk));
    this.socket.on('error', (err) => this.end(`connection error: ${err.message}`));
    this.socket.on('close', () => this.end('connection closed by the peer'));
    if (leftover.length > 0) this.feed(leftover);
    if (!this.ended) this.socket.resume();
  }

  private feed(chunk: Buffer): void {
    if (this.ended) return;
    try {
      this.decoder.push(chunk);
    } catch (err) {
      this.end(`bad frame: ${(err as Error).message}`);
    }
  }

  /** Sends one frame: `parts` concatenated form its body. */
  send(type: number, ...parts: Uint8Array[]): void {
    if (this.ended) return;
    let n = 0;
    for (const p of parts) n += p.byteLength;
    const frame = [encodeFrameHeader(type, n), ...parts];
    this.framesOut++;
    this.bytesOut += n;
    if (this.wire !== null) this.wire.push(frame, n + 5);
    else this.writeNow(frame);
  }

  sendCtrl(msg: Ctrl): void {
    this.send(FrameType.Ctrl, encodeCtrl(msg));
  }

  private writeNow(parts: Uint8Array[]): void {
    if (this.ended) return;
    if (parts.length === 1) {
      this.socket.write(parts[0]!);
      return;
    }
    this.socket.cork();
    for (const p of parts) this.socket.write(p);
    this.socket.uncork();
  }

  /** Flushes what the emulated wire holds, then half-closes (orderly end after a last message). */
  finish(): void {
    this.wire?.flushNow();
    this.socket.end();
  }

  /** Drops the connection now; `onClose(reason)` runs (once) unless it already ended. */
  close(reason = 'closed locally'): void {
    this.end(reason);
  }

  private end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.wire?.clear();
    this.socket.destroy();
    const h = this.handlers;
    this.handlers = null;
    h?.onClose(reason);
  }
}

/**
 * Connects to host:port and proves `secret` as connector `id`; rejects with an NbcError
 * (NbcHandshakeError for auth failures, NbcPeerFailedError for connection failures).
 */
export function dial(
  host: string, port: number, secret: Buffer, id: number, timeoutMs = 5000,
): Promise<{ socket: Socket; leftover: Buffer }> {
  const socket = connect({ host, port });
  const remote = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  // The handshake's own 'error' listener reports connection errors; this one keeps a late error
  // (after the handshake, before the caller attaches its own) from being unhandled.
  socket.on('error', () => {});
  return authenticateAsConnector(socket, secret, id, { timeoutMs, remote }).then(
    ({ leftover }) => ({ socket, leftover }),
    (err: Error) => {
      socket.destroy();
      // A peer that answers with the wrong key or garbage is an auth failure; one that is not
      // there (refused, reset, timed out) is a failed peer.
      const auth = err instanceof NbcHandshakeError && /^(bad HMAC|garbage)/.test(err.reason);
      const why = err instanceof NbcHandshakeError ? err.reason : err.message;
      if (auth) throw new NbcAuthError(`Cannot authenticate to ${remote}: ${why}`, { cause: err });
      throw new NbcPeerFailedError(`Cannot connect to ${remote}: ${why}`, { cause: err });
    });
}
