/**
 * The loopback port: every rank's schedule of a collective run in one thread, on real buffers,
 * through the one interpreter (interpreter.ts), with messages matched in memory. It is what the
 * fast per-algorithm tests run on (test/coll/): no transport, no workers, so a builder's
 * arithmetic and message pattern are checked in milliseconds, and launched jobs are left to
 * the transports, executors and faults. coll/loopback.ts plans the calls with the library's
 * own planning and selection.
 *
 * Matching works as in the transports (host.ts). A message is keyed by (context, source,
 * destination, tag), and the tag is the instance's sequence number times 16 plus the action's
 * sub-tag. Under one key, sends and receives pair in the order they were posted (MPI's
 * non-overtaking rule):
 *
 *     channel (ctx, src -> dst, tag):   sends [s0, s1, ...]   receives [r0, r1, ...]
 *
 * At most one of the two queues is non-empty: a new send first takes the head receive, a new
 * receive the head send.
 *
 * Protocols: a message of at most `eagerBytes` is copied when it is posted, and its send
 * completes at once (the eager path). A larger message stays in its sender's buffer until a
 * receive takes it, and its send completes then (rendezvous). Completions on the far side of a
 * match are queued and delivered by `deliver()`, either first in first out or in an order drawn
 * from a seeded stream, so DAG schedules run under many interleavings.
 *
 * It is stricter than a transport, because it exists to find builder bugs:
 * - a message must fill its receive exactly (a transport accepts a shorter one);
 * - no action may touch a region that a message in flight uses. A region must not be written
 *   while a send from it is pending (rendezvous reads it at the match), and must not be read or
 *   written while a receive into it is pending. These hazards are checked on the actual memory,
 *   so SEND and RECV aliasing under IN_PLACE counts;
 * - every run must finish and every message must be received; otherwise `verify()` names who
 *   waits for what.
 *
 * Core code: no node:* imports.
 */
import { NbcInternalError } from '../errors.js';
import type { DType } from '../ops/dtype.js';
import { reduceRegions } from '../ops/regions.js';
import { Interpreter, Run, type Port } from './interpreter.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, RECV, SEND, TMP, type Schedule } from './schedule.js';

export interface LoopbackOptions {
  /**
   * Messages of at most this many bytes travel eagerly (copied when posted); larger ones by
   * rendezvous (read from the sender's buffer when matched). The default is 0: every message
   * with data goes by rendezvous, which catches the most hazards.
   */
  eagerBytes?: number;
  /**
   * Picks which queued completion is delivered next: a number in [0, 1) per pick (a seeded
   * stream such as bench/prng.ts's, so a failing order can be replayed). Without it, first in,
   * first out.
   */
  random?: () => number;
}

/** The memory one run addresses: what its schedule calls SEND, RECV and TMP. */
export interface LoopbackBuffers {
  send: Uint8Array;
  recv: Uint8Array;
  tmp: Uint8Array;
}

/** One rank's start of one collective on the loopback. */
export class LoopbackRun extends Run {
  /** Sends and receives that are posted and not yet complete, by action number. */
  readonly inFlight = new Set<number>();
  done = false;
  error: Error | null = null;

  constructor(sched: Schedule, readonly rank: number, readonly ctx: number, readonly tag: number, readonly bufs: LoopbackBuffers) {
    super(sched);
  }
}

interface Posted {
  run: LoopbackRun;
  i: number;
  /** A send's bytes, copied when posted (eager), or null while they are still in the sender's buffer. */
  data: Uint8Array | null;
}

interface Channel {
  sends: Posted[];
  recvs: Posted[];
}

const BUF_NAMES = ['SEND', 'RECV', 'TMP'];

export class LoopbackPort implements Port<LoopbackRun> {
  private readonly interp = new Interpreter<LoopbackRun>(this);
  private readonly channels = new Map<string, Channel>();
  /** Actions completed by the far side of a match, not yet told to their runs. */
  private readonly queued: Posted[] = [];
  private readonly random: (() => number) | null;
  private readonly eagerBytes: number;
  readonly runs: LoopbackRun[] = [];
  /** The builder bugs found so far (size mismatches, hazards, bad peers), in the order found. */
  readonly problems: string[] = [];

  /** @param size the ranks of the communicator the schedules address */
  constructor(readonly size: number, opts: LoopbackOptions = {}) {
    this.eagerBytes = opts.eagerBytes ?? 0;
    this.random = opts.random ?? null;
  }

  /** Starts `sched` as `rank`'s part of the instance tagged `tag`; round 0 is issued before this returns. */
  start(sched: Schedule, rank: number, ctx: number, tag: number, bufs: LoopbackBuffers): LoopbackRun {
    const ends = sched.extents();
    if (ends[SEND]! > bufs.send.byteLength || ends[RECV]! > bufs.recv.byteLength || ends[TMP]! > bufs.tmp.byteLength) {
      throw new NbcInternalError(`rank ${rank}: schedule ${sched.algorithm} addresses ${ends[SEND]}/${ends[RECV]}/${ends[TMP]} bytes of send/recv/tmp, which have ${bufs.send.byteLength}/${bufs.recv.byteLength}/${bufs.tmp.byteLength}`);
    }
    const run = new LoopbackRun(sched, rank, ctx, tag, bufs);
    this.runs.push(run);
    this.interp.start(run);
    return run;
  }

  /** Delivers queued completions (and whatever they set off) until none is left. */
  deliver(): void {
    const q = this.queued;
    while (q.length > 0) {
      let p: Posted;
      if (this.random === null) {
        p = q.shift()!;
      } else {
        const k = Math.floor(this.random() * q.length);
        p = q[k]!;
        q[k] = q[q.length - 1]!;
        q.pop();
      }
      this.complete(p);
    }
  }

  /**
   * Delivers everything, then throws NbcInternalError if a builder bug showed: a problem found
   * on the way, a run that cannot finish (a deadlock: who waits for what), a message nobody
   * received, or a run that failed.
   */
  verify(): void {
    this.deliver();
    const lines = [...this.problems];
    for (const run of this.runs) {
      if (run.done) continue;
      const waits = [...run.inFlight].map((i) => this.describe(run, i)).join('; ');
      lines.push(`rank ${run.rank} ${run.sched.algorithm} never finished: ${run.remaining} actions left, in flight: ${waits || 'nothing'}`);
    }
    for (const [key, ch] of this.channels) {
      for (const m of ch.sends) lines.push(`message ${key} from ${this.describe(m.run, m.i)} was never received`);
    }
    for (const run of this.runs) {
      if (run.error !== null) lines.push(`rank ${run.rank} ${run.sched.algorithm} failed: ${run.error.message}`);
    }
    if (lines.length > 0) {
      const more = lines.length > 12 ? `\n  ... and ${lines.length - 12} more` : '';
      throw new NbcInternalError(`loopback: ${lines.length} problem(s):\n  ${lines.slice(0, 12).join('\n  ')}${more}`);
    }
  }

  // ---- the port --------------------------------------------------------------------------

  send(run: LoopbackRun, i: number): boolean {
    const s = run.sched;
    this.check(run, i, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!, false);
    const ch = this.channel(run, i, run.rank, s.peer[i]!);
    if (ch === null) return true;
    const r = ch.recvs.shift();
    if (r !== undefined) {
      this.transfer(this.view(run, i), run, i, r);
      this.queued.push(r);
      return true;
    }
    const eager = s.bytesA[i]! <= this.eagerBytes;
    ch.sends.push({ run, i, data: eager ? this.view(run, i).slice() : null });
    if (eager) return true;
    run.inFlight.add(i);
    return false;
  }

  recv(run: LoopbackRun, i: number): boolean {
    const s = run.sched;
    this.check(run, i, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!, true);
    const ch = this.channel(run, i, s.peer[i]!, run.rank);
    if (ch === null) return true;
    const m = ch.sends.shift();
    if (m !== undefined) {
      this.transfer(m.data ?? this.view(m.run, m.i), m.run, m.i, { run, i, data: null });
      if (m.data === null) this.queued.push(m);
      return true;
    }
    ch.recvs.push({ run, i, data: null });
    run.inFlight.add(i);
    return false;
  }

  reduce(run: LoopbackRun, i: number): void {
    const s = run.sched;
    this.check(run, i, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!, false);
    this.check(run, i, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!, true);
    reduceRegions(s.peer[i]!, s.dtype[i]! as DType, this.view(run, i), this.view(run, i, 1));
  }

  copy(run: LoopbackRun, i: number): void {
    const s = run.sched;
    this.check(run, i, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!, false);
    this.check(run, i, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!, true);
    // set() copies through a clone when both views share memory, as memmove would.
    this.view(run, i, 1).set(this.view(run, i));
  }

  finished(run: LoopbackRun, error: Error | null): void {
    run.done = true;
    run.error = error;
  }

  // ---- matching and checks ---------------------------------------------------------------

  /** The channel of a message from `src` to `dst`, or null (a problem noted) when a peer is out of range. */
  private channel(run: LoopbackRun, i: number, src: number, dst: number): Channel | null {
    if (src < 0 || src >= this.size || dst < 0 || dst >= this.size) {
      this.problems.push(`${this.describe(run, i)}: peer out of range 0..${this.size - 1}`);
      return null;
    }
    const key = `ctx ${run.ctx} ${src}->${dst} tag ${run.tag + run.sched.sub[i]!}`;
    let ch = this.channels.get(key);
    if (ch === undefined) {
      ch = { sends: [], recvs: [] };
      this.channels.set(key, ch);
    }
    return ch;
  }

  /** Copies a matched message into its receive, noting a size mismatch. */
  private transfer(data: Uint8Array, from: LoopbackRun, i: number, to: Posted): void {
    const into = this.view(to.run, to.i);
    if (data.byteLength !== into.byteLength) {
      this.problems.push(`${this.describe(to.run, to.i)} matched ${this.describe(from, i)}: ${data.byteLength} B into a receive of ${into.byteLength} B`);
    }
    into.set(data.byteLength <= into.byteLength ? data : data.subarray(0, into.byteLength));
  }

  private complete(p: Posted): void {
    p.run.inFlight.delete(p.i);
    p.run.settled(p.i, null);
  }

  /**
   * Notes a hazard: action i reads (or, `write`, writes) bytes [off, off + bytes) of buffer
   * `buf` while a message in flight uses them. Reading what a pending send reads is fine.
   */
  private check(run: LoopbackRun, i: number, buf: number, off: number, bytes: number, write: boolean): void {
    if (bytes === 0 || run.inFlight.size === 0) return;
    const mine = this.memory(run, buf);
    const start = mine.byteOffset + off;
    const s = run.sched;
    for (const j of run.inFlight) {
      if (!write && s.kind[j] === A_SEND) continue;
      const theirs = this.memory(run, s.bufA[j]!);
      const at = theirs.byteOffset + s.offA[j]!;
      if (theirs.buffer === mine.buffer && at < start + bytes && start < at + s.bytesA[j]!) {
        this.problems.push(`${this.describe(run, i)} ${write ? 'writes' : 'reads'} ${BUF_NAMES[buf]}[${off}:+${bytes}] while ${this.describe(run, j)} is in flight`);
      }
    }
  }

  private memory(run: LoopbackRun, buf: number): Uint8Array {
    return buf === SEND ? run.bufs.send : buf === RECV ? run.bufs.recv : run.bufs.tmp;
  }

  /** Region A (b = 0) or B (b = 1) of action i. */
  private view(run: LoopbackRun, i: number, b: 0 | 1 = 0): Uint8Array {
    const s = run.sched;
    const off = b === 0 ? s.offA[i]! : s.offB[i]!;
    return this.memory(run, b === 0 ? s.bufA[i]! : s.bufB[i]!).subarray(off, off + s.bytesA[i]!);
  }

  /** "rank 2 allreduce/ring #7 recv TMP[64:+16] <- rank 1 (tag 3)", for problems. */
  private describe(run: LoopbackRun, i: number): string {
    const s = run.sched;
    const k = s.kind[i]!;
    const region = `${BUF_NAMES[s.bufA[i]!]}[${s.offA[i]}:+${s.bytesA[i]}]`;
    let what: string;
    if (k === A_SEND) what = `send ${region} -> rank ${s.peer[i]} (tag ${run.tag + s.sub[i]!})`;
    else if (k === A_RECV) what = `recv ${region} <- rank ${s.peer[i]} (tag ${run.tag + s.sub[i]!})`;
    else if (k === A_REDUCE) what = `reduce ${region} into ${BUF_NAMES[s.bufB[i]!]}[${s.offB[i]}:+${s.bytesA[i]}]`;
    else if (k === A_COPY) what = `copy ${region} -> ${BUF_NAMES[s.bufB[i]!]}[${s.offB[i]}:+${s.bytesA[i]}]`;
    else what = `action kind ${k}`;
    return `rank ${run.rank} ${s.algorithm} #${i} ${what}`;
  }
}
