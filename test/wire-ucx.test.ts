/**
 * The emulated network (`--link`, p2p/wire.ts) over the UCX transport, where ranks send
 * straight from their own UCP worker: every message still waits out its modelled arrival at
 * the receiver (the lower bound the model implies), whatever its protocol, and arrives intact
 * and in order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath } from './helpers.ts';
import { nativeAddon } from '../src/runtime/native.ts';

/** Why the UCX transport cannot run here, or false when it can. */
function ucxMissing(): string | false {
  const { addon, why } = nativeAddon();
  if (addon === null) return `no native addon (${why})`;
  if (addon.ucxPoll === undefined) return 'the native addon was built without UCX: install Debian package libucx-dev (.ci/run does) and npm run build';
  return false;
}

/**
 * How far below the bound a delay may read: the wire's clock is each thread's
 * `performance.now()` plus a measured origin (runtime/wire-clock.ts), within a microsecond
 * of the monotonic clock the job reads, and stamps are whole ticks of 0.1 us.
 */
const CLOCK_SLACK_MS = 0.01;

test('over UCX under --link latency=2ms, no message is received before 2 ms after it was sent, eager, rendezvous or held', { timeout: 120_000, skip: ucxMissing() }, async () => {
  // 1 KiB of eager credit: a few small messages waiting unexpected spend it, and the rest go
  // by rendezvous with the payload held until asked (KIND_UCX_PULL).
  const r = await launch(jobPath('wire-bound.ts'), {
    ranks: 2, ppn: 1, args: ['2'], output: 'pipe', timeoutMs: 90_000, transport: 'ucx', link: 'latency=2ms',
    env: { NBC_EAGER_CREDIT_KB: '1' },
  });
  assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
  const sender = r.ranks[0]!.result as { interNode: string; creditRendezvous: number };
  const receiver = r.ranks[1]!.result as { min: Record<string, number> };
  assert.equal(sender.interNode, 'ucx');
  assert.ok(sender.creditRendezvous > 0, 'some small messages went by held rendezvous (credit spent)');
  for (const [kind, ms] of Object.entries(receiver.min)) {
    assert.ok(ms >= 2 - CLOCK_SLACK_MS, `${kind}: a message was received ${ms.toFixed(4)} ms after it was sent; expected at least the link's 2 ms`);
  }
});
