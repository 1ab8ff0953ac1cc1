/**
 * Under an emulated link (`--link latency=L`), no message between two nodes is received
 * before L after it was sent: the lower bound that follows from the model (p2p/wire.ts), on
 * every protocol. Two ranks on two nodes; rank 0 sends, rank 1 receives and checks. Each
 * message carries its send time, read from the host's monotonic clock (the clock every
 * process of the host shares, as the wire's stamps do) just before the send, and a pattern.
 *
 * args: [latencyMs]. Returns, on rank 1, the smallest delay seen per case (ms); on rank 0,
 * its transport stats that show which paths ran.
 */
import assert from 'node:assert/strict';
import { waitAll, type Communicator, type Request } from 'nbcoll';

/** The host's monotonic clock, ms. */
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** A message of `bytes` (at least 8): its send time in the first 8 bytes, then a pattern of (tag, i). */
function stamped(bytes: number, tag: number): Uint8Array {
  const a = new Uint8Array(bytes);
  for (let i = 8; i < bytes; i++) a[i] = (tag * 31 + i) % 251;
  new Float64Array(a.buffer, 0, 1)[0] = nowMs();
  return a;
}

/** Checks a received message's pattern; returns how long after its send time it was received (ms). */
function delayOf(a: Uint8Array, tag: number, received: number): number {
  for (let i = 8; i < a.length; i++) {
    if (a[i] !== (tag * 31 + i) % 251) assert.fail(`tag ${tag}, byte ${i}: got ${a[i]}, expected ${(tag * 31 + i) % 251}`);
  }
  return received - new Float64Array(a.buffer, 0, 1)[0]!;
}

/** Sizes of the in-order case: eager, rendezvous with its payload, eager again, on one tag. */
const IN_ORDER = [8, 100_000, 8, 1 << 20, 64];
/** Small messages sent before any is received: past the eager credit they go by held rendezvous. */
const PILE = 12;

export default function main(w: Communicator, args: string[]): unknown {
  const latencyMs = Number(args[0] ?? 2);
  if (w.size !== 2) throw new Error(`wire-bound runs on 2 ranks, got ${w.size}`);
  if (w.rank === 0) {
    // One message at a time, the receive posted first (expected)...
    for (const bytes of IN_ORDER) {
      w.recv(new Uint8Array(1), 1, 9);
      w.send(stamped(bytes, 1), 1, 1);
    }
    // ... then the same sizes back to back, received as they come (some unexpected), in order...
    for (const bytes of IN_ORDER) w.send(stamped(bytes, 2), 1, 2);
    // ... then a pile received last first, so the earlier ones wait unexpected, holding credit.
    const reqs: Request[] = [];
    for (let t = 0; t < PILE; t++) reqs.push(w.isend(stamped(64, 100 + t), 1, 100 + t));
    waitAll(reqs);
    w.recv(new Uint8Array(1), 1, 9);
    const s = w.stats();
    return { interNode: s.interNode, creditRendezvous: s.host.creditRendezvous };
  }
  const min: Record<string, number> = { expected: Infinity, inOrder: Infinity, pile: Infinity };
  const note = (kind: string, d: number): void => {
    min[kind] = Math.min(min[kind]!, d);
  };
  for (const bytes of IN_ORDER) {
    const into = new Uint8Array(bytes);
    const r = w.irecv(into, 0, 1);
    w.send(new Uint8Array(1), 0, 9);
    r.wait();
    note('expected', delayOf(into, 1, nowMs()));
  }
  for (const bytes of IN_ORDER) {
    const into = new Uint8Array(bytes);
    const st = w.recv(into, 0, 2);
    const at = nowMs();
    assert.equal(st.count, bytes, 'messages of one tag from one sender arrive in the order sent');
    note('inOrder', delayOf(into, 2, at));
  }
  for (let t = PILE - 1; t >= 0; t--) {
    const into = new Uint8Array(64);
    w.recv(into, 0, 100 + t);
    note('pile', delayOf(into, 100 + t, nowMs()));
  }
  w.send(new Uint8Array(1), 0, 9);
  return { latencyMs, min };
}
