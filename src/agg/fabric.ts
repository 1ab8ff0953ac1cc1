/**
 * Starting, finding, inspecting and stopping an aggregation fabric: the manager (AM) process and
 * the daemons (ANs) it spawns. See docs/agg.md.
 */
import { Buffer } from 'node:buffer';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join as joinPath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NbcArgError, NbcError, NbcLaunchError, NbcPeerFailedError, NbcTimeoutError } from '../errors.js';
import { SECRET_BYTES } from '../net/auth.js';
import { checkEmulation } from '../net/emulate.js';
import { parseLinkSpec, wireModelOf, type LinkSpec } from '../runtime/link-spec.js';
import { wireModeFromEnv, type WireMode } from '../runtime/wire-clock.js';
import { dial, sendCtrl } from './conn.js';
import type { ManagerOptions } from './manager.js';
import { isRunning, killQuietly, waitGone } from './procs.js';
import { anCount, checkShape, decodeCtrl, FrameType, MAX_PAYLOAD, MIN_PAYLOAD, type Ctrl } from './wire.js';

export interface FabricOptions {
  radix: number;
  levels: number;
  /** Bytes per slot (fragment payload), default 256. */
  payloadPerSlot?: number;
  /** Per-AN capacity in slots, default 256. */
  slotsPerAn?: number;
  /** Most slots one job may hold at one AN, default slotsPerAn / 2. */
  jobQuotaSlots?: number;
  /** Address every process listens on, default 127.0.0.1. */
  listenHost?: string;
  /** AM port, default 0 (ephemeral). */
  port?: number;
  /** 32-byte fabric secret, default random. */
  secret?: Buffer;
  /**
   * The emulated network (`--link`): every hop of the fabric is modelled as a daemon at a
   * switch (stamps.ts): node to leaf daemon half the host-to-host latency, each level above
   * `switchUs`, each port at `bandwidth`.
   */
  link?: LinkSpec;
  /**
   * How `link` is emulated (default NBC_WIRE, else 'stamp'): 'stamp', frames carry their
   * modelled arrival and only the rank waits for it; 'queue', each hop delays its frames in a
   * timer queue (net/emulate.ts), latency and bandwidth only.
   */
  wireMode?: WireMode;
  /** The fabric dies with this process (AM stdin is a pipe from it; ANs die with the AM). */
  private?: boolean;
  /** Test hook: each AN delays handling each fragment by a random 0..testDelayUs. */
  testDelayUs?: number;
  /**
   * How long a daemon keeps polling after traffic instead of sleeping (us; default 0). Give it
   * only where every daemon has a core of its own; the launcher decides for private fabrics.
   */
  spinUs?: number;
  /** Receives the AM's and ANs' log lines. */
  log?: (line: string) => void;
  /** ANs exit after this long without an AM (default 30 s). */
  orphanSeconds?: number;
  /**
   * Start only the AM and wait for the daemons of a previous AM (same address, port and secret)
   * to redial it: restarting the AM without restarting the daemons.
   */
  adopt?: boolean;
  /**
   * The AM and ANs survive this process (`nbc agg start`): a new session, no pipes kept; their
   * log goes to `logFd` (a file descriptor) or nowhere.
   */
  detached?: boolean;
  logFd?: number;
  /** How long to wait for the fabric to come up (default 10 s plus 0.3 s per daemon). */
  startTimeoutMs?: number;
}

export interface FabricHandle {
  manager: { host: string; port: number };
  secret: Buffer;
  /** The AM's pid first, then the ANs' by AN id. */
  pids: number[];
  /** Stops the AM and every AN; resolves once none of `pids` runs. */
  stop(): Promise<void>;
}

export const DEFAULT_PAYLOAD = 256;
export const DEFAULT_SLOTS_PER_AN = 256;

/** dist/agg/<name>.js whether this module runs from dist/ or from src/ under tsx. */
export function aggScript(name: 'manager-main' | 'daemon-main'): string {
  const here = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL(`../../dist/agg/${name}.js`, import.meta.url));
}

function checkPositiveInt(v: number | undefined, name: string, min: number, max: number): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min || v > max)) {
    throw new NbcArgError(`Cannot start an aggregation fabric: ${name} ${v} is not an integer in ${min}..${max}`);
  }
}

/** The manager's configuration from the caller's options, each checked; throws NbcArgError. */
function managerConfig(o: FabricOptions): ManagerOptions {
  checkShape(o, 'start an aggregation fabric');
  checkPositiveInt(o.payloadPerSlot, 'payloadPerSlot', MIN_PAYLOAD, MAX_PAYLOAD);
  const payloadPerSlot = o.payloadPerSlot ?? DEFAULT_PAYLOAD;
  if (payloadPerSlot % 8 !== 0) {
    throw new NbcArgError(`Cannot start an aggregation fabric: payloadPerSlot ${payloadPerSlot} is not a multiple of 8`);
  }
  checkPositiveInt(o.slotsPerAn, 'slotsPerAn', 1, 1 << 20);
  const slotsPerAn = o.slotsPerAn ?? DEFAULT_SLOTS_PER_AN;
  checkPositiveInt(o.jobQuotaSlots, 'jobQuotaSlots', 1, slotsPerAn);
  checkPositiveInt(o.port, 'port', 0, 65535);
  checkPositiveInt(o.orphanSeconds, 'orphanSeconds', 1, 86400);
  checkPositiveInt(o.spinUs, 'spinUs', 0, 1_000_000);
  if (o.testDelayUs !== undefined && !(o.testDelayUs >= 0 && Number.isFinite(o.testDelayUs))) {
    throw new NbcArgError(`Cannot start an aggregation fabric: testDelayUs ${o.testDelayUs} is not a finite number >= 0`);
  }
  if (o.link !== undefined) checkEmulation(o.link);
  const stamps = o.link !== undefined && (o.wireMode ?? wireModeFromEnv()) === 'stamp';
  const link = o.link === undefined || stamps ? undefined : { latencyUs: o.link.latencyUs, bandwidthBytesPerSec: o.link.bandwidthBytesPerSec };
  return {
    radix: o.radix, levels: o.levels, payloadPerSlot, slotsPerAn,
    jobQuotaSlots: o.jobQuotaSlots ?? Math.max(1, Math.floor(slotsPerAn / 2)),
    listenHost: o.listenHost ?? '127.0.0.1', port: o.port ?? 0, link, wire: stamps ? wireModelOf(o.link!) : undefined, testDelayUs: o.testDelayUs, spinUs: o.spinUs,
    orphanSeconds: o.orphanSeconds ?? 30, private: o.private === true, adopt: o.adopt === true,
    daemonMain: aggScript('daemon-main'),
  };
}

/** Starts an AM and its ANs; resolves once every AN has registered and linked to its parent. */
export async function startFabric(o: FabricOptions): Promise<FabricHandle> {
  const config = managerConfig(o);
  const secret = o.secret ?? randomBytes(SECRET_BYTES);
  if (!(secret instanceof Uint8Array) || secret.length !== SECRET_BYTES) {
    throw new NbcArgError(`Cannot start an aggregation fabric: the secret must be ${SECRET_BYTES} bytes`);
  }
  const log = o.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const detached = o.detached === true;
  const child = spawn(process.execPath, [aggScript('manager-main'), JSON.stringify(config)], {
    stdio: [config.private ? 'pipe' : 'ignore', 'pipe', detached ? (o.logFd ?? 'ignore') : 'pipe'],
    env: { ...process.env, NBC_AGG_SECRET: Buffer.from(secret).toString('hex') },
    detached,
  });
  if (!detached) forwardLines(child, log);
  const ready = await managerReady(child, o, o.startTimeoutMs ?? 10_000 + 300 * anCount(o));
  if (detached) {
    child.stdout!.destroy();
    child.unref();
  }
  return fabricHandle(child, ready, Buffer.from(secret));
}

/** Hands the manager's stderr to `log`, one line at a time. */
function forwardLines(child: ChildProcess, log: (line: string) => void): void {
  let partial = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      log(partial.slice(0, nl));
      partial = partial.slice(nl + 1);
    }
  });
}

interface ReadyLine {
  host: string;
  port: number;
  pids: number[];
}

/** The manager's first stdout line: READY with its address and pids, or FAILED with why. */
function managerReady(child: ChildProcess, o: FabricOptions, timeoutMs: number): Promise<ReadyLine> {
  return new Promise<ReadyLine>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      killQuietly(child.pid ?? 0, 'SIGTERM');
      reject(new NbcTimeoutError(
        `Cannot start an aggregation fabric (radix ${o.radix}, ${o.levels} levels): not every daemon registered within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const line = out.slice(0, nl);
      if (line.startsWith('READY ')) resolve(JSON.parse(line.slice(6)) as ReadyLine);
      else reject(new NbcLaunchError(`Cannot start an aggregation fabric: ${line.replace(/^FAILED /, '')}`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new NbcLaunchError(`Cannot start an aggregation fabric: the manager exited (${signal ?? `code ${code}`}) before it was ready`));
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new NbcLaunchError(`Cannot start an aggregation fabric: ${err.message}`, { cause: err }));
    });
  });
}

function fabricHandle(child: ChildProcess, ready: ReadyLine, secret: Buffer): FabricHandle {
  const pids = ready.pids;
  let stopping: Promise<void> | null = null;
  return {
    manager: { host: ready.host, port: ready.port },
    secret,
    pids,
    stop(): Promise<void> {
      stopping ??= (async () => {
        const am = pids[0]!;
        if (isRunning(am)) {
          killQuietly(am, 'SIGTERM');
          await waitGone([am], 6000);
        }
        // The AM stops its ANs; whatever is left (the AM was killed, ANs it adopted) goes now.
        const rest = pids.filter((p) => p > 0 && isRunning(p));
        for (const p of rest) killQuietly(p, 'SIGTERM');
        if (!(await waitGone(rest, 3000))) {
          for (const p of rest) killQuietly(p, 'SIGKILL');
          await waitGone(rest, 2000);
        }
        child.stdin?.destroy();
      })();
      return stopping;
    },
  };
}

/**
 * `radix=4,levels=2[,payload=256][,slots=256][,quota=128][,link=latency:20us]` -> options.
 * (`link` uses ':' instead of '=' and ';' between its own settings, as commas separate ours.)
 */
export function parseAggSpec(text: string): FabricOptions {
  const o: Partial<FabricOptions> = {};
  const bad = (why: string): NbcArgError => new NbcArgError(
    `Cannot parse aggregation spec '${text}': ${why}; expected radix=R,levels=L[,payload=N][,slots=N][,quota=N], e.g. radix=4,levels=2`);
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq < 0) throw bad(`'${part}' is not key=value`);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 'link') {
      o.link = parseLinkSpec(value.replace(/:/g, '=').replace(/;/g, ','));
      continue;
    }
    if (!/^\d+$/.test(value)) throw bad(`${key}=${value} is not a non-negative integer`);
    const n = Number(value);
    switch (key) {
      case 'radix': o.radix = n; break;
      case 'levels': o.levels = n; break;
      case 'payload': o.payloadPerSlot = n; break;
      case 'slots': o.slotsPerAn = n; break;
      case 'quota': o.jobQuotaSlots = n; break;
      default: throw bad(`unknown key '${key}'`);
    }
  }
  if (o.radix === undefined || o.levels === undefined) throw bad('radix and levels are required');
  const opts = o as FabricOptions;
  checkShape(opts, `use aggregation spec '${text}'`);
  if (opts.payloadPerSlot !== undefined &&
    (opts.payloadPerSlot < MIN_PAYLOAD || opts.payloadPerSlot > MAX_PAYLOAD || opts.payloadPerSlot % 8 !== 0)) {
    throw bad(`payload ${opts.payloadPerSlot} is not a multiple of 8 in ${MIN_PAYLOAD}..${MAX_PAYLOAD}`);
  }
  if (opts.slotsPerAn !== undefined && opts.slotsPerAn < 1) throw bad('slots must be at least 1');
  if (opts.jobQuotaSlots !== undefined && (opts.jobQuotaSlots < 1 || opts.jobQuotaSlots > (opts.slotsPerAn ?? DEFAULT_SLOTS_PER_AN))) {
    throw bad('quota must be in 1..slots');
  }
  return opts;
}

// ---------------------------------------------------------------------------------------------
// A running fabric: the state file, the environment, administration.

export interface FabricState {
  manager: { host: string; port: number };
  secret: string;
  pids: number[];
  radix: number;
  levels: number;
  startedAt: string;
}

/** `$NBC_AGG_STATE`, else ~/.cache/nbcoll/agg.json. */
export function aggStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const p = env.NBC_AGG_STATE;
  return p !== undefined && p !== '' ? p : joinPath(homedir(), '.cache', 'nbcoll', 'agg.json');
}

/** The state file, or null when there is none; NbcArgError when it is unreadable. */
export function readFabricState(path: string): FabricState | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new NbcArgError(`Cannot read aggregation fabric state ${path}: ${(err as Error).message}`);
  }
  let s: Partial<FabricState>;
  try {
    s = JSON.parse(text) as Partial<FabricState>;
  } catch {
    throw new NbcArgError(`Cannot read aggregation fabric state ${path}: not JSON; expected the file nbc agg start writes`);
  }
  if (typeof s.secret !== 'string' || !/^[0-9a-f]{64}$/i.test(s.secret) || typeof s.manager?.host !== 'string' ||
    typeof s.manager.port !== 'number' || !Array.isArray(s.pids)) {
    throw new NbcArgError(`Cannot read aggregation fabric state ${path}: missing or malformed manager, secret or pids`);
  }
  return s as FabricState;
}

/** host:port -> { host, port } ([v6]:port too). */
export function parseHostPort(text: string, what: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:]+):(\d+)$/.exec(text);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || !(port >= 1 && port <= 65535)) {
    throw new NbcArgError(`Cannot use ${what}='${text}': expected host:port, e.g. 127.0.0.1:7400`);
  }
  return { host: m[1]!, port };
}

/**
 * The fabric a job should join: NBC_AGG_MANAGER=host:port, with the secret from NBC_AGG_SECRET
 * (64 hex digits) or else the state file (NBC_AGG_STATE or ~/.cache/nbcoll/agg.json). Null when
 * NBC_AGG_MANAGER is not set; NbcArgError when something is malformed or no secret is found.
 */
export function fabricFromEnv(env: NodeJS.ProcessEnv = process.env): { manager: { host: string; port: number }; secret: Buffer } | null {
  const m = env.NBC_AGG_MANAGER;
  if (m === undefined || m === '') return null;
  const manager = parseHostPort(m.trim(), 'NBC_AGG_MANAGER');
  const hex = env.NBC_AGG_SECRET;
  if (hex !== undefined && hex !== '') {
    if (!/^[0-9a-fA-F]{64}$/.test(hex.trim())) {
      throw new NbcArgError('Cannot use NBC_AGG_SECRET: expected 64 hex digits (the fabric secret, 256 bits)');
    }
    return { manager, secret: Buffer.from(hex.trim(), 'hex') };
  }
  const path = aggStatePath(env);
  const state = readFabricState(path);
  if (state === null) {
    throw new NbcArgError(`Cannot join the aggregation fabric at ${m}: no NBC_AGG_SECRET and no state file ${path}`);
  }
  return { manager, secret: Buffer.from(state.secret, 'hex') };
}

/** One request/answer over an authenticated admin connection to the AM. */
export async function adminRequest(manager: { host: string; port: number }, secret: Buffer, msg: Ctrl, timeoutMs = 5000): Promise<Ctrl> {
  const conn = await dial(manager.host, manager.port, secret, 0, timeoutMs);
  return new Promise<Ctrl>((resolve, reject) => {
    const timer = setTimeout(() => {
      conn.close('timed out');
    }, timeoutMs);
    let answered = false;
    conn.start({
      onFrame: (type, body) => {
        const m = type === FrameType.Ctrl ? decodeCtrl(body) : null;
        if (m === null) throw new Error('answer is not a control message');
        answered = true;
        clearTimeout(timer);
        resolve(m);
        conn.close('done');
      },
      onClose: (reason) => {
        clearTimeout(timer);
        if (!answered) {
          reject(new NbcPeerFailedError(
            `Cannot ask the aggregation manager at ${manager.host}:${manager.port} for '${msg.t}': ${reason}`));
        }
      },
    });
    sendCtrl(conn, { t: 'hello-admin' });
    sendCtrl(conn, msg);
  });
}

/** The AM's view of the fabric: tree, groups, jobs, counters (see `Manager.status`). */
export async function fabricStatus(manager: { host: string; port: number }, secret: Buffer): Promise<Record<string, unknown>> {
  const m = await adminRequest(manager, secret, { t: 'status' });
  if (m.t !== 'status') throw new NbcError('NBC_ERR_INTERNAL', `Cannot read fabric status: the manager answered '${m.t}'`);
  return m;
}

/** Asks the AM to stop its ANs and itself; then waits for `pids` (when given) to be gone. */
export async function stopFabricAt(manager: { host: string; port: number }, secret: Buffer, pids: number[] = []): Promise<void> {
  try {
    await adminRequest(manager, secret, { t: 'stop' });
  } catch (err) {
    if (pids.length === 0) throw err;
  }
  if (!(await waitGone(pids, 6000))) {
    for (const p of pids) killQuietly(p, 'SIGKILL');
    await waitGone(pids, 2000);
  }
}
