/**
 * Link emulation: an added one-way latency and a bandwidth cap on a link's outgoing frames, to
 * reproduce "Gigabit Ethernet vs InfiniBand" between node processes on one machine.
 *
 * Model (store and forward): a frame of n bytes sent at time t starts serialising when the wire
 * is free, start = max(t, busyUntil), occupies it n / bandwidth seconds, and is handed to the
 * socket at start + n / bandwidth + latency. Hand-over times never decrease, so frames keep their
 * order. Real loopback time comes on top, so every bound is a lower bound.
 *
 * Waiting uses timers: setTimeout for the whole milliseconds, then setImmediate re-checks for the
 * sub-millisecond rest (Node timers have 1 ms resolution and may fire a little early; the clock is
 * re-read before every hand-over, so nothing leaves before its time). The re-checks yield to I/O
 * on every turn of the event loop; they run only while a frame is due within the next
 * millisecond. A `yieldCore` callback runs before each re-check: where the process shares its
 * core with ranks that wait, it gives the core away, so the wait does not take it from them (a
 * sub-millisecond timer wait being what Node lacks); beside ranks that compute it must not,
 * since a yielding thread would then run only when their time slices end.
 */
import { NbcArgError } from '../errors.js';

export interface LinkEmulation {
  /** Added one-way delay per frame, microseconds (default 0). */
  latencyUs?: number;
  /** Throughput cap of the link in bytes per second (default: none). */
  bandwidthBytesPerSec?: number;
}

/** Throws NbcArgError unless `e` has finite, non-negative latency and positive bandwidth. */
export function checkEmulation(e: LinkEmulation): void {
  const { latencyUs, bandwidthBytesPerSec } = e;
  if (latencyUs !== undefined && !(Number.isFinite(latencyUs) && latencyUs >= 0)) {
    throw new NbcArgError(`Cannot emulate link: latencyUs ${latencyUs} is not a finite number >= 0`);
  }
  if (bandwidthBytesPerSec !== undefined && !(Number.isFinite(bandwidthBytesPerSec) && bandwidthBytesPerSec > 0)) {
    throw new NbcArgError(
      `Cannot emulate link: bandwidthBytesPerSec ${bandwidthBytesPerSec} is not a finite number > 0`);
  }
}

/**
 * A queue that hands items to `deliver` no earlier than the model allows. One per link
 * direction; `T` is whatever the link needs to write a frame.
 */
export class EmulatedWire<T> {
  private readonly latencyMs: number;
  private readonly msPerByte: number;
  private busyUntil = 0;
  // Struct of arrays, consumed from `head`; reset when empty.
  private readonly items: (T | undefined)[] = [];
  private readonly due: number[] = [];
  private readonly sizes: number[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private bytes = 0;
  private readonly fire = (): void => this.onFire();

  constructor(
    emulation: LinkEmulation,
    private readonly deliver: (item: T) => void,
    /** Called after the queue has emptied by hand-overs. */
    private readonly onEmpty?: () => void,
    /** Called before each sub-millisecond re-check is scheduled (sched_yield; see above). */
    private readonly yieldCore: (() => void) | null = null,
  ) {
    checkEmulation(emulation);
    this.latencyMs = (emulation.latencyUs ?? 0) / 1000;
    this.msPerByte = emulation.bandwidthBytesPerSec === undefined ? 0 : 1000 / emulation.bandwidthBytesPerSec;
  }

  /** Bytes queued and not yet handed over. */
  get pendingBytes(): number {
    return this.bytes;
  }

  get length(): number {
    return this.items.length - this.head;
  }

  /** Queues `item` of `size` bytes on the wire. Never delivers synchronously. */
  push(item: T, size: number): void {
    const now = performance.now();
    const start = this.busyUntil > now ? this.busyUntil : now;
    this.busyUntil = start + size * this.msPerByte;
    this.items.push(item);
    this.due.push(this.busyUntil + this.latencyMs);
    this.sizes.push(size);
    this.bytes += size;
    if (this.timer === null && this.immediate === null) this.arm(now);
  }

  /** Hands over everything queued now, ignoring the model (for an orderly close). */
  flushNow(): void {
    this.disarm();
    while (this.head < this.items.length) this.deliverHead();
    this.reset();
  }

  /** Drops everything queued and returns it, oldest first; cancels the timers. */
  clear(): T[] {
    this.disarm();
    const dropped = this.items.slice(this.head) as T[];
    this.reset();
    return dropped;
  }

  private onFire(): void {
    this.timer = null;
    this.immediate = null;
    const now = performance.now();
    while (this.head < this.items.length && this.due[this.head]! <= now) this.deliverHead();
    if (this.head < this.items.length) {
      if (this.head >= 1024 && this.head * 2 >= this.items.length) this.compact();
      this.arm(now);
    } else {
      this.reset();
      this.onEmpty?.();
    }
  }

  private deliverHead(): void {
    const i = this.head++;
    const item = this.items[i] as T;
    this.items[i] = undefined;
    this.bytes -= this.sizes[i]!;
    this.deliver(item);
  }

  private arm(now: number): void {
    const wait = this.due[this.head]! - now;
    if (wait >= 1) {
      this.timer = setTimeout(this.fire, Math.floor(wait));
    } else {
      this.yieldCore?.();
      this.immediate = setImmediate(this.fire);
    }
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.immediate !== null) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
  }

  /** Drops the consumed prefix, so a queue that never empties does not grow without bound. */
  private compact(): void {
    this.items.splice(0, this.head);
    this.due.splice(0, this.head);
    this.sizes.splice(0, this.head);
    this.head = 0;
  }

  private reset(): void {
    this.items.length = 0;
    this.due.length = 0;
    this.sizes.length = 0;
    this.head = 0;
    this.bytes = 0;
  }
}
