/**
 * Live fuzzing: a real job (4 ranks on 2 nodes, and with `agg` a private aggregation fabric of
 * radix 2, 2 levels) runs verified collectives (test/jobs/fuzz-live.ts) while this process
 * opens `connections` fuzzed TCP connections to every listener of the job:
 *
 *   the rendezvous master (node 0), each node's link listener, the aggregation manager and
 *   each aggregation daemon.
 *
 * Listeners are found generically, with no hook in the library: LISTEN sockets of
 * /proc/net/tcp whose inodes are open in /proc/<pid>/fd of this process's descendants; node
 * processes are told apart by NBC_NODE_RANK in their environment, node 0's rendezvous port
 * is the NBC_MASTER_PORT node 1 was given, the fabric's pids come from its handle.
 *
 * Kinds of connection (picked at random, seeded): random bytes; a frame header declaring a
 * wrong length (0, 1, 2^32 - 1, just past the bound) with part of a body; a response to the
 * listener's challenge made with a wrong secret, then mutated; a replay (an earlier
 * connection's response, or the listener's own challenge reflected back); a truncated
 * response; a response and a frame written one byte per segment; 1 MiB of garbage; a reset
 * right after connecting; silence until the listener's handshake deadline (a few only: each
 * costs 5 s).
 *
 * Checked: every connection is closed by the listener within its deadline (the reset ones by
 * us), the log names each one exactly once (its own line, matched by our local port, or
 * inside a summary line's count: net/reject-log.ts) — except that a connection reset before
 * the listener accepted it may be missing (the kernel dropped it; the listener never had it) —
 * and the job exits 0 with every rank's collectives correct in every iteration.
 */
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, type LaunchResult } from 'nbcoll';
import { startFabric, type FabricHandle } from '../../src/agg/fabric.ts';
import { AUTH_MAGIC } from '../../src/net/auth.ts';
import { MAX_FRAME_BODY } from '../../src/net/frame.ts';
import { jobPath } from '../job-path.ts';
import { mulberry32 } from '../jobs/common.ts';
import { descendants, environOf, portOf, socketOwners, tcpSockets, TCP_LISTEN } from '../proc.ts';

export interface LiveOptions {
  /** Fuzzed connections per listener. */
  connections: number;
  seed: number;
  /** With a private aggregation fabric (default true). */
  agg?: boolean;
  /** Connections in flight per listener (default 8). */
  concurrency?: number;
  /** Silent connections per listener (default: 1 per 2000 connections, at least 1). */
  silent?: number;
  /** Deadline of the whole job (default: 120 s plus 50 ms per connection). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface ListenerReport {
  name: string;
  address: string;
  connections: number;
  /** Connections the listener did not close in time, or logged other than once. */
  failures: number;
  /** Rejections the log accounts for: lines plus summarised counts. */
  logged: number;
  kinds: Record<string, number>;
}

export interface LiveReport {
  ok: boolean;
  seconds: number;
  listeners: ListenerReport[];
  job: { exitCode: number; iterations: number; mismatches: number; failure: string | null };
  problems: string[];
}

const jobFile = jobPath('fuzz-live.ts');

// ---------------------------------------------------------------------------------------------
// Finding the listeners.

interface Listener {
  name: string;
  pid: number;
  port: number;
}

/** The ports `pid` listens on (`listening`: inode -> port of every LISTEN socket). */
function listeningPorts(pid: number, listening: Map<string, number>): number[] {
  const ports = [...socketOwners([pid]).keys()].map((inode) => listening.get(inode)).filter((p) => p !== undefined);
  return [...new Set(ports)].sort((a, b) => a - b);
}

/** The job's listeners, once all are up (polled: wire-up takes a moment); null if not by `deadline`. */
async function findListeners(nodes: number, fabric: FabricHandle | null, deadline: number): Promise<Listener[] | null> {
  for (;;) {
    const inodes = new Map(tcpSockets(TCP_LISTEN).map((t) => [t.inode, portOf(t.local)]));
    const found: Listener[] = [];
    const nodePids = new Map<number, number>();
    let masterPort = 0;
    for (const pid of descendants(process.pid)) {
      const env = environOf(pid);
      if (env.NBC_NODE_RANK === undefined || env.NBC_SECRET === undefined) continue;
      const node = Number(env.NBC_NODE_RANK);
      nodePids.set(node, pid);
      if (node > 0) masterPort = Number(env.NBC_MASTER_PORT);
    }
    let complete = nodePids.size === nodes && masterPort > 0;
    for (const [node, pid] of nodePids) {
      const ports = listeningPorts(pid, inodes);
      for (const port of ports) {
        found.push({ name: port === masterPort && node === 0 ? 'rendezvous (node 0)' : `links of node ${node}`, pid, port });
      }
      if (ports.length !== (node === 0 ? 2 : 1)) complete = false;
    }
    if (fabric !== null) {
      fabric.pids.forEach((pid, i) => {
        const ports = listeningPorts(pid, inodes);
        if (ports.length !== 1) complete = false;
        for (const port of ports) found.push({ name: i === 0 ? 'agg manager' : `agg daemon ${i - 1}`, pid, port });
      });
    }
    if (complete) return found.sort((a, b) => a.name.localeCompare(b.name));
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 50)); // a poll of /proc: nothing to wait on
  }
}

/** Polls `cond` (a file, /proc: nothing to wait on) until it holds or `deadline` passes. */
async function until(cond: () => boolean, deadline: number): Promise<boolean> {
  for (;;) {
    if (cond()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---------------------------------------------------------------------------------------------
// One fuzzed connection.

const KINDS = ['random', 'bad-length', 'mutated', 'replayed', 'truncated', 'split', 'flood', 'reset'] as const;
type Kind = (typeof KINDS)[number] | 'silent';

interface Outcome {
  localPort: number;
  kind: Kind;
  /** Why this connection counts as a failure (the listener did not drop it in time), or null. */
  problem: string | null;
}

/** Bytes of a response-shaped message: magic, an id, a nonce and a MAC made with no secret we know. */
function fakeResponse(random: () => number): Buffer {
  const b = randomBytes(72);
  AUTH_MAGIC.copy(b, 0);
  b.writeUInt32LE(Math.floor(random() * 4), 4);
  return b;
}

function mutateBytes(b: Buffer, random: () => number): Buffer {
  const out = Buffer.from(b);
  const edits = 1 + Math.floor(random() * 4);
  for (let e = 0; e < edits; e++) out[Math.floor(random() * out.length)] = Math.floor(random() * 256);
  return random() < 0.3 ? out.subarray(0, Math.floor(random() * out.length)) : out;
}

/** Earlier messages, replayed by later connections. */
const captured: Buffer[] = [];

function fuzzOne(port: number, kind: Kind, random: () => number, closeWithinMs: number): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const s: Socket = connect({ host: '127.0.0.1', port });
    s.setNoDelay(true);
    let localPort = 0;
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (problem: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ localPort, kind, problem });
    };
    const timer = setTimeout(() => {
      s.destroy();
      finish(`${kind} connection from port ${localPort} not dropped by the listener within ${closeWithinMs} ms`);
    }, closeWithinMs);
    s.on('error', () => {}); // resets and EPIPE are expected: the listener drops us
    s.on('close', () => finish(localPort === 0 ? `${kind} connection never connected` : null));
    s.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]).subarray(0, 64);
      if (kind === 'mutated' && received.length >= 36 && !sent) send();
    });
    let sent = false;
    const end = (b: Uint8Array): void => {
      s.end(b);
    };
    const send = (): void => {
      sent = true;
      switch (kind) {
        case 'random':
          end(randomBytes(Math.floor(random() * 200)));
          return;
        case 'bad-length': {
          const h = Buffer.alloc(5 + Math.floor(random() * 40));
          const lengths = [0, 1, 0xffff_ffff, MAX_FRAME_BODY + 2, 0x8000_0000, 72];
          h.writeUInt32LE(lengths[Math.floor(random() * lengths.length)]!, 0);
          h[4] = Math.floor(random() * 256);
          end(h);
          return;
        }
        case 'mutated': {
          const r = mutateBytes(fakeResponse(random), random);
          if (captured.length < 64) captured.push(Buffer.from(r));
          end(r);
          return;
        }
        case 'replayed': {
          const old = captured.length > 0 && random() < 0.5 ? captured[Math.floor(random() * captured.length)]! : null;
          end(old ?? Buffer.concat([received.subarray(0, 36), received.subarray(0, 36)]));
          return;
        }
        case 'truncated':
          end(fakeResponse(random).subarray(0, Math.floor(random() * 72)));
          return;
        case 'split': {
          const bytes = Buffer.concat([fakeResponse(random), Buffer.from([5, 0, 0, 0, 1, 1, 2, 3, 4])]);
          let i = 0;
          const next = (): void => {
            if (s.destroyed) return;
            if (i === bytes.length) {
              s.end();
              return;
            }
            s.write(bytes.subarray(i, i + 1), () => setImmediate(next));
            i++;
          };
          next();
          return;
        }
        case 'flood':
          end(randomBytes(1 << 20));
          return;
        case 'reset':
          s.resetAndDestroy();
          return;
        case 'silent':
          return; // the listener's handshake deadline closes it
      }
    };
    s.on('connect', () => {
      localPort = s.localPort ?? 0;
      if (kind === 'replayed') {
        // Wait for the challenge, to reflect it.
        const onChallenge = (): void => {
          if (received.length >= 36 && !sent) {
            s.removeListener('data', onChallenge);
            send();
          }
        };
        s.on('data', onChallenge);
        onChallenge();
      } else if (kind !== 'mutated') {
        send();
      }
    });
  });
}

/** Runs `n` connections to `port`, `concurrency` at a time. */
async function fuzzListener(port: number, n: number, silent: number, concurrency: number, random: () => number): Promise<Outcome[]> {
  const kinds: Kind[] = [];
  for (let i = 0; i < n; i++) kinds.push(i < silent ? 'silent' : KINDS[Math.floor(random() * KINDS.length)]!);
  const out: Outcome[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < kinds.length) {
      const kind = kinds[next++]!;
      // The listeners' handshake deadline is 5 s; anything else is dropped at once.
      out.push(await fuzzOne(port, kind, random, kind === 'silent' ? 9000 : 6000));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, n)) }, worker));
  return out;
}

// ---------------------------------------------------------------------------------------------
// The log: which listener logged which rejection.

/** The listener a log line speaks for, from its prefix. */
function listenerOfLine(line: string): string | null {
  let m: RegExpExecArray | null;
  if (line.startsWith('nbc: rendezvous: ')) return 'rendezvous (node 0)';
  if ((m = /^nbc: node (\d+): /.exec(line)) !== null) return `links of node ${m[1]}`;
  if (line.startsWith('[agg AM ')) return 'agg manager';
  if ((m = /^\[agg AN (\d+) /.exec(line)) !== null) return `agg daemon ${m[1]}`;
  return null;
}

interface Accounting {
  /** Local ports named by one-line rejections. */
  ports: number[];
  /** Rejections counted by summary lines, and the addresses those lines name. */
  summarised: number;
  addresses: string[];
}

function account(lines: readonly string[]): Map<string, Accounting> {
  const m = new Map<string, Accounting>();
  for (const line of lines) {
    const who = listenerOfLine(line);
    if (who === null) continue;
    let a = m.get(who);
    if (a === undefined) {
      a = { ports: [], summarised: 0, addresses: [] };
      m.set(who, a);
    }
    let x: RegExpExecArray | null;
    if ((x = /rejected connection from 127\.0\.0\.1:(\d+): /.exec(line)) !== null) a.ports.push(Number(x[1]));
    else if ((x = / (\d+) more connections? to (\S+) rejected in the last /.exec(line)) !== null) {
      a.summarised += Number(x[1]);
      a.addresses.push(x[2]!);
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------------

export async function liveFuzz(o: LiveOptions): Promise<LiveReport> {
  const start = performance.now();
  const random = mulberry32(o.seed);
  const agg = o.agg ?? true;
  const log = o.log ?? (() => {});
  const problems: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'nbc-fuzz-'));
  const stopFile = join(dir, 'stop');
  const fabricLines: string[] = [];
  let fabric: FabricHandle | null = null;
  let job: Promise<LaunchResult> | null = null;
  const listeners: ListenerReport[] = [];
  let result: LaunchResult | null = null;
  try {
    if (agg) fabric = await startFabric({ radix: 2, levels: 2, private: true, log: (l) => fabricLines.push(l) });
    const timeoutMs = o.timeoutMs ?? 120_000 + 50 * o.connections;
    job = launch(jobFile, {
      ranks: 4, ppn: 2, args: agg ? [stopFile, 'agg'] : [stopFile], output: 'pipe', timeoutMs, transport: 'tcp',
      env: fabric === null ? {} : { NBC_AGG_MANAGER: `${fabric.manager.host}:${fabric.manager.port}`, NBC_AGG_SECRET: fabric.secret.toString('hex') },
    });
    const found = await findListeners(2, fabric, Date.now() + 30_000);
    // The attack starts once the job has verified its first iteration, so that it runs while
    // collectives are in flight (and the job's result covers them).
    const running = found !== null && await until(() => existsSync(`${stopFile}.running`), Date.now() + 30_000);
    if (found === null || !running) {
      problems.push(found === null ? 'the job\'s listeners did not all come up within 30 s' : 'the job did not start iterating within 30 s');
    } else {
      log(`listeners: ${found.map((l) => `${l.name} :${l.port}`).join(', ')}`);
      const silent = o.silent ?? Math.max(1, Math.floor(o.connections / 2000));
      const outcomes = await Promise.all(found.map((l) =>
        fuzzListener(l.port, o.connections, Math.min(silent, o.connections), o.concurrency ?? 8, random)));
      found.forEach((l, i) => {
        const kinds: Record<string, number> = {};
        let failures = 0;
        for (const c of outcomes[i]!) {
          kinds[c.kind] = (kinds[c.kind] ?? 0) + 1;
          if (c.problem !== null) {
            failures++;
            if (problems.length < 20) problems.push(`${l.name}: ${c.problem}`);
          }
        }
        listeners.push({ name: l.name, address: `127.0.0.1:${l.port}`, connections: outcomes[i]!.length, failures, logged: 0, kinds });
      });
      // Accounting needs every outcome's port: keep them.
      (listeners as Array<ListenerReport & { outcomes?: Outcome[] }>).forEach((r, i) => { r.outcomes = outcomes[i]; });
    }
  } finally {
    writeFileSync(stopFile, '');
    if (job !== null) result = await job;
    await fabric?.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  // The job: exit 0, every rank correct in every iteration.
  const ranks = (result?.ranks ?? []) as Array<{ result: { iterations: number; mismatches: number; first: string | null } }>;
  const iterations = ranks.length > 0 ? Math.min(...ranks.map((r) => r.result.iterations)) : 0;
  const mismatches = ranks.reduce((n, r) => n + r.result.mismatches, 0);
  if (result === null || result.exitCode !== 0) problems.push(`the job failed: exit ${result?.exitCode}: ${result?.failure}\n${result?.stderr.slice(-2000)}`);
  if (ranks.length !== 4) problems.push(`${ranks.length} of 4 ranks reported`);
  if (mismatches > 0) problems.push(`${mismatches} wrong results: ${ranks.map((r) => r.result.first).filter(Boolean).join('; ')}`);
  if (iterations === 0) problems.push('the job ran no iteration');

  // The log: each connection exactly once.
  const lines = [...(result?.stderr ?? '').split('\n'), ...fabricLines];
  const acc = account(lines);
  for (const r of listeners as Array<ListenerReport & { outcomes?: Outcome[] }>) {
    const a = acc.get(r.name) ?? { ports: [], summarised: 0, addresses: [] };
    r.logged = a.ports.length + a.summarised;
    const ours = new Map<number, number>();
    for (const c of r.outcomes ?? []) ours.set(c.localPort, (ours.get(c.localPort) ?? 0) + 1);
    for (const p of a.ports) {
      const left = ours.get(p) ?? 0;
      if (left === 0) {
        r.failures++;
        if (problems.length < 40) problems.push(`${r.name}: a rejection from port ${p} that is not one of ours, or logged twice`);
      } else {
        ours.set(p, left - 1);
      }
    }
    // A connection reset before the listener accepted it never reaches the listener (the kernel
    // drops it; Node's accept sees ECONNABORTED): it may be missing from the log. Every other
    // connection is there exactly once.
    const resets = r.kinds.reset ?? 0;
    if (r.logged > r.connections || r.logged < r.connections - resets) {
      r.failures += r.logged > r.connections ? r.logged - r.connections : r.connections - resets - r.logged;
      problems.push(`${r.name}: ${r.connections} connections (${resets} reset at once) but ${r.logged} logged rejections (${
        a.ports.length} lines, ${a.summarised} summarised)`);
    }
    for (const addr of a.addresses) if (addr !== r.address) problems.push(`${r.name}: a summary names ${addr}, expected ${r.address}`);
    delete r.outcomes;
  }
  return {
    ok: problems.length === 0, seconds: (performance.now() - start) / 1000, listeners,
    job: { exitCode: result?.exitCode ?? -1, iterations, mismatches, failure: result?.failure ?? null }, problems,
  };
}
