/**
 * Who watches a rank's waits (runtime/wait-policy.ts, waitsWatched): the ranks count their
 * yielding steps and mark the host board only where a thread of the job reads them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitsWatched } from '../src/runtime/wait-policy.ts';

const yieldCore = (): void => {};

test('a rank\'s waits are watched by a yielding engine of its node, or by the threads of a job\'s other nodes', () => {
  // One node, the engine parks at once (a crowded host without TCP between nodes): nobody reads them.
  assert.equal(waitsWatched({ engineSpinUs: 0 }, { yieldCore }, 1), false);
  // One node, an engine with a core of its own polls on but never yields: it does not look.
  assert.equal(waitsWatched({ engineSpinUs: 1000 }, { yieldCore: null }, 1), false);
  // One node, an engine that shares its core polls on while a rank waits (NBC_ENGINE_SPIN_US).
  assert.equal(waitsWatched({ engineSpinUs: 200 }, { yieldCore }, 1), true);
  // Several nodes: their engines and wires on this host read the host board.
  assert.equal(waitsWatched({ engineSpinUs: 0 }, { yieldCore: null }, 2), true);
  assert.equal(waitsWatched({ engineSpinUs: 0 }, { yieldCore }, 4), true);
});
