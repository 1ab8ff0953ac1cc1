/**
 * The emulated network as time (`--link`): a sender stamps each message that leaves its node
 * with the tick the modelled network delivers it at, and the reader treats it as not yet
 * arrived until the host's clock passes that tick. No thread works for the wire: while it
 * "carries" a message every core is free, and a rank that waits for it sleeps until the
 * earliest stamp it holds (wait.ts). Docs: docs/wire.md (the model, its equations, what it
 * leaves out).
 *
 * The model, for a message of n bytes from node a to node b, handed over at time t:
 *
 *   leaves = max(t, busy[a]) + n / bandwidth      the node's one adapter, shared by its ranks
 *   busy[a] = leaves                              and its engine: concurrent sends queue
 *   arrives = leaves + latency(a, b)              cut-through: the hops add latency only
 *
 *   latency(a, b) = L + 2 (l - 1) S               l: level of the lowest switch common to a
 *                                                 and b (1: the same leaf; flat: always 1)
 *
 * L is the one-way latency between two hosts on one switch, S each further switch hop.
 *
 * Clock: ticks of 0.1 us of the host's monotonic clock. A record's stamp is an Int32 word
 * (modulo 2^32: every comparison is of a difference, `(a - b) | 0`, good while stamps lie
 * within 214 s of now); the adapter's busy-until is a whole 64-bit tick.
 * Every thread of every process of the host reads the same clock, so the processes of an
 * emulated cluster agree on it; across hosts they would not, and the emulation is for one host.
 */
import { kNicBusy } from '../shm/layout.js';
import { perf } from '../perf.js';

/** A network to emulate, resolved (runtime/link-spec.ts builds it from `--link` and `--topology`). */
export interface WireModel {
  /** One way between two hosts on one switch, microseconds (flat: between any two). */
  latencyUs: number;
  /** Each node adapter's rate, bytes per second (Infinity: no cap). */
  bandwidthBytesPerSec: number;
  /** Each further switch hop on a path through a fat tree, microseconds. */
  switchUs: number;
  /** Fat tree: hosts per leaf switch, and each switch's children; 0: flat (one hop between any two nodes). */
  radix: number;
}

/** Ticks per millisecond: a tick is 0.1 us. */
export const TICKS_PER_MS = 1e4;
/** How far one reading moves the learnt park lateness (ms): 4 us. */
const LATE_STEP_MS = 0.004;

/** Whether `tick` is later than `now` (modular). */
export function isAfter(tick: number, now: number): boolean {
  return ((tick - now) | 0) > 0;
}

/**
 * Level of the lowest switch common to nodes a and b in a fat tree of `radix` hosts per leaf
 * (1: the same leaf switch), 1 when flat.
 */
export function commonLevel(radix: number, a: number, b: number): number {
  if (radix <= 1) return 1;
  let l = 1;
  let span = radix;
  while (Math.floor(a / span) !== Math.floor(b / span)) {
    l++;
    span *= radix;
  }
  return l;
}

/** One way from node a to node b under `m`, microseconds (0 for a node to itself). */
export function pathLatencyUs(m: WireModel, a: number, b: number): number {
  if (a === b) return 0;
  return m.latencyUs + 2 * (commonLevel(m.radix, a, b) - 1) * m.switchUs;
}

/** From a node to the switch at `level` above it (the aggregation daemons' hops), microseconds: half a host-to-host hop, then S per level. */
export function upLatencyUs(m: WireModel, level: number): number {
  return m.latencyUs / 2 + (level - 1) * m.switchUs;
}

/** Seconds on the wire of `bytes` at the adapter's rate. */
export function serialSeconds(m: WireModel, bytes: number): number {
  return Number.isFinite(m.bandwidthBytesPerSec) ? bytes / m.bandwidthBytesPerSec : 0;
}

/**
 * One thread's view of the emulated network: the clock, the node's adapter (a word of the
 * node's control memory, `kNicBusy`), the path latencies from this node, and what the thread's
 * last poll found still on the wire.
 */
export class Wire {
  private readonly ticksPerByte: number;
  /** The node's adapter: busy-until, a whole tick (shm/layout.ts kNicBusy). */
  private readonly nic: BigInt64Array;
  private readonly nicIdx = kNicBusy >> 1;
  /** Path latency from this node to each node, ticks. */
  private readonly pathTicks: Int32Array;
  /**
   * The earliest stamp a poll found not yet arrived, or 0: none. Paths note held records
   * (`arrived`), the waiter reads it to sleep until then, and each progress pass clears it.
   */
  held = 0;
  /**
   * How late a timed park wakes past its deadline (ms; wait.ts): the lower quartile of the
   * lateness of the sleeps that ran out their time (learnParkLate). A waiting rank sleeps until
   * a stamp less this, and spins out the rest: the quartile, not the mean, because the mean
   * follows the few wake-ups that a busy core delays by a tenth of a millisecond, and every
   * other wait would then spin that long (docs/wire.md, "What a wait costs").
   */
  parkLateMs = 0.1;
  /** The shortest one-way latency to another node, ms (Infinity: a job of one node). */
  readonly minLatencyMs: number;

  /**
   * @param originMs added to `performance.now()` makes the host's monotonic clock in ms (the
   *   runtime measures it per thread: runtime/env.ts wireOrigin).
   */
  constructor(readonly model: WireModel, control: Int32Array, readonly nodeId: number,
    nodes: number, private readonly originMs: number) {
    this.nic = new BigInt64Array(control.buffer, control.byteOffset, (control.byteLength >> 3));
    this.ticksPerByte = Number.isFinite(model.bandwidthBytesPerSec) ? (1000 * TICKS_PER_MS) / model.bandwidthBytesPerSec : 0;
    this.pathTicks = new Int32Array(nodes);
    let min = Infinity;
    for (let n = 0; n < nodes; n++) {
      this.pathTicks[n] = Math.round(pathLatencyUs(model, nodeId, n) * 10);
      if (n !== nodeId) min = Math.min(min, pathLatencyUs(model, nodeId, n) / 1000);
    }
    this.minLatencyMs = min;
  }

  /** One reading of how late a timed park woke past its deadline (ms). */
  learnParkLate(lateMs: number): void {
    if (!(lateMs >= 0) || lateMs >= 1) return; // a clock step or a descheduled thread: no reading
    // A quantile tracker: up by a quarter step when later than the estimate, down by three
    // quarters when earlier, so it settles where a quarter of the sleeps wake earlier.
    this.parkLateMs = Math.max(0, this.parkLateMs + (lateMs > this.parkLateMs ? 0.25 : -0.75) * LATE_STEP_MS);
  }

  /**
   * Whether a waiting rank should park at once rather than yield its core first (wait.ts):
   * where every link is slower than a park is late (3x), a record from another node lands in
   * the ring well before its stamp, so the doorbell's wake-up costs it nothing, and yielding
   * through the wire's latency would only burn the core. (A message from a rank of the same
   * node then also waits for a wake-up, which such links dwarf.)
   */
  parkFirst(): boolean {
    return this.minLatencyMs >= 3 * this.parkLateMs;
  }

  /** Now, in ticks (modulo 2^32, as records carry them). */
  now(): number {
    return ((perf.now() + this.originMs) * TICKS_PER_MS) | 0;
  }

  /** Now, in whole ticks (exact in a double for centuries of uptime). */
  private nowWhole(): number {
    return Math.floor((perf.now() + this.originMs) * TICKS_PER_MS);
  }

  /** Ticks `bytes` occupy the adapter (at least one tick per message: a message rate of 10 M/s). */
  serialTicks(bytes: number): number {
    return this.ticksPerByte === 0 ? 0 : Math.ceil(bytes * this.ticksPerByte) || 1;
  }

  /** One way to node `node`, ticks. */
  latencyTo(node: number): number {
    return this.pathTicks[node]!;
  }

  /**
   * Hands `bytes` to the node's adapter no earlier than tick `after`: the tick its last byte
   * leaves. The adapter's busy-until word is shared by the node's threads (a CAS loop).
   */
  take(after: number, bytes: number): number {
    const nic = this.nic;
    const i = this.nicIdx;
    const ser = this.serialTicks(bytes);
    const now = this.nowWhole();
    const from = now + ((after - (now | 0)) | 0); // `after`, a wrapped tick near now, made whole
    for (;;) {
      const seen = Atomics.load(nic, i);
      const busy = Number(seen);
      const end = (busy > from ? busy : from) + ser;
      if (Atomics.compareExchange(nic, i, seen, BigInt(end)) === seen) return end | 0;
    }
  }

  /** The stamp of `bytes` for node `node`, handed over now. Never 0 (0 means unstamped). */
  stamp(node: number, bytes: number): number {
    return (this.take(this.now(), bytes) + this.pathTicks[node]!) | 0 || 1;
  }

  /** The stamp of `bytes` for node `node`, handed over no earlier than tick `after` (a pull that arrived by then). */
  stampAfter(after: number, node: number, bytes: number): number {
    const now = this.now();
    return (this.take(isAfter(after, now) ? after : now, bytes) + this.pathTicks[node]!) | 0 || 1;
  }

  /**
   * Whether a record stamped `tick` has arrived (0: unstamped, always). If not, notes it as
   * held, so a wait sleeps until the earliest such tick.
   */
  arrived(tick: number): boolean {
    if (tick === 0) return true;
    if (!isAfter(tick, this.now())) return true;
    if (this.held === 0 || isAfter(this.held, tick)) this.held = tick;
    return false;
  }

  /** Milliseconds until the earliest held record arrives (<= 0: due), or Infinity when none is held. */
  heldMs(): number {
    if (this.held === 0) return Infinity;
    return ((this.held - this.now()) | 0) / TICKS_PER_MS;
  }
}
