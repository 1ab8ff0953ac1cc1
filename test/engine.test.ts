import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { Transport } from '../src/p2p/transport.ts';
import { Engine, FRAME_MSG, HIGH_WATER, PENDING_RECORD_COST, type EngineWait } from '../src/runtime/engine.ts';
import {
  endpointWord, H_BYTES, H_CTX, H_DST, H_KIND, H_LEN, H_SRC, H_SRC_WORLD, H_TAG, HEADER_BYTES, HEADER_WORDS, KIND_EAGER, KIND_FIN, kWaiting,
} from '../src/shm/layout.ts';
import { NbcPeerFailedError } from '../src/errors.ts';
import { ANY_SOURCE } from '../src/p2p/constants.ts';
import { createNodeShared, waitWatcher } from '../src/shm/node-shared.ts';

/** Links that record what the engine does, with a settable backlog. */
class FakeLinks extends EventEmitter {
  sent = 0;
  /** Each frame's node and record kind. */
  frames: Array<[number, number]> = [];
  /** Nodes that frames already have a way to (carries). */
  linked: ((node: number) => boolean) = () => true;
  backlog = 0;
  paused = false;
  pauses = 0;
  send(node: number, _type: number, parts: readonly Uint8Array[], onWritten?: () => void): void {
    this.sent++;
    this.frames.push([node, new Int32Array(parts[0]!.buffer, parts[0]!.byteOffset, 1)[0]!]);
    onWritten?.();
  }
  writableBytesPending(): number {
    return this.backlog;
  }
  carries(node: number): boolean {
    return this.linked(node);
  }
  pauseReading(): void {
    this.paused = true;
    this.pauses++;
  }
  resumeReading(): void {
    this.paused = false;
  }
}

/** Node 0 with one rank (world rank 0); world rank 1 lives on node 1. */
function node0(wait: EngineWait = {}): { engine: Engine; links: FakeLinks; rank: Transport; control: Int32Array } {
  const shared = createNodeShared({ ranks: 1, ringBytes: 64 * 1024, sliceBytes: 64 << 20 });
  const placement = { worldSize: 2, nodeId: 0, nodeOfRank: Int32Array.of(0, 1), localOfRank: Int32Array.of(0, 0) };
  const links = new FakeLinks();
  const engine = new Engine(shared, { ...placement, worldRank: -1 }, links, (err) => { throw err; }, DEFAULT_CONFIG, wait);
  const rank = new Transport(shared, { ...placement, worldRank: 0 });
  return { engine, links, rank, control: new Int32Array(shared.control) };
}

/** Resolves after `n` turns of the event loop. */
function turns(n: number): Promise<void> {
  return new Promise((resolve) => {
    let i = 0;
    const step = (): void => {
      if (++i >= n) resolve();
      else setImmediate(step);
    };
    setImmediate(step);
  });
}

/** Resolves once `cond()` holds; fails after 5 s. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > 5000) assert.fail(`timed out: ${what}`);
    await turns(1);
  }
}

test('the engine stops forwarding to a node whose link is backed up, and resumes on drain', () => {
  const { engine, links, rank } = node0();
  const msg = new Uint8Array(100);
  rank.isend(msg, 1, 0, 0, 7);
  rank.isend(msg, 1, 0, 0, 7);
  links.backlog = HIGH_WATER + 1;
  engine.poll();
  assert.equal(links.sent, 0, 'nothing forwarded while the link holds more than HIGH_WATER');
  links.backlog = 0;
  links.emit('drain', 1);
  assert.equal(links.sent, 2, 'both messages forwarded, in order, after the drain');
});

test('deliveries waiting for a full rank ring pause reading from the links, and resume below LOW_WATER', () => {
  const { engine, links, rank } = node0();
  const payload = 4096;
  const body = new Uint8Array(HEADER_BYTES + payload);
  const h = new Int32Array(body.buffer, 0, HEADER_BYTES >> 2);
  h[H_KIND] = KIND_EAGER;
  h[H_LEN] = body.byteLength;
  h[H_CTX] = 0;
  h[H_SRC] = 1;
  h[H_TAG] = 3;
  h[H_BYTES] = payload;
  h[H_DST] = 0;
  let frames = 0;
  while (!links.paused) {
    links.emit('frame', 1, FRAME_MSG, Buffer.from(body));
    frames++;
    assert.ok(frames < 10_000, 'reading must pause long before this');
  }
  // each waiting record counts its payload plus PENDING_RECORD_COST (the record itself) against HIGH_WATER
  assert.ok(frames * (payload + PENDING_RECORD_COST) > HIGH_WATER, `paused after ${frames} frames of ${payload} bytes`);
  assert.equal(links.pauses, 1);
  // The rank now receives: its ring drains (unmatched records into its unexpected queue), the
  // engine refills it, the backlog shrinks, reading resumes; every message arrives intact.
  const into = new Uint8Array(payload);
  let got = 0;
  let resumedAt = -1;
  while (got < frames) {
    const r = rank.irecv(into, 1, 1, 0, 3);
    for (let spins = 0; !r.done; spins++) {
      rank.progress();
      engine.poll();
      assert.ok(spins < 1000, `message ${got} of ${frames} never arrived`);
    }
    got++;
    if (resumedAt < 0 && !links.paused) resumedAt = got;
  }
  assert.ok(resumedAt > 0, 'reading resumed');
  assert.equal(links.pauses, 1, 'and was paused only once');
  assert.equal(links.paused, false);
});

test('an engine that shares its core polls on, yielding it, only while a rank of its node waits', { timeout: 20_000 }, async () => {
  let yields = 0;
  const { engine, links, rank, control } = node0({ spinUs: 60_000_000, yieldCore: () => { yields++; } });
  const waiting = endpointWord(0, kWaiting);
  engine.start();
  try {
    // The rank computes: the engine forwards its message, then parks instead of polling on.
    rank.isend(new Uint8Array(8), 1, 0, 0, 7);
    await until(() => links.sent === 1, 'the engine forwards the first message');
    await turns(50);
    assert.equal(yields, 0, 'with no rank waiting the engine parked');
    // The rank waits (its yielding wait steps count in its word): the engine polls on, yielding.
    Atomics.add(control, waiting, 1);
    rank.isend(new Uint8Array(8), 1, 0, 0, 7);
    await until(() => links.sent === 2, 'the engine forwards the second message');
    for (let i = 0; i < 20; i++) {
      Atomics.add(control, waiting, 1);
      await turns(1);
    }
    assert.ok(yields >= 10, `the engine polled on while the rank waited (${yields} yields in 20 turns)`);
    // The rank stops waiting: the engine parks within a turn or two.
    await turns(5);
    const settled = yields;
    await turns(50);
    assert.equal(yields, settled, 'once the rank stopped waiting the engine parked');
  } finally {
    engine.stop();
  }
});

test('an engine that shares its core with other nodes\' ranks polls on only while none of them computes', { timeout: 20_000 }, async () => {
  let yields = 0;
  let hostIdle = false;
  const { engine, links, rank, control } = node0({ spinUs: 60_000_000, yieldCore: () => { yields++; }, hostIdle: () => hostIdle });
  const waiting = endpointWord(0, kWaiting);
  engine.start();
  try {
    // Its own rank waits, but a rank of another node on this host computes: the engine parks.
    Atomics.add(control, waiting, 1);
    rank.isend(new Uint8Array(8), 1, 0, 0, 7);
    await until(() => links.sent === 1, 'the engine forwards the message');
    for (let i = 0; i < 20; i++) {
      Atomics.add(control, waiting, 1);
      await turns(1);
    }
    assert.equal(yields, 0, 'beside a computing rank the engine parked');
    // Every rank of the host waits: the engine polls on, yielding.
    hostIdle = true;
    rank.isend(new Uint8Array(8), 1, 0, 0, 7);
    await until(() => links.sent === 2, 'the engine forwards the second message');
    for (let i = 0; i < 20; i++) {
      Atomics.add(control, waiting, 1);
      await turns(1);
    }
    assert.ok(yields >= 10, `the engine polled on while the host was idle (${yields} yields in 20 turns)`);
  } finally {
    engine.stop();
  }
});

test('wait watchers each see a rank\'s wait steps once, without hiding them from one another', () => {
  const control = new Int32Array(64);
  const a = waitWatcher(control, 2);
  const b = waitWatcher(control, 2);
  assert.equal(a(), false);
  Atomics.add(control, endpointWord(1, kWaiting), 1);
  assert.equal(a(), true, 'a sees rank 1 step');
  assert.equal(a(), false, 'a has seen it');
  assert.equal(b(), true, 'b still sees it');
  Atomics.add(control, endpointWord(0, kWaiting), 3);
  Atomics.add(control, endpointWord(1, kWaiting), 1);
  assert.equal(b(), true);
  assert.equal(b(), false);
  assert.equal(a(), true);
});

/** A FIN record or frame body: world rank `world` has returned from its job. */
function fin(world: number): Uint8Array {
  const h = new Int32Array(HEADER_WORDS);
  h[H_KIND] = KIND_FIN;
  h[H_LEN] = HEADER_BYTES;
  h[H_DST] = -1;
  h[H_SRC_WORLD] = world;
  return new Uint8Array(h.buffer);
}

test('a finished rank\'s FIN goes on the links its node has, and to relayFinished for nodes it has none with', () => {
  const shared = createNodeShared({ ranks: 1, ringBytes: 64 * 1024, sliceBytes: 1 << 20 });
  const placement = { worldSize: 3, nodeId: 0, nodeOfRank: Int32Array.of(0, 1, 2), localOfRank: Int32Array.of(0, 0, 0) };
  const links = new FakeLinks();
  links.linked = (node) => node === 1;
  const engine = new Engine(shared, { ...placement, worldRank: -1 }, links, (err) => { throw err; }, DEFAULT_CONFIG);
  const relayed: Array<[number, number[]]> = [];
  engine.relayFinished = (rank, nodes) => relayed.push([rank, nodes]);
  const rank = new Transport(shared, { ...placement, worldRank: 0 });
  rank.isend(new Uint8Array(8), 1, 0, 0, 5);
  rank.announceFinished();
  engine.poll();
  assert.deepEqual(links.frames, [[1, KIND_EAGER], [1, KIND_FIN]], 'the message, then the FIN behind it, to the linked node only');
  assert.deepEqual(relayed, [[0, [2]]], 'node 2, which got nothing, hears it through the relay');
  engine.stop();
});

test('a FIN frame fails the receives only its rank could match, after delivering what that rank sent before it, and takes no receive', () => {
  const { engine, links, rank } = node0();
  rank.registerContext(0, Int32Array.of(0, 1));
  const body = new Uint8Array(HEADER_BYTES + 8);
  const h = new Int32Array(body.buffer, 0, HEADER_WORDS);
  h[H_KIND] = KIND_EAGER;
  h[H_LEN] = body.byteLength;
  h[H_SRC] = 1;
  h[H_TAG] = 3;
  h[H_BYTES] = 8;
  h[H_DST] = 0;
  h[H_SRC_WORLD] = 1;
  body.fill(9, HEADER_BYTES);
  const posted = rank.irecv(new Uint8Array(8), 1, 1, 0, 4);
  // From ANY_SOURCE, tag 0: a FIN whose context, source and tag read 0 once took it, and lost it.
  const wildcard = rank.irecv(new Uint8Array(8), 1, ANY_SOURCE, 0, 0);
  links.emit('frame', 1, FRAME_MSG, Buffer.from(body));
  links.emit('frame', 1, FRAME_MSG, Buffer.from(fin(1)));
  rank.progress();
  assert.ok(posted.done && posted.error instanceof NbcPeerFailedError, 'the posted receive (tag 4) fails');
  assert.match(posted.error!.message, /cannot receive from rank 1 \(context 0, tag 4\): that rank returned from its job/);
  assert.equal(wildcard.done, false, 'the FIN took no receive');
  rank.isend(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 0, 0, 0, 0);
  rank.progress();
  assert.ok(wildcard.done && wildcard.error === null && wildcard.status.source === 0, 'this rank\'s own message completes it');
  const early = new Uint8Array(8);
  assert.equal(rank.irecv(early, 1, 1, 0, 3).wait().bytes, 8, 'its message from before the FIN is received');
  assert.deepEqual([...early], [9, 9, 9, 9, 9, 9, 9, 9]);
  const late = rank.irecv(new Uint8Array(8), 1, 1, 0, 3);
  assert.ok(late.done && late.error instanceof NbcPeerFailedError, 'a receive posted after the FIN fails at once');
  // A receive from ANY_SOURCE is left alone: the rank may still send to itself.
  assert.equal(rank.irecv(new Uint8Array(8), 1, ANY_SOURCE, 0, 3).done, false);
  engine.stop();
});
