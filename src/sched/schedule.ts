/**
 * The schedule: one rank's part of one collective, as plain data (seeds 001/002, LibNBC).
 *
 * Actions act on symbolic regions `{ buf: SEND | RECV | TMP, offset, bytes }`, never on
 * arrays, so a schedule can be cached per call shape, restarted (persistent collectives),
 * shipped to the node engine (offload) and fed to a simulator. Storage is struct-of-arrays in
 * Int32Arrays: a schedule of thousands of actions is a handful of objects.
 *
 * Execution order: actions are grouped in rounds; round n starts once every action of round
 * n-1 is complete. Within a round actions start in order: sends and receives are posted
 * (non-blocking), copies and reductions run at once. So a reduction of received data belongs
 * in the round after its receive. An action may instead name the actions it depends on
 * (a DAG): it then starts as soon as those completed, which lets rings and pipelines run
 * without artificial rounds.
 */

/** Buffers a region can name. */
export const SEND = 0;
export const RECV = 1;
export const TMP = 2;
export type BufId = typeof SEND | typeof RECV | typeof TMP;
const BUF_NAMES = ['SEND', 'RECV', 'TMP'] as const;

/** Action kinds. */
export const A_SEND = 1;
export const A_RECV = 2;
/** inout = in ⊕ inout, element-wise (in is the left operand). */
export const A_REDUCE = 3;
export const A_COPY = 4;
const KIND_NAMES: Record<number, string> = { [A_SEND]: 'send', [A_RECV]: 'recv', [A_REDUCE]: 'reduce', [A_COPY]: 'copy' };

/** Where a region starts: a buffer and a byte offset in it. */
export interface Place {
  buf: BufId;
  offset: number;
}

export interface Region {
  buf: BufId;
  /** Byte offset in the buffer. */
  offset: number;
  bytes: number;
}

/**
 * An immutable schedule. Field arrays are indexed by action number; rounds[r] is the first
 * action of round r, rounds[nRounds] === nActions.
 */
export class Schedule {
  constructor(
    readonly nActions: number,
    readonly nRounds: number,
    readonly rounds: Int32Array,
    readonly kind: Int8Array,
    /** peer rank (send/recv) in the communicator; op id for reduce; -1 otherwise */
    readonly peer: Int32Array,
    readonly bufA: Int8Array,
    readonly offA: Int32Array,
    readonly bytesA: Int32Array,
    /** second region: reduce inout, copy destination */
    readonly bufB: Int8Array,
    readonly offB: Int32Array,
    /** dtype id of a reduce; element count is bytesA / bytes per element */
    readonly dtype: Int8Array,
    /** send/recv: sub-tag 0..15, distinguishing messages between one pair in one instance */
    readonly sub: Int8Array,
    /** DAG mode: dependencies of action i are deps[depStart[i] .. depStart[i+1]) */
    readonly depStart: Int32Array | null,
    readonly deps: Int32Array | null,
    /** Scratch the schedule needs, in bytes. */
    readonly tmpBytes: number,
    /** Name of the algorithm that built it (for dumps and stats). */
    readonly algorithm: string,
  ) {}

  get isDag(): boolean {
    return this.depStart !== null;
  }

  private ends: Int32Array | null = null;
  private edges: Dependents | null = null;

  /**
   * DAG mode: who waits for whom, inverted once per schedule (MPICH gentran's way), so
   * completing an action releases its dependents without rescanning the schedule.
   */
  dependents(): Dependents {
    if (this.edges === null) {
      const n = this.nActions;
      const count = new Int32Array(n);
      const start = new Int32Array(n + 1);
      const depStart = this.depStart;
      const deps = this.deps;
      if (depStart !== null && deps !== null) {
        for (let i = 0; i < n; i++) {
          count[i] = depStart[i + 1]! - depStart[i]!;
          for (let d = depStart[i]!; d < depStart[i + 1]!; d++) start[deps[d]! + 1]!++;
        }
        for (let i = 0; i < n; i++) start[i + 1]! += start[i]!;
        const list = new Int32Array(start[n]!);
        const fill = start.slice(0, n);
        for (let i = 0; i < n; i++) {
          for (let d = depStart[i]!; d < depStart[i + 1]!; d++) list[fill[deps[d]!]!++] = i;
        }
        this.edges = { count, start, list };
      } else {
        this.edges = { count, start, list: new Int32Array(0) };
      }
    }
    return this.edges;
  }

  /**
   * The bytes of SEND, RECV and TMP the schedule addresses (one past the last byte of each),
   * so an executor checks its buffers once per start instead of once per action.
   */
  extents(): Int32Array {
    if (this.ends === null) {
      const e = new Int32Array(3);
      for (let i = 0; i < this.nActions; i++) {
        const a = this.bufA[i]!;
        if (a >= 0) e[a] = Math.max(e[a]!, this.offA[i]! + this.bytesA[i]!);
        const kind = this.kind[i]!;
        const b = this.bufB[i]!;
        if ((kind === A_REDUCE || kind === A_COPY) && b >= 0) e[b] = Math.max(e[b]!, this.offB[i]! + this.bytesA[i]!);
      }
      this.ends = e;
    }
    return this.ends;
  }

  /** Human-readable dump (NBC_SCHED_DUMP=1 prints every schedule built). */
  toString(opName: (id: number) => string = String, dtypeName: (id: number) => string = String): string {
    const lines = [`schedule ${this.algorithm}: ${this.nActions} actions, ${this.nRounds} rounds, tmp ${this.tmpBytes} B`];
    const region = (b: number, off: number, bytes: number): string => `${BUF_NAMES[b]}[${off}:+${bytes}]`;
    for (let r = 0; r < this.nRounds; r++) {
      if (!this.isDag) lines.push(`  round ${r}`);
      for (let i = this.rounds[r]!; i < this.rounds[r + 1]!; i++) {
        const k = this.kind[i]!;
        let text = `    #${i} ${KIND_NAMES[k]}`;
        const sub = this.sub[i] ? ` (sub-tag ${this.sub[i]})` : '';
        if (k === A_SEND) text += ` ${region(this.bufA[i]!, this.offA[i]!, this.bytesA[i]!)} -> rank ${this.peer[i]}${sub}`;
        else if (k === A_RECV) text += ` ${region(this.bufA[i]!, this.offA[i]!, this.bytesA[i]!)} <- rank ${this.peer[i]}${sub}`;
        else if (k === A_REDUCE) {
          text += ` ${opName(this.peer[i]!)}/${dtypeName(this.dtype[i]!)} ${region(this.bufA[i]!, this.offA[i]!, this.bytesA[i]!)}` +
            ` into ${region(this.bufB[i]!, this.offB[i]!, this.bytesA[i]!)}`;
        } else if (k === A_COPY) {
          text += ` ${region(this.bufA[i]!, this.offA[i]!, this.bytesA[i]!)} -> ${region(this.bufB[i]!, this.offB[i]!, this.bytesA[i]!)}`;
        }
        if (this.depStart !== null) {
          const d = this.deps!.subarray(this.depStart[i]!, this.depStart[i + 1]!);
          if (d.length > 0) text += ` after #${Array.from(d).join(', #')}`;
        }
        lines.push(text);
      }
    }
    return lines.join('\n');
  }
}

/** A DAG schedule's edges, inverted: `list[start[i] .. start[i+1])` wait for action i; action i waits for `count[i]` others. */
export interface Dependents {
  count: Int32Array;
  start: Int32Array;
  list: Int32Array;
}

/** Builds a schedule action by action. Builders are pure functions of the call shape. */
export class ScheduleBuilder {
  private n = 0;
  // Room for 64 actions before the first growth: most schedules fit (recursive doubling on
  // 10^5 ranks has about 40 a rank), and the simulator, which builds a schedule for every rank,
  // spent a fifth of its build time growing from 16 (issue #15).
  private cap = 64;
  private kind = new Int8Array(this.cap);
  private peer = new Int32Array(this.cap);
  private bufA = new Int8Array(this.cap);
  private offA = new Int32Array(this.cap);
  private bytesA = new Int32Array(this.cap);
  private bufB = new Int8Array(this.cap);
  private offB = new Int32Array(this.cap);
  private dtype = new Int8Array(this.cap);
  private sub = new Int8Array(this.cap);
  private roundStarts: number[] = [0];
  /** DAG mode: each action's `after` list, or null for an action added without one (round semantics). */
  private depLists: Array<number[] | null> | null = null;
  private tmp = 0;

  constructor(readonly algorithm: string) {}

  /** Reserves scratch space; returns its byte offset in TMP (64-byte aligned). */
  tmpAlloc(bytes: number): number {
    const off = (this.tmp + 63) & ~63;
    this.tmp = off + bytes;
    return off;
  }

  /** Ends the current round: later actions wait for every action so far. */
  round(): this {
    if (this.roundStarts[this.roundStarts.length - 1] !== this.n) this.roundStarts.push(this.n);
    return this;
  }

  send(peer: number, r: Region, after?: readonly number[], sub = 0): number {
    return this.push(A_SEND, peer, r, sub, 0, 0, after);
  }

  recv(peer: number, r: Region, after?: readonly number[], sub = 0): number {
    return this.push(A_RECV, peer, r, sub, 0, 0, after);
  }

  /** inout = in ⊕ inout over `in.bytes` bytes of dtype `dtype`. */
  reduce(op: number, dtype: number, input: Region, inout: { buf: BufId; offset: number }, after?: readonly number[]): number {
    return this.push(A_REDUCE, op, input, inout.buf, inout.offset, dtype, after);
  }

  copy(src: Region, dst: { buf: BufId; offset: number }, after?: readonly number[]): number {
    return this.push(A_COPY, -1, src, dst.buf, dst.offset, 0, after);
  }

  /**
   * Appends a schedule built for a subset of ranks (UCC's rank maps): its peer i is `ranks[i]`
   * here, its SEND and RECV regions are moved to `send` and `recv` (any buffer and offset of
   * this schedule), its scratch goes after this schedule's. It starts after everything added
   * so far and everything added later starts after it; inside, its rounds stay rounds and its
   * DAG stays a DAG. This is how hierarchical collectives are composed from the flat builders.
   */
  splice(sub: Schedule, ranks: ArrayLike<number>, send: Place, recv: Place): void {
    this.round();
    const tmp = sub.tmpBytes > 0 ? this.tmpAlloc(sub.tmpBytes) : 0;
    const first = this.n;
    const place = (buf: number, off: number): Place =>
      buf === SEND ? { buf: send.buf, offset: send.offset + off } : buf === RECV ? { buf: recv.buf, offset: recv.offset + off } : { buf: TMP, offset: tmp + off };
    for (let r = 0; r < sub.nRounds; r++) {
      for (let i = sub.rounds[r]!; i < sub.rounds[r + 1]!; i++) {
        const kind = sub.kind[i]!;
        const a = place(sub.bufA[i]!, sub.offA[i]!);
        const region = { buf: a.buf, offset: a.offset, bytes: sub.bytesA[i]! };
        let after: number[] | undefined;
        if (sub.isDag) {
          after = [];
          for (let d = sub.depStart![i]!; d < sub.depStart![i + 1]!; d++) after.push(first + sub.deps![d]!);
        }
        let at: number;
        if (kind === A_SEND) at = this.send(ranks[sub.peer[i]!]!, region, after, sub.sub[i]!);
        else if (kind === A_RECV) at = this.recv(ranks[sub.peer[i]!]!, region, after, sub.sub[i]!);
        else if (kind === A_REDUCE) at = this.reduce(sub.peer[i]!, sub.dtype[i]!, region, place(sub.bufB[i]!, sub.offB[i]!), after);
        else at = this.copy(region, place(sub.bufB[i]!, sub.offB[i]!), after);
        if (at !== first + i) throw new Error(`splice of ${sub.algorithm}: action ${i} landed at ${at - first}`);
      }
      if (!sub.isDag) this.round();
    }
    this.round();
  }

  private push(kind: number, peer: number, a: Region, bufB: number, offB: number, dtype: number, after?: readonly number[]): number {
    if (a.bytes === 0 && kind !== A_SEND && kind !== A_RECV) return -1; // nothing to do
    if (this.n === this.cap) this.grow();
    const i = this.n++;
    this.kind[i] = kind;
    this.peer[i] = peer;
    this.bufA[i] = a.buf;
    this.offA[i] = a.offset;
    this.bytesA[i] = a.bytes;
    const comm = kind === A_SEND || kind === A_RECV;
    this.bufB[i] = comm ? 0 : bufB;
    this.offB[i] = offB;
    this.dtype[i] = dtype;
    this.sub[i] = comm ? bufB : 0;
    if (after !== undefined) {
      this.depLists ??= [];
      while (this.depLists.length < i) this.depLists.push(null);
      this.depLists.push(after.filter((d) => d >= 0));
    } else if (this.depLists !== null) {
      this.depLists.push(null);
    }
    return i;
  }

  private grow(): void {
    this.cap *= 2;
    const g = <T extends Int8Array | Int32Array>(a: T): T => grown(a, this.cap);
    this.kind = g(this.kind);
    this.peer = g(this.peer);
    this.bufA = g(this.bufA);
    this.offA = g(this.offA);
    this.bytesA = g(this.bytesA);
    this.bufB = g(this.bufB);
    this.offB = g(this.offB);
    this.dtype = g(this.dtype);
    this.sub = g(this.sub);
  }

  build(): Schedule {
    const n = this.n;
    let depStart: Int32Array | null = null;
    let deps: Int32Array | null = null;
    let rounds: number[];
    if (this.depLists !== null) {
      // DAG mode: one "round" holding everything; order comes from the dependencies. Actions
      // added without `after` depend on every action of the previous round, so round() still
      // means what it says. They also wait for the last such copy or reduction before them
      // in their round: a round runs those at once, in order, and posts later messages after
      // them (a fold then the send of its result; folds into one place then the copy out).
      while (this.depLists.length < n) this.depLists.push(null);
      const flat: number[] = [];
      depStart = new Int32Array(n + 1);
      let r = 0;
      // Messages between two ranks with one tag match in the order they were posted (MPI's
      // non-overtaking rule), so a DAG must post them in the order the builder wrote them:
      // each send or receive also waits for the previous one to or from the same peer with
      // the same sub-tag. Without this, a dependency that vanished at an empty block let a
      // later receive be posted first and take an earlier message.
      const lastComm = new Map<number, number>();
      let lastLocal = -1;
      for (let i = 0; i < n; i++) {
        depStart[i] = flat.length;
        while (r + 1 < this.roundStarts.length && this.roundStarts[r + 1]! <= i) {
          r++;
          lastLocal = -1;
        }
        const list = this.depLists[i] ?? null;
        const kind = this.kind[i]!;
        if (list !== null && list.length > 0) flat.push(...list);
        else for (let j = r > 0 ? this.roundStarts[r - 1]! : 0; j < this.roundStarts[r]!; j++) flat.push(j);
        if (list === null) {
          if (lastLocal >= 0) flat.push(lastLocal);
          if (kind === A_REDUCE || kind === A_COPY) lastLocal = i;
        }
        if (kind === A_SEND || kind === A_RECV) {
          const key = (this.peer[i]! * 16 + this.sub[i]!) * 2 + (kind === A_SEND ? 1 : 0);
          const prev = lastComm.get(key);
          if (prev !== undefined && flat.lastIndexOf(prev) < depStart[i]!) flat.push(prev);
          lastComm.set(key, i);
        }
      }
      depStart[n] = flat.length;
      deps = Int32Array.from(flat);
      rounds = [0, n];
    } else {
      rounds = [...this.roundStarts];
      if (rounds[rounds.length - 1] !== n) rounds.push(n);
      if (n === 0) rounds = [0, 0];
    }
    return new Schedule(
      n, rounds.length - 1, Int32Array.from(rounds),
      this.kind.slice(0, n), this.peer.slice(0, n), this.bufA.slice(0, n), this.offA.slice(0, n),
      this.bytesA.slice(0, n), this.bufB.slice(0, n), this.offB.slice(0, n), this.dtype.slice(0, n),
      this.sub.slice(0, n),
      depStart, deps, this.tmp, this.algorithm,
    );
  }
}

/** A copy of `a` in a new array of the same type with room for `cap` elements. */
export function grown<T extends Int8Array | Uint8Array | Int32Array>(a: T, cap: number): T {
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}
