/**
 * The load part of the reliability suite, short forms (docs/reliability.md, "Load"; the long
 * forms run with `npm run load -- --long`). Every job runs under a deadline; every result is
 * checked inside the job against an independent reference (src/bench/coll-cases.ts, the
 * message stamps of src/bench/load-job.ts), and resident memory of every node process is
 * sampled from here, through /proc.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
// The built runner: launch() starts nodes from the built CLI beside it (npm test builds first).
import { runLoad, type LoadOutcome, type LoadRun } from '../dist/bench/load.js';
import { ucxUnavailable } from '../src/runtime/node-main.ts';
import { UCX_HEADERS_IN_FLIGHT } from '../src/p2p/ucx.ts';
import { PUSH_CREDIT_BYTES, PUSH_MESSAGE_COST } from '../src/runtime/engine.ts';
import { EAGER_CREDIT_BYTES, EAGER_MESSAGE_COST } from '../src/p2p/transport.ts';

const T = { timeout: 120_000 };
const hasUcx = ucxUnavailable() === null;

async function loadOk(run: LoadRun): Promise<LoadOutcome> {
  const o = await runLoad(run);
  const r = o.result;
  assert.equal(r.exitCode, 0, `load ${run.mode} ${JSON.stringify(run.params)} failed: ${r.failure}\n${r.stderr}\n${r.stdout}`);
  assert.equal(r.ranks.length, run.ranks, `every rank reports a result\n${r.stderr}`);
  return o;
}

/**
 * Peak resident MB of each node while the receiver (rank 0) stood still, from the stall it
 * reports; the catch-up after it holds the senders' backlog in the receiver's own queue.
 */
function stallPeaks(o: LoadOutcome): Record<string, number> {
  const [from, to] = (o.result.ranks[0]!.result as { stall: [number, number] }).stall.map((ms) => (ms - o.epochMs) / 1000) as [number, number];
  const peaks: Record<string, number> = {};
  for (const s of o.samples) {
    if (s.t < from || s.t > to) continue;
    for (const [node, kb] of Object.entries(s.kb)) peaks[node] = Math.max(peaks[node] ?? 0, kb / 1024);
  }
  assert.ok(Object.keys(peaks).length === 2, `memory was sampled while the receiver stood still (${from.toFixed(1)}..${to.toFixed(1)} s)`);
  return peaks;
}

interface OutstandingResult { posted: number; checked: number; completedBy: { wait: number; waitAny: number; testAny: number } }
interface SlowResult { messages: number; bytes: number; ucxPeakInFlight?: number; creditRendezvous?: number }
interface FloodResult { sent: number; received: number }

describe('load', () => {
  for (const [transport, total, comms] of [['tcp', 1500, 20], ['ucx', 500, 10]] as const) {
    test(`outstanding collectives: ${total} non-blocking collectives of every kind on ${comms} communicators, 4 ranks over 2 nodes (${transport}), all posted first, complete in a seeded scrambled order`,
      { ...T, skip: transport === 'ucx' && !hasUcx ? 'no UCX in the native addon' : false }, async () => {
        const o = await loadOk({
          mode: 'outstanding', ranks: 4, ppn: 2, transport, timeoutMs: 90_000,
          params: { total, comms, seed: 16, sizes: [1, 16, 300, 3000] },
        });
        for (const { result } of o.result.ranks) {
          const x = result as OutstandingResult;
          assert.equal(x.checked, total);
          // every completion style was used
          assert.ok(x.completedBy.wait > 0 && x.completedBy.waitAny > 0 && x.completedBy.testAny > 0, JSON.stringify(x.completedBy));
        }
      });
  }

  // Rank 0 computes for 4 s, calling nothing; ranks 1 (same node) and 2, 3 (the other node)
  // send to it all the while. The intra-node sender must block once the ring is full, the
  // inter-node ones once the receiving engine holds HIGH_WATER worth of records (it pauses
  // reading, TCP holds the senders back). Before the fix the receiving engine counted only
  // payload bytes and held ~400 MB of 64-byte messages before it paused.
  test('slow receiver: a rank that computes while 3 others send 64-byte messages to it keeps every node bounded, then receives all in order (tcp)', T, async () => {
    const o = await loadOk({
      mode: 'slow', ranks: 4, ppn: 2, transport: 'tcp', timeoutMs: 90_000,
      params: { seconds: 4, bytes: 64, receiver: 'compute', sender: 'send' },
    });
    const [recv, intra, ...inter] = o.result.ranks.map((r) => r.result as SlowResult);
    assert.equal(recv!.messages, intra!.messages + inter.reduce((a, x) => a + x.messages, 0), 'every message sent arrived');
    // a 64 KiB ring holds ~580 records of 112 bytes: the intra-node sender blocked
    assert.ok(intra!.messages < 2000, `the intra-node sender sent ${intra!.messages} messages to a rank that received nothing`);
    for (const [node, mb] of Object.entries(stallPeaks(o))) assert.ok(mb < 300, `${node} peaked at ${mb.toFixed(1)} MB while rank 0 stood still`);
  });

  // Over UCX an eager send completes on return; the sender keeps a staged copy while UCX has
  // not sent it. Before the bound the sending node grew ~10 MB/s against a computing receiver
  // (tens of thousands of sends held); now a blocking send waits past UCX_HEADERS_IN_FLIGHT,
  // or once its eager credit is spent.
  test('slow receiver: 64-byte blocking sends over UCX to a computing rank hold at most UCX_HEADERS_IN_FLIGHT + 1 unfinished sends, then wait (ucx)',
    { ...T, skip: !hasUcx ? 'no UCX in the native addon' : false }, async () => {
    const o = await loadOk({
      mode: 'slow', ranks: 4, ppn: 2, transport: 'ucx', timeoutMs: 90_000,
      params: { seconds: 4, bytes: 64, receiver: 'compute', sender: 'send' },
    });
    const [recv, ...senders] = o.result.ranks.map((r) => r.result as SlowResult);
    assert.equal(recv!.messages, senders.reduce((a, x) => a + x.messages, 0), 'every message sent arrived');
    const inter = senders.slice(1);
    for (const x of inter) assert.ok(x.ucxPeakInFlight! <= UCX_HEADERS_IN_FLIGHT + 1, `a sender held ${x.ucxPeakInFlight} unfinished UCX sends`);
    // Back-pressure engaged: rank 0's socket filled (UCX_HEADERS_IN_FLIGHT reached), or first
    // the eager credit ran out, and a blocking send waits for its receive by rendezvous.
    const credit = Math.floor(EAGER_CREDIT_BYTES / (64 + EAGER_MESSAGE_COST)) + 1;
    for (const x of inter) {
      assert.ok(x.ucxPeakInFlight! >= UCX_HEADERS_IN_FLIGHT || x.creditRendezvous! > 0,
        `a sender's peak was ${x.ucxPeakInFlight} and it never ran out of eager credit: back-pressure never engaged`);
      assert.ok(x.messages <= credit, `a sender completed ${x.messages} blocking sends to a rank that received none (credit covers ${credit})`);
    }
    for (const [node, mb] of Object.entries(stallPeaks(o))) assert.ok(mb < 300, `${node} peaked at ${mb.toFixed(1)} MB while rank 0 stood still`);
  });

  // A non-blocking send never waits; over UCX its request completes once UCX has sent it, so a
  // window of isends to a rank that does not take them stays pending. Before, each isend
  // completed on return and its staged copy stayed with UCX: the window bounded nothing.
  test('slow receiver: windows of 64-byte isends over UCX to a computing rank stay pending: at most a window of unfinished sends (ucx)',
    { ...T, skip: !hasUcx ? 'no UCX in the native addon' : false }, async () => {
    const o = await loadOk({
      mode: 'slow', ranks: 4, ppn: 2, transport: 'ucx', timeoutMs: 90_000,
      params: { seconds: 3, bytes: 64, receiver: 'compute', sender: 'isend', window: 64 },
    });
    const [recv, ...senders] = o.result.ranks.map((r) => r.result as SlowResult);
    assert.equal(recv!.messages, senders.reduce((a, x) => a + x.messages, 0), 'every message sent arrived');
    // a window, plus the END message a sender posts while its last window is still out
    for (const x of senders.slice(1)) assert.ok(x.ucxPeakInFlight! <= 64 + 1, `a sender held ${x.ucxPeakInFlight} unfinished UCX sends with windows of 64`);
  });

  // Rendezvous payloads wait at the senders until rank 0 receives. Over TCP a sending engine
  // pushes at most PUSH_CREDIT_BYTES to the other node before the receiver has taken them, and
  // past that the receiving engine pulls a payload only once a receive matches it; before,
  // every payload crossed at once into the receiving engine's arena, which filled and failed
  // the job with NBC_ERR_NO_MEM.
  for (const transport of ['tcp', 'ucx'] as const) {
    test(`slow receiver: windows of 20 KB isends (rendezvous) to a computing rank stay pending at the senders, not buffered at the receiver (${transport})`,
      { ...T, skip: transport === 'ucx' && !hasUcx ? 'no UCX in the native addon' : false }, async () => {
      const o = await loadOk({
        mode: 'slow', ranks: 4, ppn: 2, transport, timeoutMs: 90_000,
        params: { seconds: 2, bytes: 20_000, receiver: 'compute', sender: 'isend', window: 64 },
      });
      const [recv, ...senders] = o.result.ranks.map((r) => r.result as SlowResult);
      assert.equal(recv!.messages, senders.reduce((a, x) => a + x.messages, 0));
      if (transport === 'tcp') {
        // intra-node: one window; inter-node: what the push credit covers, then one window more at most
        assert.equal(senders[0]!.messages, 64, 'the intra-node sender got past its first window while rank 0 received nothing');
        const inter = senders[1]!.messages + senders[2]!.messages;
        assert.ok(inter <= Math.ceil(PUSH_CREDIT_BYTES / 20_000) + 2 * 64, `the other node's senders sent ${inter} messages to a rank that received nothing`);
      }
      for (const [node, mb] of Object.entries(stallPeaks(o))) assert.ok(mb < 300, `${node} peaked at ${mb.toFixed(1)} MB while rank 0 stood still`);
    });
  }

  // A receiver that keeps progressing but posts no receive (blocked on a message sent last)
  // takes every eager message into its unexpected queue. Before eager credit it grew ~70 MB/s;
  // now each sender spends at most EAGER_CREDIT_BYTES on it, and past that its small sends go
  // by rendezvous: an RTS travels, the payload waits at the sender, the window stays pending.
  for (const transport of ['tcp', 'ucx'] as const) {
    test(`slow receiver: windows of 64-byte isends to a rank blocked on another receive spend the eager credit, then wait at the senders by rendezvous (${transport})`,
      { ...T, skip: transport === 'ucx' && !hasUcx ? 'no UCX in the native addon' : false }, async () => {
      const o = await loadOk({
        mode: 'slow', ranks: 4, ppn: 2, transport, timeoutMs: 90_000,
        params: { seconds: 2, bytes: 64, receiver: 'blocked', sender: 'isend', window: 64 },
      });
      const [recv, ...senders] = o.result.ranks.map((r) => r.result as SlowResult);
      assert.equal(recv!.messages, senders.reduce((a, x) => a + x.messages, 0), 'every message sent arrived');
      // The credit covers this many, then the window that ran out of it stays out. Over TCP
      // the other node's sending engine also pushes the first rendezvous payloads (their sends
      // complete) within PUSH_CREDIT_BYTES, at PUSH_MESSAGE_COST each besides their room.
      const bound = Math.floor(EAGER_CREDIT_BYTES / (64 + EAGER_MESSAGE_COST)) + 64;
      const pushed = transport === 'tcp' ? Math.floor(PUSH_CREDIT_BYTES / (64 + PUSH_MESSAGE_COST)) : 0;
      for (const [i, x] of senders.entries()) {
        assert.ok(x.creditRendezvous! > 0, `sender ${i + 1} never ran out of eager credit (${x.messages} messages sent)`);
      }
      assert.ok(senders[0]!.messages <= bound, `the intra-node sender sent ${senders[0]!.messages} messages to a rank that received none (credit covers ${bound})`);
      const inter = senders[1]!.messages + senders[2]!.messages;
      assert.ok(inter <= 2 * bound + pushed, `the other node's senders sent ${inter} messages to a rank that received none (credit covers ${2 * bound + pushed})`);
      for (const [node, mb] of Object.entries(stallPeaks(o))) assert.ok(mb < 300, `${node} peaked at ${mb.toFixed(1)} MB while rank 0 stood still`);
    });
  }

  for (const [transport, count] of [['tcp', 10_000], ['ucx', 10_000]] as const) {
    test(`message flood: ${count} 16-byte messages between every ordered pair of 4 ranks over 2 nodes (${transport}) arrive complete, intact and in order per sender`,
      { ...T, skip: transport === 'ucx' && !hasUcx ? 'no UCX in the native addon' : false }, async () => {
        const o = await loadOk({
          mode: 'flood', ranks: 4, ppn: 2, transport, timeoutMs: 90_000,
          params: { count, bytes: 16, window: 64 },
        });
        for (const { result } of o.result.ranks) {
          const x = result as FloodResult;
          assert.equal(x.sent, count * 3);
          assert.equal(x.received, count * 3);
        }
      });
  }
});
