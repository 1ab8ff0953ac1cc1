/**
 * How a rank waits: the one wait loop every blocking call goes through (Transport.waitUntil,
 * waitUntilAny, drain, recvEager, a UCX sender held back), the single park (probe, linger)
 * and the async park (`await req`).
 *
 * The policy, for a wait that began at `start`:
 *
 *   poll ... poll        spin: poll again, reading the clock every 16th empty poll
 *   |--- spinMs ---|     (or from the first one where spinMs is 0: a crowded host)
 *                  yield: sched_yield after every poll, for yieldMs, counting in the rank's
 *                  |--- yieldMs ---|   waiting word (kWaiting) so a core-sharing engine polls on
 *                                  park: raise the sleeping flag (kSleeping), look once more,
 *                                  sleep on the doorbell (kDoorbell) for at most 100 ms
 *
 * From its first idle step until it returns, the rank shows as waiting on the host board.
 * Parking raises the flag before its last look (queued sends, incoming records, progress
 * hooks' completion words): whoever made work just before saw the flag down and rang no
 * doorbell, so either the look sees the work or their next look at the flag sees it up
 * and rings (sequential consistency of Atomics).
 *
 * Under an emulated network (wire.ts), a record that is in the ring but not yet delivered by
 * the wire is held, and its stamp noted: a wait with nothing else to do then sleeps until that
 * stamp, less how late a timed sleep has been waking (learnt, `Wire.parkLateMs`), and spins or
 * yields out the rest, so waiting out the wire costs the rank almost no CPU.
 */
import { kAbortWord, kDoorbell, kSleeping, kWaiting, endpointWord } from '../shm/layout.js';
import type { HostBoard } from '../shm/host-board.js';
import type { UcxPath } from './ucx.js';
import type { Wire } from './wire.js';
import { perf } from '../perf.js';

/**
 * What a wait waits for. Each step of the wait is `ready()`, the owner's progress, then
 * `settled()`: true from either ends the wait (either may throw). Both are small, so V8 inlines
 * them into the one loop; `done` tells a park whether to sleep at all.
 */
export interface Waitable {
  readonly done: boolean;
  /**
   * How many polls may pass without the owner's progress, as a mask: 0, progress at every poll;
   * 2^k - 1, at every 2^k-th only. A wait whose `ready()` finds its message itself (a lean
   * receive, at the head of its ring) needs the rest of progress (other rings, queued sends,
   * UCX, hooks) only now and then, and skipping it shortens every poll.
   */
  readonly progressMask: number;
  /** Before progress: whether what the wait needs is already there. */
  ready(): boolean;
  /** After progress: whether the wait is over. */
  settled(): boolean;
}

/** What the waiter asks of the rank it waits for: progress, and whether work waits that no doorbell announces. */
export interface ParkHost {
  /** Drains and advances everything once; true when anything happened. */
  progress(): boolean;
  /**
   * Called with the sleeping flag up: tries what waited for room (queued sends) and says
   * whether anything is to be done now (it moved some, records arrived, a hook is ready).
   */
  workBeforePark(): boolean;
  /** Whether anything is to be done now, without doing it (parkAsync). */
  hasWork(): boolean;
}

/** For parkOnce from loops that check their own condition. */
export const NOT_DONE = { done: false };

export interface WaitPolicy {
  /** Spin this long (ms) before the first idle step. */
  spinMs: number;
  /** sched_yield, or null: no yield phase. */
  yieldFn: (() => void) | null;
  /** How long the yield phase lasts (ms; 0 without yieldFn). */
  yieldMs: number;
  board: HostBoard | null;
  /** Count yielding wait steps in the rank's waiting word (kWaiting), for the node's threads that watch it. */
  countWaits: boolean;
}

export class Waiter {
  readonly spinMs: number;
  private readonly yieldFn: (() => void) | null;
  private readonly yieldMs: number;
  private readonly board: HostBoard | null;
  private readonly countWaits: boolean;
  private readonly sleepIdx: number;
  private readonly doorbellIdx: number;
  private readonly waitingIdx: number;
  private asyncWaiters: Array<() => void> = [];
  private asyncArmed = false;

  constructor(private readonly control: Int32Array, ep: number, policy: WaitPolicy,
    private readonly host: ParkHost, private readonly ucx: UcxPath | null, private readonly wire: Wire | null = null) {
    this.spinMs = policy.spinMs;
    this.yieldFn = policy.yieldFn;
    this.yieldMs = policy.yieldFn === null ? 0 : policy.yieldMs;
    this.board = policy.board;
    this.countWaits = policy.countWaits;
    this.sleepIdx = endpointWord(ep, kSleeping);
    this.doorbellIdx = endpointWord(ep, kDoorbell);
    this.waitingIdx = endpointWord(ep, kWaiting);
  }

  /**
   * Progresses until `w` says the wait is over, spinning, yielding and parking as the policy
   * says. `lazyClock`: read the clock only once 16 polls found nothing (it costs as much as a
   * ring poll), for waits whose message is usually there at once.
   */
  run(w: Waitable, spinMs: number, lazyClock: boolean): void {
    // -1: take an idle step after every empty poll from the first (spinMs 0: a crowded host;
    // over UCX a poll is a system call, and 16-32 empty polls before the first yield kept the
    // core from the rank being waited for for about 80 us; BENCHMARKS.md, "Yield from the
    // first empty poll"). Else count polls, looking at the clock every 16th.
    let n = spinMs === 0 ? -1 : 0;
    let start = n < 0 || !lazyClock ? perf.now() : 0;
    let polls = 0;
    try {
      for (;;) {
        if (w.ready()) return;
        if ((polls++ & w.progressMask) === 0) this.host.progress();
        if (w.settled()) return;
        if (n < 0) {
          if (this.idle(start, spinMs, w)) n = -1;
        } else if ((++n & 15) === 0) {
          if (start === 0) start = perf.now();
          else if (this.idle(start, spinMs, w)) n = -1;
        }
      }
    } finally {
      this.board?.leave();
    }
  }

  /**
   * One idle step of a wait that began at `start` (ms) and found nothing to do: within the
   * spin budget, nothing; then, with a yield function, sched_yield until the yield budget is
   * spent; then park once. True once past the spin budget.
   */
  private idle(start: number, spinMs: number, req: { done: boolean }): boolean {
    if (this.wire !== null && this.wire.held !== 0) return this.idleOnWire(req);
    const waited = perf.now() - start;
    // Under a link slower than a park is late, neither spin nor yield (Wire.parkFirst): what
    // the rank waits for crosses the wire, and spinning through its latency (2 ms where ranks
    // have cores) only burns the core.
    const parkFirst = this.wire !== null && this.wire.parkFirst();
    if (waited <= spinMs && !parkFirst) return false;
    this.board?.enter();
    if (this.yieldFn !== null && waited <= spinMs + this.yieldMs && !parkFirst) {
      if (this.countWaits) Atomics.add(this.control, this.waitingIdx, 1);
      this.yieldFn();
    } else {
      this.parkOnce(req);
    }
    return true;
  }

  /**
   * An idle step while the wire holds a record (wire.ts): sleep until its stamp, less how late
   * sleeps wake; closer than that, spin (yielding where cores are shared). Always true.
   */
  private idleOnWire(req: { done: boolean }): boolean {
    const wire = this.wire!;
    const left = wire.heldMs() - wire.parkLateMs;
    if (left > 0.02) {
      this.board?.enter();
      this.parkOnce(req, left);
    } else {
      wire.held = 0;
      if (this.yieldFn !== null) this.yieldFn();
    }
    return true;
  }

  /**
   * The longest a UCX rank sleeps on its worker under an emulated network (parkOnce): where it
   * parks first, up to 0.1 ms past the shortest latency, so the message it waits for usually
   * wakes it (UCX's event fd) rather than the nap ending just before it comes; a message whose
   * arrival the event fd misses is then seen at most 0.1 ms past the earliest stamp it can carry.
   */
  private wireNapMs(wire: Wire): number {
    return wire.parkFirst() ? Math.max(0.05, wire.minLatencyMs + 0.1 - wire.parkLateMs) : 1;
  }

  /**
   * Parks once (until a doorbell, `ms`, or 100 ms) unless there is already something to do.
   * Under an emulated network, no longer than until the earliest record the wire holds.
   */
  parkOnce(req: { done: boolean }, ms = 100): void {
    const c = this.control;
    const wire = this.wire;
    if (wire !== null && wire.held !== 0) {
      ms = Math.min(ms, Math.max(0, wire.heldMs() - wire.parkLateMs));
      wire.held = 0;
    }
    Atomics.store(c, this.sleepIdx, 1);
    const seen = Atomics.load(c, this.doorbellIdx);
    if (!this.host.workBeforePark() && !req.done && Atomics.load(c, kAbortWord) === 0) {
      // The last look may have found a record on the wire that came in before the flag went up
      // (its writer rang no doorbell): sleep no longer than until it arrives.
      if (wire !== null && wire.held !== 0) {
        ms = Math.min(ms, Math.max(0, wire.heldMs() - wire.parkLateMs));
        wire.held = 0;
      }
      // With UCX, sleep in poll(2) on the worker's events and this rank's eventfd doorbell,
      // which wake() rings for a sleeping UCX rank besides the futex.
      const t0 = wire === null ? 0 : perf.now();
      // How long the sleep ran out its time for (ms), or -1: a doorbell, an event, no sleep.
      let slept = -1;
      if (this.ucx !== null) {
        // Under an emulated network no longer than 1 ms, and where the rank parks first about
        // the shortest link's latency (wireNapMs): UCX's event fd does not report every arrival
        // (ucx.ts idleDelayMs), and a message that lands while the rank sleeps (microseconds
        // after it was sent) must be seen close to its stamp.
        if (wire !== null) ms = Math.min(ms, this.wireNapMs(wire));
        if (Atomics.load(c, this.doorbellIdx) === seen) slept = this.ucx.sleep(ms);
      } else if (Atomics.wait(c, this.doorbellIdx, seen, ms) === 'timed-out') {
        slept = ms;
      }
      if (wire !== null && slept >= 0 && slept < 100) wire.learnParkLate(perf.now() - t0 - slept);
    }
    Atomics.store(c, this.sleepIdx, 0);
  }

  /**
   * Calls `callback` after the next doorbell (or 50 ms), without blocking the thread. A timer
   * backs the Atomics.waitAsync up: a pending waitAsync does not keep Node's event loop alive
   * (nor Deno's), so without a ref'd handle `await req` at a job's top level would let the
   * worker exit. Where Atomics.waitAsync is missing (Firefox before 145, Safari before 16.4)
   * the timer alone polls, every millisecond.
   */
  parkAsync(callback: () => void): void {
    this.asyncWaiters.push(callback);
    if (this.asyncArmed) return;
    this.asyncArmed = true;
    const c = this.control;
    Atomics.store(c, this.sleepIdx, 1);
    const seen = Atomics.load(c, this.doorbellIdx);
    let fired = false;
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    const fire = (): void => {
      if (fired) return;
      fired = true;
      if (timer !== undefined) clearTimeout(timer);
      Atomics.store(c, this.sleepIdx, 0);
      this.asyncArmed = false;
      const waiters = this.asyncWaiters;
      this.asyncWaiters = [];
      for (const w of waiters) w();
    };
    if (this.host.hasWork()) {
      soon(fire);
      return;
    }
    const held = this.wire === null ? Infinity : this.wire.heldMs();
    if (typeof Atomics.waitAsync !== 'function') {
      timer = setTimeout(fire, 1);
      return;
    }
    timer = setTimeout(fire, held < 50 ? Math.max(1, Math.floor(held)) : 50);
    this.ucx?.watch(fire);
    const r = Atomics.waitAsync(c, this.doorbellIdx, seen, 50);
    if (r.async) void r.value.then(fire);
    else soon(fire);
  }
}

/**
 * Runs `f` on the event loop's next turn: setImmediate where the runtime has it (Node, Bun,
 * Deno); in a browser a MessageChannel's message (nested zero timers are clamped to 4 ms).
 */
const soon: (f: () => void) => void = typeof setImmediate === 'function' ? (f) => void setImmediate(f) : messageSoon();

function messageSoon(): (f: () => void) => void {
  const queue: Array<() => void> = [];
  const channel = new MessageChannel();
  // A browser's port (setting onmessage starts it); Node's types describe another kind.
  (channel.port1 as unknown as { onmessage: (() => void) | null }).onmessage = () => queue.shift()?.();
  return (f) => {
    queue.push(f);
    channel.port2.postMessage(null);
  };
}
