/**
 * The node-side client of the aggregation fabric: what a job's node engine uses to form groups
 * and run reductions through the ANs. Runs on the event loop of the node's main thread; nothing
 * here blocks, every wait is a callback or a promise, every wait has an end.
 *
 * One connection to the AM (fabric secret; the job's registration, joins, revocations) and one
 * per AN this node feeds (the job key; FRAG up, RESULT and GERROR down).
 *
 * A reduction is split into fragments of at most payloadPerSlot bytes (whole elements; whole
 * (value, index) pairs for minloc/maxloc; one empty fragment for 0 bytes). Fragments of all
 * operations of a group form one sequence, sent in order while fewer than `slots` of them lack
 * their result (the credit window: exactly what the group reserved at each AN). Operations
 * complete in issue order.
 *
 * Under the emulated network (`--link`) each fragment leaves stamped with its modelled arrival
 * at the leaf daemon (the node's adapter: the engine's Wire where the node has one), no earlier
 * than the result that returned its credit, and each operation completes with the latest of its
 * results' stamps, which the rank waits out (stamps.ts); nothing here waits for a stamp.
 */
import { Buffer } from 'node:buffer';
import { NbcArgError, NbcAuthError, NbcCommError, NbcPeerFailedError, type NbcError } from '../errors.js';
import { SECRET_BYTES } from '../net/auth.js';
import type { LinkEmulation } from '../net/emulate.js';
import { isAfter, upLatencyUs, type Wire } from '../p2p/wire.js';
import { wireModelOf, type LinkSpec } from '../runtime/link-spec.js';
import { wireModeFromEnv } from '../runtime/wire-clock.js';
import { dial, sendCtrl, type AggConn } from './conn.js';
import { AggTiming, laterStamp, type Port } from './stamps.js';
import {
  aggSupports, decodeCtrl, FRAG_HEADER_BYTES, fragmentBytes, fragmentCount, fragmentUnit, FrameType,
  GERROR_HEADER_BYTES, MAX_FRAGMENTS, MAX_NODE_ID, memberConnectorId, num, RESULT_HAS_DATA, RESULT_HEADER_BYTES,
  RESULT_STAMP, str, writeFragHeader, type Ctrl,
} from './wire.js';

export { AGG_DTYPES, AGG_OPS, aggSupports } from './wire.js';

export interface AggClientOptions {
  manager: { host: string; port: number };
  fabricSecret: Buffer;
  jobId: string;
  /** 32-byte per-job key: proves this node to the ANs. */
  jobKey: Buffer;
  /** This node's id in the job, 0..65535. */
  nodeId: number;
  /**
   * The emulated network: this node's sends to its daemon are stamped (with NBC_WIRE=queue,
   * delayed in a timer queue instead).
   */
  link?: LinkSpec | LinkEmulation;
  /**
   * The node's adapter under the emulated network as time (the engine's Wire), shared with the
   * ranks' traffic; without it the client keeps a port of its own per daemon link.
   */
  wire?: Wire | null;
  log?: (line: string) => void;
  /** How long the AM waits for every member of a join (default 5000 ms). */
  joinTimeoutMs?: number;
  /** Deadline for connect() (default 5000 ms). */
  connectTimeoutMs?: number;
}

export interface AggGroup {
  readonly id: number;
  readonly epoch: number;
  readonly payloadPerSlot: number;
  /** Credit window per member, in fragments. */
  readonly slots: number;
  /** The ANs of the trimmed tree, for stats/logs. */
  readonly ans: readonly number[];
  /**
   * One operation; every member calls it in the same order. `data` is this member's
   * contribution (0 bytes: a barrier) and must not change until `done`; root -1: every member
   * gets the result in `out`; root k: only member k (out may be null elsewhere). `done` is
   * called exactly once, in issue order: null, or an NbcError (NbcPeerFailedError when the group
   * was revoked or a connection on its path broke); with null, `arrive` is the result's modelled
   * arrival (ticks of the host clock, stamps.ts; 0: none), which whoever consumes it waits out.
   */
  reduce(data: Uint8Array, out: Uint8Array | null, op: number, dtype: number, root: number, done: AggDone): void;
  /** Non-null once the group failed; later reduce() calls fail at once with it. */
  readonly failed: Error | null;
  /** Leaves the group (the AM releases it once every member has left). */
  leave(): void;
}

/** A reduce's completion: an error, or null and the result's modelled arrival (0: none). */
export type AggDone = (err: Error | null, arrive?: number) => void;

const RECONNECT_MS = 500;

interface OpRec {
  seq: number;
  data: Uint8Array;
  out: Uint8Array | null;
  op: number;
  dtype: number;
  root: number;
  fragBytes: number;
  nfrags: number;
  sent: number;
  completed: number;
  got: Uint8Array;
  /** The latest of its results' stamps (0: none). */
  arrive: number;
  done: AggDone;
}

/** Calls a user callback; what it throws surfaces on its own, not inside our socket handler. */
function callSafely(cb: AggDone, err: Error | null, arrive = 0): void {
  try {
    cb(err, arrive);
  } catch (e) {
    process.nextTick(() => {
      throw e;
    });
  }
}

/** The connection to one AN, shared by every group this node feeds through it. */
class AnLink {
  conn: AggConn | null = null;
  /** Frames sent before the connection opened, in order. */
  readonly queue: { type: number; parts: Uint8Array[] }[] = [];
  readonly groups = new Set<Group>();
  /** This link's port in virtual time, where the node has no Wire. */
  readonly port: Port = { busy: 0 };
  closed = false;
  constructor(readonly an: number) {}

  send(parts: Uint8Array[], type: number): void {
    if (this.closed) return;
    if (this.conn !== null) this.conn.send(type, parts);
    else this.queue.push({ type, parts });
  }
}

class Group implements AggGroup {
  failed: Error | null = null;
  private readonly ops: OpRec[] = [];
  private head = 0;
  /** Index in `ops` of the operation whose next fragment goes out next. */
  private sendIdx = 0;
  private inflight = 0;
  private nextSeq = 0;

  constructor(
    private readonly client: AggClient,
    readonly id: number,
    readonly epoch: number,
    readonly payloadPerSlot: number,
    readonly slots: number,
    readonly ans: readonly number[],
    readonly index: number,
    readonly count: number,
    readonly link: AnLink,
  ) {}

  reduce(data: Uint8Array, out: Uint8Array | null, op: number, dtype: number, root: number, done: AggDone): void {
    if (this.failed !== null) {
      const err = this.failed;
      queueMicrotask(() => callSafely(done, err));
      return;
    }
    const bad = this.check(data, out, op, dtype, root);
    if (bad !== null) {
      // The others are waiting for this member's fragments: fail the group for all of them.
      const err = new NbcArgError(`Cannot reduce on aggregation group ${this.id}: ${bad}`);
      this.client.abortGroup(this, `member ${this.index} called reduce with bad arguments: ${bad}`);
      this.fail(err);
      queueMicrotask(() => callSafely(done, err));
      return;
    }
    const fragBytes = fragmentBytes(this.payloadPerSlot, op, dtype);
    const nfrags = fragmentCount(data.byteLength, fragBytes);
    this.ops.push({
      seq: this.nextSeq, data, out: root === -1 || root === this.index ? out : null, op, dtype, root, fragBytes, nfrags,
      sent: 0, completed: 0, got: new Uint8Array(nfrags), arrive: 0, done,
    });
    this.nextSeq = (this.nextSeq + 1) >>> 0;
    this.pump(0);
  }

  private check(data: Uint8Array, out: Uint8Array | null, op: number, dtype: number, root: number): string | null {
    if (!(data instanceof Uint8Array)) return 'data is not a Uint8Array';
    const why = aggSupports(op, dtype);
    if (why !== null) return why;
    const unit = fragmentUnit(op, dtype);
    if (data.byteLength % unit !== 0) return `data has ${data.byteLength} bytes, not a whole number of ${unit}-byte units`;
    if (!Number.isInteger(root) || root < -1 || root >= this.count) return `root ${root} is out of range; expected -1..${this.count - 1}`;
    const fragBytes = fragmentBytes(this.payloadPerSlot, op, dtype);
    if (fragmentCount(data.byteLength, fragBytes) > MAX_FRAGMENTS) return `data of ${data.byteLength} bytes needs more than ${MAX_FRAGMENTS} fragments`;
    if ((root === -1 || root === this.index) && (out === null || !(out instanceof Uint8Array) || out.byteLength < data.byteLength)) {
      return `out must be a Uint8Array of at least ${data.byteLength} bytes at ${root === -1 ? 'every member' : 'the root'}`;
    }
    return null;
  }

  /**
   * Sends fragments while the credit window has room, stamped to leave no earlier than tick
   * `after` (the result that returned the credit; 0: now).
   */
  private pump(after: number): void {
    while (this.inflight < this.slots && this.sendIdx < this.ops.length) {
      const o = this.ops[this.sendIdx]!;
      const f = o.sent++;
      const start = f * o.fragBytes;
      const end = Math.min(o.data.byteLength, start + o.fragBytes);
      const header = Buffer.allocUnsafe(FRAG_HEADER_BYTES);
      writeFragHeader(header, {
        group: this.id, epoch: this.epoch, seq: o.seq, frag: f, member: this.index, op: o.op, dtype: o.dtype, root: o.root,
        stamp: this.client.stampUp(this.link, after, FRAG_HEADER_BYTES + end - start),
      });
      this.link.send([header, o.data.subarray(start, end)], FrameType.Frag);
      this.inflight++;
      if (o.sent === o.nfrags) this.sendIdx++;
    }
  }

  /** A RESULT for this group; throws on a frame that cannot be right (the AN link drops). */
  onResult(body: Buffer): void {
    const seq = body.readUInt32LE(8);
    const frag = body.readUInt32LE(12);
    const hasData = (body[16]! & RESULT_HAS_DATA) !== 0;
    const k = ((seq - (this.ops[this.head]?.seq ?? 0)) >>> 0);
    const o = this.ops[this.head + k];
    if (this.head + k >= this.sendIdx + 1 || o === undefined || o.seq !== seq) {
      throw new Error(`RESULT for operation ${seq} of group ${this.id}, which is not in flight`);
    }
    if (frag >= o.sent || o.got[frag] !== 0) throw new Error(`RESULT for fragment ${frag} of operation ${seq}, not sent or already done`);
    const payload = body.subarray(RESULT_HEADER_BYTES);
    if (hasData) {
      const start = frag * o.fragBytes;
      const expect = Math.max(0, Math.min(o.data.byteLength, start + o.fragBytes) - start);
      if (payload.length !== expect) throw new Error(`RESULT fragment ${frag} of operation ${seq} has ${payload.length} bytes; expected ${expect}`);
      if (o.out === null) {
        if (o.root !== -1) throw new Error(`RESULT data for operation ${seq} at member ${this.index}, not its root ${o.root}`);
      } else {
        o.out.set(payload, start);
      }
    } else if (o.out !== null && o.data.byteLength > 0) {
      throw new Error(`RESULT without data for operation ${seq} at member ${this.index}, which needs it`);
    }
    o.got[frag] = 1;
    o.completed++;
    const stamp = body.readInt32LE(RESULT_STAMP);
    o.arrive = laterStamp(o.arrive, stamp);
    this.inflight--;
    // Complete in issue order.
    while (this.head < this.ops.length) {
      const h = this.ops[this.head]!;
      if (h.completed < h.nfrags) break;
      this.ops[this.head] = undefined as unknown as OpRec;
      this.head++;
      callSafely(h.done, null, h.arrive);
      if (this.failed !== null) return;
    }
    if (this.head > 256 && this.head * 2 > this.ops.length) {
      this.ops.splice(0, this.head);
      this.sendIdx -= this.head;
      this.head = 0;
    }
    this.pump(stamp);
  }

  /** Fails every pending operation (in issue order) and every later one. */
  fail(err: Error): void {
    if (this.failed !== null) return;
    this.failed = err;
    this.client.forget(this);
    const pending = this.ops.slice(this.head);
    this.ops.length = 0;
    this.head = 0;
    this.sendIdx = 0;
    for (const o of pending) callSafely(o.done, err);
  }

  leave(): void {
    this.client.sendLeave(this);
    this.fail(new NbcCommError(`Cannot reduce on aggregation group ${this.id}: this member left the group`));
  }
}

export class AggClient {
  private am: AggConn | null = null;
  private jobIndex = 0;
  private readonly anLinks = new Map<number, AnLink>();
  private readonly groups = new Map<number, Group>();
  private readonly joins = new Map<string, (answer: Ctrl | string) => void>();
  private readonly rounds = new Map<string, number>();
  private amLost = 'not connected';
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly log: (line: string) => void;
  /** The emulated network as time without the node's Wire: this process's clock and hops. */
  private readonly timing: AggTiming | null;
  /** Ticks from this node to its leaf daemon, with the node's Wire. */
  private readonly wireHop: number;
  /** NBC_WIRE=queue: what the daemon links delay in a timer queue; else undefined. */
  private readonly emulation: LinkEmulation | undefined;

  private constructor(private readonly o: AggClientOptions) {
    this.log = o.log ?? (() => {});
    const stamps = o.wire != null || (o.link !== undefined && wireModeFromEnv() === 'stamp');
    this.timing = o.wire == null && stamps ? new AggTiming(wireModelOf(o.link!)) : null;
    this.wireHop = o.wire == null ? 0 : Math.round(upLatencyUs(o.wire.model, 1) * 10);
    this.emulation = stamps ? undefined : o.link;
  }

  /**
   * The stamp of a frame of `bytes` this node sends its leaf daemon over `link`, leaving no
   * earlier than now and tick `after` (0: none); 0 without the emulated network as time.
   */
  /** @internal */
  stampUp(link: AnLink, after: number, bytes: number): number {
    const wire = this.o.wire;
    if (wire != null) {
      const now = wire.now();
      return (wire.take(after !== 0 && isAfter(after, now) ? after : now, bytes) + this.wireHop) | 0 || 1;
    }
    const t = this.timing;
    if (t === null) return 0;
    return t.stamp(link.port, laterStamp(t.now(), after), bytes, t.nodeHop);
  }

  /**
   * Authenticates to the AM with the fabric secret and registers (jobId, jobKey) (idempotent:
   * every node of a job does it). Rejects with an NbcError saying why.
   */
  static async connect(o: AggClientOptions): Promise<AggClient> {
    if (!(o.fabricSecret instanceof Uint8Array) || o.fabricSecret.length !== SECRET_BYTES) {
      throw new NbcArgError(`Cannot connect to the aggregation fabric: fabricSecret must be ${SECRET_BYTES} bytes`);
    }
    if (!(o.jobKey instanceof Uint8Array) || o.jobKey.length !== SECRET_BYTES) {
      throw new NbcArgError(`Cannot connect to the aggregation fabric: jobKey must be ${SECRET_BYTES} bytes`);
    }
    if (!Number.isInteger(o.nodeId) || o.nodeId < 0 || o.nodeId > MAX_NODE_ID) {
      throw new NbcArgError(`Cannot connect to the aggregation fabric: nodeId ${o.nodeId} is not an integer in 0..${MAX_NODE_ID}`);
    }
    if (typeof o.jobId !== 'string' || o.jobId.length === 0 || o.jobId.length > 200) {
      throw new NbcArgError('Cannot connect to the aggregation fabric: jobId must be a non-empty string of at most 200 characters');
    }
    const c = new AggClient(o);
    await c.connectManager();
    return c;
  }

  private async connectManager(): Promise<void> {
    const { host, port } = this.o.manager;
    const timeoutMs = this.o.connectTimeoutMs ?? 5000;
    let conn: AggConn;
    try {
      conn = await dial(host, port, Buffer.from(this.o.fabricSecret), this.o.nodeId, timeoutMs);
    } catch (err) {
      const e = err as NbcError;
      const hint = /short handshake/.test(e.message) ? ' (the manager closed the handshake: a wrong fabric secret looks like this)' : '';
      throw new (e instanceof NbcAuthError ? NbcAuthError : NbcPeerFailedError)(
        `Cannot register job '${this.o.jobId}' with the aggregation manager at ${host}:${port}: ${e.message}${hint}`, { cause: err });
    }
    await new Promise<void>((resolve, reject) => {
      let welcomed = false;
      const timer = setTimeout(() => conn.close(`no welcome within ${timeoutMs} ms`), timeoutMs);
      conn.start({
        onFrame: (type, body) => {
          if (type !== FrameType.Ctrl) throw new Error(`frame type ${type} from the manager; expected CTRL`);
          const m = decodeCtrl(body);
          if (m === null) throw new Error('control frame is not a JSON object with a "t" field');
          if (!welcomed) {
            if (m.t === 'refused') {
              clearTimeout(timer);
              reject(new NbcAuthError(`Cannot register job '${this.o.jobId}' with the aggregation manager: ${str(m, 'reason')}`));
              conn.close('refused');
              return;
            }
            if (m.t !== 'welcome') throw new Error(`first message '${m.t}'; expected welcome`);
            welcomed = true;
            clearTimeout(timer);
            this.jobIndex = num(m, 'jobIndex', 1);
            this.am = conn;
            resolve();
            return;
          }
          this.onManagerMessage(m);
        },
        onClose: (reason) => {
          clearTimeout(timer);
          if (!welcomed) {
            reject(new NbcPeerFailedError(`Cannot register job '${this.o.jobId}' with the aggregation manager at ${host}:${port}: ${reason}`));
            return;
          }
          this.onManagerLost(conn, reason);
        },
      });
      sendCtrl(conn, { t: 'hello-job', job: this.o.jobId, key: Buffer.from(this.o.jobKey).toString('hex'), node: this.o.nodeId });
    });
  }

  private onManagerLost(conn: AggConn, reason: string): void {
    if (this.am !== conn) return;
    this.am = null;
    this.amLost = reason;
    if (this.closed) return;
    this.log(`agg: lost the aggregation manager (${reason}); failing its groups, redialling every ${RECONNECT_MS} ms`);
    const err = new NbcPeerFailedError(`Cannot reduce on the aggregation fabric: node ${this.o.nodeId} lost the aggregation manager (${reason})`);
    for (const g of [...this.groups.values()]) g.fail(err);
    for (const [k, resolve] of [...this.joins]) {
      this.joins.delete(k);
      resolve(`cannot reach the aggregation manager: ${reason}`);
    }
    // AN links carry the job index of the old registration.
    for (const l of [...this.anLinks.values()]) this.dropLink(l, 'aggregation manager lost');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.closed || this.am !== null) return;
      this.connectManager().then(() => {
        if (this.closed) this.am?.close('client closed');
        else this.log('agg: re-registered with the aggregation manager');
      }, () => this.scheduleReconnect());
    }, RECONNECT_MS);
    this.reconnectTimer.unref();
  }

  private onManagerMessage(m: Ctrl): void {
    switch (m.t) {
      case 'join-result': {
        const k = `${str(m, 'key', 200)}\0${num(m, 'round', 1)}`;
        const resolve = this.joins.get(k);
        if (resolve === undefined) return;
        this.joins.delete(k);
        resolve(m);
        return;
      }
      case 'revoke': {
        const g = this.groups.get(num(m, 'id'));
        if (g !== undefined) {
          g.fail(new NbcPeerFailedError(`Cannot reduce on aggregation group ${g.id} (epoch ${g.epoch}): revoked (epoch now ${num(m, 'epoch')}): ${str(m, 'reason')}`));
        }
        return;
      }
      default:
        throw new Error(`unknown control message '${m.t}' from the manager`);
    }
  }

  /**
   * Collective: every member node of a communicator calls join with the same key, its index
   * among the communicator's nodes (0..count-1) and count. Resolves with the group, or with
   * { refused: reason }: the same answer at every member (the AM decides once per round); a
   * member that cannot reach the AM refuses itself locally. Never rejects.
   */
  join(key: string, index: number, count: number, want?: { slots?: number }): Promise<AggGroup | { refused: string }> {
    if (typeof key !== 'string' || key.length === 0 || key.length > 200) {
      return Promise.resolve({ refused: 'the join key must be a non-empty string of at most 200 characters' });
    }
    const round = (this.rounds.get(key) ?? 0) + 1;
    this.rounds.set(key, round);
    if (!Number.isInteger(count) || count < 1 || count > 0xffff || !Number.isInteger(index) || index < 0 || index >= count) {
      return Promise.resolve({ refused: `member index ${index} of ${count} is out of range` });
    }
    const slots = want?.slots;
    if (slots !== undefined && (!Number.isInteger(slots) || slots < 1 || slots > 1 << 16)) {
      return Promise.resolve({ refused: `want.slots ${slots} is not an integer in 1..65536` });
    }
    if (this.closed) return Promise.resolve({ refused: 'the aggregation client is closed' });
    const am = this.am;
    if (am === null) return Promise.resolve({ refused: `cannot reach the aggregation manager: ${this.amLost}` });
    const timeoutMs = this.o.joinTimeoutMs ?? 5000;
    return new Promise((resolve) => {
      const k = `${key}\0${round}`;
      const timer = setTimeout(() => {
        if (this.joins.get(k) !== finish) return;
        this.joins.delete(k);
        resolve({ refused: `no answer from the aggregation manager within ${timeoutMs + 5000} ms` });
      }, timeoutMs + 5000);
      const finish = (answer: Ctrl | string): void => {
        clearTimeout(timer);
        if (typeof answer === 'string') {
          resolve({ refused: answer });
          return;
        }
        if (typeof answer.refused === 'string') {
          resolve({ refused: answer.refused });
          return;
        }
        try {
          resolve(this.makeGroup(answer.group as Ctrl, index));
        } catch (err) {
          resolve({ refused: `bad answer from the aggregation manager: ${(err as Error).message}` });
        }
      };
      this.joins.set(k, finish);
      sendCtrl(am, { t: 'join', key, round, index, count, slots, timeoutMs });
    });
  }

  private makeGroup(m: Ctrl, index: number): Group {
    const an = m.an as Ctrl;
    const anId = num(an, 'id');
    const ans = m.ans;
    if (!Array.isArray(ans)) throw new Error('ans is not an array');
    const link = this.linkTo(anId, str(an, 'host', 256), num(an, 'port', 1, 65535));
    const g = new Group(this, num(m, 'id', 1), num(m, 'epoch'), num(m, 'payload', 16), num(m, 'slots', 1), ans as number[],
      index, num(m, 'count', 1), link);
    this.groups.set(g.id, g);
    link.groups.add(g);
    if (link.closed) g.fail(new NbcPeerFailedError(`Cannot reduce on aggregation group ${g.id}: the link to AN ${anId} is down`));
    return g;
  }

  private linkTo(an: number, host: string, port: number): AnLink {
    const existing = this.anLinks.get(an);
    if (existing !== undefined) return existing;
    const link = new AnLink(an);
    this.anLinks.set(an, link);
    dial(host, port, Buffer.from(this.o.jobKey), memberConnectorId(this.jobIndex, this.o.nodeId),
      this.o.connectTimeoutMs ?? 5000, this.emulation)
      .then((conn) => {
        if (link.closed) {
          conn.close('link closed');
          return;
        }
        link.conn = conn;
        conn.start({
          onFrame: (type, body) => this.onAnFrame(link, type, body),
          onClose: (reason) => this.dropLink(link, reason),
        });
        for (const q of link.queue) conn.send(q.type, q.parts);
        link.queue.length = 0;
      }, (err: Error) => this.dropLink(link, err.message));
    return link;
  }

  private dropLink(link: AnLink, reason: string): void {
    if (link.closed) return;
    link.closed = true;
    link.queue.length = 0;
    if (this.anLinks.get(link.an) === link) this.anLinks.delete(link.an);
    link.conn?.close(reason);
    if (link.groups.size > 0 && !this.closed) this.log(`agg: lost the link to AN ${link.an} (${reason})`);
    for (const g of [...link.groups]) {
      g.fail(new NbcPeerFailedError(`Cannot reduce on aggregation group ${g.id}: node ${this.o.nodeId} lost its link to AN ${link.an} (${reason})`));
    }
  }

  private onAnFrame(link: AnLink, type: number, body: Buffer): void {
    if (type === FrameType.Result) {
      if (body.length < RESULT_HEADER_BYTES) throw new Error(`RESULT of ${body.length} bytes; expected at least ${RESULT_HEADER_BYTES}`);
      const g = this.groups.get(body.readUInt32LE(0));
      if (g === undefined || g.epoch !== body.readUInt32LE(4) || g.link !== link) return; // revoked a moment ago
      g.onResult(body);
    } else if (type === FrameType.GroupError) {
      if (body.length < GERROR_HEADER_BYTES) throw new Error(`GERROR of ${body.length} bytes`);
      const g = this.groups.get(body.readUInt32LE(0));
      if (g === undefined || g.epoch !== body.readUInt32LE(4)) return;
      g.fail(new NbcPeerFailedError(`Cannot reduce on aggregation group ${g.id} (epoch ${g.epoch}): ${body.subarray(GERROR_HEADER_BYTES).toString('utf8')}`));
    } else {
      throw new Error(`frame type ${type} from AN ${link.an}; expected RESULT or GERROR`);
    }
  }

  /** @internal */
  forget(g: Group): void {
    if (this.groups.get(g.id) === g) this.groups.delete(g.id);
    g.link.groups.delete(g);
  }

  /** @internal */
  sendLeave(g: Group): void {
    sendCtrl(this.am, { t: 'leave', id: g.id });
  }

  /** @internal */
  abortGroup(g: Group, reason: string): void {
    sendCtrl(this.am, { t: 'abort', id: g.id, reason });
  }

  /** Closes every connection; pending operations fail, later joins are refused. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    const err = new NbcCommError('Cannot reduce on the aggregation fabric: the client was closed');
    for (const g of [...this.groups.values()]) {
      this.sendLeave(g);
      g.fail(err);
    }
    for (const [k, resolve] of [...this.joins]) {
      this.joins.delete(k);
      resolve('the aggregation client was closed');
    }
    // A clean goodbye: each AN hears 'bye' before the connection ends, so it lets this node go
    // without failing the groups the other members are still finishing with.
    for (const l of [...this.anLinks.values()]) {
      sendCtrl(l.conn, { t: 'bye' });
      l.conn?.finish();
      l.conn = null;
      this.dropLink(l, 'client closed');
    }
    this.am?.close('client closed');
    this.am = null;
  }
}
