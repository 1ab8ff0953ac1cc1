/**
 * Regression tests for what the soak found (docs/reliability.md, "Load"); the soak itself is
 * `npm run soak -- --minutes N`, too long for the suite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DONE_ERROR, DONE_OK, OffloadEngine, REGISTERED_SCHEDULES, type OffloadHost } from '../src/sched/offload.ts';
import { ScheduleBuilder } from '../src/sched/schedule.ts';
import { OffloadClient } from '../src/sched/offload-client.ts';
import { Engine } from '../src/runtime/engine.ts';
import { Transport } from '../src/p2p/transport.ts';
import { createNodeShared } from '../src/shm/node-shared.ts';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { runOk } from './helpers.ts';

describe('soak', () => {
  // Every communicator an offloaded collective ran on stayed registered in its engine (members
  // and their layout, ~1 KB per rank): the soak frees ~8,000 communicators an hour.
  test('soak: a freed communicator is released from its engine: the client sends the release after its posts, the engine forgets it', () => {
    const shared = createNodeShared({ ranks: 1, ringBytes: 64 * 1024, sliceBytes: 1 << 20 });
    const placement = { worldSize: 1, nodeId: 0, nodeOfRank: Int32Array.of(0), localOfRank: Int32Array.of(0) };
    const engine = new Engine(shared, { ...placement, worldRank: -1 }, null, (err) => { throw err; }, DEFAULT_CONFIG);
    const t = new Transport(shared, { ...placement, worldRank: 0 });
    const client = new OffloadClient(t, 0);
    const target = { collCtx: 9, rank: 0, worldRanks: Int32Array.of(0) };
    const req = client.post(new ScheduleBuilder('empty').build(), target, new Uint8Array(8), new Uint8Array(8), 0);
    client.release(target);
    engine.poll();
    assert.equal(engine.offload.registeredComms, 0, 'released after the post ran');
    req.wait();
    client.release(target);
    assert.equal(engine.poll(), false, 'a second release sends the engine nothing');
    const again = client.post(new ScheduleBuilder('empty').build(), { ...target, collCtx: 11 }, new Uint8Array(8), new Uint8Array(8), 16);
    engine.poll();
    again.wait();
    assert.equal(engine.offload.registeredComms, 1, 'a communicator not freed stays registered');
    engine.stop();
  });

  // Every offloaded schedule stayed registered in its engine for good: ~425 MB an hour per
  // node in the soak, which makes a new communicator every cycle and calls the v-collectives
  // (a new schedule per call).
  test('soak: an engine keeps at most REGISTERED_SCHEDULES schedules per rank, forgetting the oldest', () => {
    const done: number[] = [];
    const host = {
      nodeId: 0, nodeOfRank: Int32Array.of(0), slices: [new Uint8Array(64)],
      sendFrame: () => assert.fail('no frames on one node'), interNode: () => assert.fail('no two-level calls'),
      complete: (_ep: number, _slice: number, _offset: number, value: number) => { done.push(value); },
      aggregate: () => assert.fail('no agg calls'),
    } as unknown as OffloadHost;
    const engine = new OffloadEngine(host);
    engine.registerComm(0, 7, Int32Array.of(0));
    const empty = new ScheduleBuilder('empty').build();
    const ids = REGISTERED_SCHEDULES + 50;
    for (let id = 1; id <= ids; id++) engine.registerSchedule(0, id, empty);
    const region = { slice: 0, offset: 0, bytes: 0 };
    const post = (id: number): void => { engine.post(0, id, 7, 0, 0, region, region, region, 0, 0); };
    post(50); // forgotten: the oldest 50 went
    post(51);
    post(ids);
    assert.deepEqual(done, [DONE_ERROR, DONE_OK, DONE_OK]);
  });

  test('soak: offloaded calls that make a new schedule each time turn the window over many times, and a schedule used again is registered again (4 ranks over 2 nodes)', { timeout: 120_000 }, async () => {
    const r = await runOk('soak.ts', 4, 2, ['schedwindow', String(REGISTERED_SCHEDULES * 2 + 10)], 90_000);
    for (const x of r.ranks) assert.equal(x.result, 3 * (REGISTERED_SCHEDULES * 2 + 10) + 3);
  });
});
