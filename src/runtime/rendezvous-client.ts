/**
 * The rendezvous client, run by every node (node 0 included): reaches the server (retrying
 * while node 0 starts), authenticates, sends HELLO and waits for the table; then it carries
 * ABORT, DONE and BROADCAST and watches the server for silence (rendezvous.ts describes the
 * protocol). Its connection is an AuthConn (net/conn.ts).
 */
import type { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import { hostname as osHostname } from 'node:os';
import {
  NbcArgError, NbcInternalError, NbcLaunchError, NbcPeerFailedError, NbcTimeoutError,
} from '../errors.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../net/auth.js';
import { AuthConn, reasonOf } from '../net/conn.js';
import {
  checkSecret, CLOSE_GRACE_MS, decodeControlBody, encodeMessage, isObject, isUint, parseAbort, parseHello, parseTable,
  RendezvousMsg, silenceOption, SilenceWatch, type AbortMessage, type NodeHello, type RendezvousTable,
} from './rendezvous-wire.js';

/** Default deadline for a client to reach the server and receive the table. */
export const DEFAULT_RENDEZVOUS_TIMEOUT_MS = 30_000;
/** Connection errors worth retrying while node 0 starts. */
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

export interface RendezvousConnectOptions {
  secret: Buffer;
  nodeId: number;
  /** The server's address. */
  host: string;
  port: number;
  /** This node's entry of the table; pid and hostname default to this process's. */
  hello: Omit<NodeHello, 'nodeId' | 'pid' | 'hostname'> & Partial<Pick<NodeHello, 'pid' | 'hostname'>>;
  /** Deadline to reach the server and receive the table (default 30000 ms). */
  timeoutMs?: number;
  handshakeTimeoutMs?: number;
  /** Called before each retry while the server is not reachable yet (for progress messages). */
  onRetry?: (attempt: number, err: Error) => void;
  /**
   * Once the table is in, the server not heard from for this long (ms) is 'lost' (default
   * DEFAULT_SILENCE_MS; 0: never).
   */
  silenceMs?: number;
}

export type RendezvousClientEvents = {
  abort: [msg: AbortMessage];
  shutdown: [];
  broadcast: [payload: unknown];
  /**
   * The connection to the server closed before SHUTDOWN or ABORT (and not by close()), or
   * nothing came from the server for `silenceMs`.
   */
  lost: [err: Error];
};

interface PendingTable {
  resolve: (table: RendezvousTable) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One TCP connect attempt; rejects with the socket error (its `code` tells what happened). */
function dialOnce(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error(`connect timed out after ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, Math.max(1, timeoutMs));
    const onError = (err: Error): void => {
      clearTimeout(timer);
      reject(err);
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      // Until the caller attaches its own, errors must not go unhandled.
      socket.removeListener('error', onError);
      socket.on('error', () => {});
      resolve(socket);
    });
  });
}

export class RendezvousClient extends EventEmitter<RendezvousClientEvents> {
  private conn: AuthConn | null = null;
  private pending: PendingTable | null = null;
  private nodeId = -1;
  private address = '';
  private connecting = false;
  /** Authenticated: abort(), done() and broadcast() may be used. */
  private ready = false;
  /** The table arrived: from now on an unexpected close is 'lost'. */
  private connected = false;
  /** SHUTDOWN or ABORT arrived: a close by the server is expected now. */
  private finished = false;
  private closed = false;
  /** When the server was last heard from (Date.now()), and the watch that beats and checks. */
  private heard = 0;
  private watch: SilenceWatch | null = null;

  /**
   * Connects to the server (retrying while it is not up yet), authenticates, sends HELLO and
   * resolves with the table once every node has joined. Rejects with NbcTimeoutError naming the
   * address when the deadline passes, NbcAuthError when the handshake fails, NbcLaunchError when
   * the server refuses this node, NbcPeerFailedError when the job aborts first.
   */
  async connect(opts: RendezvousConnectOptions): Promise<RendezvousTable> {
    if (this.connecting || this.conn !== null || this.closed) {
      throw new NbcInternalError('Cannot connect: this rendezvous client is already connected or closed');
    }
    checkSecret(opts.secret, 'connect to the rendezvous');
    if (!isUint(opts.nodeId)) throw new NbcArgError(`Cannot connect to the rendezvous: nodeId ${opts.nodeId} is invalid`);
    const hello = parseHello({
      pid: process.pid, hostname: osHostname(), ...opts.hello, nodeId: opts.nodeId,
    }, `this node's HELLO (node ${opts.nodeId})`);
    const timeoutMs = opts.timeoutMs ?? DEFAULT_RENDEZVOUS_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const address = `${opts.host}:${opts.port}`;
    this.watch = new SilenceWatch(silenceOption(opts.silenceMs, 'connect to the rendezvous'), (now, fresh) => this.watchTick(now, fresh));
    this.connecting = true;
    this.nodeId = opts.nodeId;
    this.address = address;
    try {
      let delay = 20;
      let attempt = 0;
      let socket: Socket;
      for (;;) {
        try {
          socket = await dialOnce(opts.host, opts.port, deadline - Date.now());
          break;
        } catch (err) {
          const code = (err as { code?: string }).code ?? '';
          const left = deadline - Date.now();
          if (!RETRYABLE.has(code)) {
            throw new NbcLaunchError(`Cannot reach the rendezvous at ${address}: ${reasonOf(err)}`, { cause: err });
          }
          if (this.closed) {
            throw new NbcInternalError(`Cannot connect to the rendezvous at ${address}: the client was closed`);
          }
          if (left <= 0) {
            throw new NbcTimeoutError(
              `Cannot reach the rendezvous at ${address} within ${timeoutMs} ms: ${reasonOf(err)} (is node 0 running, and listening there? `
              + 'It listens on 127.0.0.1 unless --bind or NBC_BIND_ADDR names an address of its host, or 0.0.0.0)',
              { cause: err });
          }
          opts.onRetry?.(++attempt, err as Error);
          await sleep(Math.min(delay, left));
          delay = Math.min(delay * 2, 500);
        }
      }
      const conn = new AuthConn(socket, { remote: address });
      this.conn = conn;
      if (this.closed) {
        conn.close();
        throw new NbcInternalError(`Cannot connect to the rendezvous at ${address}: the client was closed`);
      }
      const handshakeMs = Math.max(1, Math.min(opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
        deadline - Date.now()));
      await conn.authenticateAsConnector(opts.secret, opts.nodeId, handshakeMs);
      return await new Promise<RendezvousTable>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.settle(new NbcTimeoutError(
            `No table from the rendezvous at ${address} within ${timeoutMs} ms: not every node joined`));
          conn.close('no table in time');
        }, Math.max(1, deadline - Date.now()));
        this.pending = { resolve, reject, timer };
        this.ready = true;
        conn.start({
          onFrame: (type, body) => this.onMessage(type, decodeControlBody(type, body)),
          onClose: () => this.onClosed(),
        });
        this.send(RendezvousMsg.Hello, hello);
      });
    } finally {
      this.connecting = false;
    }
  }

  /** Asks the server to abort the job: every node (this one included) receives ABORT. */
  abort(reason: string, exitCode = 1): void {
    this.sendOrThrow('abort', RendezvousMsg.Abort, { reason, exitCode, origin: this.nodeId });
  }

  /** This node has finished; once every node has, every node receives SHUTDOWN. */
  done(): void {
    this.sendOrThrow('send DONE', RendezvousMsg.Done, { nodeId: this.nodeId });
  }

  /** Sends `payload` (JSON) to every node, this one included, in the server's order. */
  broadcast(payload: unknown): void {
    this.sendOrThrow('broadcast', RendezvousMsg.Broadcast, { payload });
  }

  /** Ends the connection; no events afterwards. A connect() in progress rejects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watch?.stop();
    this.settle(new NbcInternalError(`Cannot connect to the rendezvous at ${this.address}: the client was closed`));
    await this.conn?.finishAndWait(CLOSE_GRACE_MS);
  }

  private sendOrThrow(what: string, type: number, value: unknown): void {
    if (this.conn === null || !this.ready) {
      throw new NbcInternalError(`Cannot ${what}: the rendezvous client is not connected`);
    }
    this.send(type, value);
  }

  /** Sends one message; dropped when the connection is already gone. */
  private send(type: number, value: unknown): void {
    this.conn?.send(type, [encodeMessage(type, value)]);
  }

  /** Completes a pending connect() with a table or an error. */
  private settle(result: RendezvousTable | Error): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    clearTimeout(p.timer);
    if (result instanceof Error) p.reject(result);
    else p.resolve(result);
  }

  /** A watch tick: beat to the server, and report it lost when it has been silent too long. */
  private watchTick(now: number, fresh: boolean): void {
    const watch = this.watch!;
    if (this.closed || this.finished) {
      watch.stop();
      return;
    }
    this.send(RendezvousMsg.Beat, {});
    if (fresh) this.heard = now;
    if (now - this.heard <= watch.silenceMs) return;
    watch.stop();
    this.emit('lost', new NbcPeerFailedError(
      `Nothing from the rendezvous at ${this.address} (node 0) for ${((now - this.heard) / 1000).toFixed(1)} s: ` +
      `node 0 stopped, or its event loop is blocked (NBC_NODE_SILENCE_MS)`));
  }

  private onMessage(type: number, value: unknown): void {
    this.heard = Date.now();
    switch (type) {
      case RendezvousMsg.Beat:
        return;
      case RendezvousMsg.Table: {
        const { nodes } = parseTable(value);
        if (this.pending === null) return;
        this.connected = true;
        this.watch?.start();
        this.settle({ nodes });
        return;
      }
      case RendezvousMsg.Reject: {
        const reason = isObject(value) && typeof value.reason === 'string' ? value.reason : 'no reason given';
        this.settle(new NbcLaunchError(`The rendezvous at ${this.address} refused node ${this.nodeId}: ${reason}`));
        return;
      }
      case RendezvousMsg.Abort: {
        const msg = parseAbort(value, -1);
        this.finished = true;
        this.settle(new NbcPeerFailedError(`The job aborted during wire-up: ${msg.reason}`));
        if (!this.closed) this.emit('abort', msg);
        return;
      }
      case RendezvousMsg.Shutdown:
        this.finished = true;
        if (!this.closed) this.emit('shutdown');
        return;
      case RendezvousMsg.Broadcast:
        if (!this.closed && isObject(value)) this.emit('broadcast', value.payload);
        return;
      default:
        throw new NbcArgError(`Cannot accept control message of type ${type} from the rendezvous: unknown type`);
    }
  }

  private onClosed(): void {
    this.watch?.stop();
    const error = this.conn?.error ?? null;
    const detail = error !== null ? `: ${error.message}` : '';
    if (this.pending !== null) {
      this.settle(new NbcPeerFailedError(
        `The rendezvous at ${this.address} closed the connection before sending the table${detail}`,
        error !== null ? { cause: error } : undefined));
      return;
    }
    if (this.closed || this.finished || !this.connected) return;
    this.emit('lost', new NbcPeerFailedError(
      `Lost the connection to the rendezvous at ${this.address} (node 0)${detail}`,
      error !== null ? { cause: error } : undefined));
  }
}

