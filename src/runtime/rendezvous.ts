/**
 * Job wire-up and control channel.
 *
 * Node 0 runs a RendezvousServer; every node (node 0 included) connects to it with a
 * RendezvousClient. Each connection is authenticated with the job secret (net/auth.ts; the node
 * id is the one proven in the handshake) and then carries frames (net/frame.ts) whose bodies are
 * JSON: the control path, a few messages per job, so readability wins over compactness.
 *
 *   node -> server  HELLO      { nodeId, host, port, nranks, pid, hostname, extra? }
 *   server -> node  TABLE      { nodes: [HELLO of every node, sorted by nodeId] }   once all joined
 *   node -> server  ABORT      { reason, exitCode, origin }   -> server sends ABORT to every node
 *   node -> server  DONE       { nodeId }                     -> when all are done: SHUTDOWN to all
 *   node -> server  BROADCAST  { payload }                    -> server sends BROADCAST to all
 *   server -> node  REJECT     { reason }                     then closes (bad id, duplicate, late)
 *   both            BEAT       {}                             every silence/4 (at most 1 s) once wired up
 *
 * Every node sees the server's messages in one order. A node whose connection closes before its
 * DONE (a killed process closes its sockets at once) makes the server send ABORT with reason
 * "node N (pid P) lost: connection closed"; only the first ABORT of a job is sent. A node that
 * is stopped (SIGSTOP) or hung keeps its sockets open, so both sides also listen for silence:
 * nothing from a node for `silenceMs` (default 10 s, NBC_NODE_SILENCE_MS) aborts the job naming
 * it, and nothing from the server for as long is 'lost' on the node.
 */
import { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { hostname as osHostname } from 'node:os';
import {
  NbcArgError, NbcInternalError, NbcLaunchError, NbcPeerFailedError, NbcTimeoutError,
} from '../errors.js';
import {
  authenticateAsAcceptor, authenticateAsConnector, DEFAULT_HANDSHAKE_TIMEOUT_MS, NbcHandshakeError,
  remoteAddressOf, SECRET_BYTES,
} from '../net/auth.js';
import { encodeFrame, FrameDecoder, MAX_FRAME_BODY } from '../net/frame.js';
import { listenOn } from '../net/listen.js';
import { RejectLog } from '../net/reject-log.js';

/** Frame types of the control channel. */
export const RendezvousMsg = {
  Hello: 1,
  Table: 2,
  Abort: 3,
  Done: 4,
  Shutdown: 5,
  Broadcast: 6,
  Reject: 7,
  Beat: 8,
} as const;

/** How long the server waits to hear from a node, and a node from the server, once wired up. */
export const DEFAULT_SILENCE_MS = 10_000;

/**
 * Beats every `silenceMs / 4` (at most every second) and checks for silence at each. A tick
 * that comes later than half the silence after the one before means this process was itself
 * stopped or starved: everything looks silent then, so the check is skipped and the clocks of
 * those it listens to restart (`fresh`).
 */
class SilenceWatch {
  private timer: NodeJS.Timeout | null = null;
  private last = 0;

  constructor(readonly silenceMs: number, private readonly tick: (now: number, fresh: boolean) => void) {}

  start(): void {
    if (this.silenceMs <= 0 || this.timer !== null) return;
    const every = Math.max(10, Math.min(1000, Math.floor(this.silenceMs / 4)));
    this.last = Date.now();
    this.timer = setInterval(() => {
      const now = Date.now();
      const late = now - this.last - every;
      this.last = now;
      this.tick(now, late > this.silenceMs / 2);
    }, every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

function silenceOption(ms: number | undefined, what: string): number {
  const v = ms ?? DEFAULT_SILENCE_MS;
  if (!Number.isInteger(v) || v < 0) throw new NbcArgError(`Cannot ${what}: silenceMs ${v} is not an integer >= 0 (0: never)`);
  return v;
}

/** Default deadline for a client to reach the server and receive the table. */
export const DEFAULT_RENDEZVOUS_TIMEOUT_MS = 30_000;
const CLOSE_GRACE_MS = 2000;
/** Connection errors worth retrying while node 0 starts. */
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** What a node tells the others about itself. */
export interface NodeHello {
  nodeId: number;
  /** Where its LinkManager listens. */
  host: string;
  port: number;
  /** Ranks (worker threads) on the node. */
  nranks: number;
  pid: number;
  hostname: string;
  /** Anything else the runtime wants every node to know (JSON). */
  extra?: unknown;
}

export interface RendezvousTable {
  /** One entry per node, sorted by nodeId (so nodes[i].nodeId === i). */
  nodes: NodeHello[];
}

export interface AbortMessage {
  reason: string;
  exitCode: number;
  /** The node that asked for the abort, or the node that was lost. */
  origin: number;
}

function defaultLog(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

function reasonOf(err: unknown): string {
  if (err instanceof NbcHandshakeError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}

function checkSecret(secret: unknown, what: string): void {
  if (!(secret instanceof Uint8Array) || secret.byteLength !== SECRET_BYTES) {
    throw new NbcArgError(`Cannot ${what}: the job secret must be a Buffer of ${SECRET_BYTES} bytes`);
  }
}

function encodeMessage(type: number, value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  if (body.length > MAX_FRAME_BODY) {
    throw new NbcArgError(
      `Cannot send control message ${type}: ${body.length} bytes of JSON exceed the frame limit of ${MAX_FRAME_BODY}`);
  }
  return encodeFrame(type, body);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isUint(v: unknown, max = 0xffff_ffff): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
}

/**
 * A control frame's body as JSON. Throws NbcArgError when it is not UTF-8 JSON (the channel
 * then drops the connection); what the value must look like is each message's parser's to say.
 */
export function decodeControlBody(type: number, body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new NbcArgError(`Cannot accept control message of type ${type}: its ${body.length}-byte body is not JSON (${
      (err as Error).message})`, { cause: err });
  }
}

/** Whether `host` is a wildcard address (every interface): listened on, but not dialled. */
export function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** An IPv4 address as an IPv6 socket reports it (::ffff:a.b.c.d), as a.b.c.d. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** Validates a HELLO (from the wire or from the caller); throws NbcArgError naming the field. */
export function parseHello(v: unknown, what: string): NodeHello {
  const bad = (field: string): never => {
    throw new NbcArgError(`Cannot accept ${what}: ${field}`);
  };
  if (!isObject(v)) return bad('it is not an object');
  if (!isUint(v.nodeId)) bad('nodeId is not an integer >= 0');
  if (typeof v.host !== 'string' || v.host === '') bad('host is not a non-empty string');
  if (!isUint(v.port, 0xffff) || v.port === 0) bad('port is not an integer in 1..65535');
  if (!isUint(v.nranks) || v.nranks === 0) bad('nranks is not an integer >= 1');
  if (!isUint(v.pid)) bad('pid is not an integer >= 0');
  if (typeof v.hostname !== 'string') bad('hostname is not a string');
  const hello: NodeHello = {
    nodeId: v.nodeId as number, host: v.host as string, port: v.port as number, nranks: v.nranks as number,
    pid: v.pid as number, hostname: v.hostname as string,
  };
  if (v.extra !== undefined) hello.extra = v.extra;
  return hello;
}

/** Validates an ABORT; `origin` stands in for a missing or bad origin. Throws NbcArgError. */
export function parseAbort(v: unknown, origin: number): AbortMessage {
  // Exit codes are 1..255: a process exit code is taken mod 256 (256 would read as success), and
  // process.exitCode throws beyond 2^53; an abort is never a success.
  if (!isObject(v) || typeof v.reason !== 'string' || !isUint(v.exitCode, 255) || v.exitCode === 0) {
    throw new NbcArgError(`Cannot accept ABORT: it needs a string reason and an integer exitCode in 1..255; got ${
      JSON.stringify(isObject(v) ? v.exitCode : v)?.slice(0, 40)}`);
  }
  return { reason: v.reason, exitCode: v.exitCode as number, origin: isUint(v.origin) ? v.origin : origin };
}

/** Validates a TABLE: a nodes array of HELLOs, entry i for node i. Throws NbcArgError. */
export function parseTable(value: unknown): RendezvousTable {
  if (!isObject(value) || !Array.isArray(value.nodes)) {
    throw new NbcArgError('Cannot accept TABLE: it has no nodes array');
  }
  const nodes = value.nodes.map((n, i) => parseHello(n, `TABLE entry ${i}`));
  nodes.forEach((n, i) => {
    if (n.nodeId !== i) throw new NbcArgError(`Cannot accept TABLE: entry ${i} is node ${n.nodeId}`);
  });
  return { nodes };
}

/**
 * One authenticated control connection: JSON messages in frames. Created before the handshake
 * so the socket has an 'error' listener throughout; `start` begins reading after it.
 */
class Channel {
  error: Error | null = null;
  private started = false;
  private onClose: (() => void) | null = null;
  private decoder: FrameDecoder | null = null;

  constructor(readonly socket: Socket, readonly remote: string) {
    socket.setNoDelay(true);
    socket.on('error', (err) => {
      this.error ??= err;
    });
    socket.on('close', () => {
      if (this.started) this.onClose?.();
    });
  }

  /**
   * Begins delivering messages. A handler that throws (malformed message) drops the connection;
   * `onClose` then runs with `error` set.
   */
  start(leftover: Buffer, onMessage: (type: number, value: unknown) => void, onClose: () => void): void {
    this.started = true;
    this.onClose = onClose;
    this.decoder = new FrameDecoder((type, body) => onMessage(type, decodeControlBody(type, body)));
    this.socket.on('data', (chunk: Buffer) => this.feed(chunk));
    if (this.socket.destroyed) {
      // Closed between the handshake and now: report it, once, from a clean stack.
      process.nextTick(onClose);
      this.onClose = null;
      return;
    }
    if (leftover.length > 0 && !this.feed(leftover)) return;
    this.socket.resume();
  }

  private feed(chunk: Buffer): boolean {
    try {
      this.decoder!.push(chunk);
      return true;
    } catch (err) {
      this.error ??= err instanceof Error ? err : new Error(String(err));
      this.socket.destroy();
      return false;
    }
  }

  /** Sends one message; false when the connection is already gone. */
  send(type: number, value: unknown): boolean {
    if (this.socket.destroyed || this.socket.writableEnded) return false;
    this.socket.write(encodeMessage(type, value));
    return true;
  }

  /** Ends the connection after what was written; destroys it if the other side lingers. */
  end(): Promise<void> {
    const socket = this.socket;
    if (socket.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const grace = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
      socket.once('close', () => {
        clearTimeout(grace);
        resolve();
      });
      socket.end();
    });
  }
}

// -----------------------------------------------------------------------------------------------
// Server

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
  constructor(readonly nodeId: number, readonly channel: Channel) {}
}

export class RendezvousServer extends EventEmitter<RendezvousServerEvents> {
  private readonly secret: Buffer;
  private readonly nodes: number;
  private readonly host: string;
  private readonly port: number;
  private readonly log: (msg: string) => void;
  private readonly handshakeTimeoutMs: number;
  private server: Server | null = null;
  /** Every node that authenticated, by id (kept after it disconnects). */
  private readonly members = new Map<number, Member>();
  /** Every open socket, for close(). */
  private readonly channels = new Set<Channel>();
  private hellos = 0;
  private doneCount = 0;
  private tableSent = false;
  private aborted = false;
  private shutdownSent = false;
  private closed = false;
  /** One line per rejected connection, floods summarised (net/reject-log.ts). */
  private readonly rejections: RejectLog;
  private readonly watch: SilenceWatch;

  constructor(opts: RendezvousServerOptions) {
    super();
    checkSecret(opts.secret, 'create the rendezvous server');
    if (!Number.isInteger(opts.nodes) || opts.nodes < 1) {
      throw new NbcArgError(`Cannot create the rendezvous server: nodes ${opts.nodes} is not an integer >= 1`);
    }
    this.secret = opts.secret;
    this.nodes = opts.nodes;
    this.host = opts.host ?? '127.0.0.1';
    this.port = opts.port ?? 0;
    this.log = opts.log ?? defaultLog;
    this.handshakeTimeoutMs = opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.rejections = new RejectLog(this.log, 'nbc: rendezvous: ');
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
    if (this.server !== null || this.closed) {
      throw new NbcInternalError('Cannot listen: the rendezvous server is already listening or closed');
    }
    const server = createServer((socket) => this.onConnection(socket));
    this.server = server;
    try {
      await listenOn(server, this.port, this.host);
    } catch (err) {
      this.server = null;
      throw new NbcLaunchError(`Cannot listen for the rendezvous on ${this.host}:${this.port}: ${reasonOf(err)}`,
        { cause: err });
    }
    server.on('error', (err) => this.log(`nbc: rendezvous listener: ${err.message}`));
    const port = (server.address() as AddressInfo).port;
    this.rejections.listener = `${this.host}:${port}`;
    return port;
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
    this.rejections.close();
    const server = this.server;
    const waits: Promise<void>[] = [];
    if (server !== null) waits.push(new Promise<void>((resolve) => server.close(() => resolve())));
    for (const ch of this.channels) waits.push(ch.end());
    await Promise.all(waits);
  }

  private onConnection(socket: Socket): void {
    const remote = remoteAddressOf(socket);
    const ch = new Channel(socket, remote);
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.channels.add(ch);
    socket.once('close', () => this.channels.delete(ch));
    authenticateAsAcceptor(socket, this.secret, { timeoutMs: this.handshakeTimeoutMs, remote }).then(
      ({ peerNodeId, leftover }) => this.onAuthenticated(ch, peerNodeId, leftover),
      (err: unknown) => this.reject(remote, reasonOf(err)));
  }

  private reject(remote: string, reason: string): void {
    if (this.closed) return;
    this.rejections.reject(remote, reason);
    this.emit('rejected', remote, reason);
  }

  /** Tells the node why, then closes. */
  private refuse(ch: Channel, reason: string): void {
    this.reject(ch.remote, reason);
    ch.socket.resume();
    ch.send(RendezvousMsg.Reject, { reason });
    ch.socket.end();
  }

  private onAuthenticated(ch: Channel, nodeId: number, leftover: Buffer): void {
    if (this.closed || ch.socket.destroyed) {
      ch.socket.destroy();
      return;
    }
    if (nodeId >= this.nodes) {
      this.refuse(ch, `node id ${nodeId} is out of range; expected 0..${this.nodes - 1}`);
      return;
    }
    const previous = this.members.get(nodeId);
    if (previous !== undefined) {
      this.refuse(ch, `duplicate node id ${nodeId}; node ${nodeId} already joined from ${previous.channel.remote}`);
      return;
    }
    if (this.tableSent) {
      this.refuse(ch, `node ${nodeId} joined after the job was wired up`);
      return;
    }
    const member = new Member(nodeId, ch);
    this.members.set(nodeId, member);
    ch.start(leftover, (type, value) => this.onMessage(member, type, value), () => this.onMemberClosed(member));
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
        if (isWildcard(hello.host)) hello.host = unmapped(member.channel.socket.remoteAddress ?? hello.host);
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
    const frame = encodeMessage(type, value);
    for (const m of this.members.values()) {
      const s = m.channel.socket;
      if (m.connected && !s.destroyed && !s.writableEnded) s.write(frame);
    }
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
    const error = member.channel.error;
    if (error !== null) this.log(`nbc: rendezvous: connection of node ${member.nodeId} failed: ${error.message}`);
    this.abortJob({
      reason: `node ${member.nodeId} (pid ${pid}) lost: connection closed${error !== null ? ` (${error.message})` : ''}`,
      exitCode: 1,
      origin: member.nodeId,
    }, true);
  }
}

// -----------------------------------------------------------------------------------------------
// Client

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
  private channel: Channel | null = null;
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
    if (this.connecting || this.channel !== null || this.closed) {
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
      const ch = new Channel(socket, address);
      this.channel = ch;
      if (this.closed) {
        socket.destroy();
        throw new NbcInternalError(`Cannot connect to the rendezvous at ${address}: the client was closed`);
      }
      const handshakeMs = Math.max(1, Math.min(opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
        deadline - Date.now()));
      const { leftover } = await authenticateAsConnector(socket, opts.secret, opts.nodeId,
        { timeoutMs: handshakeMs, remote: address });
      return await new Promise<RendezvousTable>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.settle(new NbcTimeoutError(
            `No table from the rendezvous at ${address} within ${timeoutMs} ms: not every node joined`));
          socket.destroy();
        }, Math.max(1, deadline - Date.now()));
        this.pending = { resolve, reject, timer };
        this.ready = true;
        ch.start(leftover, (type, value) => this.onMessage(type, value), () => this.onClosed());
        ch.send(RendezvousMsg.Hello, hello);
      });
    } finally {
      this.connecting = false;
    }
  }

  /** Asks the server to abort the job: every node (this one included) receives ABORT. */
  abort(reason: string, exitCode = 1): void {
    this.channelOrThrow('abort').send(RendezvousMsg.Abort, { reason, exitCode, origin: this.nodeId });
  }

  /** This node has finished; once every node has, every node receives SHUTDOWN. */
  done(): void {
    this.channelOrThrow('send DONE').send(RendezvousMsg.Done, { nodeId: this.nodeId });
  }

  /** Sends `payload` (JSON) to every node, this one included, in the server's order. */
  broadcast(payload: unknown): void {
    this.channelOrThrow('broadcast').send(RendezvousMsg.Broadcast, { payload });
  }

  /** Ends the connection; no events afterwards. A connect() in progress rejects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watch?.stop();
    this.settle(new NbcInternalError(`Cannot connect to the rendezvous at ${this.address}: the client was closed`));
    await this.channel?.end();
  }

  private channelOrThrow(what: string): Channel {
    if (this.channel === null || !this.ready) {
      throw new NbcInternalError(`Cannot ${what}: the rendezvous client is not connected`);
    }
    return this.channel;
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
    this.channel?.send(RendezvousMsg.Beat, {});
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
    const error = this.channel?.error ?? null;
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
