/**
 * The aggregation fabric under the emulated network as time (p2p/wire.ts): every FRAG and
 * RESULT carries the tick its modelled network delivers it at (0: unstamped), and nothing in
 * the fabric waits for one. A daemon sits at a switch:
 *
 *   node -> its leaf daemon           upLatencyUs(model, 1)   half a host-to-host hop
 *   daemon at level l -> l + 1        switchUs                one more switch
 *
 * and the same hops back down. A daemon that reduces its children's copies of a fragment
 * computes the result's time in virtual time, as the latest of the copies' stamps (the
 * reduction needs all of them), and stamps what it sends on = that time, queued behind the
 * port's earlier frames, plus the frame's serialisation at the port, plus the hop's latency.
 * Only the rank that consumes the final result waits for its stamp (sched/offload-client.ts).
 *
 * Each process keeps its own ports' busy-until ticks: a daemon per connection, a member node
 * its node's one adapter (the engine's Wire, shared with the ranks' traffic) or, without one,
 * a port of its own per daemon link. The clock is the host's monotonic clock in ticks of
 * 0.1 us (runtime/wire-clock.ts), the same in every process of the host.
 */
import { isAfter, serialSeconds, TICKS_PER_MS, upLatencyUs, type WireModel } from '../p2p/wire.js';
import { hostClockOriginMs } from '../runtime/wire-clock.js';

/** A busy-until more than this far ahead of the departure is stale (wrapped), not a queue (wire.ts). */
const MAX_QUEUE_TICKS = 1 << 30;

/** One port of a daemon or member: the tick its last frame's last byte leaves (0: idle). */
export interface Port {
  busy: number;
}

/** The later of two stamps (0: none, so the other). */
export function laterStamp(a: number, b: number): number {
  if (a === 0) return b;
  if (b === 0) return a;
  return isAfter(b, a) ? b : a;
}

/** The fabric's view of the emulated network in one process: its hops, ports and the host clock. */
export class AggTiming {
  /** Ticks from a node to its leaf daemon (and back). */
  readonly nodeHop: number;
  /** Ticks between a daemon and its parent (one switch). */
  readonly switchHop: number;
  private readonly ticksPerByte: number;
  private readonly originMs = hostClockOriginMs();

  constructor(readonly model: WireModel) {
    this.nodeHop = Math.round(upLatencyUs(model, 1) * 10);
    this.switchHop = Math.round(model.switchUs * 10);
    this.ticksPerByte = serialSeconds(model, 1) * 1000 * TICKS_PER_MS;
  }

  /** Now, in ticks of the host clock. */
  now(): number {
    return ((performance.now() + this.originMs) * TICKS_PER_MS) | 0;
  }

  /** Ticks `bytes` occupy a port (at least one per frame where bandwidth is capped, as wire.ts). */
  serialTicks(bytes: number): number {
    return this.ticksPerByte === 0 ? 0 : Math.ceil(bytes * this.ticksPerByte) || 1;
  }

  /**
   * The stamp of a frame of `bytes` leaving `port` no earlier than tick `after` (0: now) over a
   * hop of `hop` ticks. Never 0.
   */
  stamp(port: Port, after: number, bytes: number, hop: number): number {
    const from = after === 0 ? this.now() : after;
    const ahead = (port.busy - from) | 0;
    const start = port.busy !== 0 && ahead > 0 && ahead < MAX_QUEUE_TICKS ? port.busy : from;
    port.busy = (start + this.serialTicks(bytes)) | 0 || 1;
    return (port.busy + hop) | 0 || 1;
  }
}
