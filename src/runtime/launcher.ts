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
import { fatTreeMismatch } from '../agg/placement.js';
import { currentJsRuntime, runtimeCommand, type JsRuntime, type RuntimeCommand } from './js-runtime.js';
import { checkTopology, parseLinkSpec, parseTopology, type LinkSpec } from './link-spec.js';
import { trainRounds } from './train.js';
import { flatBoardWanted } from './wait-policy.js';
import { v8ThreadArgs, v8ThreadsFromEnv } from './v8-threads.js';
import { wireModeFromEnv } from './wire-clock.js';
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
  /**
   * Where the emulated nodes sit on `link`'s network: 'flat' (the default) or
   * 'fat-tree:radix=R[,levels=L]' (runtime/link-spec.ts); needs `link`. The aggregation
   * fabric's daemons sit at its switches.
   */
  topology?: string;
  /** How ranks reach other nodes: 'ucx', 'tcp' or 'auto' (default: NBC_TRANSPORT, else auto). */
  transport?: TransportChoice;
  /**
   * The JavaScript runtime of the node processes and their ranks: 'node', 'bun' or 'deno'
   * (default: the launcher's own; js-runtime.ts finds the executable).
   */
  runtime?: JsRuntime;
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
  if (link.switchUs !== undefined) parts.push(`switch=${link.switchUs}us`);
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
  // Before anything starts: the topology needs a link, and a fat tree of fixed levels must hold every node.
  checkTopology(opts.topology, opts.link, Math.ceil(n / ppn));
  const command = runtimeCommand(opts.runtime ?? currentJsRuntime(), { ...process.env, ...opts.env });
  if (opts.agg === undefined) return launchNodes(entry, opts, command, {});
  const spec = parseAggSpec(opts.agg); // a bad spec throws here, before anything starts
  const fatTree = parseTopology(opts.topology).radix;
  const mismatch = fatTree === 0 ? null : fatTreeMismatch(spec, fatTree, Math.ceil(n / ppn));
  if (mismatch !== null) throw new NbcLaunchError(`Cannot launch with --agg ${opts.agg} on --topology ${opts.topology}: ${mismatch}`);
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
      // The fabric emulates the link as the nodes do (NBC_WIRE of their environment).
      const wireMode = wireModeFromEnv({ ...process.env, ...opts.env });
      fabric = await startFabric({ ...spec, link: link ?? spec.link, wireMode, private: true, log, spinUs, ...(delay ? { testDelayUs: Number(delay) } : {}) });
    } catch (err) {
      throw new NbcLaunchError(`Cannot launch with --agg ${opts.agg}: the aggregation fabric did not start: ${(err as Error).message}`, { cause: err });
    }
    try {
      return await launchNodes(entry, opts, command, {
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

function launchNodes(entry: string, opts: LaunchOptions, command: RuntimeCommand, fabricEnv: Record<string, string>): Promise<LaunchResult> {
  return new Promise<LaunchResult>((resolve) => new NodeJob(entry, opts, command, fabricEnv, resolve).run());
}

/**
 * One job's node processes and their supervision: node 0 starts first and reports its master
 * port, then the others; the first failure is recorded and stops every node (the master relays
 * it; signals are the backstop); the result is resolved once every node has exited.
 */
class NodeJob {
  private readonly n: number;
  private readonly ppn: number;
  private readonly nodes: number;
  private readonly job: string;
  private readonly secret = randomBytes(32).toString('hex');
  private readonly jobId = `${process.pid}-${Date.now().toString(36)}`;
  private readonly pipe: boolean;
  private readonly link: string | undefined;
  /** What goes before the script: Deno's `run -A`, then V8's flags on Node (NBC_V8_THREADS), then NBC_NODE_ARGS. */
  private readonly nodeArgs: string[];
  /** The host board (shm/host-board.ts), or null where none could be made. */
  private readonly board: string | null;

  private readonly children: Array<ChildProcess | null>;
  private readonly alive = new Set<ChildProcess>();
  private readonly ranks: RankResult[] = [];
  private stdout = '';
  private stderr = '';
  private failure: string | null = null;
  private exitCode = 0;
  /** The failure so far is a node's report, possibly only a consequence (a lost link). */
  private failureReported = false;
  private stopping = false;
  /** Nodes this launcher signalled itself: their signal deaths are not news. */
  private readonly signalled = new Set<ChildProcess>();
  private timer: NodeJS.Timeout | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    this.failWith(`interrupted by ${sig}; stopping ${this.alive.size} node(s)`, 128 + (constants.signals[sig] ?? 15), true);
    for (const c of this.alive) this.kill(c, 'SIGTERM');
  };

  constructor(
    entry: string,
    private readonly opts: LaunchOptions,
    private readonly command: RuntimeCommand,
    private readonly fabricEnv: Record<string, string>,
    private readonly resolve: (result: LaunchResult) => void,
  ) {
    this.n = opts.ranks;
    this.ppn = opts.ppn ?? this.n;
    this.nodes = Math.ceil(this.n / this.ppn);
    this.job = resolvePath(entry);
    this.pipe = opts.output === 'pipe';
    this.link = linkText(opts.link);
    // NODE_OPTIONS takes only some flags (--cpu-prof, --trace-opt, ...), and the launcher's own
    // flags (--import tsx, --test) must not follow.
    // V8 without its helper threads where the ranks fill the host (v8-threads.ts), on Node only:
    // Bun runs JavaScriptCore, and Deno 2.9 under --v8-flags=--single-threaded never settles an
    // Atomics.waitAsync, so an engine that parks never wakes. The user's flags after, so theirs
    // win; they are the runtime's own (Deno's go after `run -A`).
    trainRounds({ ...process.env, ...opts.env }); // a bad NBC_TRAIN is refused here, once, not by every rank
    flatBoardWanted({ ...process.env, ...opts.env }, { oversubscribed: false }, 1); // and a bad NBC_FLAT
    const v8Threads = v8ThreadsFromEnv({ ...process.env, ...opts.env });
    this.nodeArgs = [
      ...command.args,
      ...(command.runtime === 'node' ? v8ThreadArgs(v8Threads, this.n, availableParallelism()) : []),
      ...(opts.env?.NBC_NODE_ARGS ?? process.env.NBC_NODE_ARGS ?? '').split(/\s+/).filter((a) => a !== ''),
    ];
    // Every node of this job runs on this host, and their idle threads yield their cores only
    // while no rank of any node computes.
    this.board = hostBoardPath(this.jobId, this.n);
    this.children = new Array<ChildProcess | null>(this.nodes).fill(null);
  }

  run(): void {
    if (this.opts.handleSignals) {
      process.on('SIGINT', this.onSignal);
      process.on('SIGTERM', this.onSignal);
    }
    if (this.opts.timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.failWith(`job timed out after ${this.opts.timeoutMs} ms; killing ${this.alive.size} node(s)`, 124, true);
        for (const c of this.alive) this.kill(c, 'SIGKILL');
      }, this.opts.timeoutMs);
    }
    this.start(0, 0);
  }

  private firstRankOf(node: number): number {
    return node * this.ppn;
  }

  private ranksOf(node: number): number {
    return Math.min(this.ppn, this.n - node * this.ppn);
  }

  private note(text: string): void {
    if (this.pipe) this.stderr += `nbc: ${text}\n`;
    else process.stderr.write(`nbc: ${text}\n`);
  }

  /** Records the first failure and makes sure every node goes away. */
  private failWith(reason: string, code: number, print: boolean): void {
    if (this.failure === null) {
      this.failure = reason;
      this.exitCode = code;
      if (print) this.note(reason);
    }
    this.stopAll();
  }

  private stopAll(): void {
    if (this.stopping) return;
    this.stopping = true;
    // Nodes normally stop themselves at once (the master relays the abort); these are the
    // backstops for a node that cannot, all well inside the 5 s the contract allows.
    this.timers.push(setTimeout(() => { for (const c of this.alive) this.kill(c, 'SIGTERM'); }, 1500));
    this.timers.push(setTimeout(() => { for (const c of this.alive) this.kill(c, 'SIGKILL'); }, 3000));
  }

  private kill(c: ChildProcess, sig: NodeJS.Signals): void {
    this.signalled.add(c);
    c.kill(sig);
  }

  private finish(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const t of this.timers) clearTimeout(t);
    if (this.opts.handleSignals) {
      process.off('SIGINT', this.onSignal);
      process.off('SIGTERM', this.onSignal);
    }
    if (this.board !== null) rmSync(this.board, { force: true });
    // One closing line with the cause, as mpirun ends: after every node has exited, so that no
    // node's own report of the consequences (lost links, aborted ranks) comes after it.
    if (this.failure !== null) this.note(`job failed (exit code ${this.exitCode}): ${this.failure.split('\n')[0]}`);
    this.ranks.sort((a, b) => a.rank - b.rank);
    this.resolve({ exitCode: this.exitCode, ranks: this.ranks, failure: this.failure, stdout: this.stdout, stderr: this.stderr });
  }

  private nodeEnv(node: number, masterPort: number): NodeJS.ProcessEnv {
    return {
      ...process.env,
      ...this.opts.env,
      ...this.fabricEnv,
      NBC_NODE_RANK: String(node),
      NBC_NODES: String(this.nodes),
      NBC_MASTER_ADDR: '127.0.0.1',
      NBC_MASTER_PORT: String(masterPort),
      NBC_SECRET: this.secret,
      NBC_JOB_ID: this.jobId,
      // every node of this job runs on this host: it decides how long waiting ranks spin
      NBC_HOST_RANKS: String(this.n),
      NBC_HOST_NODES: String(this.nodes),
      ...(this.board === null ? {} : { NBC_HOST_BOARD: this.board }),
    };
  }

  private start(node: number, masterPort: number): void {
    const opts = this.opts;
    const args = [CLI, 'node', '--ppn', String(this.ranksOf(node))];
    if (opts.tagOutput) args.push('--tag-output');
    if (this.link) args.push('--link', this.link);
    if (opts.topology !== undefined) args.push('--topology', opts.topology);
    if (opts.transport !== undefined) args.push('--transport', opts.transport);
    args.push(this.job, ...(opts.args ?? []));
    const child = spawn(this.command.command, [...this.nodeArgs, ...args], {
      env: this.nodeEnv(node, masterPort),
      stdio: ['ignore', this.pipe ? 'pipe' : 'inherit', this.pipe ? 'pipe' : 'inherit', 'ipc'],
    });
    this.children[node] = child;
    this.alive.add(child);
    if (child.pid !== undefined) opts.onSpawn?.(node, child.pid);
    if (this.pipe) {
      child.stdout!.setEncoding('utf8').on('data', (d: string) => { this.stdout += d; });
      child.stderr!.setEncoding('utf8').on('data', (d: string) => { this.stderr += d; });
    }
    child.on('message', (m: NodeToLauncher) => this.onMessage(node, m));
    child.on('error', (err) => this.failWith(`node ${node} could not start: ${err.message}`, 1, true));
    child.on('exit', (code, signal) => this.onExit(node, child, code, signal));
  }

  private onMessage(node: number, m: NodeToLauncher): void {
    if (m.type === 'master' && node === 0) {
      for (let k = 1; k < this.nodes; k++) this.start(k, m.port);
    } else if (m.type === 'results') {
      for (const r of m.ranks) this.ranks.push({ rank: r.rank, node: m.node, result: r.result });
    } else if (m.type === 'failure') {
      if (this.failure === null) this.failureReported = true;
      this.failWith(m.reason, m.exitCode, false); // the node printed it already
    }
  }

  private onExit(node: number, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    this.alive.delete(child);
    if (signal !== null && !this.signalled.has(child) && (!this.stopping || this.failureReported)) {
      // Killed from outside. When other nodes reported first (they lost their links to it a
      // moment before its exit reached us), this is the cause and theirs the consequence.
      const last = this.firstRankOf(node) + this.ranksOf(node) - 1;
      const reason = `node ${node} (pid ${child.pid}, ranks ${this.firstRankOf(node)}..${last}) was killed by ${signal}`;
      if (this.failureReported) {
        this.failure = reason; // the closing line (finish) names it
        this.exitCode = 128 + (constants.signals[signal] ?? 0);
        this.failureReported = false;
      } else {
        this.failWith(reason, 128 + (constants.signals[signal] ?? 0), true);
      }
    } else if (code !== 0 && code !== null && this.failure === null) {
      this.failWith(`node ${node} (pid ${child.pid}) exited with code ${code}`, code, true);
    }
    // (A clean exit while stopping for a signal or timeout adds nothing.)
    if (this.alive.size === 0 && (this.stopping || this.children.every((c) => c !== null))) this.finish();
  }
}
