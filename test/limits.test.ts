import { test } from 'node:test';
import assert from 'node:assert/strict';
import { atomicsPingPongOneWayUs, tcpPingPongOneWayUs, typedArraySetGBs } from '../src/bench/limits.js';
import { ErrorCode, NbcError } from '../src/errors.js';

// Not timed tests: they check that each probe runs, cleans up and yields a usable number.

const positive = (x: number): void => assert.ok(Number.isFinite(x) && x > 0, `expected a finite positive number, got ${x}`);

test('atomicsPingPongOneWayUs() returns a finite positive latency for a short run', async () => {
  positive(await atomicsPingPongOneWayUs(2000));
  positive(await atomicsPingPongOneWayUs(1));
});

test('tcpPingPongOneWayUs() returns a finite positive latency for small and multi-chunk messages', async () => {
  positive(await tcpPingPongOneWayUs(200));
  positive(await tcpPingPongOneWayUs(20, 1 << 20));
});

test('typedArraySetGBs() returns a finite positive bandwidth', async () => {
  positive(await typedArraySetGBs(8));
  positive(await typedArraySetGBs(1 << 20));
});

test('limit probes reject bad arguments with NbcArgError', async () => {
  const arg = (e: unknown) => e instanceof NbcError && e.code === ErrorCode.ARG;
  await assert.rejects(atomicsPingPongOneWayUs(0), arg);
  await assert.rejects(tcpPingPongOneWayUs(10, 0), arg);
  await assert.rejects(typedArraySetGBs(-1), arg);
  await assert.rejects(typedArraySetGBs(1.5), arg);
});
