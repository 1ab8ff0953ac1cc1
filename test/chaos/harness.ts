/**
 * Chaos trials (issue 16): a job of random collectives (test/jobs/chaos.ts) on a random shape,
 * executor and transport, and one fault at a random moment: a rank throws, a node or an
 * aggregation daemon is SIGKILLed, or a TCP connection between two of the job's processes is
 * cut (reset with `ss -K`, as a failed switch port or a firewall would). The trial passes when
 * the job ends within STOP_DEADLINE_S of the fault, either completed with every result checked or stopped with
 * an exit code and a message naming the culprit; no result was wrong; and nothing is left
 * behind: no process of the job, no new /dev/shm entry, no descriptor of the harness.
 *
 * A trial is a pure function of its seed (`planTrial`), so `npm run chaos -- --seed S --trials 1`
 * replays it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { jobPath } from '../job-path.ts';
import { mulberry32 } from '../jobs/common.ts';
import { alive, cmdlineOf, descendants, environOf, socketOwners, tcpSockets, TCP_ESTABLISHED } from '../proc.ts';

export type Mode = 'host' | 'offload' | 'hier' | 'agg';
export type Transport = 'tcp' | 'ucx';
/**
 * throw: a rank throws; return: a rank returns from its job early (its peers must fail, naming
 * it); kill-node / stop-node: a node process gets SIGKILL / SIGSTOP (a stopped one is found by
 * its silence, NBC_NODE_SILENCE_MS, 3 s here); kill-daemon: an aggregation daemon gets SIGKILL;
 * cut-link: a TCP connection between the job's processes is cut.
 */
export type FaultKind = 'throw' | 'return' | 'kill-node' | 'stop-node' | 'kill-daemon' | 'cut-link';
export const FAULT_KINDS: readonly FaultKind[] = ['throw', 'return', 'kill-node', 'stop-node', 'kill-daemon', 'cut-link'];
/** How long a stopped node may stay silent before the job stops (stop-node trials). */
const STOP_NODE_SILENCE_MS = 3000;

export interface TrialPlan {
  seed: number;
  nodes: number;
  ppn: number;
  mode: Mode;
  transport: Transport;
  ops: number;
  fault: FaultKind;
  /** The fault lands once rank 0 has completed this op (the throw: before this op starts). */
  at: number;
  /** Which rank, node, daemon or connection (an index into the candidates, modulo their count). */
  target: number;
}

export type Verdict =
  | 'stopped' // the job stopped, naming the culprit
  | 'completed' // every op completed and checked (the fault hit nothing the job still needed)
  | 'wrong' // a result differed from the reference
  | 'hang' // the job outlived the deadline
  | 'unnamed' // it stopped, but the message did not name the culprit
  | 'leftover' // a process, /dev/shm entry or descriptor was left behind
  | 'no-fault'; // the fault could not be injected (e.g. no connection to cut): not counted

export interface TrialResult {
  plan: TrialPlan;
  verdict: Verdict;
  exitCode: number | null;
  /** The launcher's failure line (the last `nbc:` line of stderr), if any. */
  message: string;
  /** What was hit: "rank 3", "node 1 (pid 123)", "daemon pid 456", "127.0.0.1:40000 <-> 127.0.0.1:40002". */
  culprit: string;
  /** Milliseconds from the fault to the job's exit (NaN when no fault landed). */
  stopMs: number;
  seconds: number;
  detail: string;
  /** The end of the job's stderr, for the record. */
  log: string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli/nbc.js', import.meta.url));
const JOB = jobPath('chaos.ts');

/**
 * Once the fault has landed, the job must be over within this long: it is the contract's "stops
 * within seconds", with room for a loaded machine (stops take 0.05-1.5 s; chaos.json).
 */
export const STOP_DEADLINE_S = 20;
/**
 * The whole trial's deadline (the launcher kills the job and exits 124 after this): a job that
 * never reaches its fault hangs too. Generous, so that a machine busy with other work does not
 * pass for a hang.
 */
export const TRIAL_DEADLINE_S = 150;
/** After exit, how long the job's processes may take to disappear. */
const LEFTOVER_GRACE_MS = 5000;
/** Interval of the bounded liveness polls (a process's death has no event to wait on). */
const POLL_MS = 25;

export function planTrial(seed: number, opts: { transports: readonly Transport[]; faults?: readonly FaultKind[]; modes?: readonly Mode[] }): TrialPlan {
  const r = mulberry32(seed ^ 0x5eed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const mode = pick(opts.modes ?? ['host', 'offload', 'hier', 'agg'] as const);
  // A rank waiting in an agg collective for one that returned is not caught (docs/errors.md).
  const faults = (opts.faults ?? FAULT_KINDS)
    .filter((f) => (f !== 'kill-daemon' || mode === 'agg') && (f !== 'return' || mode !== 'agg'));
  const nodes = 2 + Math.floor(r() * 3); // 2..4 nodes
  const ppn = mode === 'hier' ? 2 : 1 + Math.floor(r() * 2); // hier needs 2+ ranks per node
  // Long enough that the fault lands mid-run: rank 0's progress lines reach the harness a few
  // milliseconds late, and a fault in the last ops would only meet the orderly shutdown.
  const ops = 200 + Math.floor(r() * 400);
  return {
    seed, nodes, ppn, mode, transport: pick(opts.transports), ops,
    fault: pick(faults), at: Math.floor(r() * ops * 0.8), target: Math.floor(r() * 1e6),
  };
}

interface Conn { local: string; remote: string; pid: number }

/** Established TCP connections owned by `pids` whose other end is also one of `pids`. */
export function connectionsAmong(pids: number[]): Array<{ a: Conn; b: Conn }> {
  const owner = socketOwners(pids);
  const conns: Conn[] = [];
  for (const t of tcpSockets(TCP_ESTABLISHED)) {
    const pid = owner.get(t.inode);
    if (pid !== undefined) conns.push({ local: t.local, remote: t.remote, pid });
  }
  const byLocal = new Map(conns.map((c) => [c.local, c]));
  const pairs: Array<{ a: Conn; b: Conn }> = [];
  for (const a of conns) {
    const b = byLocal.get(a.remote);
    if (b !== undefined && b.remote === a.local && a.local < b.local) pairs.push({ a, b });
  }
  return pairs.sort((x, y) => (x.a.local < y.a.local ? -1 : 1));
}

/** Resets one connection (both ends see ECONNRESET/ECONNABORTED), as a cut link would. */
function cut(c: { a: Conn; b: Conn }): void {
  const [la, pa] = c.a.local.split(':') as [string, string];
  const [lb, pb] = c.b.local.split(':') as [string, string];
  execFileSync('ss', ['-K', 'src', la, 'sport', '=', `:${pa}`, 'dst', lb, 'dport', '=', `:${pb}`], { stdio: 'ignore' });
}

/** Why links cannot be cut here (ss -K needs root and a kernel with INET_DIAG_DESTROY), or null. */
export function cutUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'cutting a connection needs root (ss -K)';
  try {
    execFileSync('ss', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'ss (iproute2) is not installed';
  }
  return null;
}

function shmEntries(): Set<string> {
  try { return new Set(readdirSync('/dev/shm')); } catch { return new Set(); }
}

function fdCount(): number {
  return readdirSync('/proc/self/fd').length;
}

/** NBC_NODE_RANK of a node process (from its environment), or -1. */
function nodeRankOf(pid: number): number {
  const r = environOf(pid).NBC_NODE_RANK;
  return r === undefined ? -1 : Number(r);
}

/** The job's node processes (`nbc node`), indexed by node rank. */
function nodePids(all: number[]): number[] {
  const nodes: number[] = [];
  for (const p of all) {
    if (!/ node --ppn /.test(cmdlineOf(p))) continue;
    const r = nodeRankOf(p);
    if (r >= 0) nodes[r] = p;
  }
  return nodes.filter((p) => p !== undefined);
}

/** The name of the script a process runs ("daemon-main" for dist/agg/daemon-main.js). */
function scriptOf(pid: number): string {
  const script = cmdlineOf(pid).split(' ')[1] ?? '';
  return script.slice(script.lastIndexOf('/') + 1).replace(/\.[cm]?[jt]s$/, '');
}

/** The AN id of an aggregation daemon (from the JSON options on its command line), or -1. */
function anIdOf(pid: number): number {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const json = argv.find((a) => a.startsWith('{'));
    return json === undefined ? -1 : Number((JSON.parse(json) as { id?: unknown }).id ?? -1);
  } catch {
    return -1;
  }
}

/** How the job's logs name the process `pid`: "node N", "AN k" or "aggregation manager". */
function roleOf(pid: number): string {
  const script = scriptOf(pid);
  if (script === 'daemon-main') return `AN ${anIdOf(pid)}`;
  if (script === 'manager-main') return 'aggregation manager';
  return `node ${nodeRankOf(pid)}`;
}

/** The aggregation daemons of the job's private fabric. */
function daemonPids(all: number[]): number[] {
  return all.filter((p) => scriptOf(p) === 'daemon-main').sort((a, b) => a - b);
}

/** Runs one trial to its end. Never throws for a job's failure: the verdict says what happened. */
/** `env`: more environment for the job (e.g. NBC_UCX_ERR_MODE). */
export async function runTrial(plan: TrialPlan, env: Record<string, string> = {}): Promise<TrialResult> {
  const began = Date.now();
  const shmBefore = shmEntries();
  const fdsBefore = fdCount();
  const ranks = plan.nodes * plan.ppn;
  const token = `chaos-${plan.seed}-${randomBytes(3).toString('hex')}`;
  const byRank = plan.fault === 'throw' || plan.fault === 'return';
  const throwAt = byRank ? plan.at : -1;
  const throwRank = plan.target % ranks;
  const args = [CLI, 'run', '-n', String(ranks), '--ppn', String(plan.ppn), '--transport', plan.transport,
    '--timeout', String(TRIAL_DEADLINE_S)];
  if (plan.mode === 'agg') args.push('--agg', 'radix=2,levels=2');
  args.push(JOB, String(plan.seed), String(plan.ops), plan.mode, String(throwAt), String(throwRank), token, plan.fault === 'return' ? 'return' : 'throw');
  const silence = plan.fault === 'stop-node' ? { NBC_NODE_SILENCE_MS: String(STOP_NODE_SILENCE_MS) } : {};
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NBC_AGG_VERBOSE: '0', ...silence, ...env } });
  let stdout = '';
  let stderr = '';
  let culprit = byRank ? `rank ${throwRank}` : '';
  let faultAt = NaN;
  let injected = byRank;
  let noFault = '';
  const seen = new Set<number>();
  const remember = (): void => { for (const p of descendants(child.pid!)) seen.add(p); };

  const inject = (): void => {
    const all = descendants(child.pid!);
    for (const p of all) seen.add(p);
    if (plan.fault === 'kill-node' || plan.fault === 'stop-node') {
      const nodes = nodePids(all);
      if (nodes.length === 0) { noFault = 'no node process found'; return; }
      const i = plan.target % nodes.length;
      culprit = `node ${nodeRankOf(nodes[i]!)} (pid ${nodes[i]})`;
      faultLanded();
      process.kill(nodes[i]!, plan.fault === 'kill-node' ? 'SIGKILL' : 'SIGSTOP');
    } else if (plan.fault === 'kill-daemon') {
      // A daemon of the job's group (connected to one of its nodes) where there is one.
      const nodes = new Set(nodePids(all));
      const inGroup = new Set(connectionsAmong(all).flatMap(({ a, b }) =>
        (nodes.has(a.pid) ? [b.pid] : nodes.has(b.pid) ? [a.pid] : [])));
      const every = daemonPids(all);
      const daemons = every.some((p) => inGroup.has(p)) ? every.filter((p) => inGroup.has(p)) : every;
      if (daemons.length === 0) { noFault = 'no aggregation daemon found'; return; }
      const pid = daemons[plan.target % daemons.length]!;
      culprit = `AN ${anIdOf(pid)} (pid ${pid})`;
      faultLanded();
      process.kill(pid, 'SIGKILL');
    } else if (plan.fault === 'cut-link') {
      const conns = connectionsAmong(all);
      if (conns.length === 0) { noFault = 'no connection between the job\'s processes'; return; }
      const c = conns[plan.target % conns.length]!;
      culprit = `${roleOf(c.a.pid)} ${c.a.local} <-> ${roleOf(c.b.pid)} ${c.b.local}`;
      faultLanded();
      cut(c);
    }
    injected = true;
  };

  const killJob = (why: string): void => {
    stderr += `chaos: harness deadline: ${why}; killing the job\n`;
    for (const p of descendants(child.pid!)) { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }
    child.kill('SIGKILL');
  };
  let stopTimer: NodeJS.Timeout | undefined;
  function faultLanded(): void {
    faultAt = Date.now();
    stopTimer = setTimeout(() => killJob(`still running ${STOP_DEADLINE_S} s after the fault`), STOP_DEADLINE_S * 1000);
  }
  const exit = new Promise<number | null>((resolve) => {
    const deadline = setTimeout(() => killJob(`still running after ${TRIAL_DEADLINE_S + 15} s`), (TRIAL_DEADLINE_S + 15) * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(deadline);
      clearTimeout(stopTimer);
      resolve(code ?? (signal !== null ? 128 : null));
    });
  });
  let firstOp = true;
  let lineBuf = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    lineBuf += d;
    let nl: number;
    while ((nl = lineBuf.indexOf('\n')) >= 0) {
      const line = lineBuf.slice(0, nl);
      lineBuf = lineBuf.slice(nl + 1);
      const m = /^chaos-op (\d+)$/.exec(line);
      if (m === null) continue;
      if (firstOp) { firstOp = false; remember(); }
      // The throw's (or return's) own moment is inside the job: take rank 0's last op before it.
      if (byRank && Number.isNaN(faultAt) && Number(m[1]) >= plan.at - 1) faultLanded();
      if (!injected && noFault === '' && Number(m[1]) >= plan.at) inject();
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const exitCode = await exit;
  const ended = Date.now();
  remember();

  // Leftovers: every process the job ever had must be gone within the grace period.
  const graceEnd = Date.now() + LEFTOVER_GRACE_MS;
  let left = [...seen].filter(alive);
  while (left.length > 0 && Date.now() < graceEnd) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    left = left.filter(alive);
  }
  const shmNew = [...shmEntries()].filter((e) => !shmBefore.has(e));
  const fdsAfter = fdCount();

  const nbcLines = stderr.split('\n').filter((l) => l.startsWith('nbc: '));
  const message = nbcLines.at(-1) ?? '';
  const base = { plan, exitCode, message, culprit, log: stderr.slice(-4000), stopMs: Number.isNaN(faultAt) ? NaN : ended - faultAt, seconds: (ended - began) / 1000 };
  const verdict = (v: Verdict, detail: string): TrialResult => ({ ...base, verdict: v, detail });

  if (/CHAOS-WRONG/.test(stdout)) return verdict('wrong', stdout.split('\n').find((l) => l.includes('CHAOS-WRONG'))!);
  if (exitCode === 124 || /harness deadline/.test(stderr)) return verdict('hang', `${stderr.slice(-2000)}`);
  if (left.length > 0) return verdict('leftover', `processes left: ${left.map((p) => `${p} ${cmdlineOf(p).slice(0, 80)}`).join('; ')}`);
  if (shmNew.length > 0) return verdict('leftover', `new /dev/shm entries: ${shmNew.join(', ')}`);
  if (fdsAfter > fdsBefore) return verdict('leftover', `the harness holds ${fdsAfter - fdsBefore} more descriptors`);
  if (!injected) {
    if (exitCode === 0) return verdict('no-fault', noFault || 'the job ended before the fault');
    return verdict('unnamed', `failed without a fault (${noFault}): ${stderr.slice(-2000)}`);
  }
  if (exitCode === 0) {
    const done = /chaos-done (\d+)/.exec(stdout);
    if (byRank || done === null || Number(done[1]) !== plan.ops) {
      return verdict('wrong', `exit 0 after a ${plan.fault}, but ${done === null ? 'no' : done[1]} of ${plan.ops} ops reported`);
    }
    return verdict('completed', `every op checked; the fault hit nothing the job still needed`);
  }
  const named = namesCulprit(plan, stderr, culprit);
  return named === null ? verdict('stopped', message) : verdict('unnamed', `${named}\n${stderr.slice(-3000)}`);
}

/** Null when stderr names what was hit; else why not. */
function namesCulprit(plan: TrialPlan, stderr: string, culprit: string): string | null {
  switch (plan.fault) {
    case 'throw': {
      const rank = culprit.split(' ')[1];
      return new RegExp(`rank ${rank}\\b[^\\n]*throws at op`).test(stderr) ? null : `no line names rank ${rank} and its error`;
    }
    case 'return': {
      // A peer that waited for it names it by world rank: "from rank R (context", "(world rank R)",
      // "to rank R (context" or, offloaded, "rank R, which it waits for".
      const rank = culprit.split(' ')[1];
      const re = new RegExp(`((from|to) rank ${rank} \\(context|\\(world rank ${rank}\\)|rank ${rank}, which it waits for)[^\\n]*returned from its job`);
      return re.test(stderr) ? null : `no line names rank ${rank} as returned from its job`;
    }
    case 'kill-node': {
      const node = /^node (\d+)/.exec(culprit)![1];
      return new RegExp(`node ${node}\\b[^\\n]*(killed by SIGKILL|lost|died|gone)`, 'i').test(stderr) ? null : `no line names node ${node} as lost`;
    }
    case 'stop-node': {
      const node = /^node (\d+)/.exec(culprit)![1];
      const re = node === '0' ? /lost contact with the rendezvous master \(node 0\)/ : new RegExp(`node ${node} \\(pid \\d+[^)]*\\) stopped answering`);
      return re.test(stderr) ? null : `no line names node ${node} as stopped`;
    }
    case 'kill-daemon': {
      // the ranks' NBC_ERR_PEER_FAILED points to the node log, which must name the daemon
      const an = /^AN (-?\d+)/.exec(culprit)![1];
      return new RegExp(`AN ${an}\\b[^\\n]*(failed|dead|lost)|lost [^\\n]*AN ${an}\\b`).test(stderr) ? null : `no line names AN ${an} as lost`;
    }
    case 'cut-link': {
      // Either end may report it: some line must name one end (or the rendezvous) as lost.
      const ends = [...culprit.matchAll(/(node \d+|AN \d+|aggregation manager) \S+/g)].map((m) => m[1]!);
      const named = [...ends, 'rendezvous'].map((e) => e.replace(/ /g, '\\s'));
      const re = new RegExp(`(lost|closed|reset|failed|dead)[^\\n]*(${named.join('|')})\\b|(${named.join('|')})\\b[^\\n]*(lost|closed|reset|failed|dead)`, 'i');
      return re.test(stderr) ? null : `no line names ${ends.join(' or ')} as lost`;
    }
  }
}
