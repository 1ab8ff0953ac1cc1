/**
 * The accept path of every authenticated service (engine links, the rendezvous, the
 * aggregation manager and daemons): a TCP listener, on the loopback address unless told
 * otherwise, whose connections must pass the acceptor's handshake (auth.ts) before their owner
 * sees them.
 *
 *   socket ──► AuthConn ──handshake──► onConnection(conn, peerId)     (the owner starts it)
 *                           │
 *                           └─ fails ─► rejection log line (reject-log.ts) + onRejected
 *
 * A connection that fails the handshake never reaches the owner and never touches an
 * established connection; each is in the log exactly once (as its own line or inside a
 * summary's count). Owners report their own refusals of authenticated connections (a
 * duplicate id, a late node) through reject(), into the same log. After close() nothing is
 * reported and handshakes in progress are dropped.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Buffer } from 'node:buffer';
import type { SecretLookup } from './auth.js';
import { AuthConn, reasonOf } from './conn.js';
import { RejectLog } from './reject-log.js';

/** Binds `server` to host:port; rejects with the bind error (EADDRINUSE, EACCES, ...). */
export function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
}

export interface AuthListenerOptions {
  /** The key connectors must prove, or a lookup by the id they claim (auth.ts SecretLookup). */
  secret: Buffer | SecretLookup;
  /** Address to bind (default 127.0.0.1: nothing off this host can connect unless asked). */
  host?: string;
  /** Port to bind (default 0: ephemeral). */
  port?: number;
  /** Handshake deadline (default 5000 ms). */
  handshakeTimeoutMs?: number;
  /** Largest frame body the accepted connections take (default MAX_FRAME_BODY). */
  maxBody?: number;
  log: (line: string) => void;
  /** In front of each rejection line ("nbc: node 3: "). */
  rejectPrefix: string;
  /** In front of a line for a listener error after binding. */
  errorPrefix: string;
  /** An authenticated connection from `peerId`, not started. */
  onConnection: (conn: AuthConn, peerId: number) => void;
  /** After the rejection's log line: for events and counters. */
  onRejected?: (remote: string, reason: string) => void;
}

export class AuthListener {
  /** One line per rejected connection, floods summarised. */
  readonly rejections: RejectLog;
  private server: Server | null = null;
  /** Connections still in the handshake: dropped by close(). */
  private readonly handshaking = new Set<AuthConn>();
  private closed = false;

  constructor(private readonly o: AuthListenerOptions) {
    this.rejections = new RejectLog(o.log, o.rejectPrefix);
  }

  /** Binds and starts accepting; resolves with the bound address. Rejects with the bind error. */
  async listen(): Promise<{ host: string; port: number }> {
    const host = this.o.host ?? '127.0.0.1';
    const server = createServer({ pauseOnConnect: true }, (socket) => {
      const conn = new AuthConn(socket, { maxBody: this.o.maxBody });
      if (this.closed) {
        conn.close();
        return;
      }
      this.handshake(conn);
    });
    this.server = server;
    try {
      await listenOn(server, this.o.port ?? 0, host);
    } catch (err) {
      this.server = null;
      throw err;
    }
    server.on('error', (err) => this.o.log(`${this.o.errorPrefix}${err.message}`));
    const port = (server.address() as AddressInfo).port;
    this.rejections.listener = `${host}:${port}`;
    return { host, port };
  }

  private handshake(conn: AuthConn): void {
    this.handshaking.add(conn);
    conn.authenticateAsAcceptor(this.o.secret, this.o.handshakeTimeoutMs).then(
      (peerId) => {
        this.handshaking.delete(conn);
        if (this.closed || conn.socket.destroyed) {
          conn.close();
          return;
        }
        this.o.onConnection(conn, peerId);
      },
      (err: unknown) => {
        this.handshaking.delete(conn);
        this.reject(conn.remote, reasonOf(err));
      });
  }

  /** Reports one refused connection (log line, then onRejected); nothing once closed. */
  reject(remote: string, reason: string): void {
    if (this.closed) return;
    this.rejections.reject(remote, reason);
    this.o.onRejected?.(remote, reason);
  }

  /**
   * Stops accepting, drops handshakes in progress and writes the rejection summary. Resolves
   * once the server has closed, that is once every connection it accepted has closed too.
   */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.rejections.close();
    for (const conn of this.handshaking) conn.close();
    this.handshaking.clear();
    const server = this.server;
    if (server === null) return Promise.resolve();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
