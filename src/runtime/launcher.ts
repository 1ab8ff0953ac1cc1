/**
 * `nbc run` and `launch()`: start ceil(N/P) node processes on this host, P ranks each (the last
 * node may hold fewer), and supervise them. The exit code is the first failing rank's (or
 * 128 + signal for a node killed by a signal). When anything fails, every node is stopped
 * within seconds, and no process is left behind: nodes also stop by themselves if the
 * launcher disappears (its IPC channel closes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, constants, tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NbcLaunchError } from '../errors.js';
import { parseAggSpec, startFabric, type FabricHandle } from '../agg/fabric.js';
import { parseLinkSpec, type LinkSpec } from './link-spec.js';
import { hostBoardBytes } from '../shm/host-board.js';
import { nodeSizeProblem } from '../shm/node-shared.js';
import type { NodeToLauncher, TransportChoice } from './node-main.js';

export interface LaunchOptions {
  /** Total ranks. */
  ranks: number;
  /** Ranks per node (default: all ranks on one node). */
  ppn?: number;
  /** Arguments for the job file. */
  args?: string[];
  /** Prefix every output line with its rank. */
  tagOutput?: boolean;
  /** Emulated network between nodes, e.g. 'latency=50us,bandwidth=1gbit'. */
  link?: string | LinkSpec;
  /** How ranks reach other nodes: 'ucx', 'tcp' or 'auto' (default: NBC_TRANSPORT, else auto). */
  transport?: TransportChoice;
  /** Kill the job and fail with exit code 124 after this long. */
  timeoutMs?: number;
  /** 'inherit' (default) passes output through; 'pipe' collects it into the result. */
  output?: 'inherit' | 'pipe';
  /** Extra environment for every node. */
  env?: Record<string, string>;
  /** Also stop this job when the launcher process receives SIGINT/SIGTERM (the CLI does). */
  handleSignals?: boolean;
  /**
   * A private aggregation fabric for this job (`nbc run --agg`), e.g. 'radix=4,levels=2' or
   * 'radix=4,levels=2,payload=256': started before the nodes (its hops emulate `link` too),
   * stopped after them. Without it, nodes join the fabric NBC_AGG_MANAGER names, if any.
   */
  agg?: string;
  /**
   * Called as each node process starts, with its node index and pid (the reliability tools
   * sample the nodes' resident memory through /proc/<pid>).
   */
  onSpawn?: (node: number, pid: number) => void;
}

export interface RankResult {
  rank: number;
  node: number;
  /** What the job's default export returned on this rank. */
  result: unknown;
}

export interface LaunchResult {
  exitCode: number;
  /** Results of the ranks that finished, in rank order. */
  ranks: RankResult[];
  /** Why the job failed (null on success). */
  failure: string | null;
  stdout: string;
  stderr: string;
}

const CLI = fileURLToPath(new URL('../cli/nbc.js', import.meta.url));

function linkText(link: string | LinkSpec | undefined): string | undefined {
  if (link === undefined || typeof link === 'string') return link;
  const parts: string[] = [];
  if (link.latencyUs !== undefined) parts.push(`latency=${link.latencyUs}us`);
  if (link.bandwidthBytesPerSec !== undefined) parts.push(`bandwidth=${link.bandwidthBytesPerSec}B`);
  return parts.join(',');
}

/** Fails before any process starts when the job file is not there (every rank would fail to import it). */
export function checkJobFile(entry: string): void {
  const path = resolvePath(entry);
  if (!existsSync(path)) throw new NbcLaunchError(`Cannot run job file '${entry}': there is no file ${path}; expected a .ts or .js job file`);
  if (statSync(path).isDirectory()) throw new NbcLaunchError(`Cannot run job file '${entry}': ${path} is a directory; expected a .ts or .js job file`);
}

export function launch(entry: string, opts: LaunchOptions): Promise<LaunchResult> {
  const n = opts.ranks;
  const ppn = opts.ppn ?? n;
  if (!Number.isInteger(n) || n < 1) throw new NbcLaunchError(`Cannot launch ${String(n)} ranks: expected a positive integer (-n)`);
  if (!Number.isInteger(ppn) || ppn < 1) throw new NbcLaunchError(`Cannot launch with ${String(ppn)} ranks per node: expected a positive integer (--ppn)`);
  const ringKb = Number(opts.env?.NBC_RING_KB ?? process.env.NBC_RING_KB ?? 0);
  const tooMany = nodeSizeProblem(Math.min(ppn, n), ringKb > 0 ? ringKb * 1024 : undefined);
  if (tooMany !== null) throw new NbcLaunchError(`Cannot launch ${n} ranks: ${tooMany}`);
  checkJobFile(entry);
  if (opts.agg === undefined) return launchNodes(entry, opts, {});
  const spec = parseAggSpec(opts.agg); // a bad spec throws here, before anything starts
  const link = typeof opts.link === 'string' ? parseLinkSpec(opts.link) : opts.link;
  return (async () => {
    let fabric: FabricHandle;
    let tearingDown = false;
    try {
      // NBC_AGG_TEST_DELAY_US: the test hook that delays each fragment at the daemons at random
      const delay = opts.env?.NBC_AGG_TEST_DELAY_US ?? process.env.NBC_AGG_TEST_DELAY_US;
      // The fabric's routine lines (daemons registered, groups placed) only with
      // NBC_AGG_VERBOSE=1; what went wrong (a daemon lost, a refusal, a rejected connection) always,
      // until the job has ended: then the fabric is taken down, daemon by daemon, and a daemon
      // that sees its parent go first says so.
      const verbose = (opts.env?.NBC_AGG_VERBOSE ?? process.env.NBC_AGG_VERBOSE) === '1';
      const log = (line: string): void => {
        if (verbose || (!tearingDown && /died|lost|fail|refus|reject|error|dead|cannot|revok/i.test(line))) process.stderr.write(`${line}\n`);
      };
      // Daemons poll between hops, as switch ports do, where this host has a core for every
      // rank, engine and daemon (as the engines do, node-main.ts); NBC_AGG_SPIN_US overrides.
      const daemons = Array.from({ length: spec.levels }, (_, k) => spec.radix ** k).reduce((a, b) => a + b, 0);
      const spinEnv = opts.env?.NBC_AGG_SPIN_US ?? process.env.NBC_AGG_SPIN_US;
      const spinUs = spinEnv !== undefined && spinEnv !== '' ? Number(spinEnv)
        : n + Math.ceil(n / (opts.ppn ?? n)) + daemons <= availableParallelism() ? 1000 : 0;
      fabric = await startFabric({ ...spec, link, private: true, log, spinUs, ...(delay ? { testDelayUs: Number(delay) } : {}) });
    } catch (err) {
      throw new NbcLaunchError(`Cannot launch with --agg ${opts.agg}: the aggregation fabric did not start: ${(err as Error).message}`, { cause: err });
    }
    try {
      return await launchNodes(entry, opts, {
        NBC_AGG_MANAGER: `${fabric.manager.host}:${fabric.manager.port}`,
        NBC_AGG_SECRET: fabric.secret.toString('hex'),
      });
    } finally {
      tearingDown = true;
      await fabric.stop();
    }
  })();
}

const BOARD_PREFIX = 'nbcoll-board-';

/**
 * Removes the boards of launchers that died without removing theirs (killed with SIGKILL):
 * a board's name starts with its launcher's pid. Another user's cannot be removed and stay.
 */
function removeStaleBoards(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(BOARD_PREFIX)) continue;
    const pid = Number.parseInt(name.slice(BOARD_PREFIX.length), 10);
    if (!(pid > 0) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') continue; // alive (EPERM: another user's)
      try {
        rmSync(join(dir, name), { force: true });
      } catch {
        // another user's board: theirs to remove
      }
    }
  }
}

/**
 * A fresh zero-filled file for the job's host board, in /dev/shm where it exists (memory, not
 * disk), else the temporary directory; null where none can be written (then each node
 * watches only its own ranks before yielding).
 */
function hostBoardPath(jobId: string, ranks: number): string | null {
  const dir = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  removeStaleBoards(dir);
  const path = join(dir, `${BOARD_PREFIX}${jobId}`);
  try {
    writeFileSync(path, new Uint8Array(hostBoardBytes(ranks)), { mode: 0o600 });
    return path;
  } catch {
    return null;
  }
}

function launchNodes(entry: string, opts: LaunchOptions, fabricEnv: Record<string, string>): Promise<LaunchResult> {
  const n = opts.ranks;
  const ppn = opts.ppn ?? n;
  const nodes = Math.ceil(n / ppn);
  const job = resolvePath(entry);
  const secret = randomBytes(32).toString('hex');
  const jobId = `${process.pid}-${Date.now().toString(36)}`;
  const pipe = opts.output === 'pipe';
  const link = linkText(opts.link);
  // Node and V8 flags for the node processes (--cpu-prof, --trace-opt, ...): NODE_OPTIONS
  // takes only some, and the launcher's own flags (--import tsx, --test) must not follow.
  const nodeArgs = (opts.env?.NBC_NODE_ARGS ?? process.env.NBC_NODE_ARGS ?? '').split(/\s+/).filter((a) => a !== '');
  // The host board (shm/host-board.ts): every node of this job runs on this host, and their
  // idle threads yield their cores only while no rank of any node computes.
  const board = hostBoardPath(jobId, n);

  return new Promise<LaunchResult>((resolve) => {
    const children: Array<ChildProcess | null> = new Array(nodes).fill(null);
    const alive = new Set<ChildProcess>();
    const ranks: RankResult[] = [];
    let stdout = '';
    let stderr = '';
    let failure: string | null = null;
    let exitCode = 0;
    /** The failure so far is a node's report, possibly only a consequence (a lost link). */
    let failureReported = false;
    let stopping = false;
    /** Nodes this launcher signalled itself: their signal deaths are not news. */
    const signalled = new Set<ChildProcess>();
    let timer: NodeJS.Timeout | undefined;
    const timers: NodeJS.Timeout[] = [];

    const firstRankOf = (node: number): number => node * ppn;
    const ranksOf = (node: number): number => Math.min(ppn, n - node * ppn);

    const note = (text: string): void => {
      if (pipe) stderr += `nbc: ${text}\n`;
      else process.stderr.write(`nbc: ${text}\n`);
    };

    /** Records the first failure and makes sure every node goes away. */
    const failWith = (reason: string, code: number, print: boolean): void => {
      if (failure === null) {
        failure = reason;
        exitCode = code;
        if (print) note(reason);
      }
      stopAll();
    };

    const stopAll = (): void => {
      if (stopping) return;
      stopping = true;
      // Nodes normally stop themselves at once (the master relays the abort); these are the
      // backstops for a node that cannot, all well inside the 5 s the contract allows.
      timers.push(setTimeout(() => { for (const c of alive) kill(c, 'SIGTERM'); }, 1500));
      timers.push(setTimeout(() => { for (const c of alive) kill(c, 'SIGKILL'); }, 3000));
    };

    const kill = (c: ChildProcess, sig: NodeJS.Signals): void => {
      signalled.add(c);
      c.kill(sig);
    };

    const onSignal = (sig: NodeJS.Signals): void => {
      failWith(`interrupted by ${sig}; stopping ${alive.size} node(s)`, 128 + (constants.signals[sig] ?? 15), true);
      for (const c of alive) kill(c, 'SIGTERM');
    };
    if (opts.handleSignals) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }

    const finish = (): void => {
      if (timer) clearTimeout(timer);
      for (const t of timers) clearTimeout(t);
      if (opts.handleSignals) {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      if (board !== null) rmSync(board, { force: true });
      // One closing line with the cause, as mpirun ends: after every node has exited, so that no
      // node's own report of the consequences (lost links, aborted ranks) comes after it.
      if (failure !== null) note(`job failed (exit code ${exitCode}): ${failure.split('\n')[0]}`);
      ranks.sort((a, b) => a.rank - b.rank);
      resolve({ exitCode, ranks, failure, stdout, stderr });
    };

    const start = (node: number, masterPort: number): void => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...opts.env,
        ...fabricEnv,
        NBC_NODE_RANK: String(node),
        NBC_NODES: String(nodes),
        NBC_MASTER_ADDR: '127.0.0.1',
        NBC_MASTER_PORT: String(masterPort),
        NBC_SECRET: secret,
        NBC_JOB_ID: jobId,
        // every node of this job runs on this host: it decides how long waiting ranks spin
        NBC_HOST_RANKS: String(n),
        NBC_HOST_NODES: String(nodes),
        ...(board === null ? {} : { NBC_HOST_BOARD: board }),
      };
      const args = [CLI, 'node', '--ppn', String(ranksOf(node))];
      if (opts.tagOutput) args.push('--tag-output');
      if (link) args.push('--link', link);
      if (opts.transport !== undefined) args.push('--transport', opts.transport);
      args.push(job, ...(opts.args ?? []));
      const child = spawn(process.execPath, [...nodeArgs, ...args], {
        env,
        stdio: ['ignore', pipe ? 'pipe' : 'inherit', pipe ? 'pipe' : 'inherit', 'ipc'],
      });
      children[node] = child;
      alive.add(child);
      if (child.pid !== undefined) opts.onSpawn?.(node, child.pid);
      if (pipe) {
        child.stdout!.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
        child.stderr!.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
      }
      child.on('message', (m: NodeToLauncher) => {
        if (m.type === 'master' && node === 0) {
          for (let k = 1; k < nodes; k++) start(k, m.port);
        } else if (m.type === 'results') {
          for (const r of m.ranks) ranks.push({ rank: r.rank, node: m.node, result: r.result });
        } else if (m.type === 'failure') {
          if (failure === null) failureReported = true;
          failWith(m.reason, m.exitCode, false); // the node printed it already
        }
      });
      child.on('error', (err) => failWith(`node ${node} could not start: ${err.message}`, 1, true));
      child.on('exit', (code, signal) => {
        alive.delete(child);
        if (signal !== null && !signalled.has(child) && (!stopping || failureReported)) {
          // Killed from outside. When other nodes reported first (they lost their links to it a
          // moment before its exit reached us), this is the cause and theirs the consequence.
          const last = firstRankOf(node) + ranksOf(node) - 1;
          const reason = `node ${node} (pid ${child.pid}, ranks ${firstRankOf(node)}..${last}) was killed by ${signal}`;
          if (failureReported) {
            failure = reason; // the closing line (finish) names it
            exitCode = 128 + (constants.signals[signal] ?? 0);
            failureReported = false;
          } else {
            failWith(reason, 128 + (constants.signals[signal] ?? 0), true);
          }
        } else if (code !== 0 && code !== null && failure === null) {
          failWith(`node ${node} (pid ${child.pid}) exited with code ${code}`, code, true);
        } else if (failure === null && code === 0 && stopping) {
          // a clean exit while stopping for a signal or timeout: nothing to add
        }
        if (alive.size === 0 && (stopping || children.every((c) => c !== null))) finish();
      });
    };

    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        failWith(`job timed out after ${opts.timeoutMs} ms; killing ${alive.size} node(s)`, 124, true);
        for (const c of alive) kill(c, 'SIGKILL');
      }, opts.timeoutMs);
    }
    start(0, 0);
  });
}
