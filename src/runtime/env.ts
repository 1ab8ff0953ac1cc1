/**
 * Wire-up from the environment, and the size syntax shared by the CLI and the benchmarks.
 *
 * `nbc node --ppn P job.ts` is one node of a job whose processes were started by some other
 * launcher. `detectWireup()` reads which node this is, how many there are, and where node 0
 * listens, from the variables that launcher sets:
 *
 * | source  | node rank / node count                          | launcher                     |
 * |---------|-------------------------------------------------|------------------------------|
 * | `nbc`   | `NBC_NODE_RANK` / `NBC_NODES`                   | anything that can set env    |
 * | `ompi`  | `OMPI_COMM_WORLD_RANK` / `OMPI_COMM_WORLD_SIZE` | Open MPI `mpirun`            |
 * | `pmi`   | `PMI_RANK` / `PMI_SIZE`                         | MPICH / Intel MPI Hydra, PMI |
 * | `slurm` | `SLURM_PROCID` / `SLURM_NTASKS`                 | `srun`                       |
 *
 * The first source whose rank variable or count variable is set wins (so an `nbc node` started
 * by `mpirun` inside a Slurm allocation takes Open MPI's numbering, not the allocation's).
 *
 * Master address (where node 0 listens): `NBC_MASTER_ADDR`; else, under Slurm, the first host
 * of `SLURM_STEP_NODELIST` (or `SLURM_JOB_NODELIST`), which is where task 0 runs with srun's
 * default block distribution; else `127.0.0.1`. Open MPI and Hydra do not tell a process where
 * rank 0 runs, so **mpirun across hosts needs NBC_MASTER_ADDR**, exported to every process:
 *
 *     mpirun -np 2 --host host0,host1 -x NBC_MASTER_ADDR=host0 nbc node --ppn 4 job.ts
 *     mpiexec -n 2 -hosts host0,host1 -genv NBC_MASTER_ADDR host0 nbc node --ppn 4 job.ts
 *
 * Master port: `NBC_MASTER_PORT`; else derived from the job id, so every node of one job picks
 * the same port without talking: 29500 + (FNV-1a-32 of the job id mod 20000). The job id is the
 * first set of `NBC_JOB_ID`, Open MPI's `OMPI_MCA_ess_base_jobid` / `OMPI_MCA_orte_ess_jobid` /
 * `PMIX_NAMESPACE`, `PMI_JOBID` / Intel Hydra's `I_MPI_HYDRA_UUID`, and Slurm's
 * `SLURM_JOB_ID.SLURM_STEP_ID`. With no job id at all the port is 29500. A derived port can
 * still be taken by another program (29500..49499 overlaps Linux's ephemeral range); set
 * NBC_MASTER_PORT where that matters.
 *
 * Secret: `NBC_SECRET`, 64 hex digits (32 bytes), or null when unset; the caller decides what
 * to do without one. Every node of the job must be given the same secret.
 *
 * A variable set to the empty string counts as unset.
 */

import { NbcArgError, NbcLaunchError } from '../errors.js';
import { fnv1a32 } from '../fnv.js';

export type WireupSource = 'nbc' | 'ompi' | 'pmi' | 'slurm';

export interface Wireup {
  /** This node's index, 0..nodes-1. Node 0 listens at masterAddr:masterPort. */
  nodeRank: number;
  /** Number of node processes in the job. */
  nodes: number;
  masterAddr: string;
  masterPort: number;
  /** The 32-byte job secret from NBC_SECRET, or null when it is not set. */
  secret: Buffer | null;
  /** Which launcher's variables gave nodeRank and nodes. */
  source: WireupSource;
  /** The job id the port was derived from; '' when none was found. */
  jobId: string;
}

/** The port used when neither NBC_MASTER_PORT nor any job id is set. */
export const DEFAULT_MASTER_PORT = 29500;
/** Derived ports lie in DEFAULT_MASTER_PORT .. DEFAULT_MASTER_PORT + MASTER_PORT_SPAN - 1. */
export const MASTER_PORT_SPAN = 20000;

const SOURCES: ReadonlyArray<{ source: WireupSource; rank: string; size: string }> = [
  { source: 'nbc', rank: 'NBC_NODE_RANK', size: 'NBC_NODES' },
  { source: 'ompi', rank: 'OMPI_COMM_WORLD_RANK', size: 'OMPI_COMM_WORLD_SIZE' },
  { source: 'pmi', rank: 'PMI_RANK', size: 'PMI_SIZE' },
  { source: 'slurm', rank: 'SLURM_PROCID', size: 'SLURM_NTASKS' },
];

/** Job-id variables in priority order (Slurm's two-part id is handled after these). */
const JOB_ID_VARS = [
  'NBC_JOB_ID',
  'OMPI_MCA_ess_base_jobid',
  'OMPI_MCA_orte_ess_jobid',
  'PMIX_NAMESPACE',
  'PMI_JOBID',
  'I_MPI_HYDRA_UUID',
] as const;

function get(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function parseCount(name: string, text: string, min: number): number {
  const t = text.trim();
  const n = /^\d+$/.test(t) ? Number(t) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new NbcLaunchError(
      `Cannot wire up this node: ${name}=${text} is not a valid number; expected an integer >= ${min}`,
    );
  }
  return n;
}

/** Read this node's place in the job from the environment (see the module comment). */
export function detectWireup(env: NodeJS.ProcessEnv = process.env): Wireup {
  const found = SOURCES.find((s) => get(env, s.rank) !== undefined || get(env, s.size) !== undefined);
  if (found === undefined) {
    throw new NbcLaunchError(
      'Cannot wire up this node: no launcher variables found; expected NBC_NODE_RANK and NBC_NODES, ' +
        'or to be started by mpirun (OMPI_COMM_WORLD_*), a PMI launcher (PMI_RANK/PMI_SIZE) or srun (SLURM_PROCID/SLURM_NTASKS)',
    );
  }
  const rankText = get(env, found.rank);
  const sizeText = get(env, found.size);
  if (rankText === undefined || sizeText === undefined) {
    const [set, unset] = rankText === undefined ? [found.size, found.rank] : [found.rank, found.size];
    throw new NbcLaunchError(`Cannot wire up this node: ${set} is set but ${unset} is not; expected both`);
  }
  const nodeRank = parseCount(found.rank, rankText, 0);
  const nodes = parseCount(found.size, sizeText, 1);
  if (nodeRank >= nodes) {
    throw new NbcLaunchError(
      `Cannot wire up this node: ${found.rank}=${nodeRank} is not below ${found.size}=${nodes}; expected a rank in 0..${nodes - 1}`,
    );
  }

  const jobId = detectJobId(env);
  return {
    nodeRank,
    nodes,
    masterAddr: detectMasterAddr(env),
    masterPort: detectMasterPort(env, jobId),
    secret: parseSecret(get(env, 'NBC_SECRET')),
    source: found.source,
    jobId,
  };
}

function detectJobId(env: NodeJS.ProcessEnv): string {
  for (const name of JOB_ID_VARS) {
    const v = get(env, name);
    if (v !== undefined) return v;
  }
  const slurmJob = get(env, 'SLURM_JOB_ID') ?? get(env, 'SLURM_JOBID');
  if (slurmJob !== undefined) {
    const step = get(env, 'SLURM_STEP_ID') ?? get(env, 'SLURM_STEPID');
    return step === undefined ? slurmJob : `${slurmJob}.${step}`;
  }
  return '';
}

function detectMasterAddr(env: NodeJS.ProcessEnv): string {
  const explicit = get(env, 'NBC_MASTER_ADDR');
  if (explicit !== undefined) return explicit.trim();
  const nodelist = get(env, 'SLURM_STEP_NODELIST') ?? get(env, 'SLURM_JOB_NODELIST') ?? get(env, 'SLURM_NODELIST');
  if (nodelist !== undefined) {
    const first = firstHostOfNodelist(nodelist);
    if (first !== null) return first;
  }
  return '127.0.0.1';
}

function detectMasterPort(env: NodeJS.ProcessEnv, jobId: string): number {
  const text = get(env, 'NBC_MASTER_PORT');
  if (text !== undefined) {
    const port = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
    // 0 asks node 0 to pick a free port and report it to its launcher (nbc run does this).
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new NbcLaunchError(
        `Cannot wire up this node: NBC_MASTER_PORT=${text} is not a valid port; expected an integer in 0..65535 (0: node 0 picks one)`,
      );
    }
    return port;
  }
  return masterPortForJob(jobId);
}

/** The port every node of job `jobId` derives when NBC_MASTER_PORT is not set. */
export function masterPortForJob(jobId: string): number {
  if (jobId === '') return DEFAULT_MASTER_PORT;
  return DEFAULT_MASTER_PORT + (fnv1a32(jobId) % MASTER_PORT_SPAN);
}

export { fnv1a32 };

const HOST_RE = /^[A-Za-z0-9][A-Za-z0-9.-]*$/;
const RANGES_RE = /^\d+(-\d+)?(,\d+(-\d+)?)*$/;

/**
 * The first host of a Slurm hostlist such as `node07`, `a,b`, `node[01-04,07]` or
 * `rack[1-2]-n[03-04]` (each bracket group contributes its first number, padding kept), or
 * null when the text is not in that form.
 */
export function firstHostOfNodelist(nodelist: string): string | null {
  // The first top-level entry: cut at the first comma outside brackets.
  let depth = 0;
  let end = nodelist.length;
  for (let i = 0; i < nodelist.length; i++) {
    const ch = nodelist[i];
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      end = i;
      break;
    }
    if (depth < 0 || depth > 1) return null;
  }
  const entry = nodelist.slice(0, end).trim();
  let host = '';
  let i = 0;
  while (i < entry.length) {
    const open = entry.indexOf('[', i);
    if (open < 0) {
      host += entry.slice(i);
      break;
    }
    const close = entry.indexOf(']', open);
    if (close < 0) return null;
    const ranges = entry.slice(open + 1, close);
    if (!RANGES_RE.test(ranges)) return null;
    host += entry.slice(i, open) + (/^\d+/.exec(ranges) as RegExpExecArray)[0];
    i = close + 1;
  }
  return HOST_RE.test(host) ? host : null;
}

/** Decode NBC_SECRET: 64 hex digits to 32 bytes; undefined to null. */
export function parseSecret(text: string | undefined): Buffer | null {
  if (text === undefined || text === '') return null;
  if (!/^[0-9a-fA-F]{64}$/.test(text)) {
    // Never echo the value: it is (or was meant to be) a secret.
    const what = /^[0-9a-fA-F]*$/.test(text)
      ? `is ${text.length} hex digits long`
      : `has ${text.length} characters, some of them not hex digits`;
    throw new NbcArgError(
      `Cannot use NBC_SECRET: it ${what}; expected exactly 64 hex digits (32 bytes), e.g. from \`openssl rand -hex 32\``,
    );
  }
  return Buffer.from(text, 'hex');
}

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 2 ** 10,
  kb: 2 ** 10,
  kib: 2 ** 10,
  m: 2 ** 20,
  mb: 2 ** 20,
  mib: 2 ** 20,
  g: 2 ** 30,
  gb: 2 ** 30,
  gib: 2 ** 30,
  t: 2 ** 40,
  tb: 2 ** 40,
  tib: 2 ** 40,
};

/**
 * Parse a byte size: a whole number with an optional binary unit, case-insensitive:
 * `8`, `8B`, `4K`, `4KB`, `512KiB`, `16M`, `1G`, `1T`. All units are powers of 2 (K = 1024).
 */
export function parseSize(text: string): number {
  const m = /^\s*(\d+)\s*([A-Za-z]*)\s*$/.exec(text);
  const unit = m ? UNITS[(m[2] as string).toLowerCase()] : undefined;
  const value = m && unit !== undefined ? Number(m[1]) * unit : NaN;
  if (!Number.isSafeInteger(value)) {
    throw new NbcArgError(
      `Cannot parse size ${JSON.stringify(text)}: expected a whole number of bytes with an optional unit ` +
        'B, K, M, G, T (or KB/KiB, MB/MiB, ...; all powers of 1024), e.g. 8, 4K, 16M, 512KiB',
    );
  }
  return value;
}

/**
 * Parse a size range `A:B` into A, A*step, A*step^2, ... up to and including B where reached
 * (`8:64` gives [8, 16, 32, 64]; with step 4, [8, 32]). A single size `A` gives [A].
 */
export function parseSizeRange(text: string, step = 2): number[] {
  if (!Number.isSafeInteger(step) || step < 2) {
    throw new NbcArgError(`Cannot parse size range ${JSON.stringify(text)}: step ${String(step)} is invalid; expected an integer >= 2`);
  }
  const parts = text.split(':');
  if (parts.length === 1) return [parseSize(parts[0] as string)];
  if (parts.length !== 2) {
    throw new NbcArgError(`Cannot parse size range ${JSON.stringify(text)}: expected FROM:TO, e.g. 8:16M`);
  }
  const from = parseSize(parts[0] as string);
  const to = parseSize(parts[1] as string);
  if (from < 1 || from > to) {
    throw new NbcArgError(
      `Cannot parse size range ${JSON.stringify(text)}: from ${from} to ${to} is empty; expected 1 <= FROM <= TO`,
    );
  }
  const out: number[] = [];
  for (let s = from; s <= to; s *= step) out.push(s);
  return out;
}
