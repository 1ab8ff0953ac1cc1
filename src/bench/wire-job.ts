/**
 * The CPU a wait for the wire costs (`npm run bench:wire`, scripts/bench-wire.mjs): ranks 0
 * and 1, on two nodes, ping-pong 8 B for `ms` milliseconds under an emulated `--link`, while
 * each reads its node process's CPU time (every thread: the rank, the engine, the runtime)
 * and the wall time over the same span, after a warm-up. Under `--link latency=1ms` nearly
 * all of it is spent waiting for stamps (NBC_WIRE=stamp) or for the engines' timer queue
 * (NBC_WIRE=queue).
 */
import type { Comm } from '../comm/comm.js';

/** Round trips before the span (about 0.4 s under a 1 ms latency). */
const WARMUP_ROUND_TRIPS = 200;

export interface WireJobResult {
  /** This node process's user + system CPU over the span, ms. */
  cpuMs: number;
  wallMs: number;
  roundTrips: number;
}

export default function wireJob(world: Comm, argv: string[]): WireJobResult | null {
  const ms = Number(argv[0] ?? '2000');
  if (world.rank > 1) return null;
  const peer = 1 - world.rank;
  const msg = new Uint8Array(8);
  // Warm-up outside the span: V8 compiles the wait's hot paths during the first few hundred
  // round trips (about 1 % of a core over a 2 s span), which is start-up, not waiting. Both
  // ranks count the same exchanges, so they start the span together.
  for (let i = 0; i < WARMUP_ROUND_TRIPS; i++) world.sendrecv(msg, peer, 1, new Uint8Array(8), peer, 1);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let roundTrips = 0;
  // Rank 0 says in each ping whether another follows (msg[0]), so both stop on the same one.
  for (;;) {
    if (world.rank === 0) {
      msg[0] = performance.now() - t0 < ms ? 1 : 0;
      world.send(msg, peer, 2);
      world.recv(msg, peer, 2);
    } else {
      world.recv(msg, peer, 2);
      world.send(msg, peer, 2);
    }
    roundTrips++;
    if (msg[0] === 0) break;
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs, roundTrips };
}
