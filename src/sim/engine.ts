/**
 * The discrete-event LogGOPS engine: runs a Program (program.ts) on a model of a machine
 * (params.ts) and says when every rank's call completes.
 *
 * When an action is issued is the library's rule (sched/interpreter.ts), applied by
 * release.ts, which this engine extends: an action is issued when what it depends on has
 * completed (rounds: the whole previous round; DAG: its dependencies), in the interpreter's
 * order, proven alike by test/sched.test.ts. What the interpreter leaves to its port, this
 * engine prices:
 * - send (s bytes, path shm inside a node, net between nodes; s <= S eager, else rendezvous):
 *   the CPU spends o + (s-1)O, the injector (the rank on shm, the node's NIC on net, shared by
 *   all its ranks: seed 004's contention) is busy g + (s-1)G, the data arrives o + (s-1)G + L
 *   after the start. A send starts once the injector's backlog is down to its slack (0 unless
 *   the path has one: seed 004's DMA engines). A rendezvous send first sends a request (o, g, L), the receiver answers
 *   clear-to-send once its receive is posted (o, L), then the data goes as above.
 *   On shared memory a send of what the call did not write (Program.cached: the caller's
 *   input, unchanged since the last call of a benchmark loop) pays the path's cached per-byte
 *   costs (LogGOPS.cached), the rest the fresh ones.
 * - recv: matched in posting order per (source, destination, sub-tag), as MPI's non-overtaking
 *   rule (and the library's matching) does (channels.ts says why its structure is its own);
 *   once matched and arrived, the receiver's CPU spends o (oRecv where the path has one) +
 *   (s-1)O and its injector g + (s-1)G, from when its backlog is down to the slack.
 * - wake-ups: on a shared host (below), a rank that had nothing left to do when a message, a
 *   rendezvous request or a clear-to-send reached it had given up its core, and pays the
 *   path's W of core time before it handles it; a rank still busy pays none.
 * - reduce, copy: the CPU for bytes x reduceUsPerByte (copyUsPerByte);
 * - lent memory: a reduction into bytes the rank lent to a peer of its node (Program.lentBytes)
 *   costs its CPU shm.lent.foldUsPerByte more for each of them, a copy or receive into them
 *   shm.lent.copyUsPerByte;
 * - the call itself (host executor): callUs of the rank's CPU before its first action
 *   (callNetUs where the call's ranks span nodes), plus the collective's own extra
 *   (callUsByColl[coll] - callUs).
 * Every CPU and injector is a FIFO resource: work starts at max(ready, free). On a shared
 * host (params.hostCores, an emulated cluster on one machine) the ranks' CPUs also draw on a
 * pool of that many cores: a rank's work starts once the first core is free too, and holds it.
 * A rank's CPU suffers OS noise (seed 000): a burst of D every 1/F, at a phase drawn per rank
 * from the seed; work that meets a burst waits for its end. Engines (offload) and aggregation
 * nodes are resources of their own without noise (a dedicated core, a switch ASIC).
 *
 * Executors: host procs are ranks; offload procs run on their node engine's CPU (the rank only
 * posts: postUs, and learns of completion L(shm) after the engine finished); two-level and agg
 * procs are the engines, which first wait for every member's post and fold (foldUs), exchange
 * (a schedule among engines, or the fabric's tree: agg-fabric.ts), and write back (writebackUs).
 *
 * Jitter: a path may carry the spread of its measured one-way times (LogGOPS.J, quantiles less
 * the median); with a jitter seed, each message's flight is L plus a draw from it, so the
 * median of many runs shows what a chain or a race of messages costs beyond the sum of
 * medians (the slowest of several exchanges, nbcbench's per-call maximum).
 *
 * Determinism: events with equal times run in the order they were scheduled (heap.ts), noise
 * phases and jitter come from seeded generators, so one seed gives one result.
 *
 * Speed (issue #15: 10^5 ranks, millions of events): the hot path allocates nothing per
 * event. Events are integers in typed arrays (heap.ts); every send and receive is given its
 * matching channel, a small integer, once before the run (channelsOf), so matching is two
 * array reads instead of a map lookup; the program's columns are held in fields.
 */
import { NbcInternalError } from '../errors.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND } from '../sched/schedule.js';
import { AggState } from './agg-fabric.js';
import { channelsOf, Channels, NO_MATCH } from './channels.js';
import { EventQueue } from './heap.js';
import type { Program } from './program.js';
import { Release } from './release.js';
import { cachedPath, localUs, sizeExtraUs, type LogGOPS, type SimParams } from './params.js';

const EV_START = 0;
const EV_DONE = 1;
const EV_ARRIVE = 2;
const EV_CTS = 3;
const EV_DATA = 4;
const EV_FOLDED = 5;
const EV_AGG_UP = 6;
const EV_AGG_DOWN = 7;
const EV_CHUNK = 8;
const EV_TEST = 9;

/** OS noise: a burst of `durationUs` every `periodUs` per rank, phases unsynchronised. */
export interface SimNoise {
  durationUs: number;
  periodUs: number;
}

export interface RunOptions {
  noise?: SimNoise | null;
  /** Seed of the noise phases. */
  seed?: number;
  /** Non-blocking with compute: each rank computes this long (one figure, or one per rank) right after its initiating call. */
  computeUs?: number | Float64Array | null;
  /** When each rank makes its call, us (default: all at 0). */
  startAt?: Float64Array | null;
  /**
   * Host executor, with compute: the rank calls test() after every this many us of its
   * compute (LibNBC's progress, seeds 001 and 002). Each call costs params.testUs of CPU and
   * lets the schedule move: what arrived meanwhile is taken in, and what that releases is
   * issued, before the compute goes on. Absent, null or 0: no test() calls, so the schedule
   * moves only once the compute is over (in wait()).
   */
  testEveryUs?: number | null;
  /**
   * Seed of the message jitter: where a path carries measured jitter (LogGOPS.J), every
   * message's flight takes L plus a draw from it. Absent or null: every flight takes L.
   */
  jitterSeed?: number | null;
}

export interface RunResult {
  /** When each rank's call completed (its wait() would return), us from a common start. */
  done: Float64Array;
  /** When each rank's initiating call returned, and its compute ended (with compute). */
  initEnd: Float64Array;
  computeEnd: Float64Array;
  /** The slowest rank: the call's latency as nbcbench reports it (max over ranks). */
  latencyUs: number;
  events: number;
}

/**
 * When `work` us of CPU work started at `t` ends under OS noise: a burst of `D` us at `phase` +
 * k `P` for every k, each waited out by the work it meets.
 */
export function noisyEnd(t: number, work: number, phase: number, D: number, P: number): number {
  const k = Math.floor((t - phase) / P);
  let burst = phase + k * P; // the last burst that started at or before t
  if (t < burst + D) t = burst + D;
  const next = burst + P;
  if (t + work <= next) return t + work;
  let rem = work - (next - t);
  // Whole free stretches of P - D between bursts, then the remainder.
  const free = P - D;
  const full = Math.ceil(rem / free) - 1;
  burst = next + full * P;
  rem -= full * free;
  return burst + D + rem;
}

/** The noise phase of each of `ranks` ranks for a seed, as every run of the engine draws them. */
export function noisePhases(ranks: number, periodUs: number, seed: number): Float64Array {
  const next = splitmix32(seed);
  const phase = new Float64Array(ranks);
  for (let r = 0; r < ranks; r++) phase[r] = next() * periodUs;
  return phase;
}

/** splitmix32: a small, well-mixed deterministic generator (noise phases, exit orders). */
export function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** Runs `prog` once. */
export function runProgram(prog: Program, params: SimParams, opts: RunOptions = {}): RunResult {
  return new Simulation(prog, params, opts).run();
}

/**
 * When injector `inj[slot]` can take the next message on path `m`: once its backlog is down to
 * the path's slack (LogGOPS.slack; without one, once it is free).
 */
function injectorFree(inj: Float64Array, slot: number, m: LogGOPS): number {
  return inj[slot]! - (m.slack ?? 0);
}

/** Books a message of `s` bytes taken at `at` on injector `inj[slot]`: g + (s-1)G behind its backlog. */
function book(inj: Float64Array, slot: number, m: LogGOPS, s: number, at: number): void {
  inj[slot] = Math.max(at, inj[slot]!) + m.g + Math.max(0, s - 1) * m.G;
}

class Simulation extends Release {
  private readonly heap = new EventQueue();
  private readonly ranks: number;
  // The program's columns (program.ts), held here so the hot path reads them directly.
  private readonly kind: Int8Array;
  private readonly peer: Int32Array;
  private readonly bytesOf: Int32Array;
  private readonly actProc: Int32Array;
  private readonly procCpu: Int32Array;
  private readonly procNode: Int32Array;
  private readonly net: LogGOPS;
  private readonly shm: LogGOPS;
  /** Shared memory as it prices a payload the call did not write (LogGOPS.cached), and which sends carry one. */
  private readonly shmCached: LogGOPS;
  private readonly cached: Int8Array;
  private readonly lentBytes: Int32Array;
  /** What a rank's receive into memory it lent costs per byte beyond the copy (LogGOPS.lent of shm). */
  private readonly lentCopy: number;
  private readonly cpuFree: Float64Array;
  /**
   * On a shared host (params.hostCores): when each of its cores is next free, taken by every
   * rank's CPU work, the first free first; null where every rank has a core of its own.
   */
  private readonly coreFree: Float64Array | null;
  /** The core that the last startOn() found for a rank's work. */
  private core = 0;
  /** Injector busy-until, per node on the network (its NIC) and per CPU on shared memory. */
  private readonly netSend: Float64Array;
  private readonly netRecv: Float64Array;
  private readonly shmSend: Float64Array;
  private readonly shmRecv: Float64Array;
  private readonly phase: Float64Array | null;
  private readonly noiseD: number;
  private readonly noiseP: number;
  /** Draws of the message jitter (jitterSeed), or null. */
  private readonly jitterRng: (() => number) | null;
  /** With jitter: per channel, when its last message arrived (messages do not overtake). */
  private readonly chanArrived: Float64Array | null;
  /** Matching: every send and receive's channel (channelsOf), and the channels' FIFOs. */
  private readonly chan: Int32Array;
  private readonly channels: Channels;
  private readonly done: Float64Array;
  private readonly initEnd: Float64Array;
  private readonly computeEnd: Float64Array;
  /** Host compute with test() calls: how much of each rank's compute is still to run. */
  private readonly computeLeft: Float64Array;
  private events = 0;
  private now = 0;
  /** inject()'s results: when the message left the CPU (after o), and when the CPU is free again. */
  private leave = 0;
  private busyEnd = 0;
  // agg
  private aggState: AggState | null = null;

  constructor(prog: Program, private readonly params: SimParams, private readonly opts: RunOptions) {
    super(prog);
    const N = prog.ranks;
    this.ranks = N;
    this.kind = prog.kind;
    this.peer = prog.peer;
    this.bytesOf = prog.bytesOf;
    this.actProc = prog.actProc;
    this.procCpu = prog.procCpu;
    this.procNode = prog.procNode;
    this.net = params.net;
    this.shm = params.shm;
    this.shmCached = cachedPath(params.shm);
    this.lentBytes = prog.lentBytes;
    this.lentCopy = params.shm.lent?.copyUsPerByte ?? 0;
    this.cached = prog.cached;
    const ch = channelsOf(prog);
    this.chan = ch.chan;
    this.channels = new Channels(ch.count);
    const cpus = N + prog.nodes;
    this.cpuFree = new Float64Array(cpus);
    const hostCores = params.hostCores;
    this.coreFree = hostCores === undefined || hostCores >= N ? null : new Float64Array(hostCores);
    this.netSend = new Float64Array(prog.nodes);
    this.netRecv = new Float64Array(prog.nodes);
    this.shmSend = new Float64Array(cpus);
    this.shmRecv = new Float64Array(cpus);
    const noise = opts.noise ?? null;
    this.noiseD = noise?.durationUs ?? 0;
    this.noiseP = noise?.periodUs ?? 0;
    if (noise !== null && noise.durationUs > 0) {
      this.phase = noisePhases(N, noise.periodUs, opts.seed ?? 1);
    } else {
      this.phase = null;
    }
    const js = opts.jitterSeed ?? null;
    this.jitterRng = js === null ? null : splitmix32(js);
    this.chanArrived = js === null ? null : new Float64Array(ch.count);
    this.done = new Float64Array(N);
    this.computeLeft = new Float64Array(N);
    this.initEnd = new Float64Array(N);
    this.computeEnd = new Float64Array(N);
  }

  /**
   * When `work` us of CPU work started at `t` on `cpu` ends. On a rank with noise, the work
   * waits out every burst it meets (bursts at phase + k * period, each `noiseD` long); engines
   * (CPUs >= ranks) have none.
   */
  private advance(cpu: number, t: number, work: number): number {
    const ph = this.phase;
    if (ph === null || cpu >= this.ranks) return t + work;
    return noisyEnd(t, work, ph[cpu]!, this.noiseD, this.noiseP);
  }

  /** The path send `i`'s message takes: the network between nodes, else shared memory, priced as cached where the call did not write its payload. */
  private path(i: number, net: boolean): LogGOPS {
    return net ? this.net : this.cached[i] === 1 ? this.shmCached : this.shm;
  }

  /**
   * How long a message's flight on path `m` takes: L, or with jitter L plus a draw from the
   * path's measured quantiles (linear between them), never below 0.
   */
  private flight(m: LogGOPS): number {
    const J = m.J;
    const rng = this.jitterRng;
    if (J === undefined || rng === null) return m.L;
    const x = rng() * (J.length - 1);
    const i = Math.floor(x);
    const j = i + 1 < J.length ? J[i]! + (J[i + 1]! - J[i]!) * (x - i) : J[i]!;
    return Math.max(0, m.L + j);
  }

  /**
   * When send `i`'s message (eager data or a rendezvous request) that left at `t` arrives: t +
   * flight, and with jitter never before the channel's previous message (the transport and the
   * matching keep a channel's messages in order, so a draw may not let one overtake another).
   */
  private arrival(i: number, m: LogGOPS, t: number): number {
    const at = t + this.flight(m);
    const last = this.chanArrived;
    if (last === null) return at;
    const ch = this.chan[i]!;
    const when = Math.max(at, last[ch]!);
    last[ch] = when;
    return when;
  }

  /**
   * The earliest that CPU work of `cpu` ready at `t` can start: once its CPU is free and, for a
   * rank on a shared host, once the first of the host's cores is (remembered for busyUntil()).
   */
  private startOn(cpu: number, t: number): number {
    const start = Math.max(t, this.cpuFree[cpu]!);
    const cores = this.coreFree;
    if (cores === null || cpu >= this.ranks) return start;
    let k = 0;
    for (let j = 1; j < cores.length; j++) if (cores[j]! < cores[k]!) k = j;
    this.core = k;
    return Math.max(start, cores[k]!);
  }

  /** CPU work of `cpu` that startOn() placed ends at `end`: its CPU, and its core, are busy until then. */
  private busyUntil(cpu: number, end: number): void {
    this.cpuFree[cpu] = end;
    if (this.coreFree !== null && cpu < this.ranks) this.coreFree[this.core] = end;
  }

  /**
   * What a message on path `m` arriving now costs `cpu` to be woken for: on a shared host, the
   * path's W if the rank had nothing left to do (it gave up its core); else 0.
   */
  private wake(cpu: number, m: LogGOPS): number {
    return this.coreFree !== null && m.W !== undefined && cpu < this.ranks && this.cpuFree[cpu]! < this.now ? m.W : 0;
  }

  /** Runs CPU work on `cpu` as soon as it is free after `t`; returns when it ends. */
  private cpu(cpu: number, t: number, work: number): number {
    const end = this.advance(cpu, this.startOn(cpu, t), work);
    this.busyUntil(cpu, end);
    return end;
  }

  run(): RunResult {
    const prog = this.prog;
    const N = this.ranks;
    const shm = this.params.shm;
    const C = this.opts.computeUs ?? null;
    const startAt = this.opts.startAt ?? null;
    if (prog.mode === 'host') {
      for (let p = 0; p < prog.procs; p++) this.heap.push(startAt === null ? 0 : startAt[p]!, EV_START, p, 0);
    } else {
      // Every rank posts its call to its node's engine, then computes (if asked).
      const posted = new Float64Array(prog.nodes);
      for (let r = 0; r < N; r++) {
        const t = this.cpu(r, startAt === null ? 0 : startAt[r]!, this.params.postUs);
        this.initEnd[r] = t;
        if (C !== null) this.computeEnd[r] = this.cpu(r, t, typeof C === 'number' ? C : C[r]!);
        const k = prog.nodeOfRank[r]!;
        const at = prog.mode === 'offload' ? t + shm.L : Math.max(posted[k]!, t + shm.L);
        if (prog.mode === 'offload') this.heap.push(at, EV_START, r, 0);
        else posted[k] = at;
      }
      if (prog.mode !== 'offload') {
        if (prog.mode === 'agg') this.aggState = new AggState(prog, this.params);
        for (let k = 0; k < prog.nodes; k++) this.heap.push(this.cpu(N + k, posted[k]!, prog.foldUs[k]!), EV_FOLDED, k, 0);
      }
    }
    const heap = this.heap;
    while (heap.pop()) {
      this.events++;
      this.now = heap.t;
      const a = heap.x;
      const b = heap.y;
      switch (heap.k) {
        case EV_START: this.start(a); break;
        case EV_DONE: this.complete(a); break;
        case EV_ARRIVE: this.arrive(a, b); break;
        case EV_CTS: this.cts(a, b); break;
        case EV_DATA: this.data(a, b); break;
        case EV_FOLDED: this.folded(a); break;
        case EV_AGG_UP: this.aggUp(a, b); break;
        case EV_AGG_DOWN: this.aggDown(a); break;
        case EV_CHUNK: heap.push(Math.max(this.now, this.cpuFree[a]!), EV_TEST, a, 0); break;
        case EV_TEST: this.testThenCompute(a); break;
        default: throw new NbcInternalError(`simulator: unknown event kind ${heap.k}`);
      }
    }
    for (let p = 0; p < prog.procs; p++) {
      if (this.remaining[p] !== 0) {
        throw new NbcInternalError(`simulator: ${prog.coll}/${prog.algorithm} deadlocked: proc ${p} still has ${this.remaining[p]} of its actions pending (a receive nobody sends?)`);
      }
    }
    let latency = 0;
    for (let r = 0; r < N; r++) {
      if (C !== null && this.computeEnd[r]! > this.done[r]!) this.done[r] = this.computeEnd[r]!;
      if (this.done[r]! > latency) latency = this.done[r]!;
    }
    return { done: this.done, initEnd: this.initEnd, computeEnd: this.computeEnd, latencyUs: latency, events: this.events };
  }

  /** A proc begins its call: the call's own cost (host), then its schedule (release.ts begin()). */
  private start(p: number): void {
    const prog = this.prog;
    // Host: the call's own CPU cost on the rank comes first (params.callUs, callNetUs across
    // nodes), plus what this collective's call costs beyond the allreduce's (callUsByColl).
    const base = this.params.callUs ?? 0;
    const own = this.params.callUsByColl?.[prog.coll];
    const call = Math.max(0, ((prog.nodes > 1 ? this.params.callNetUs : undefined) ?? base) + (own === undefined ? 0 : own - base));
    if (call > 0 && prog.mode === 'host') this.cpu(p, this.now, call);
    this.begin(p);
    // Host, non-blocking with compute: the initiating call has issued round 0; the rank then
    // computes, and its CPU makes no progress on the schedule (no test() calls) until wait().
    if (prog.mode === 'host') {
      this.initEnd[p] = Math.max(this.now, this.cpuFree[p]!);
      const CC = this.opts.computeUs ?? null;
      const every = this.opts.testEveryUs ?? 0;
      if (CC === null) return;
      const C = typeof CC === 'number' ? CC : CC[p]!;
      if (every > 0 && C > every) {
        // Compute in pieces with a test() between them: what the schedule needs of the CPU
        // in the meantime queues behind the piece and runs before the next one.
        this.computeLeft[p] = C - every;
        this.computeEnd[p] = this.cpu(p, this.initEnd[p]!, every);
        this.heap.push(this.computeEnd[p]!, EV_CHUNK, p, 0);
      } else {
        this.computeEnd[p] = this.cpu(p, this.initEnd[p]!, C);
      }
    }
  }

  /**
   * Host rank p's test() between two pieces of its compute (RunOptions.testEveryUs): once the
   * work queued during the last piece is done, the call's cost, then the next piece.
   */
  private testThenCompute(p: number): void {
    const piece = Math.min(this.opts.testEveryUs!, this.computeLeft[p]!);
    this.computeLeft[p] = this.computeLeft[p]! - piece;
    this.computeEnd[p] = this.cpu(p, this.now, (this.params.testUs ?? 0) + piece);
    if (this.computeLeft[p]! > 0) this.heap.push(this.computeEnd[p]!, EV_CHUNK, p, 0);
  }

  protected issue(i: number): void {
    const k = this.kind[i]!;
    const p = this.actProc[i]!;
    const c = this.procCpu[p]!;
    const now = this.now;
    if (k === A_SEND) {
      const dst = this.peer[i]!;
      const s = this.bytesOf[i]!;
      const net = this.procNode[p] !== this.procNode[dst];
      const m = this.path(i, net);
      const inj = net ? this.netSend : this.shmSend;
      const slot = net ? this.procNode[p]! : c;
      if (s <= m.S) {
        this.inject(c, inj, slot, m, s, now);
        this.heap.push(this.arrival(i, m, this.leave + Math.max(0, s - 1) * m.G), EV_ARRIVE, i, 0);
        this.heap.push(this.busyEnd, EV_DONE, i, 0);
      } else {
        this.inject(c, inj, slot, m, 0, now);
        this.heap.push(this.arrival(i, m, this.leave), EV_ARRIVE, i, 1);
      }
    } else if (k === A_RECV) {
      const msg = this.channels.match(this.chan[i]!, true, i);
      if (msg !== NO_MATCH) this.matched(i, msg >= 0 ? msg : -msg - 1, msg < 0);
    } else if (k === A_REDUCE || k === A_COPY) {
      // A reduction on a node's engine (offload, two-level) also pays the engine's loop-back:
      // seed 000's NIC computes a step's result by sending it to itself (params.offloadReduceUs).
      const loopback = k === A_REDUCE && c >= this.ranks ? this.params.offloadReduceUs ?? 0 : 0;
      this.heap.push(this.cpu(c, now, loopback + localUs(this.params, k === A_REDUCE, this.bytesOf[i]!, this.lentBytes[i]!)), EV_DONE, i, 0);
    } else {
      throw new NbcInternalError(`simulator: unknown action kind ${k}`);
    }
  }

  /**
   * A message of `s` bytes leaves `cpu` through injector `inj[slot]`: start when both are free,
   * the CPU pays o and half the path's size-dependent part X(s) (the message leaves then:
   * this.leave; a rendezvous request, s = 0, pays o alone) and (s-1)O (free again: this.busyEnd),
   * the injector g + (s-1)G.
   */
  private inject(cpu: number, inj: Float64Array, slot: number, m: LogGOPS, s: number, t: number): void {
    const posting = s > 0 && m.X !== undefined ? Math.max(0, m.o + sizeExtraUs(m, s) / 2) : m.o;
    if (inj !== this.shmSend && cpu < this.ranks && this.computeEnd[cpu]! > t) {
      // A rank in its compute phase (with test() calls) posts the send between two pieces and
      // computes on: the node's NIC sends it once free, without the rank waiting for the NIC,
      // nor the NIC for the rank's compute (as in takeIn).
      const start = this.startOn(cpu, t);
      const posted = this.advance(cpu, start, posting);
      const busyEnd = this.advance(cpu, posted, Math.max(0, s - 1) * m.O);
      this.busyUntil(cpu, busyEnd);
      // The NIC's time is booked as the event comes (its busy-until only grows in event
      // order); the message leaves once both the NIC and the post are there.
      const nic = Math.max(t, injectorFree(inj, slot, m));
      book(inj, slot, m, s, nic);
      this.leave = Math.max(posted, nic);
      this.busyEnd = busyEnd;
      return;
    }
    const start = this.startOn(cpu, Math.max(t, injectorFree(inj, slot, m)));
    const leave = this.advance(cpu, start, posting);
    const busyEnd = this.advance(cpu, leave, Math.max(0, s - 1) * m.O);
    this.busyUntil(cpu, busyEnd);
    book(inj, slot, m, s, start);
    this.leave = leave;
    this.busyEnd = busyEnd;
  }

  /** A message (eager or a rendezvous request) from send action `i` reached its destination. */
  private arrive(i: number, rts: number): void {
    const r = this.channels.match(this.chan[i]!, false, rts === 1 ? -i - 1 : i);
    if (r !== NO_MATCH) this.matched(r, i, rts === 1);
  }

  /** Receive `r` meets send `i`'s message, now: eager data is taken in; a rendezvous request is answered. */
  private matched(r: number, i: number, rts: boolean): void {
    const p = this.actProc[r]!;
    const c = this.procCpu[p]!;
    const net = this.procNode[p] !== this.procNode[this.actProc[i]!];
    const m = this.path(i, net);
    if (rts) {
      const t = this.cpu(c, this.now, this.wake(c, m) + m.o);
      this.heap.push(t + this.flight(m), EV_CTS, i, r);
    } else {
      this.takeIn(r, i, m, net);
    }
  }

  private takeIn(r: number, i: number, m: LogGOPS, net: boolean): void {
    const p = this.actProc[r]!;
    const c = this.procCpu[p]!;
    const s = this.bytesOf[i]!;
    if (s > this.bytesOf[r]!) {
      const prog = this.prog;
      throw new NbcInternalError(`simulator: ${prog.coll}/${prog.algorithm}: a ${s}-byte message matched a ${prog.bytesOf[r]}-byte receive on proc ${p}`);
    }
    const inj = net ? this.netRecv : this.shmRecv;
    const slot = net ? this.procNode[p]! : c;
    // A rank that had nothing left to do when the message came gave up its core: on a shared
    // host it pays the wake-up first. One that is still busy (or already woken for an earlier
    // message) takes it in without.
    const wake = this.wake(c, m);
    // The receiving injector is held from when the CPU takes the message in. Not where a
    // node's NIC meets a rank in its compute phase: the NIC takes the message in as soon as it
    // is free, and the CPU's share follows after the compute (held until then, it pushed every
    // other rank's messages on the node behind that rank's compute: an application's halo
    // behind its interior rows took several compute phases).
    const inAt = Math.max(this.now, injectorFree(inj, slot, m));
    const computing = net && c < this.ranks && this.computeEnd[c]! > inAt;
    const start = this.startOn(c, inAt);
    const take = (m.oRecv ?? m.o) + Math.max(0, s - 1) * m.O + wake + this.lentBytes[r]! * this.lentCopy;
    const end = this.advance(c, start, m.X === undefined ? take : Math.max(0, take + sizeExtraUs(m, s) / 2));
    this.busyUntil(c, end);
    book(inj, slot, m, s, computing ? inAt : start);
    this.heap.push(end, EV_DONE, r, 0);
  }

  /** Rendezvous: the sender got clear-to-send; the data goes, and the send completes once it left the CPU. */
  private cts(i: number, r: number): void {
    const p = this.actProc[i]!;
    const c = this.procCpu[p]!;
    const dst = this.peer[i]!;
    const net = this.procNode[p] !== this.procNode[dst];
    const m = this.path(i, net);
    const s = this.bytesOf[i]!;
    const w = this.wake(c, m);
    this.inject(c, net ? this.netSend : this.shmSend, net ? this.procNode[p]! : c, m, s, w > 0 ? this.cpu(c, this.now, w) : this.now);
    this.heap.push(this.leave + Math.max(0, s - 1) * m.G + this.flight(m), EV_DATA, i, r);
    this.heap.push(this.busyEnd, EV_DONE, i, 0);
  }

  private data(i: number, r: number): void {
    const net = this.procNode[this.actProc[r]!] !== this.procNode[this.actProc[i]!];
    this.takeIn(r, i, this.path(i, net), net);
  }

  /** Proc p finished its schedule: the rank's call completes, or the engine writes back. */
  protected finishProc(p: number): void {
    const prog = this.prog;
    if (prog.mode === 'host') {
      this.done[p] = Math.max(this.now, this.cpuFree[p]!);
    } else if (prog.mode === 'offload') {
      this.done[p] = this.now + this.params.shm.L;
    } else {
      this.writeBack(p, this.now);
    }
  }

  /** Node k's engine has the exchange's result: it writes every member's, which sees it L(shm) later. */
  private writeBack(k: number, t: number): void {
    const prog = this.prog;
    const end = this.cpu(this.ranks + k, t, prog.writebackUs[k]!) + this.params.shm.L;
    for (let r = prog.nodeStart[k]!; r < prog.nodeStart[k + 1]!; r++) this.done[r] = end;
  }

  /** Node k's engine has folded its members: it starts the exchange among the engines (or the fabric). */
  private folded(k: number): void {
    if (this.aggState !== null) {
      this.aggState.begin(k);
      for (let f = 0; f < this.aggState.window; f++) this.aggSend(k, f);
    } else {
      this.start(k);
    }
  }

  // ------------------------------------------------------------------------------------------
  // The aggregation fabric (seed 003): node engines send fragments of at most `payload` bytes
  // up a tree of ANs through a credit window; each AN reduces a fragment once all its
  // children's copies arrived (its ALU is a resource: one fragment at a time), forwards it to
  // its parent; the group root sends the result down to every node.

  private aggSend(k: number, f: number): void {
    const st = this.aggState!;
    if (f >= st.frags) return;
    const net = this.params.net;
    const fb = st.fragBytes(f);
    this.inject(this.ranks + k, this.netSend, k, net, fb, this.now);
    this.heap.push(this.leave + Math.max(0, fb - 1) * net.G + this.params.agg.linkUs, EV_AGG_UP, st.leafOf[k]!, f);
  }

  private aggUp(an: number, f: number): void {
    const st = this.aggState!;
    const idx = an * st.frags + f;
    if (++st.count[idx]! < st.children[an]!) return;
    st.count[idx] = 0;
    const agg = this.params.agg;
    const fb = st.fragBytes(f);
    // The ALU is busy for the fragment's bytes; the hop's fixed cost is latency (the switch
    // pipelines fragments: seed 003's Table V, 4 KiB as 16 fragments in 14.5 us).
    const start = Math.max(this.now, st.anFree[an]!);
    st.anFree[an] = start + fb * agg.hopPerByteUs;
    const done = start + agg.hopUs + fb * agg.hopPerByteUs;
    const wire = Math.max(0, fb - 1) * this.params.net.G;
    if (an === st.root) {
      for (let k = 0; k < this.prog.nodes; k++) this.heap.push(done + st.down[k]! * agg.linkUs + wire, EV_AGG_DOWN, k, f);
    } else {
      this.heap.push(done + agg.linkUs + wire, EV_AGG_UP, (an - 1) / agg.radix | 0, f);
    }
  }

  /** A result fragment reached node k's engine: it takes it in, which returns a credit. */
  private aggDown(k: number): void {
    const st = this.aggState!;
    const net = this.params.net;
    const start = Math.max(this.now, this.netRecv[k]!);
    const taken = this.cpu(this.ranks + k, start, net.o);
    this.netRecv[k] = start + net.g;
    const next = st.sent[k]!;
    if (next < st.frags) {
      st.sent[k] = next + 1;
      this.aggSend(k, next);
    }
    if (++st.got[k]! === st.frags) this.writeBack(k, taken);
  }
}
