/**
 * Physical limits of this machine, measured in the same run as a benchmark so each result can
 * be printed beside the best the hardware and Node allow (see PERFORMANCE.md):
 *
 * - `atomicsPingPongOneWayUs`: two worker threads spinning on one shared Int32Array word — the
 *   floor for any intra-node message (about 0.15 us one way on the reference machine);
 * - `tcpPingPongOneWayUs`: two processes over loopback TCP with Nagle off — the floor for any
 *   inter-node message on one host (about 10.5 us);
 * - `typedArraySetGBs`: `Uint8Array.prototype.set` between two buffers — the copy bandwidth
 *   every data path is bounded by (about 56 GB/s cache-resident).
 *
 * Each returns the median over several repetitions, takes at most a few seconds, and stops
 * every thread, process and socket it started before it settles (also on failure).
 *
 * The helper threads and processes run small plain-JS programs held here as strings
 * (`eval: true` workers, `node -e` children), so the same code works from `dist/` and from the
 * TypeScript sources under tsx, with no second file to build or find.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { NbcArgError, NbcInternalError, NbcLaunchError, NbcTimeoutError } from '../errors.js';
import { withoutUcxTuning } from '../runtime/native.js';

/** Repetitions a measurement is split into; the result is their median. */
const REPS = 9;
/** No measurement may take longer than this, however slow the machine. */
const DEADLINE_MS = 60_000;

function median(xs: readonly number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function checkCount(what: string, name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new NbcArgError(`Cannot measure ${what}: ${name} ${String(value)} is invalid; expected an integer >= ${min}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Atomics spin ping-pong between two worker threads

/** Slots of the shared Int32Array both ping-pong threads use. */
const kFlag = 0; // the ball: odd = ping sent, even = pong sent, STOP = pong side may leave
const kReady = 1; // threads that have started; the measurement begins when both have
const kSlots = 2;
const STOP = -1;

/**
 * Both sides of the ping-pong. The pinger stores 2s-1 and spins until it reads 2s; the ponger
 * spins until it reads 2s-1 and stores 2s. Each side only ever writes a value the other is
 * waiting for, so no update is lost; seq-cst Atomics order the stores with no extra fence.
 */
const ATOMICS_WORKER = `
'use strict';
const { workerData, parentPort } = require('node:worker_threads');
const { sab, ping, warmup, per, reps } = workerData;
const a = new Int32Array(sab);
const kFlag = ${kFlag}, kReady = ${kReady}, STOP = ${STOP};
Atomics.add(a, kReady, 1);
while (Atomics.load(a, kReady) < 2) {}
if (ping) {
  let seq = 0;
  const rounds = (n) => {
    for (let i = 0; i < n; i++) {
      seq++;
      const want = 2 * seq;
      Atomics.store(a, kFlag, want - 1);
      while (Atomics.load(a, kFlag) !== want) {}
    }
  };
  rounds(warmup);
  const oneWayUs = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    rounds(per);
    oneWayUs.push(((performance.now() - t0) * 1000) / per / 2);
  }
  Atomics.store(a, kFlag, STOP);
  parentPort.postMessage(oneWayUs);
} else {
  for (let want = 1; ; want += 2) {
    let v;
    while ((v = Atomics.load(a, kFlag)) !== want && v !== STOP) {}
    if (v === STOP) break;
    Atomics.store(a, kFlag, want + 1);
  }
}
`;

/**
 * One-way latency in microseconds of a ping-pong between two worker threads that spin on one
 * Int32Array word (round trip / 2). `iters` round trips in all, split into repetitions.
 */
export async function atomicsPingPongOneWayUs(iters = 100_000): Promise<number> {
  checkCount('the Atomics ping-pong', 'iters', iters, 1);
  const per = Math.max(1, Math.floor(iters / REPS));
  const warmup = Math.min(10_000, per);
  const sab = new SharedArrayBuffer(kSlots * Int32Array.BYTES_PER_ELEMENT);
  const start = (ping: boolean) =>
    new Worker(ATOMICS_WORKER, { eval: true, execArgv: [], workerData: { sab, ping, warmup, per, reps: REPS } });
  const workers = [start(true), start(false)];
  const pinger = workers[0] as Worker;
  try {
    const samples = await new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new NbcTimeoutError(`Cannot measure the Atomics ping-pong: no result within ${DEADLINE_MS} ms`)),
        DEADLINE_MS,
      );
      const fail = (err: unknown) => {
        clearTimeout(timer);
        reject(new NbcLaunchError(`Cannot measure the Atomics ping-pong: a worker thread failed: ${String(err)}`, { cause: err }));
      };
      for (const w of workers) {
        w.once('error', fail);
        w.once('exit', (code) => {
          if (code !== 0) fail(new Error(`exit code ${code}`));
        });
      }
      pinger.once('message', (m: number[]) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
    return median(samples);
  } finally {
    // Releases a ponger still spinning if the pinger failed; terminate() also stops a spin loop.
    Atomics.store(new Int32Array(sab), kFlag, STOP);
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

// ---------------------------------------------------------------------------------------------
// TCP loopback ping-pong between two processes

/** Echo server: prints its port, echoes each complete `bytes`-byte message, exits when the client leaves. */
const TCP_SERVER = `
'use strict';
const net = require('node:net');
const bytes = Number(process.argv[1]);
const reply = Buffer.alloc(bytes, 2);
setTimeout(() => process.exit(3), ${DEADLINE_MS}).unref();
process.stdin.on('end', () => process.exit(0)).resume();
const server = net.createServer((sock) => {
  sock.setNoDelay(true);
  let pending = 0;
  sock.on('data', (chunk) => {
    pending += chunk.length;
    while (pending >= bytes) { pending -= bytes; sock.write(reply); }
  });
  sock.on('error', () => {});
  sock.on('close', () => { server.close(); process.exit(0); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + server.address().port + '\\n'));
`;

/** Client: warm-up, then reps x per round trips; prints the one-way time of each rep as JSON. */
const TCP_CLIENT = `
'use strict';
const net = require('node:net');
const [port, bytes, warmup, per, reps] = process.argv.slice(1).map(Number);
const msg = Buffer.alloc(bytes, 1);
setTimeout(() => process.exit(3), ${DEADLINE_MS}).unref();
process.stdin.on('end', () => process.exit(0)).resume();
const sock = net.connect(port, '127.0.0.1');
sock.setNoDelay(true);
const oneWayUs = [];
let phase = -1, left = warmup, got = 0, t0 = 0n;
function nextPhase() {
  if (phase >= 0) oneWayUs.push(Number(process.hrtime.bigint() - t0) / 1000 / per / 2);
  phase++;
  if (phase === reps) {
    process.stdout.write(JSON.stringify(oneWayUs) + '\\n', () => { sock.end(); process.exit(0); });
    return false;
  }
  left = per;
  t0 = process.hrtime.bigint();
  return true;
}
sock.on('connect', () => {
  if (left === 0 && !nextPhase()) return;
  sock.write(msg);
});
sock.on('data', (chunk) => {
  got += chunk.length;
  if (got < bytes) return;
  got -= bytes;
  if (--left === 0 && !nextPhase()) return;
  sock.write(msg);
});
`;

interface Child {
  proc: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

function startChild(code: string, args: readonly (string | number)[]): Child {
  const env = { ...process.env };
  delete env['NODE_OPTIONS']; // no loaders (tsx) in a helper that must start fast and plain
  delete env['NODE_TEST_CONTEXT'];
  const proc = spawn(process.execPath, ['-e', code, ...args.map(String)], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const child: Child = { proc, stdout: '', stderr: '', exited: Promise.resolve(null) };
  proc.stdout?.setEncoding('utf8').on('data', (s: string) => (child.stdout += s));
  proc.stderr?.setEncoding('utf8').on('data', (s: string) => (child.stderr += s));
  child.exited = new Promise((resolve) => {
    proc.once('error', () => resolve(null));
    proc.once('close', (status) => resolve(status));
  });
  return child;
}

async function stopChild(child: Child): Promise<void> {
  child.proc.stdin?.end(); // the helpers exit when their stdin closes
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 2000);
  await child.exited;
  clearTimeout(timer);
}

function firstLine(child: Child, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const nl = child.stdout.indexOf('\n');
      if (nl >= 0 && child.stdout.startsWith(prefix)) {
        resolve(child.stdout.slice(prefix.length, nl));
        return true;
      }
      return false;
    };
    if (check()) return;
    const onData = () => {
      if (check()) child.proc.stdout?.off('data', onData);
    };
    child.proc.stdout?.on('data', onData);
    void child.exited.then((status) => {
      if (!check()) reject(new Error(`helper exited with status ${String(status)} before printing ${prefix.trim()}: ${child.stderr.trim()}`));
    });
  });
}

/**
 * One-way latency in microseconds of a ping-pong of `bytes`-byte messages between two separate
 * Node processes over TCP on 127.0.0.1 with Nagle's algorithm off (round trip / 2). `iters`
 * round trips in all, split into repetitions.
 */
export async function tcpPingPongOneWayUs(iters = 20_000, bytes = 8): Promise<number> {
  checkCount('the TCP ping-pong', 'iters', iters, 1);
  checkCount('the TCP ping-pong', 'bytes', bytes, 1);
  const per = Math.max(1, Math.floor(iters / REPS));
  const warmup = Math.min(2_000, per);
  const children: Child[] = [];
  let timer: NodeJS.Timeout | undefined;
  let stopping = false; // set once cleanup began: start no more helpers after that
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new NbcTimeoutError(`Cannot measure the TCP ping-pong: no result within ${DEADLINE_MS} ms`)),
        DEADLINE_MS,
      );
    });
    const run = async (): Promise<number[]> => {
      const server = startChild(TCP_SERVER, [bytes]);
      children.push(server);
      const port = await firstLine(server, 'PORT ');
      if (stopping) throw new Error('stopped before the client started');
      const client = startChild(TCP_CLIENT, [port, bytes, warmup, per, REPS]);
      children.push(client);
      const status = await client.exited;
      const line = client.stdout.trim();
      if (status !== 0 || !line.startsWith('[')) {
        throw new Error(`client exited with status ${String(status)}: ${client.stderr.trim() || line}`);
      }
      return JSON.parse(line) as number[];
    };
    const samples = await Promise.race([
      run().catch((err: unknown) => {
        throw new NbcLaunchError(`Cannot measure the TCP ping-pong: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }),
      deadline,
    ]);
    return median(samples);
  } finally {
    stopping = true;
    clearTimeout(timer);
    await Promise.all(children.map(stopChild));
  }
}

// ---------------------------------------------------------------------------------------------
// Copy bandwidth

/**
 * Bandwidth in GB/s (1e9 bytes per second, counting bytes copied, not read + written) of
 * `Uint8Array.prototype.set` copying `bytes` bytes between two preallocated arrays. Runs for
 * about 50 ms in batches of about 5 ms and returns the median batch.
 */
export async function typedArraySetGBs(bytes: number, shared = false): Promise<number> {
  checkCount('the TypedArray copy bandwidth', 'bytes', bytes, 1);
  // V8 copies SharedArrayBuffer memory with a relaxed (word-wise) memcpy: every shared-memory
  // data path is bounded by the shared figure, which is lower than the plain one.
  const make = (): Uint8Array => (shared ? new Uint8Array(new SharedArrayBuffer(bytes)) : new Uint8Array(bytes));
  const src = make().fill(7);
  const dst = make();
  const batch = (n: number): number => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) dst.set(src);
    return performance.now() - t0;
  };
  // Grow the batch until it lasts long enough to time (and the copy loop is compiled).
  let n = 1;
  while (batch(n) < 5) n *= 2;
  const samples: number[] = [];
  const t0 = performance.now();
  while (samples.length < 3 || (performance.now() - t0 < 50 && samples.length < 50)) {
    const ms = batch(n);
    samples.push((bytes * n) / (ms / 1000) / 1e9);
  }
  if (dst[bytes - 1] !== 7) throw new NbcInternalError('Cannot measure the TypedArray copy bandwidth: the copy did not happen');
  return median(samples);
}

/** What `ucx_perftest` measured over UCX's tcp transport on loopback (the UCX transport's limit). */
export interface UcxPerftestLimit {
  /** `tag_lat` 8 B one way, median (us). */
  tagLatUs: number;
  /** `tag_bw` at `bwBytes`, overall (GB/s, 10^9 bytes). */
  tagBwGBs: number;
  /**
   * `tag_bw` with peer error handling (`-e`, UCP_ERR_HANDLING_MODE_PEER, nbcoll's default UCX
   * mode): UCX 1.13 then sends rendezvous payloads over tcp as active messages.
   */
  tagBwPeerGBs: number;
  bwBytes: number;
  /** UCX_TLS it ran with. */
  tls: string;
}

/** Why `ucx_perftest` cannot run here, or null. */
export function ucxPerftestMissing(): string | null {
  const paths = (process.env.PATH ?? '').split(':');
  return paths.some((p) => p !== '' && existsSync(`${p}/ucx_perftest`))
    ? null : 'ucx_perftest is not installed (Debian package ucx-utils; .ci/run installs it)';
}

/**
 * Runs one `ucx_perftest` test between a server and a client process on loopback over UCX's
 * tcp transport (as nbcoll's emulated nodes use it) and returns the client's "Final:" row:
 * [iterations, median latency us, average latency us, overall latency us, average MB/s,
 * overall MB/s, ...] (ucx_perftest's MB are 2^20 bytes).
 */
async function ucxPerftestRow(test: 'tag_lat' | 'tag_bw', bytes: number, iters: number, tls: string, peerErrors = false): Promise<number[]> {
  const port = await freePort();
  // UCX's own segment sizes, not nbcoll's UCX_TCP_TUNING: they are perftest's best for tag_bw
  // (bench/results/ucx/segments/perftest-tag-bw.txt), so the limit stays the higher one.
  const env = { ...withoutUcxTuning(process.env), UCX_TLS: tls };
  const mode = peerErrors ? ['-e'] : [];
  const server = spawn('ucx_perftest', ['-p', String(port), ...mode], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    // the server listens at once; retry the client while it starts
    for (let attempt = 0; ; attempt++) {
      const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
        const c = spawn('ucx_perftest', ['127.0.0.1', '-p', String(port), ...mode, '-t', test, '-s', String(bytes), '-n', String(iters)],
          { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        c.stdout.on('data', (d: Buffer) => { text += d.toString(); });
        c.stderr.on('data', (d: Buffer) => { text += d.toString(); });
        const t = setTimeout(() => c.kill('SIGKILL'), DEADLINE_MS);
        c.on('close', (code) => { clearTimeout(t); resolve({ code, text }); });
      });
      const final = out.text.split('\n').find((l) => l.startsWith('Final:'));
      if (out.code === 0 && final !== undefined) return final.slice('Final:'.length).trim().split(/\s+/).map(Number);
      if (attempt >= 20) throw new NbcLaunchError(`Cannot measure ucx_perftest ${test}: ${out.text.trim().split('\n').slice(-3).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    server.kill('SIGKILL');
  }
}

/** A TCP port nobody listens on right now. */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * The UCX limits beside which the UCX transport is printed: `ucx_perftest` tag latency (8 B,
 * median) and tag bandwidth (`bwBytes`) without and with peer error handling, over tcp on
 * loopback. Null where ucx_perftest is not installed.
 */
export async function ucxPerftestLimit(bwBytes = 1 << 20, tls = 'tcp'): Promise<UcxPerftestLimit | null> {
  if (ucxPerftestMissing() !== null) return null;
  const lat = await ucxPerftestRow('tag_lat', 8, 20_000, tls);
  const bwIters = Math.max(200, Math.min(5_000, Math.floor(2e9 / bwBytes)));
  const bw = await ucxPerftestRow('tag_bw', bwBytes, bwIters, tls);
  const bwPeer = await ucxPerftestRow('tag_bw', bwBytes, bwIters, tls, true);
  return { tagLatUs: lat[1]!, tagBwGBs: (bw[5]! * 1048576) / 1e9, tagBwPeerGBs: (bwPeer[5]! * 1048576) / 1e9, bwBytes, tls };
}
