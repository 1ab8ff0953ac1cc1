/**
 * The aggregation manager (AM): the fabric's control plane, a process of its own.
 *
 * It starts the daemons (ANs) of a `radix`-ary tree of `levels` levels (or, with `adopt`, waits
 * for those of a previous AM to redial it), tells each where its parent listens, heartbeats
 * them, registers jobs (their keys go to every AN, so members can prove them to their leaf),
 * forms groups collectively, places and trims them, reserves slots, and revokes groups on any
 * fault. It is not on the data path.
 *
 * Connections to the AM prove the fabric secret (they arrive through the one accept path,
 * net/listener.ts, as net/conn.ts AuthConns); the first CTRL frame says who speaks: `an-hello`
 * (a daemon), `hello-job` (a member node of a job), `hello-admin` (status, stop). Where a group
 * goes in the tree is placement.ts's.
 *
 * Group formation is one decision per (job, key, round): every member's n-th join of a key is
 * round n. The decision (a group, or a refusal with its reason) is made once, when the last
 * member arrives or the join deadline passes, sent to every member that joined, and kept for
 * a while so a member arriving late gets the same answer rather than starting a new round.
 *
 * Reservations are leases held by the members' AM connections: a member's connection that
 * closes revokes its groups and releases their slots at once.
 */
import { Buffer } from 'node:buffer';
import { spawn, type ChildProcess } from 'node:child_process';
import type { LinkEmulation } from '../net/emulate.js';
import { AuthListener } from '../net/listener.js';
import type { WireModel } from '../p2p/wire.js';
import { sendCtrl, type AggConn } from './conn.js';
import { groupConfig, liveLeaf, trimToMembers } from './placement.js';
import { killQuietly, waitGone } from './procs.js';
import {
  anCount, decodeCtrl, defaultLeaf, FrameType, levelOf, MAX_BODY, MAX_JOB_INDEX, MAX_NODE_ID, num, parentOf, str,
  type Ctrl,
} from './wire.js';

/** Where the CLI and tests have always found them. */
export { isRunning, killQuietly, waitGone } from './procs.js';

export interface ManagerOptions {
  radix: number;
  levels: number;
  payloadPerSlot: number;
  slotsPerAn: number;
  jobQuotaSlots: number;
  listenHost: string;
  port: number;
  /** NBC_WIRE=queue: the daemons delay what they send in a timer queue (DaemonOptions.link). */
  link?: LinkEmulation;
  /** The emulated network as time: the daemons stamp what they send (DaemonOptions.wire). */
  wire?: WireModel;
  testDelayUs?: number;
  /** The daemons' DaemonOptions.spinUs. */
  spinUs?: number;
  orphanSeconds: number;
  /** Die with the parent (stdin closes); daemons die with the AM. */
  private: boolean;
  /** Start no daemons: wait for those of a previous AM to register. */
  adopt: boolean;
  /** Path of daemon-main.js. */
  daemonMain: string;
}

export const HEARTBEAT_MS = 500;
export const DEAD_AFTER_MS = 2000;
export const DEFAULT_GROUP_SLOTS = 8;
/** How long the AM waits for every AN of a new group to confirm its configuration. */
const GROUP_ACK_MS = 3000;
/** How long a decided round's answer is kept for late members. */
const DECISION_KEEP_MS = 120_000;

interface An {
  id: number;
  level: number;
  conn: AggConn | null;
  host: string;
  port: number;
  pid: number;
  alive: boolean;
  registered: boolean;
  parentLinked: boolean;
  lastPong: number;
  pingN: number;
  slotsUsed: number;
  counters: Record<string, number>;
  child: ChildProcess | null;
}

interface Job {
  index: number;
  id: string;
  key: string;
  conns: Set<ClientConn>;
  /** AN id -> slots this job holds there. */
  held: Map<number, number>;
}

interface ClientConn {
  conn: AggConn;
  job: Job;
  node: number;
}

interface Member {
  index: number;
  node: number;
  client: ClientConn;
  an: number;
}

interface Group {
  id: number;
  epoch: number;
  job: Job;
  key: string;
  members: Member[];
  root: number;
  ans: number[];
  slots: number;
  state: 'creating' | 'live' | 'ended';
  awaiting: Set<number>;
  left: Set<number>;
  ackTimer: NodeJS.Timeout | null;
  onReady: ((refusal: string | null) => void) | null;
  created: number;
  /** Fragments reduced at the group's root AN (from its heartbeat answers). */
  ops: number;
}

interface Round {
  key: string;
  round: number;
  count: number;
  want: number;
  joined: Map<number, ClientConn>;
  timer: NodeJS.Timeout | null;
  answer: Ctrl | null;
  decidedAt: number;
}

export class Manager {
  readonly ans: An[] = [];
  private readonly jobs = new Map<string, Job>();
  private readonly jobsByIndex = new Map<number, Job>();
  private readonly groups = new Map<number, Group>();
  private readonly rounds = new Map<string, Round>();
  private readonly epochs = new Map<string, number>();
  private nextGroupId: number;
  private heartbeat: NodeJS.Timeout | null = null;
  private stopping = false;
  private readyResolve: (() => void) | null = null;
  private readonly counters = { authRejections: 0, badFrames: 0, groupsCreated: 0, refusals: 0, revocations: 0 };
  port = 0;
  /** The accept path: handshakes with the fabric secret, and the rejection log. */
  private readonly listener: AuthListener;

  constructor(private readonly o: ManagerOptions, private readonly secret: Buffer, private readonly log: (line: string) => void) {
    this.listener = new AuthListener({
      secret, host: o.listenHost, port: o.port, maxBody: MAX_BODY, log, rejectPrefix: '', errorPrefix: 'listener error: ',
      onConnection: (conn) => this.accept(conn),
      onRejected: () => {
        this.counters.authRejections++;
      },
    });
    // Group ids start at a random point, so that an id of a previous AM's group (a fragment
    // still in flight when it died) does not match a group of this one.
    this.nextGroupId = 1 + Math.floor(Math.random() * 0x3fff_ffff);
    const n = anCount(o);
    for (let id = 0; id < n; id++) {
      this.ans.push({
        id, level: levelOf(o.radix, id), conn: null, host: '', port: 0, pid: 0, alive: false, registered: false,
        parentLinked: id === 0, lastPong: 0, pingN: 0, slotsUsed: 0, counters: {}, child: null,
      });
    }
  }

  /** Listens, starts (or awaits) the daemons; resolves once all registered and linked. */
  async start(): Promise<void> {
    this.port = (await this.listener.listen()).port;
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    const ready = new Promise<void>((resolve) => {
      this.readyResolve = resolve;
    });
    if (!this.o.adopt) for (const an of this.ans) this.spawnDaemon(an);
    this.checkReady();
    await ready;
  }

  private spawnDaemon(an: An): void {
    const config = {
      id: an.id, radix: this.o.radix, levels: this.o.levels, payloadPerSlot: this.o.payloadPerSlot,
      manager: { host: this.o.listenHost, port: this.port }, listenHost: this.o.listenHost, link: this.o.link, wire: this.o.wire,
      testDelayUs: this.o.testDelayUs, orphanSeconds: this.o.orphanSeconds, spinUs: this.o.spinUs,
    };
    const args = [this.o.daemonMain, JSON.stringify(config)];
    if (this.o.private) args.push('--private');
    const child = spawn(process.execPath, args, {
      stdio: [this.o.private ? 'pipe' : 'ignore', 'ignore', 'inherit'],
      env: { ...process.env, NBC_AGG_SECRET: this.secret.toString('hex') },
    });
    an.child = child;
    an.pid = child.pid ?? 0;
    child.on('exit', (code, signal) => {
      an.child = null;
      if (!this.stopping) this.log(`AN ${an.id} (pid ${an.pid}) exited (${signal ?? `code ${code}`})`);
    });
    child.on('error', (err) => this.log(`cannot start AN ${an.id}: ${err.message}`));
  }

  private checkReady(): void {
    if (this.readyResolve === null) return;
    if (this.ans.every((a) => a.alive && a.parentLinked)) {
      const r = this.readyResolve;
      this.readyResolve = null;
      r();
    }
  }

  /** Pids of the daemons (0 for one never seen). */
  anPids(): number[] {
    return this.ans.map((a) => a.pid);
  }

  // ---- connections ------------------------------------------------------------------------

  /** An authenticated connection: whose it is, the first CTRL frame says. */
  private accept(conn: AggConn): void {
    if (this.stopping) {
      conn.close('manager stopping');
      return;
    }
    const remote = conn.remote;
    // Until the hello, the connection is nobody's.
    let role: ((type: number, body: Buffer) => void) | null = null;
    let onClose: (reason: string) => void = () => {};
    conn.start({
      onFrame: (type, body) => {
        if (role !== null) {
          role(type, body);
          return;
        }
        const m = ctrlOf(type, body);
        if (m.t === 'an-hello') {
          const an = this.onAnHello(conn, m);
          role = (t, b) => this.onAnFrame(an, conn, t, b);
          onClose = (reason) => this.onAnLost(an, conn, reason);
        } else if (m.t === 'hello-job') {
          const client = this.onJobHello(conn, m);
          if (client === null) return;
          role = (t, b) => this.onClientFrame(client, t, b);
          onClose = (reason) => this.onClientLost(client, reason);
        } else if (m.t === 'hello-admin') {
          role = (t, b) => this.onAdminFrame(conn, t, b);
        } else {
          throw new Error(`first control message is '${m.t}'; expected an-hello, hello-job or hello-admin`);
        }
      },
      onClose: (reason) => {
        if (reason.startsWith('bad frame')) {
          this.counters.badFrames++;
          this.log(`dropped connection from ${remote}: ${reason}`);
        }
        onClose(reason);
      },
    });
  }

  // ---- daemons ----------------------------------------------------------------------------

  private onAnHello(conn: AggConn, m: Ctrl): An {
    const id = num(m, 'id', 0, this.ans.length - 1);
    const an = this.ans[id]!;
    if (num(m, 'radix') !== this.o.radix || num(m, 'levels') !== this.o.levels || num(m, 'payload') !== this.o.payloadPerSlot) {
      throw new Error(`AN ${id} has radix ${String(m.radix)}, levels ${String(m.levels)}, payload ${String(m.payload)}; ` +
        `this fabric has radix ${this.o.radix}, levels ${this.o.levels}, payload ${this.o.payloadPerSlot}`);
    }
    an.conn?.close('replaced by a new registration');
    an.conn = conn;
    an.host = str(m, 'host', 256);
    an.port = num(m, 'port', 1, 65535);
    an.pid = num(m, 'pid');
    an.alive = true;
    an.registered = true;
    an.lastPong = performance.now();
    an.parentLinked = id === 0 || m.parentLinked === true;
    const parent = parentOf(this.o.radix, id);
    const p = parent === null ? null : this.ans[parent]!;
    sendCtrl(conn, {
      t: 'welcome',
      parent: p !== null && p.alive ? { host: p.host, port: p.port } : null,
      jobs: [...this.jobs.values()].map((j) => ({ index: j.index, key: j.key })),
    });
    // Children that registered before this AN learn where it is now.
    for (let c = id * this.o.radix + 1; c <= id * this.o.radix + this.o.radix && c < this.ans.length; c++) {
      sendCtrl(this.ans[c]!.conn, { t: 'parent', host: an.host, port: an.port });
    }
    this.log(`AN ${id} (level ${an.level}, pid ${an.pid}) registered at ${an.host}:${an.port}`);
    this.checkReady();
    return an;
  }

  private onAnFrame(an: An, conn: AggConn, type: number, body: Buffer): void {
    const m = ctrlOf(type, body);
    switch (m.t) {
      case 'pong':
        an.lastPong = performance.now();
        if (typeof m.counters === 'object' && m.counters !== null) an.counters = m.counters as Record<string, number>;
        if (typeof m.rootFragments === 'object' && m.rootFragments !== null) {
          for (const [id, n] of Object.entries(m.rootFragments as Record<string, unknown>)) {
            const g = this.groups.get(Number(id));
            if (g !== undefined && g.root === an.id && typeof n === 'number') g.ops = n;
          }
        }
        return;
      case 'parent-up':
        an.parentLinked = true;
        this.checkReady();
        return;
      case 'parent-down':
        an.parentLinked = false;
        return;
      case 'group-ok': {
        const g = this.groups.get(num(m, 'id'));
        if (g !== undefined && g.state === 'creating') {
          g.awaiting.delete(an.id);
          if (g.awaiting.size === 0) g.onReady?.(null);
        }
        return;
      }
      case 'group-fault': {
        const g = this.groups.get(num(m, 'id'));
        if (g !== undefined && g.epoch === num(m, 'epoch')) this.endGroup(g, str(m, 'reason'), true);
        return;
      }
      case 'rejected':
        // Sent by daemons of earlier versions: the AN logs its rejections itself and its
        // counters come with every heartbeat answer, so a second line here would log each
        // rejected connection twice.
        return;
      default:
        throw new Error(`unknown control message '${m.t}' from AN ${an.id} at ${conn.remote}`);
    }
  }

  private onAnLost(an: An, conn: AggConn, reason: string): void {
    if (an.conn !== conn) return;
    this.markDead(an, `connection to the aggregation manager lost (${reason})`);
  }

  private markDead(an: An, why: string): void {
    if (!an.alive) return;
    an.alive = false;
    const conn = an.conn;
    an.conn = null;
    conn?.close(why);
    if (this.stopping) return;
    this.log(`AN ${an.id} is dead: ${why}`);
    for (const g of [...this.groups.values()]) {
      if (g.ans.includes(an.id)) this.endGroup(g, `AN ${an.id} failed: ${why}`, true);
    }
  }

  private beat(): void {
    const now = performance.now();
    for (const an of this.ans) {
      if (!an.alive || an.conn === null) continue;
      if (now - an.lastPong > DEAD_AFTER_MS) {
        this.markDead(an, `no heartbeat answer for ${Math.round(now - an.lastPong)} ms`);
        continue;
      }
      sendCtrl(an.conn, { t: 'ping', n: ++an.pingN });
    }
    for (const [k, r] of this.rounds) if (r.answer !== null && now - r.decidedAt > DECISION_KEEP_MS) this.rounds.delete(k);
  }

  // ---- jobs -------------------------------------------------------------------------------

  private onJobHello(conn: AggConn, m: Ctrl): ClientConn | null {
    const jobId = str(m, 'job', 200);
    const key = str(m, 'key', 64);
    const node = num(m, 'node', 0, MAX_NODE_ID);
    if (!/^[0-9a-f]{64}$/.test(key)) throw new Error('job key is not 64 lowercase hex digits');
    let job = this.jobs.get(jobId);
    if (job !== undefined && job.key !== key) {
      sendCtrl(conn, { t: 'refused', reason: `job '${jobId}' is registered with a different key` });
      conn.finish();
      return null;
    }
    if (job === undefined) {
      let index = 1;
      while (this.jobsByIndex.has(index) && index <= MAX_JOB_INDEX) index++;
      if (index > MAX_JOB_INDEX) {
        sendCtrl(conn, { t: 'refused', reason: `the fabric serves ${MAX_JOB_INDEX} jobs already` });
        conn.finish();
        return null;
      }
      job = { index, id: jobId, key, conns: new Set(), held: new Map() };
      this.jobs.set(jobId, job);
      this.jobsByIndex.set(index, job);
      for (const an of this.ans) sendCtrl(an.conn, { t: 'job', index, key });
      this.log(`job '${jobId}' registered as job ${index}`);
    }
    const client: ClientConn = { conn, job, node };
    job.conns.add(client);
    sendCtrl(conn, {
      t: 'welcome', jobIndex: job.index, radix: this.o.radix, levels: this.o.levels, payload: this.o.payloadPerSlot,
      leaf: defaultLeaf(this.o, node),
    });
    return client;
  }

  private onClientFrame(client: ClientConn, type: number, body: Buffer): void {
    const m = ctrlOf(type, body);
    switch (m.t) {
      case 'join':
        this.onJoin(client, m);
        return;
      case 'leave': {
        const g = this.groups.get(num(m, 'id'));
        if (g === undefined || g.job !== client.job) return;
        const member = g.members.find((x) => x.client === client);
        if (member === undefined) return;
        g.left.add(member.index);
        if (g.left.size === g.members.length) this.endGroup(g, 'every member left', false);
        return;
      }
      case 'abort': {
        const g = this.groups.get(num(m, 'id'));
        if (g === undefined || g.job !== client.job || !g.members.some((x) => x.client === client)) return;
        this.endGroup(g, str(m, 'reason'), true);
        return;
      }
      default:
        throw new Error(`unknown control message '${m.t}' from node ${client.node} of job '${client.job.id}'`);
    }
  }

  private onClientLost(client: ClientConn, reason: string): void {
    const job = client.job;
    job.conns.delete(client);
    for (const g of [...this.groups.values()]) {
      const m = g.members.find((x) => x.client === client);
      if (m !== undefined && !g.left.has(m.index)) {
        this.endGroup(g, `member ${m.index} (node ${m.node}) of job '${job.id}' lost its connection to the aggregation manager (${reason})`, true);
      } else if (m !== undefined) {
        // It had left; its lease on the rest ends with it.
        g.left.add(m.index);
        if (g.left.size === g.members.length) this.endGroup(g, 'every member left', false);
      }
    }
    for (const r of this.rounds.values()) {
      for (const [i, c] of r.joined) if (c === client && r.answer === null) r.joined.delete(i);
    }
    if (job.conns.size === 0) {
      this.jobs.delete(job.id);
      this.jobsByIndex.delete(job.index);
      for (const [k, r] of this.rounds) if (k.startsWith(`${job.index}\0`)) { if (r.timer) clearTimeout(r.timer); this.rounds.delete(k); }
      for (const an of this.ans) sendCtrl(an.conn, { t: 'job-gone', index: job.index });
      this.log(`job '${job.id}' (job ${job.index}) has no connection left; released`);
    }
  }

  private onJoin(client: ClientConn, m: Ctrl): void {
    const key = str(m, 'key', 200);
    const round = num(m, 'round', 1);
    const index = num(m, 'index', 0, 0xfffe);
    const count = num(m, 'count', 1, 0xffff);
    const want = m.slots === undefined ? DEFAULT_GROUP_SLOTS : num(m, 'slots', 1, 1 << 16);
    const timeoutMs = m.timeoutMs === undefined ? 5000 : num(m, 'timeoutMs', 1, 600_000);
    const rk = `${client.job.index}\0${key}\0${round}`;
    let r = this.rounds.get(rk);
    if (r === undefined) {
      r = { key, round, count, want, joined: new Map(), timer: null, answer: null, decidedAt: 0 };
      this.rounds.set(rk, r);
      const rr = r;
      r.timer = setTimeout(() => {
        const missing: number[] = [];
        for (let i = 0; i < rr.count; i++) if (!rr.joined.has(i)) missing.push(i);
        this.decide(rr, `member${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${rr.count} did not join '${key}' within ${timeoutMs} ms`);
      }, timeoutMs);
    }
    const reply = (answer: Ctrl): void => sendCtrl(client.conn, { ...answer, key, round });
    if (r.answer !== null) {
      reply(r.answer);
      return;
    }
    if (count !== r.count) {
      this.decide(r, `members disagree on the member count of '${key}' (${r.count} and ${count})`, client);
      return;
    }
    if (index >= count) {
      this.decide(r, `member index ${index} is out of range for ${count} members`, client);
      return;
    }
    if (r.joined.has(index)) {
      this.decide(r, `member index ${index} of '${key}' joined twice (nodes ${r.joined.get(index)!.node} and ${client.node})`, client);
      return;
    }
    r.joined.set(index, client);
    r.want = Math.max(r.want, want);
    if (r.joined.size === r.count) {
      if (r.timer !== null) clearTimeout(r.timer);
      r.timer = null;
      this.place(r, client.job);
    }
  }

  /** Sends the refusal to every member of the round (and `extra`), keeps it for late members. */
  private decide(r: Round, refused: string, extra?: ClientConn): void {
    if (r.answer !== null) return;
    if (r.timer !== null) clearTimeout(r.timer);
    r.timer = null;
    r.answer = { t: 'join-result', refused };
    r.decidedAt = performance.now();
    const targets = new Set(r.joined.values());
    if (extra !== undefined) targets.add(extra);
    for (const c of targets) sendCtrl(c.conn, { ...r.answer, key: r.key, round: r.round });
    this.counters.refusals++;
    this.log(`refused group '${r.key}': ${refused}`);
  }

  // ---- placement --------------------------------------------------------------------------

  private place(r: Round, job: Job): void {
    const members: Member[] = [];
    for (let i = 0; i < r.count; i++) {
      const c = r.joined.get(i)!;
      const leaf = liveLeaf(this.o, c.node, (id) => this.ans[id]!.alive);
      if (leaf === null) {
        this.decide(r, 'no leaf AN of the fabric is alive');
        return;
      }
      members.push({ index: i, node: c.node, client: c, an: leaf });
    }
    const { root, ans } = trimToMembers(this.o.radix, members.map((x) => x.an));
    for (const id of ans) {
      const an = this.ans[id]!;
      if (!an.alive) {
        this.decide(r, `AN ${id} on the members' path is dead`);
        return;
      }
      if (an.slotsUsed + r.want > this.o.slotsPerAn) {
        this.decide(r, `capacity exhausted at AN ${id}: ${an.slotsUsed} of ${this.o.slotsPerAn} slots in use, the group needs ${r.want}`);
        return;
      }
      const held = job.held.get(id) ?? 0;
      if (held + r.want > this.o.jobQuotaSlots) {
        this.decide(r, `job quota exceeded at AN ${id}: job '${job.id}' holds ${held} of its ${this.o.jobQuotaSlots} slots there, the group needs ${r.want}`);
        return;
      }
    }
    const ek = `${job.index}\0${r.key}`;
    const epoch = (this.epochs.get(ek) ?? 0) + 1;
    this.epochs.set(ek, epoch);
    let id = this.nextGroupId++;
    if (this.nextGroupId > 0xffff_fff0) this.nextGroupId = 1;
    while (this.groups.has(id)) id = this.nextGroupId++;
    const g: Group = {
      id, epoch, job, key: r.key, members, root, ans, slots: r.want, state: 'creating', awaiting: new Set(ans),
      left: new Set(), ackTimer: null, onReady: null, created: Date.now(), ops: 0,
    };
    this.groups.set(id, g);
    for (const a of ans) {
      this.ans[a]!.slotsUsed += g.slots;
      job.held.set(a, (job.held.get(a) ?? 0) + g.slots);
    }
    g.onReady = (refusal) => {
      g.onReady = null;
      if (g.ackTimer !== null) clearTimeout(g.ackTimer);
      if (refusal !== null) {
        this.endGroup(g, refusal, false);
        this.decide(r, refusal);
        return;
      }
      g.state = 'live';
      this.counters.groupsCreated++;
      this.log(`group ${g.id} epoch ${g.epoch} of job '${job.id}' '${r.key}': ${members.length} members, root AN ${root}, ANs ${ans.join(',')}, ${g.slots} slots`);
      // Each member learns the group and the AN it feeds.
      const answerFor = (mb: Member): Ctrl => {
        const an = this.ans[mb.an]!;
        return {
          t: 'join-result', group: {
            id: g.id, epoch: g.epoch, slots: g.slots, payload: this.o.payloadPerSlot, ans, root,
            an: { id: an.id, host: an.host, port: an.port }, count: members.length,
          },
        };
      };
      r.answer = { t: 'join-result', refused: `group '${r.key}' was already formed; this member is late` };
      r.decidedAt = performance.now();
      if (r.timer !== null) clearTimeout(r.timer);
      for (const mb of members) sendCtrl(mb.client.conn, { ...answerFor(mb), key: r.key, round: r.round });
    };
    g.ackTimer = setTimeout(() => g.onReady?.(`AN(s) ${[...g.awaiting].join(', ')} did not confirm the group within ${GROUP_ACK_MS} ms`), GROUP_ACK_MS);
    for (const a of ans) sendCtrl(this.ans[a]!.conn, groupConfig(this.o.radix, g, a));
  }

  /**
   * Ends a group: releases its slots, tells its ANs; when `revoke`, bumps its epoch and tells
   * every member why (their pending operations fail with that reason).
   */
  private endGroup(g: Group, reason: string, revoke: boolean): void {
    if (g.state === 'ended') return;
    const wasCreating = g.state === 'creating';
    g.state = 'ended';
    this.groups.delete(g.id);
    if (g.ackTimer !== null) clearTimeout(g.ackTimer);
    for (const a of g.ans) {
      this.ans[a]!.slotsUsed -= g.slots;
      const held = (g.job.held.get(a) ?? 0) - g.slots;
      if (held > 0) g.job.held.set(a, held);
      else g.job.held.delete(a);
      sendCtrl(this.ans[a]!.conn, { t: 'group-end', id: g.id });
    }
    if (wasCreating) {
      g.onReady?.(reason);
      return;
    }
    if (revoke) {
      this.counters.revocations++;
      g.epoch++;
      this.log(`revoked group ${g.id} (now epoch ${g.epoch}) of job '${g.job.id}': ${reason}`);
      for (const m of g.members) if (!m.client.conn.closed) sendCtrl(m.client.conn, { t: 'revoke', id: g.id, epoch: g.epoch, reason });
    }
  }

  // ---- admin ------------------------------------------------------------------------------

  private onAdminFrame(conn: AggConn, type: number, body: Buffer): void {
    const m = ctrlOf(type, body);
    if (m.t === 'status') {
      sendCtrl(conn, { t: 'status', ...this.status() });
    } else if (m.t === 'stop') {
      sendCtrl(conn, { t: 'stopping' });
      void this.stop().then(() => process.exit(0));
    } else {
      throw new Error(`unknown admin message '${m.t}'`);
    }
  }

  status(): Record<string, unknown> {
    return {
      manager: { host: this.o.listenHost, port: this.port, pid: process.pid },
      radix: this.o.radix, levels: this.o.levels, payloadPerSlot: this.o.payloadPerSlot, slotsPerAn: this.o.slotsPerAn,
      jobQuotaSlots: this.o.jobQuotaSlots,
      ans: this.ans.map((a) => ({
        id: a.id, level: a.level, host: a.host, port: a.port, pid: a.pid, alive: a.alive, slotsUsed: a.slotsUsed,
        slotsTotal: this.o.slotsPerAn, counters: a.counters,
      })),
      groups: [...this.groups.values()].map((g) => ({
        id: g.id, job: g.job.id, key: g.key, members: g.members.length, rootAn: g.root, ans: g.ans, slots: g.slots,
        epoch: g.epoch, state: g.state, rootFragments: g.ops,
      })),
      jobs: [...this.jobs.values()].map((j) => ({
        id: j.id, index: j.index, nodes: j.conns.size, reservations: Object.fromEntries(j.held),
      })),
      counters: this.counters,
    };
  }

  /** Stops the daemons (shutdown message, then SIGTERM, then SIGKILL) and the listener. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.listener.rejections.flush();
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    for (const an of this.ans) sendCtrl(an.conn, { t: 'shutdown' });
    const pids = this.ans.map((a) => a.pid).filter((p) => p > 0);
    await waitGone(pids, 1500);
    for (const p of pids) killQuietly(p, 'SIGTERM');
    await waitGone(pids, 1500);
    for (const p of pids) killQuietly(p, 'SIGKILL');
    await waitGone(pids, 1000);
    for (const an of this.ans) an.conn?.close('manager stopping');
    void this.listener.close();
  }
}

function ctrlOf(type: number, body: Buffer): Ctrl {
  if (type !== FrameType.Ctrl) throw new Error(`frame type ${type}; expected CTRL (${FrameType.Ctrl})`);
  const m = decodeCtrl(body);
  if (m === null) throw new Error('control frame is not a JSON object with a "t" field');
  return m;
}
