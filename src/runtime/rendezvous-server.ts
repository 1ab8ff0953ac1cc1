/**
 * The rendezvous server, run by node 0: collects every node's HELLO, sends the table, relays
 * ABORT, DONE/SHUTDOWN and BROADCAST, and watches every node for silence (rendezvous.ts
 * describes the protocol). Its connections are AuthConns from one AuthListener (net/), so the
 * handshake, framing and rejection log are theirs.
 */
import type { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import { NbcArgError, NbcInternalError, NbcLaunchError } from '../errors.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../net/auth.js';
import { reasonOf, type AuthConn } from '../net/conn.js';
import { AuthListener } from '../net/listener.js';
import {
  checkSecret, CLOSE_GRACE_MS, decodeControlBody, defaultLog, encodeMessage, encodeMessageFrame, isObject, isWildcard,
  parseAbort, parseHello, RendezvousMsg, silenceOption, SilenceWatch, unmapped, type AbortMessage, type NodeHello,
  type RendezvousTable,
} from './rendezvous-wire.js';

export interface RendezvousServerOptions {
  secret: Buffer;
  /** Number of nodes in the job; node ids are 0..nodes-1. */
  nodes: number;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Port to bind (default 0: ephemeral). */
  port?: number;
  /** Where rejections and aborts are reported (default: a line on stderr). */
  log?: (msg: string) => void;
  handshakeTimeoutMs?: number;
  /**
   * Once the table is out, a node not heard from for this long (ms) is counted stopped and the
   * job aborted (default DEFAULT_SILENCE_MS; 0: never).
   */
  silenceMs?: number;
}

export type RendezvousServerEvents = {
  /** A connection failed authentication or was refused. */
  rejected: [remote: string, reason: string];
  /** All nodes joined; the table was sent. */
  table: [table: RendezvousTable];
  /** The job's (first) ABORT was sent to every node. */
  abort: [msg: AbortMessage];
  /** Every node sent DONE; SHUTDOWN was sent to every node. */
  shutdown: [];
  /** A node went silent (stopped, or hung) and the job was aborted for it: `msg` names it. */
  silent: [msg: AbortMessage];
};

class Member {
  hello: NodeHello | null = null;
  done = false;
  connected = true;
  /** When the server last heard from the node (Date.now()). */
  heard = Date.now();
  constructor(readonly nodeId: number, readonly conn: AuthConn) {}
}

export class RendezvousServer extends EventEmitter<RendezvousServerEvents> {
  private readonly nodes: number;
  private readonly host: string;
  private readonly port: number;
  private readonly log: (msg: string) => void;
  private listening = false;
  /** Every node that authenticated, by id (kept after it disconnects). */
  private readonly members = new Map<number, Member>();
  /** Every authenticated connection not yet closed (members and refused ones), for close(). */
  private readonly conns = new Set<AuthConn>();
  private hellos = 0;
  private doneCount = 0;
  private tableSent = false;
  private aborted = false;
  private shutdownSent = false;
  private closed = false;
  /** The accept path: handshakes, and the rejection log (one line each, floods summarised). */
  private readonly listener: AuthListener;
  private readonly watch: SilenceWatch;

  constructor(opts: RendezvousServerOptions) {
    super();
    checkSecret(opts.secret, 'create the rendezvous server');
    if (!Number.isInteger(opts.nodes) || opts.nodes < 1) {
      throw new NbcArgError(`Cannot create the rendezvous server: nodes ${opts.nodes} is not an integer >= 1`);
    }
    this.nodes = opts.nodes;
    this.host = opts.host ?? '127.0.0.1';
    this.port = opts.port ?? 0;
    this.log = opts.log ?? defaultLog;
    this.listener = new AuthListener({
      secret: opts.secret, host: this.host, port: this.port,
      handshakeTimeoutMs: opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, log: this.log,
      rejectPrefix: 'nbc: rendezvous: ', errorPrefix: 'nbc: rendezvous listener: ',
      onConnection: (conn, nodeId) => this.onAuthenticated(conn, nodeId),
      onRejected: (remote, reason) => this.emit('rejected', remote, reason),
    });
    this.watch = new SilenceWatch(silenceOption(opts.silenceMs, 'create the rendezvous server'), (now, fresh) => this.watchTick(now, fresh));
  }

  /** A watch tick: beat to every node, and abort the job for one not heard from in time. */
  private watchTick(now: number, fresh: boolean): void {
    if (this.closed || this.aborted || this.shutdownSent) {
      this.watch.stop();
      return;
    }
    this.sendAll(RendezvousMsg.Beat, {});
    for (const m of this.members.values()) {
      if (fresh) m.heard = now;
      if (!m.connected || m.done || now - m.heard <= this.watch.silenceMs) continue;
      const msg: AbortMessage = {
        reason: `node ${m.nodeId} (pid ${m.hello?.pid ?? '?'}, ${this.ranksOf(m.nodeId)}) stopped answering: nothing from it for ${
          ((now - m.heard) / 1000).toFixed(1)} s (stopped, or its event loop blocked; NBC_NODE_SILENCE_MS)`,
        exitCode: 1,
        origin: m.nodeId,
      };
      this.abortJob(msg);
      this.emit('silent', msg);
      return;
    }
  }

  /** Starts accepting nodes; resolves with the actual port. */
  async listen(): Promise<number> {
    if (this.listening || this.closed) {
      throw new NbcInternalError('Cannot listen: the rendezvous server is already listening or closed');
    }
    this.listening = true;
    try {
      return (await this.listener.listen()).port;
    } catch (err) {
      this.listening = false;
      throw new NbcLaunchError(`Cannot listen for the rendezvous on ${this.host}:${this.port}: ${reasonOf(err)}`,
        { cause: err });
    }
  }

  /** The world ranks of node `nodeId`, as the table places them ("ranks 4..5", "rank 3"). */
  private ranksOf(nodeId: number): string {
    let first = 0;
    for (let n = 0; n < nodeId; n++) first += this.members.get(n)?.hello?.nranks ?? 0;
    const count = this.members.get(nodeId)?.hello?.nranks ?? 1;
    return count === 1 ? `rank ${first}` : `ranks ${first}..${first + count - 1}`;
  }

  /** Stops listening and ends every connection (after what was already sent). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watch.stop();
    const waits: Promise<void>[] = [this.listener.close()];
    for (const conn of this.conns) waits.push(conn.finishAndWait(CLOSE_GRACE_MS));
    await Promise.all(waits);
  }

  /** Tells the node why, then closes. */
  private refuse(conn: AuthConn, reason: string): void {
    this.listener.reject(conn.remote, reason);
    conn.refuse(encodeMessageFrame(RendezvousMsg.Reject, { reason }));
  }

  private onAuthenticated(conn: AuthConn, nodeId: number): void {
    if (this.closed) {
      conn.close();
      return;
    }
    this.conns.add(conn);
    conn.socket.once('close', () => this.conns.delete(conn));
    if (nodeId >= this.nodes) {
      this.refuse(conn, `node id ${nodeId} is out of range; expected 0..${this.nodes - 1}`);
      return;
    }
    const previous = this.members.get(nodeId);
    if (previous !== undefined) {
      this.refuse(conn, `duplicate node id ${nodeId}; node ${nodeId} already joined from ${previous.conn.remote}`);
      return;
    }
    if (this.tableSent) {
      this.refuse(conn, `node ${nodeId} joined after the job was wired up`);
      return;
    }
    const member = new Member(nodeId, conn);
    this.members.set(nodeId, member);
    conn.start({
      onFrame: (type, body) => this.onMessage(member, type, decodeControlBody(type, body)),
      onClose: () => this.onMemberClosed(member),
    });
  }

  /** Throws on a malformed message: the channel then drops the node (and the job aborts). */
  private onMessage(member: Member, type: number, value: unknown): void {
    member.heard = Date.now();
    switch (type) {
      case RendezvousMsg.Beat:
        return;
      case RendezvousMsg.Hello: {
        if (member.hello !== null) throw new NbcArgError(`Cannot accept HELLO: node ${member.nodeId} sent a second one`);
        const hello = parseHello(value, `HELLO from node ${member.nodeId}`);
        if (hello.nodeId !== member.nodeId) {
          throw new NbcArgError(
            `Cannot accept HELLO: it names node ${hello.nodeId} but the handshake proved node ${member.nodeId}`);
        }
        // A node whose links listen on every interface is dialled where the server sees it.
        if (isWildcard(hello.host)) hello.host = unmapped(member.conn.socket.remoteAddress ?? hello.host);
        member.hello = hello;
        if (++this.hellos === this.nodes) this.sendTable();
        return;
      }
      case RendezvousMsg.Abort:
        this.abortJob(parseAbort(value, member.nodeId));
        return;
      case RendezvousMsg.Done: {
        if (member.done) return;
        member.done = true;
        if (++this.doneCount === this.nodes && !this.aborted) {
          this.shutdownSent = true;
          this.sendAll(RendezvousMsg.Shutdown, {});
          this.emit('shutdown');
        }
        return;
      }
      case RendezvousMsg.Broadcast:
        if (!isObject(value) || !('payload' in value)) {
          throw new NbcArgError('Cannot accept BROADCAST: it has no payload');
        }
        this.sendAll(RendezvousMsg.Broadcast, { payload: value.payload });
        return;
      default:
        throw new NbcArgError(`Cannot accept control message of type ${type} from node ${member.nodeId}: unknown type`);
    }
  }

  private sendTable(): void {
    const nodes: NodeHello[] = [];
    for (const m of this.members.values()) nodes.push(m.hello!);
    nodes.sort((x, y) => x.nodeId - y.nodeId);
    const table: RendezvousTable = { nodes };
    this.tableSent = true;
    const now = Date.now();
    for (const m of this.members.values()) m.heard = now;
    this.watch.start();
    this.sendAll(RendezvousMsg.Table, table);
    this.emit('table', table);
  }

  private sendAll(type: number, value: unknown): void {
    const body = [encodeMessage(type, value)];
    for (const m of this.members.values()) if (m.connected) m.conn.send(type, body);
  }

  /**
   * Sends ABORT to every node. `announce`: log the reason here, for aborts the server itself
   * detected (a lost node); a node that asks for an abort has reported its reason already.
   */
  private abortJob(msg: AbortMessage, announce = false): void {
    if (this.aborted || this.shutdownSent) return;
    this.aborted = true;
    if (announce) this.log(`nbc: ${msg.reason}; stopping the job`);
    this.sendAll(RendezvousMsg.Abort, msg);
    this.emit('abort', msg);
  }

  private onMemberClosed(member: Member): void {
    member.connected = false;
    if (this.closed || member.done || this.shutdownSent) return;
    const pid = member.hello?.pid ?? '?';
    const error = member.conn.error;
    if (error !== null) this.log(`nbc: rendezvous: connection of node ${member.nodeId} failed: ${error.message}`);
    this.abortJob({
      reason: `node ${member.nodeId} (pid ${pid}) lost: connection closed${error !== null ? ` (${error.message})` : ''}`,
      exitCode: 1,
      origin: member.nodeId,
    }, true);
  }
}

