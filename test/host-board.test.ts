import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nativeAddon } from '../src/runtime/native.ts';
import { openHostBoard } from '../src/runtime/host-board.ts';
import { HOST_BOARD_GRACE_US, HostBoard, hostClockUs } from '../src/shm/host-board.ts';
import { runOk } from './helpers.ts';

/** A board of `n` ranks in this process, on a clock (us) the test steps. */
function board(n: number): { rank: (i: number) => HostBoard; reader: HostBoard; clock: { us: number } } {
  const words = new Int32Array(2 * n);
  const clock = { us: 5_000_000 };
  const read = (): number => clock.us;
  return { rank: (i) => new HostBoard(words, i, read), reader: new HostBoard(words, -1, read), clock };
}

test('a host board shows the host idle only while every rank waits or has just left its wait', () => {
  const { rank, reader, clock } = board(3);
  const ranks = [rank(0), rank(1), rank(2)];
  assert.equal(reader.idle(), false, 'ranks that never waited compute');
  ranks[0]!.enter();
  ranks[1]!.enter();
  assert.equal(reader.idle(), false, 'rank 2 still computes');
  ranks[2]!.enter();
  ranks[2]!.enter(); // idempotent while waiting
  assert.equal(reader.idle(), true, 'all three wait');
  assert.deepEqual([0, 1, 2].map((r) => reader.waiting(r)), [true, true, true]);
  // Rank 1 leaves its wait: for the grace it counts as waiting (a collective's work between waits) ...
  ranks[1]!.leave();
  ranks[1]!.leave(); // idempotent while computing
  assert.equal(reader.waiting(1), false);
  clock.us += HOST_BOARD_GRACE_US;
  assert.equal(reader.idle(), true, 'left just now');
  // ... then as computing, until it waits again: whenever the reader looks (a parked engine
  // looks seldom, and still sees how long ago the rank left).
  clock.us += 1;
  assert.equal(reader.idle(), false, 'out of its wait for longer than the grace');
  clock.us += 5_000;
  assert.equal(reader.idle(), false);
  ranks[1]!.enter();
  assert.equal(reader.idle(), true);
  assert.equal(reader.idle(0), true, 'no grace needed while all wait');
});

test('the host board\'s clock wraps at 2^31 us without taking a computing rank for a waiting one', () => {
  const { rank, reader, clock } = board(1);
  const a = rank(0);
  clock.us = 2 ** 31 - 10;
  a.enter();
  a.leave();
  clock.us = 20; // 30 us later, past the wrap
  assert.equal(reader.idle(), true);
  clock.us = 100; // 110 us later
  assert.equal(reader.idle(), false);
  assert.ok(hostClockUs() >= 0 && hostClockUs() < 2 ** 31);
});

test('openHostBoard needs a path, and without the native addon there is no board', () => {
  assert.equal(openHostBoard(4, -1, undefined), null, 'no board outside nbc run');
  assert.equal(openHostBoard(4, -1, ''), null);
  if (nativeAddon().addon === null) assert.equal(openHostBoard(4, -1, '/dev/null'), null, 'without the addon there is no board');
});

const noAddon = nativeAddon().addon === null ? `no native addon (${nativeAddon().why}): mapShared not exercised` : false;

test('mapShared gives two mappings of one file the same memory', { skip: noAddon }, () => {
  const map = nativeAddon().addon!.mapShared;
  assert.ok(map !== undefined, 'the native addon lacks mapShared: it predates it, and npm run build rebuilds it');
  const dir = mkdtempSync(join(tmpdir(), 'nbc-board-'));
  try {
    const path = join(dir, 'board');
    writeFileSync(path, '');
    const a = openHostBoard(4, 2, path)!;
    const b = openHostBoard(4, -1, path)!;
    assert.equal(a.ranks, 4);
    assert.equal(b.waiting(2), false, 'a new board is zero: every rank computes');
    a.enter();
    assert.equal(b.waiting(2), true, 'the other mapping sees the wait');
    a.leave();
    assert.equal(b.waiting(2), false);
    assert.equal(statSync(path).size, 64, 'the empty file was extended to the board (at least 64 bytes)');
    assert.throws(() => map(join(dir, 'missing'), 64), /mapShared: open\(.*missing\) failed: No such file or directory/);
    assert.equal(openHostBoard(4, -1, join(dir, 'missing')), null, 'a board that cannot be mapped (the job has ended) is none');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('nbc run gives its nodes a host board on which a rank of one node sees a rank of another wait; removed after the job', { timeout: 90_000 }, async () => {
  // A board left by a launcher that was killed (its pid is gone): the next launch removes it.
  const dead = spawnSync('true').pid!;
  const stale = join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), `nbcoll-board-${dead}-stale`);
  writeFileSync(stale, new Uint8Array(64));
  const r = await runOk('board.ts', 2, 1, [], 60_000);
  assert.equal(existsSync(stale), false, 'the stale board of a dead launcher was removed');
  const [zero, one] = r.ranks.map((x) => x.result as { path?: string; mapped: boolean; sawWaiting?: boolean; waitingAfter?: boolean });
  assert.ok(zero!.path !== undefined && zero!.path === one!.path, 'both nodes were given the same board');
  assert.equal(existsSync(zero!.path), false, 'the launcher removed the board');
  assert.equal(zero!.mapped, nativeAddon().addon?.mapShared !== undefined, 'mapped wherever the addon can');
  if (zero!.mapped) {
    assert.equal(zero!.sawWaiting, true, 'rank 1 showed as waiting in its receive');
    assert.equal(zero!.waitingAfter, false, 'and as computing once the receive returned');
  }
});
