/**
 * An aggregation daemon (AN): one node of the fabric's tree, a process of its own.
 *
 * It listens for its child ANs (fabric secret) and for member nodes (their job's key, selected
 * by the connector id: wire.ts MEMBER_ID_BASE), registers with the manager (AM), and dials its
 * parent AN once the AM has said where that is. The AM tells it which jobs exist (their keys)
 * and which groups it serves; the data path runs between ANs and members without the AM.
 *
 * Per group it keeps only the fragments in flight: a fragment's state is created when the first
 * child's copy arrives and dropped when the reduced fragment leaves (up to the parent, or down
 * from the group root). The children of a group at this AN are in a fixed order (members by
 * member index at a leaf, child ANs by id above), and the reduction is always
 *
 *     c0 ⊕ (c1 ⊕ (... ⊕ (c[n-2] ⊕ c[n-1])))
 *
 * evaluated from the right (reduceRegions(op, dt, c[i], acc) for i = n-2 .. 0), whatever order
 * the copies arrived in: the result is bitwise the same run after run.
 *
 * Under the emulated network (`--link`) every FRAG and RESULT carries its modelled arrival, and
 * the daemon never waits for one: a reduced fragment's time is the latest of its copies'
 * stamps, and what it sends on is stamped from there (stamps.ts). With NBC_WIRE=queue instead,
 * each connection delays its outgoing frames in a timer queue (net/emulate.ts).
 *
 * Faults: a lost connection fails, at once, every group whose path used it; the AN sends GERROR
 * to the group's other neighbours (so members learn it within one hop per level) and reports
 * the fault to the AM, which revokes the group. Without an AM the AN drops its groups, redials
 * the AM every 500 ms, and exits after `orphanSeconds`.
 */
import { Buffer } from 'node:buffer';
import type { LinkEmulation } from '../net/emulate.js';
import { AuthListener } from '../net/listener.js';
import { reduceRegions } from '../ops/regions.js';
import type { WireModel } from '../p2p/wire.js';
import { dial, sendCtrl, type AggConn } from './conn.js';
import { AggTiming, laterStamp, type Port } from './stamps.js';
import {
  aggSupports, decodeCtrl, encodeGroupError, FRAG_HEADER_BYTES, fragmentUnit, FrameType, FROM_AN,
  GERROR_HEADER_BYTES, MAX_BODY, MAX_FRAGMENTS, MAX_JOB_INDEX, num, parentOf, readFragHeader, RESULT_HAS_DATA,
  RESULT_HEADER_BYTES, RESULT_STAMP, splitConnectorId, str, writeFragHeader, writeResultHeader, type Ctrl, type FragHeader,
} from './wire.js';

export interface DaemonOptions {
  id: number;
  radix: number;
  levels: number;
  payloadPerSlot: number;
  manager: { host: string; port: number };
  secret: Buffer;
  listenHost: string;
  /** NBC_WIRE=queue: each connection delays what it sends in a timer queue (net/emulate.ts). */
  link?: LinkEmulation;
  /** The emulated network as time: frames carry their modelled arrival (stamps.ts). */
  wire?: WireModel;
  testDelayUs?: number;
  orphanSeconds: number;
  /**
   * Keep the event loop polling (never sleeping in epoll) for this long after the last
   * fragment or result, as a switch port never sleeps: a daemon asleep pays a process wake-up
   * (about 100 us on the reference VM) on every hop. Only where the host has a core for it.
   */
  spinUs?: number;
  log: (line: string) => void;
}

/** How often a lost AM or parent is redialled. */
const REDIAL_MS = 500;

type Child = { kind: 'member'; member: number; node: number } | { kind: 'an'; an: number };

interface Pending {
  op: number;
  dtype: number;
  root: number;
  bytes: number;
  parts: (Buffer | undefined)[];
  arrived: number;
  /** The latest of the copies' stamps (0: none stamped). */
  stamp: number;
}

interface Group {
  id: number;
  epoch: number;
  job: number;
  slots: number;
  hasParent: boolean;
  children: Child[];
  /** Member index -> child index here (member m's data comes from / goes to that child), -1 if not below. */
  under: Int32Array;
  /** Child AN id -> child index. */
  anChild: Map<number, number>;
  /** Fragment key (seq * 2^21 + frag) -> state while in flight. */
  inflight: Map<number, Pending>;
  failed: boolean;
  /** Fragments reduced here (at the group root: the group's completed fragments). */
  reduced: number;
}

/** Who is at the other end of an accepted connection. */
type Peer = { kind: 'an'; an: number } | { kind: 'member'; job: number; node: number; bye?: boolean };

export class Daemon {
  private port = 0;
  private am: AggConn | null = null;
  private amLostAt = performance.now();
  private parent: AggConn | null = null;
  private parentAddr: { host: string; port: number } | null = null;
  private dialingParent = false;
  private readonly jobKeys = new Map<number, Buffer>();
  private readonly children = new Map<number, AggConn>();
  private hotUntil = 0;
  private spinning = false;
  private readonly members = new Map<string, AggConn>();
  /** Members ("job:node") that said goodbye; forgotten when the AM says their job is gone. */
  private readonly departed = new Set<string>();
  private readonly groups = new Map<number, Group>();
  /** The emulated network as time, or null (stamps.ts). */
  private readonly timing: AggTiming | null;
  /** Each connection's port: when its last frame leaves, in virtual time. */
  private readonly ports = new WeakMap<AggConn, Port>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly counters = {
    fragments: 0, bytes: 0, reduced: 0, authRejections: 0, badFrames: 0, stale: 0, groupErrors: 0,
  };

  /**
   * The accept path: child ANs prove the fabric secret, members their job's key, chosen by the
   * connector id (wire.ts MEMBER_ID_BASE). Rejections are logged here only (the AM sees the
   * count in every heartbeat answer): one line per connection.
   */
  private readonly listener: AuthListener;

  constructor(private readonly o: DaemonOptions) {
    this.timing = o.wire === undefined ? null : new AggTiming(o.wire);
    this.listener = new AuthListener({
      secret: (claimed) => this.keyFor(claimed), host: o.listenHost, maxBody: MAX_BODY, log: o.log,
      rejectPrefix: '', errorPrefix: 'listener error: ',
      onConnection: (conn, peerId) => this.accept(conn, peerId),
      onRejected: () => {
        this.counters.authRejections++;
      },
    });
  }

  async start(): Promise<void> {
    this.port = (await this.listener.listen()).port;
    this.o.log(`listening on ${this.o.listenHost}:${this.port}`);
    void this.dialManager();
    this.timer = setInterval(() => this.tick(), REDIAL_MS);
  }

  stop(code = 0): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    void this.listener.close();
    this.am?.close('daemon stopping');
    this.parent?.close('daemon stopping');
    for (const c of this.children.values()) c.close('daemon stopping');
    for (const c of this.members.values()) c.close('daemon stopping');
    process.exitCode = code;
    // Sockets are destroyed; exit promptly even if a timer of a dependency lingers.
    setTimeout(() => process.exit(code), 50).unref();
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.am === null) {
      const orphan = (performance.now() - this.amLostAt) / 1000;
      if (orphan >= this.o.orphanSeconds) {
        this.o.log(`no aggregation manager for ${orphan.toFixed(1)} s; exiting`);
        this.stop(0);
        return;
      }
      void this.dialManager();
    }
    if (this.parent === null && this.parentAddr !== null) void this.dialParent();
  }

  // ---- the manager ------------------------------------------------------------------------

  private dialingManager = false;

  private async dialManager(): Promise<void> {
    if (this.dialingManager || this.am !== null || this.stopped) return;
    this.dialingManager = true;
    try {
      const conn = await dial(this.o.manager.host, this.o.manager.port, this.o.secret, this.o.id, 2000);
      if (this.stopped) {
        conn.close('daemon stopping');
        return;
      }
      this.am = conn;
      conn.start({
        onFrame: (type, body) => this.onManagerFrame(type, body),
        onClose: (reason) => this.onManagerLost(conn, reason),
      });
      sendCtrl(conn, {
        t: 'an-hello', id: this.o.id, radix: this.o.radix, levels: this.o.levels, payload: this.o.payloadPerSlot,
        host: this.o.listenHost, port: this.port, pid: process.pid, parentLinked: this.parent !== null,
      });
      this.o.log(`registered with the aggregation manager at ${conn.remote}`);
    } catch {
      // Redialled by tick(); the AM may be restarting.
    } finally {
      this.dialingManager = false;
    }
  }

  private onManagerLost(conn: AggConn, reason: string): void {
    if (this.am !== conn) return;
    this.am = null;
    this.amLostAt = performance.now();
    if (this.stopped) return;
    this.o.log(`lost the aggregation manager (${reason}); redialling every ${REDIAL_MS} ms, exiting after ${this.o.orphanSeconds} s`);
    // Groups are the AM's: a restarted AM knows none of them, so none may outlive it.
    for (const g of [...this.groups.values()]) this.failGroup(g, `AN ${this.o.id} lost the aggregation manager`, null, false);
  }

  private onManagerFrame(type: number, body: Buffer): void {
    if (type !== FrameType.Ctrl) throw new Error(`frame type ${type} from the manager; expected CTRL`);
    const m = decodeCtrl(body);
    if (m === null) throw new Error('control frame is not a JSON object with a "t" field');
    switch (m.t) {
      case 'welcome':
        this.setParent(m.parent);
        this.jobKeys.clear();
        for (const j of (Array.isArray(m.jobs) ? m.jobs : []) as Ctrl[]) this.addJob(j);
        return;
      case 'parent':
        this.setParent(m);
        return;
      case 'job':
        this.addJob(m);
        return;
      case 'job-gone': {
        const index = num(m, 'index', 1, MAX_JOB_INDEX);
        this.jobKeys.delete(index);
        for (const [k, c] of this.members) if (k.startsWith(`${index}:`)) c.close(`job ${index} is gone`);
        for (const k of [...this.departed]) if (k.startsWith(`${index}:`)) this.departed.delete(k);
        return;
      }
      case 'group':
        this.addGroup(m);
        sendCtrl(this.am, { t: 'group-ok', id: num(m, 'id') });
        return;
      case 'group-end': {
        const g = this.groups.get(num(m, 'id'));
        if (g !== undefined) {
          g.failed = true;
          this.groups.delete(g.id);
        }
        return;
      }
      case 'ping':
        sendCtrl(this.am, {
          t: 'pong', n: num(m, 'n', 0, Number.MAX_SAFE_INTEGER), counters: this.counters,
          rootFragments: Object.fromEntries([...this.groups.values()].filter((g) => !g.hasParent).map((g) => [g.id, g.reduced])),
        });
        return;
      case 'shutdown':
        this.o.log('shutdown requested by the aggregation manager');
        this.stop(0);
        return;
      default:
        throw new Error(`unknown control message '${m.t}' from the manager`);
    }
  }

  private addJob(m: Ctrl): void {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error(`job entry ${JSON.stringify(m)} is not an object`);
    const index = num(m, 'index', 1, MAX_JOB_INDEX);
    const key = Buffer.from(str(m, 'key', 64), 'hex');
    if (key.length !== 32) throw new Error(`job ${index}: key is not 64 hex digits`);
    this.jobKeys.set(index, key);
  }

  private setParent(p: unknown): void {
    if (p === null || p === undefined || typeof p !== 'object') return;
    const host = (p as { host?: unknown }).host;
    const port = (p as { port?: unknown }).port;
    if (typeof host !== 'string' || typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error('parent address is not { host, port }');
    }
    if (this.parentAddr?.host === host && this.parentAddr.port === port && this.parent !== null) return;
    this.parentAddr = { host, port };
    this.parent?.close('parent moved');
    void this.dialParent();
  }

  private addGroup(m: Ctrl): void {
    const id = num(m, 'id', 1);
    const count = num(m, 'count', 1, 0xffff);
    const children: Child[] = [];
    const anChild = new Map<number, number>();
    const list = m.children;
    if (!Array.isArray(list) || list.length === 0 || list.length > 0xffff) throw new Error(`group ${id}: children is not a non-empty array`);
    for (const c of list as Ctrl[]) {
      if (typeof c !== 'object' || c === null) throw new Error(`group ${id}: bad child`);
      if (typeof c.an === 'number') {
        const an = num(c, 'an');
        if (parentOf(this.o.radix, an) !== this.o.id) throw new Error(`group ${id}: AN ${an} is not a child of AN ${this.o.id}`);
        anChild.set(an, children.length);
        children.push({ kind: 'an', an });
      } else {
        children.push({ kind: 'member', member: num(c, 'member', 0, count - 1), node: num(c, 'node', 0, 0xffff) });
      }
    }
    const under = new Int32Array(count).fill(-1);
    const u = m.under;
    if (!Array.isArray(u) || u.length !== count) throw new Error(`group ${id}: under is not an array of ${count}`);
    for (let i = 0; i < count; i++) {
      const ci = u[i];
      if (typeof ci !== 'number' || !Number.isInteger(ci) || ci < -1 || ci >= children.length) throw new Error(`group ${id}: bad under[${i}]`);
      under[i] = ci;
    }
    this.groups.set(id, {
      id, epoch: num(m, 'epoch'), job: num(m, 'job', 1, MAX_JOB_INDEX), slots: num(m, 'slots', 1, 1 << 16),
      hasParent: m.hasParent === true, children, under, anChild, inflight: new Map(), failed: false, reduced: 0,
    });
  }

  // ---- the parent -------------------------------------------------------------------------

  private async dialParent(): Promise<void> {
    const addr = this.parentAddr;
    if (addr === null || this.dialingParent || this.parent !== null || this.stopped) return;
    this.dialingParent = true;
    try {
      const conn = await dial(addr.host, addr.port, this.o.secret, this.o.id, 2000, this.o.link);
      if (this.stopped) {
        conn.close('daemon stopping');
        return;
      }
      this.parent = conn;
      const parentId = parentOf(this.o.radix, this.o.id);
      conn.start({
        onFrame: (type, body) => this.onParentFrame(type, body),
        onClose: (reason) => {
          if (this.parent !== conn) return;
          this.parent = null;
          if (this.stopped) return;
          this.o.log(`lost the link to parent AN ${parentId} (${reason})`);
          sendCtrl(this.am, { t: 'parent-down' });
          for (const g of [...this.groups.values()]) {
            if (g.hasParent) this.failGroup(g, `AN ${this.o.id} lost its link to parent AN ${parentId}: ${reason}`, conn, true);
          }
        },
      });
      sendCtrl(this.am, { t: 'parent-up' });
    } catch (err) {
      this.o.log(`cannot link to the parent AN: ${(err as Error).message}; retrying`);
    } finally {
      this.dialingParent = false;
    }
  }

  private onParentFrame(type: number, body: Buffer): void {
    if (type === FrameType.Result) {
      this.onResult(body);
    } else if (type === FrameType.GroupError) {
      this.onGroupError(body, this.parent);
    } else {
      throw new Error(`frame type ${type} from the parent AN; expected RESULT or GERROR`);
    }
  }

  // ---- accepted connections: child ANs and members -----------------------------------------

  /** The key a connector claiming `claimed` must prove: child ANs the fabric's, members their job's. */
  private keyFor(claimed: number): Buffer | null {
    const m = splitConnectorId(claimed);
    if (m === null) return parentOf(this.o.radix, claimed) === this.o.id && claimed !== 0 ? this.o.secret : null;
    return this.jobKeys.get(m.jobIndex) ?? null;
  }

  /** An authenticated child AN or member (the id it proved says which). */
  private accept(conn: AggConn, peerId: number): void {
    if (this.stopped) {
      conn.close('daemon stopping');
      return;
    }
    const m = splitConnectorId(peerId);
    const peer: Peer = m === null ? { kind: 'an', an: peerId } : { kind: 'member', job: m.jobIndex, node: m.nodeId };
    conn.emulate(this.o.link);
    const table = peer.kind === 'an' ? this.children : this.members;
    const key = peer.kind === 'an' ? peer.an : `${peer.job}:${peer.node}`;
    (table as Map<unknown, AggConn>).get(key)?.close('replaced by a new connection');
    (table as Map<unknown, AggConn>).set(key, conn);
    conn.start({
      onFrame: (type, body) => this.onChildFrame(peer, conn, type, body),
      onClose: (reason) => this.onChildLost(peer, conn, reason),
    });
  }

  private onChildLost(peer: Peer, conn: AggConn, reason: string): void {
    if (reason.startsWith('bad frame')) {
      this.counters.badFrames++;
      this.o.log(`dropped connection from ${describe(peer)} at ${conn.remote}: ${reason}`);
    }
    if (peer.kind === 'an') {
      if (this.children.get(peer.an) !== conn) return;
      this.children.delete(peer.an);
      if (this.stopped) return;
      for (const g of [...this.groups.values()]) {
        if (g.anChild.has(peer.an)) this.failGroup(g, `AN ${this.o.id} lost its link to child AN ${peer.an}: ${reason}`, conn, true);
      }
    } else {
      const key = `${peer.job}:${peer.node}`;
      if (this.members.get(key) !== conn) return;
      this.members.delete(key);
      if (this.stopped) return;
      if (peer.bye === true) {
        // It said goodbye (its job is ending): results still on their way to it are dropped.
        this.departed.add(key);
        return;
      }
      for (const g of [...this.groups.values()]) {
        if (g.job !== peer.job) continue;
        const c = g.children.find((ch) => ch.kind === 'member' && ch.node === peer.node);
        if (c !== undefined && c.kind === 'member') {
          this.failGroup(g, `AN ${this.o.id} lost member ${c.member} (node ${peer.node}): ${reason}`, conn, true);
        }
      }
    }
  }

  private onChildFrame(peer: Peer, conn: AggConn, type: number, body: Buffer): void {
    if (type === FrameType.Frag) {
      this.onFrag(peer, body);
    } else if (type === FrameType.Ctrl && peer.kind === 'member' && decodeCtrl(body)?.t === 'bye') {
      peer.bye = true;
    } else if (type === FrameType.GroupError) {
      this.onGroupError(body, conn, peer);
    } else {
      throw new Error(`frame type ${type} from ${describe(peer)}; expected FRAG or GERROR`);
    }
  }

  // ---- the data path ----------------------------------------------------------------------

  /** Polls on for `spinUs` after this moment (see DaemonOptions.spinUs). */
  private keepHot(): void {
    const us = this.o.spinUs ?? 0;
    if (us <= 0) return;
    this.hotUntil = performance.now() + us / 1000;
    if (!this.spinning) {
      this.spinning = true;
      setImmediate(this.spin);
    }
  }

  /** One turn: pending immediates make libuv poll for I/O without blocking. */
  private readonly spin = (): void => {
    if (this.stopped || performance.now() > this.hotUntil) {
      this.spinning = false;
      return;
    }
    setImmediate(this.spin);
  };

  private onFrag(peer: Peer, body: Buffer): void {
    this.keepHot();
    if (body.length < FRAG_HEADER_BYTES) throw new Error(`FRAG of ${body.length} bytes; expected at least ${FRAG_HEADER_BYTES}`);
    const h = readFragHeader(body);
    const g = this.groups.get(h.group);
    if (g === undefined || g.epoch !== h.epoch) {
      // A fragment of a group revoked a moment ago; not the sender's fault.
      this.counters.stale++;
      return;
    }
    let ci: number;
    if (peer.kind === 'member') {
      if (g.job !== peer.job) throw new Error(`FRAG for group ${g.id} of job ${g.job} from a member of job ${peer.job}`);
      if (h.member >= g.under.length) throw new Error(`FRAG member ${h.member} out of range for group ${g.id} (${g.under.length} members)`);
      ci = g.under[h.member]!;
      const c = g.children[ci];
      if (c === undefined || c.kind !== 'member' || c.node !== peer.node) {
        throw new Error(`FRAG for member ${h.member} of group ${g.id} from node ${peer.node}, which is not that member's node here`);
      }
    } else {
      if (h.member !== FROM_AN) throw new Error(`FRAG from AN ${peer.an} names member ${h.member}`);
      const i = g.anChild.get(peer.an);
      if (i === undefined) throw new Error(`FRAG for group ${g.id} from AN ${peer.an}, not a child of AN ${this.o.id} in that group`);
      ci = i;
    }
    const payload = body.subarray(FRAG_HEADER_BYTES);
    if (payload.length > this.o.payloadPerSlot) {
      throw new Error(`FRAG of ${payload.length} payload bytes exceeds the slot size ${this.o.payloadPerSlot}`);
    }
    const why = aggSupports(h.op, h.dtype);
    if (why !== null) throw new Error(`FRAG with op ${h.op} and type ${h.dtype}: ${why}`);
    if (payload.length % fragmentUnit(h.op, h.dtype) !== 0) {
      throw new Error(`FRAG payload of ${payload.length} bytes is not whole units of ${fragmentUnit(h.op, h.dtype)} bytes`);
    }
    if (h.root < -1 || h.root >= g.under.length) throw new Error(`FRAG root ${h.root} out of range for group ${g.id}`);
    if (h.frag >= MAX_FRAGMENTS) throw new Error(`FRAG index ${h.frag} exceeds ${MAX_FRAGMENTS - 1}`);
    this.counters.fragments++;
    this.counters.bytes += payload.length;
    const delay = this.o.testDelayUs ?? 0;
    if (delay > 0) setTimeout(() => this.arrive(g, ci, h, payload), Math.random() * delay / 1000);
    else this.arrive(g, ci, h, payload);
  }

  private arrive(g: Group, ci: number, h: FragHeader, payload: Buffer): void {
    if (g.failed) return;
    const key = h.seq * 2 ** 21 + h.frag;
    let p = g.inflight.get(key);
    if (p === undefined) {
      if (g.inflight.size >= g.slots) {
        this.failGroup(g, `aggregation group ${g.id}: a member exceeded the credit window of ${g.slots} slots at AN ${this.o.id}`, null, true);
        return;
      }
      p = {
        op: h.op, dtype: h.dtype, root: h.root, bytes: payload.length, parts: new Array<Buffer | undefined>(g.children.length),
        arrived: 0, stamp: 0,
      };
      g.inflight.set(key, p);
    } else if (p.op !== h.op || p.dtype !== h.dtype || p.root !== h.root || p.bytes !== payload.length) {
      this.failGroup(g, `aggregation group ${g.id}: members disagree on operation ${h.seq} ` +
        `(op ${p.op}/${h.op}, type ${p.dtype}/${h.dtype}, root ${p.root}/${h.root}, ${p.bytes}/${payload.length} bytes in fragment ${h.frag})`, null, true);
      return;
    }
    if (p.parts[ci] !== undefined) {
      this.failGroup(g, `aggregation group ${g.id}: fragment ${h.frag} of operation ${h.seq} arrived twice from child ${ci} at AN ${this.o.id}`, null, true);
      return;
    }
    p.parts[ci] = payload;
    p.stamp = laterStamp(p.stamp, h.stamp);
    if (++p.arrived < g.children.length) return;
    g.inflight.delete(key);
    this.counters.reduced++;
    g.reduced++;
    // Fixed order, right to left: acc = c[n-1]; acc = c[i] ⊕ acc. An aligned copy, so the
    // kernels run on typed views (socket chunks are not aligned).
    const n = g.children.length;
    const acc = Buffer.from(new Uint8Array(p.bytes));
    acc.set(p.parts[n - 1]!);
    for (let i = n - 2; i >= 0; i--) reduceRegions(p.op, p.dtype as never, p.parts[i]!, acc);
    if (g.hasParent) {
      if (this.parent === null) {
        this.failGroup(g, `AN ${this.o.id} has no link to its parent`, null, true);
        return;
      }
      const header = Buffer.allocUnsafe(FRAG_HEADER_BYTES);
      const stamp = this.stampFor(this.parent, p.stamp, FRAG_HEADER_BYTES + p.bytes, this.timing?.switchHop ?? 0);
      writeFragHeader(header, { ...h, member: FROM_AN, stamp });
      this.parent.send(FrameType.Frag, [header, acc]);
    } else {
      this.down(g, h.seq, h.frag, p.root, acc, p.stamp);
    }
  }

  /**
   * The stamp of a frame of `bytes` sent on `conn` no earlier than tick `at` (0: now) over a hop
   * of `hop` ticks; 0 without the emulated network as time.
   */
  private stampFor(conn: AggConn, at: number, bytes: number, hop: number): number {
    if (this.timing === null) return 0;
    let port = this.ports.get(conn);
    if (port === undefined) {
      port = { busy: 0 };
      this.ports.set(conn, port);
    }
    return this.timing.stamp(port, at, bytes, hop);
  }

  /**
   * Sends a result down: the data toward every child for allreduce, toward the root's child for
   * reduce; each copy stamped from `at`, the result's time (0: none).
   */
  private down(g: Group, seq: number, frag: number, root: number, data: Buffer, at: number): void {
    const t = this.timing;
    const rootChild = root < 0 ? -1 : g.under[root]!;
    for (let ci = 0; ci < g.children.length; ci++) {
      const c = g.children[ci]!;
      const conn = c.kind === 'an' ? this.children.get(c.an) : this.members.get(`${g.job}:${c.node}`);
      if (conn === undefined && c.kind === 'member' && this.departed.has(`${g.job}:${c.node}`)) continue;
      if (conn === undefined) {
        this.failGroup(g, `AN ${this.o.id} has no connection to ${c.kind === 'an' ? `child AN ${c.an}` : `member ${c.member} (node ${c.node})`}`, null, true);
        return;
      }
      const withData = root < 0 || ci === rootChild;
      const header = Buffer.allocUnsafe(RESULT_HEADER_BYTES);
      const hop = t === null ? 0 : c.kind === 'an' ? t.switchHop : t.nodeHop;
      const stamp = this.stampFor(conn, at, RESULT_HEADER_BYTES + (withData ? data.length : 0), hop);
      writeResultHeader(header, g.id, g.epoch, seq, frag, withData ? RESULT_HAS_DATA : 0, root, stamp);
      conn.send(FrameType.Result, withData ? [header, data] : [header]);
    }
  }

  private onResult(body: Buffer): void {
    this.keepHot();
    if (body.length < RESULT_HEADER_BYTES) throw new Error(`RESULT of ${body.length} bytes; expected at least ${RESULT_HEADER_BYTES}`);
    const id = body.readUInt32LE(0);
    const g = this.groups.get(id);
    if (g === undefined || g.epoch !== body.readUInt32LE(4) || g.failed) {
      this.counters.stale++;
      return;
    }
    if (!g.hasParent) throw new Error(`RESULT for group ${id} from the parent, but AN ${this.o.id} is that group's root`);
    const data = body.subarray(RESULT_HEADER_BYTES);
    if (data.length > this.o.payloadPerSlot) throw new Error(`RESULT of ${data.length} payload bytes exceeds the slot size`);
    const root = body.readInt16LE(18);
    if (root < -1 || root >= g.under.length) throw new Error(`RESULT root ${root} out of range for group ${id}`);
    this.down(g, body.readUInt32LE(8), body.readUInt32LE(12), root, data, body.readInt32LE(RESULT_STAMP));
  }

  private onGroupError(body: Buffer, from: AggConn | null, peer?: Peer): void {
    if (body.length < GERROR_HEADER_BYTES) throw new Error(`GERROR of ${body.length} bytes; expected at least ${GERROR_HEADER_BYTES}`);
    const g = this.groups.get(body.readUInt32LE(0));
    if (g === undefined || g.epoch !== body.readUInt32LE(4)) return;
    if (peer?.kind === 'member' && peer.job !== g.job) throw new Error(`GERROR for group ${g.id} from a member of job ${peer.job}`);
    this.failGroup(g, body.subarray(GERROR_HEADER_BYTES).toString('utf8'), from, true);
  }

  /**
   * Fails `g` here: drops its state, sends GERROR to its other neighbours (not `from`), and when
   * `report`, tells the AM (which revokes the group for every member).
   */
  private failGroup(g: Group, reason: string, from: AggConn | null, report: boolean): void {
    if (g.failed) return;
    g.failed = true;
    this.groups.delete(g.id);
    this.counters.groupErrors++;
    this.o.log(`group ${g.id} epoch ${g.epoch} failed: ${reason}`);
    const frame = encodeGroupError(g.id, g.epoch, reason);
    const targets: (AggConn | null | undefined)[] = [g.hasParent ? this.parent : null];
    for (const c of g.children) targets.push(c.kind === 'an' ? this.children.get(c.an) : this.members.get(`${g.job}:${c.node}`));
    for (const t of targets) if (t != null && t !== from) t.send(FrameType.GroupError, [frame]);
    if (report) sendCtrl(this.am, { t: 'group-fault', id: g.id, epoch: g.epoch, reason });
  }
}

function describe(peer: Peer): string {
  return peer.kind === 'an' ? `child AN ${peer.an}` : `node ${peer.node} of job ${peer.job}`;
}
