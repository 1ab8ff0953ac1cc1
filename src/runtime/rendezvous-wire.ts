/**
 * The rendezvous' messages: frame types, what each body holds (JSON) and how it is checked,
 * and the silence watch both ends run. Shared by the server (rendezvous-server.ts) and the
 * client (rendezvous-client.ts); the protocol itself is described in rendezvous.ts.
 */
import { Buffer } from 'node:buffer';
import { NbcArgError } from '../errors.js';
import { SECRET_BYTES } from '../net/auth.js';
import { encodeFrame, MAX_FRAME_BODY } from '../net/frame.js';

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
export class SilenceWatch {
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

export function silenceOption(ms: number | undefined, what: string): number {
  const v = ms ?? DEFAULT_SILENCE_MS;
  if (!Number.isInteger(v) || v < 0) throw new NbcArgError(`Cannot ${what}: silenceMs ${v} is not an integer >= 0 (0: never)`);
  return v;
}

/** Default deadline for a client to reach the server and receive the table. */

/** How long an orderly end waits for the other side before destroying the socket. */
export const CLOSE_GRACE_MS = 2000;

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

export function defaultLog(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

export function checkSecret(secret: unknown, what: string): void {
  if (!(secret instanceof Uint8Array) || secret.byteLength !== SECRET_BYTES) {
    throw new NbcArgError(`Cannot ${what}: the job secret must be a Buffer of ${SECRET_BYTES} bytes`);
  }
}

/** A message's body: its JSON, checked against the frame limit (throws NbcArgError). */
export function encodeMessage(type: number, value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  if (body.length > MAX_FRAME_BODY) {
    throw new NbcArgError(
      `Cannot send control message ${type}: ${body.length} bytes of JSON exceed the frame limit of ${MAX_FRAME_BODY}`);
  }
  return body;
}

/** A whole frame of one message, for a last word before the connection ends (REJECT). */
export function encodeMessageFrame(type: number, value: unknown): Buffer {
  return encodeFrame(type, encodeMessage(type, value));
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isUint(v: unknown, max = 0xffff_ffff): v is number {
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
export function unmapped(address: string): string {
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
