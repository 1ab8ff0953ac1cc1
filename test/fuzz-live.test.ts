/**
 * Live fuzzing, short form (test/fuzz/live.ts says what is sent and checked): a 4-rank job on
 * 2 nodes with a private aggregation fabric verifies its collectives while FUZZ_LIVE (default
 * 40) fuzzed connections go to each of its 7 listeners (rendezvous, two link listeners, the
 * fabric's manager and three daemons). The long form is `npm run fuzz` (docs/reliability.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { liveFuzz } from './fuzz/live.ts';

const connections = Number(process.env.FUZZ_LIVE ?? 40);
const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fff_ffff);

test(`fuzz-live: ${connections} fuzzed connections to every listener of a running job (with --agg) are each dropped and logged exactly once, and every collective stays correct`, { timeout: 60_000 }, async () => {
  // No silent connection here (each costs the 5 s handshake deadline; net.test.ts covers that deadline).
  const r = await liveFuzz({ connections, seed, silent: 0, timeoutMs: 40_000 });
  const table = r.listeners.map((l) => `${l.name}: ${l.connections} connections, ${l.failures} failures, ${l.logged} logged`).join('\n');
  assert.deepEqual(r.problems, [], `FUZZ_SEED=${seed}\n${table}`);
  assert.equal(r.listeners.length, 7, table);
  for (const l of r.listeners) {
    assert.equal(l.connections, connections, l.name);
    assert.equal(l.failures, 0, l.name);
    // Resets before accept may never reach the listener; every other connection is logged once.
    assert.ok(l.logged <= connections && l.logged >= connections - (l.kinds.reset ?? 0), `${l.name}: every rejected connection is in the log once`);
  }
  assert.equal(r.job.exitCode, 0);
  assert.equal(r.job.mismatches, 0);
  assert.ok(r.job.iterations > 0);
});
