/**
 * The short form of the chaos suite (issue 16; the long form is `npm run chaos -- --trials 200`,
 * docs/reliability.md): one trial per fault, on fixed seeds drawn so that every executor and,
 * where UCX is built, both transports appear. Each must end in time, stopped naming the culprit
 * (or completed with every result checked), and leave nothing behind.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ucxUnavailable } from '../src/runtime/node-main.ts';
import { cutUnavailable, planTrial, runTrial, STOP_DEADLINE_S, TRIAL_DEADLINE_S, type FaultKind, type Mode, type Transport } from './chaos/harness.ts';

const T = { timeout: (TRIAL_DEADLINE_S + 30) * 1000 };
const transports: Transport[] = ucxUnavailable() === null ? ['tcp', 'ucx'] : ['tcp'];
const cutWhy = cutUnavailable();

/** The first seed from `from` whose plan has this fault, mode and transport. */
function seedFor(fault: FaultKind, mode: Mode, transport: Transport, from = 1): number {
  for (let s = from; s < from + 100_000; s++) {
    const p = planTrial(s, { transports, faults: [fault], modes: [mode] });
    if (p.transport === transport) return s;
  }
  throw new Error(`no seed gives ${fault} on ${mode}/${transport}`);
}

const CASES: Array<[FaultKind, Mode, Transport]> = [
  ['throw', 'offload', transports.at(-1)!],
  ['return', 'offload', transports.at(-1)!],
  ['return', 'hier', 'tcp'],
  ['kill-node', 'hier', 'tcp'],
  ['stop-node', 'host', 'tcp'],
  ['kill-daemon', 'agg', 'tcp'],
  ['cut-link', 'host', transports.at(-1)!],
];

describe('chaos (short form)', () => {
  for (const [fault, mode, transport] of CASES) {
    const skip = fault === 'cut-link' && cutWhy !== null ? `cut-link needs ${cutWhy}` : false;
    test(`${fault} under ${mode} over ${transport}: ends in time, named or completed and checked, nothing left`, { ...T, skip }, async () => {
      const plan = planTrial(seedFor(fault, mode, transport), { transports, faults: [fault], modes: [mode] });
      const r = await runTrial(plan);
      assert.ok(r.verdict === 'stopped' || r.verdict === 'completed',
        `trial ${JSON.stringify(r.plan)}, fault on ${r.culprit || '(none)'}: ${r.verdict} (exit ${r.exitCode}): ${r.detail}\n${r.log}`);
      if (r.verdict === 'stopped') assert.notEqual(r.exitCode, 0);
      if (!Number.isNaN(r.stopMs)) assert.ok(r.stopMs < STOP_DEADLINE_S * 1000, `stopped ${r.stopMs} ms after the fault`);
    });
  }
});

describe('chaos regressions', () => {
  test('chaos: a node SIGKILLed over UCX without peer error handling (NBC_UCX_ERR_MODE=none) still stops the job, named, exit 137', { ...T, skip: transports.includes('ucx') ? false : 'needs the UCX transport' }, async () => {
    // Without UCP_ERR_HANDLING_MODE_PEER, UCX does not fail the survivors' operations; the
    // launcher, which sees the node die, must still stop the job and name it.
    const r = await runTrial({ seed: 11, nodes: 3, ppn: 1, mode: 'host', transport: 'ucx', ops: 400, fault: 'kill-node', at: 100, target: 1 },
      { NBC_UCX_ERR_MODE: 'none' });
    assert.equal(r.verdict, 'stopped', `${r.detail}\n${r.log}`);
    assert.equal(r.exitCode, 137, r.log);
    assert.match(r.message, /^nbc: job failed \(exit code 137\): node 1 \(pid \d+, ranks 1\.\.1\) was killed by SIGKILL$/);
  });

  test('chaos: a node SIGKILLed while its peers report the lost links first is named as the cause, exit 137', T, async () => {
    // 4 nodes over TCP: the three survivors see their links to node 2 reset at once, and often
    // tell the launcher before node 2's exit reaches it; the launcher must still name node 2.
    const r = await runTrial({ seed: 7, nodes: 4, ppn: 1, mode: 'host', transport: 'tcp', ops: 400, fault: 'kill-node', at: 100, target: 2 });
    assert.equal(r.verdict, 'stopped', `${r.detail}\n${r.log}`);
    assert.equal(r.exitCode, 137, r.log);
    assert.match(r.message, /^nbc: job failed \(exit code 137\): node 2 \(pid \d+, ranks 2\.\.2\) was killed by SIGKILL$/);
  });
});
