/**
 * How a blocking wait spends its empty polls (docs/shm.md, "Waiting"): with a spin
 * budget it polls, looking at the clock every 16th poll; on a crowded host (spin budget 0) it
 * yields its core after every empty poll from the first. Two ranks of one node, in one thread:
 * the peer's send runs inside the waiting rank's yield, as the peer would run on the core the
 * yield handed over.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Transport } from '../src/p2p/transport.ts';
import { endpointWord, kWaiting } from '../src/shm/layout.ts';
import { createNodeShared } from '../src/shm/node-shared.ts';

const T = { timeout: 10_000 };

/**
 * Rank 0 waits for a message from rank 1, which sends it in rank 0's first yield. Returns how
 * many times rank 0 polled before that yield, and how many yields the wait took.
 */
function waitWithPeerInYield(spinUs: number, blockingRecv: boolean, waitsWatched?: boolean): { pollsBeforeYield: number; yields: number; counted: number } {
  const shared = createNodeShared({ ranks: 2, ringBytes: 64 * 1024, sliceBytes: 1 << 20 });
  const placement = { worldSize: 2, nodeId: 0, nodeOfRank: Int32Array.of(0, 0), localOfRank: Int32Array.of(0, 1) };
  let polls = 0;
  let pollsBeforeYield = -1;
  let yields = 0;
  const peer = new Transport(shared, { ...placement, worldRank: 1 });
  const yieldFn = (): void => {
    if (yields++ === 0) {
      pollsBeforeYield = polls;
      peer.isend(Uint8Array.of(42), 0, 0, 1, 5);
    }
  };
  const rank = new Transport(shared, { ...placement, worldRank: 0 }, { spinUs, yieldFn, yieldUs: 1_000_000, waitsWatched });
  const progress = rank.progress.bind(rank);
  rank.progress = (): boolean => {
    polls++;
    assert.ok(polls < 1_000_000, 'the wait never yielded');
    return progress();
  };
  const got = new Uint8Array(1);
  if (blockingRecv) {
    rank.recvEagerInto(1, 0, 1, 5, got, 0, 1);
  } else {
    const req = rank.irecv(got, 1, 1, 0, 5);
    rank.waitUntil(req);
  }
  assert.equal(got[0], 42, 'the message arrived');
  const counted = Atomics.load(new Int32Array(shared.control), endpointWord(0, kWaiting));
  return { pollsBeforeYield, yields, counted };
}

test('on a crowded host (spin budget 0) a wait yields after its first empty poll', T, () => {
  for (const blockingRecv of [false, true]) {
    const r = waitWithPeerInYield(0, blockingRecv);
    const what = blockingRecv ? 'blocking receive (recvEager)' : 'wait on a request';
    assert.ok(r.pollsBeforeYield >= 1 && r.pollsBeforeYield <= 3, `${what}: yielded after ${r.pollsBeforeYield} polls, expected 1-3`);
    assert.equal(r.yields, 1, `${what}: the peer's message ends the wait at the first yield`);
  }
});

test('with a spin budget a wait polls that long before its first yield', T, () => {
  const spinUs = 2_000;
  const t0 = performance.now();
  const r = waitWithPeerInYield(spinUs, false);
  assert.ok(performance.now() - t0 >= spinUs / 1000, 'the wait spun its budget out before yielding');
  assert.ok(r.pollsBeforeYield > 16, `yielded after ${r.pollsBeforeYield} polls, expected the spin first`);
});

test('a yielding wait counts its steps in the waiting word only where a thread of the node watches it', T, () => {
  for (const blockingRecv of [false, true]) {
    const what = blockingRecv ? 'blocking receive (recvEager)' : 'wait on a request';
    assert.equal(waitWithPeerInYield(0, blockingRecv).counted, 1, `${what}: watched by default, one yield counted`);
    assert.equal(waitWithPeerInYield(0, blockingRecv, true).counted, 1, `${what}: watched, one yield counted`);
    assert.equal(waitWithPeerInYield(0, blockingRecv, false).counted, 0, `${what}: unwatched, nothing written`);
  }
});

/**
 * Rank 0 waits in a lean receive (recvEager) or on a request for a message that rank 1 sends
 * in rank 0's `sendAt`-th yield; `before`, when given, is another message rank 1 sent first.
 * Returns how many yields the wait took and how often it progressed everything.
 */
function countedWait(lean: boolean, sendAt: number, before: boolean): { yields: number; progressed: number; other: number } {
  const shared = createNodeShared({ ranks: 2, ringBytes: 64 * 1024, sliceBytes: 1 << 20 });
  const placement = { worldSize: 2, nodeId: 0, nodeOfRank: Int32Array.of(0, 0), localOfRank: Int32Array.of(0, 1) };
  const peer = new Transport(shared, { ...placement, worldRank: 1 });
  let yields = 0;
  let progressed = 0;
  const yieldFn = (): void => {
    if (++yields === sendAt) peer.isend(Uint8Array.of(42), 0, 0, 1, 5);
    assert.ok(yields < 10_000, 'the message never ended the wait');
  };
  const rank = new Transport(shared, { ...placement, worldRank: 0 }, { spinUs: 0, yieldFn, yieldUs: 1_000_000, waitsWatched: false });
  const progress = rank.progress.bind(rank);
  rank.progress = (): boolean => {
    progressed++;
    return progress();
  };
  if (before) peer.isend(Uint8Array.of(7), 0, 0, 1, 9);
  const got = new Uint8Array(1);
  if (lean) rank.recvEagerInto(1, 0, 1, 5, got, 0, 1);
  else rank.waitUntil(rank.irecv(got, 1, 1, 0, 5));
  assert.equal(got[0], 42, 'the wanted message arrived');
  const other = new Uint8Array(1);
  if (before) rank.waitUntil(rank.irecv(other, 1, 1, 0, 9));
  return { yields, progressed, other: other[0]! };
}

test('a lean receive progresses everything at every 8th poll while its ring is empty, at every poll behind another record', T, () => {
  const lean = countedWait(true, 32, false);
  assert.equal(lean.yields, 32);
  assert.ok(lean.progressed >= 3 && lean.progressed <= 6, `lean receive: ${lean.progressed} progress calls over 33 polls, expected every 8th`);
  const request = countedWait(false, 32, false);
  assert.ok(request.progressed >= 32, `wait on a request: ${request.progressed} progress calls over 33 polls, expected one a poll`);
  // Another message at the head of the ring: progress takes it off at once (into the
  // unexpected list, received after), and the wanted one behind it ends the wait.
  const behind = countedWait(true, 32, true);
  assert.equal(behind.other, 7, 'the message ahead was kept for its own receive');
  assert.ok(behind.progressed >= 32, `behind another record: ${behind.progressed} progress calls over 33 polls, expected one a poll`);
});
