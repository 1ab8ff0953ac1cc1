/**
 * The core's configuration from the process environment, read once per process: the one
 * place the environment reaches the collectives (docs/runtime.md, "Configuration"),
 * including the cost-model parameters `nbc calibrate` stored (NBC_PARAMS or the cache folder).
 */
import { DEFAULT_CONFIG, type CoreConfig } from '../config.js';
import { NbcArgError } from '../errors.js';
import type { UcxErrMode } from '../p2p/ucx.js';
import { loadCostParams, paramsFilePath } from './params-file.js';

const ALGORITHM_VAR = /^NBC_([A-Z_]+)_ALGORITHM$/;

/** NBC_ALL_GATHER_V -> allGatherV: the collective a NBC_<COLLECTIVE>_ALGORITHM variable names. */
function collectiveOf(words: string): string {
  return words.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * @param oversubscribed whether this host runs more of the job's ranks than it has cores (the
 *   node process knows; a singleton rank does not oversubscribe).
 * @param offloadSpinUs the spin of a wait for an offloaded collective when NBC_OFFLOAD_SPIN_US
 *   is unset (the node raises it where its engine has a core of its own).
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env, oversubscribed = false,
  offloadSpinUs = DEFAULT_CONFIG.offloadSpinUs): CoreConfig {
  const algorithms: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const m = ALGORITHM_VAR.exec(name);
    if (m !== null && value !== undefined && value !== '') algorithms[collectiveOf(m[1]!)] = value;
  }
  const spin = env.NBC_OFFLOAD_SPIN_US;
  if (spin !== undefined && spin !== '') {
    offloadSpinUs = Number(spin);
    if (!Number.isFinite(offloadSpinUs) || offloadSpinUs < 0) {
      throw new NbcArgError(`NBC_OFFLOAD_SPIN_US=${spin}: expected a non-negative number of microseconds`);
    }
  }
  const executor = env.NBC_EXECUTOR === undefined || env.NBC_EXECUTOR === '' ? DEFAULT_CONFIG.executor : env.NBC_EXECUTOR;
  const check = env.NBC_CHECK_CALLS;
  if (check !== undefined && check !== '' && check !== '0' && check !== '1') {
    throw new NbcArgError(`NBC_CHECK_CALLS=${check}: expected 1 (every collective call checks that its ranks make the same call) or 0`);
  }
  const repro = env.NBC_REPRODUCIBLE;
  if (repro !== undefined && repro !== '' && repro !== '0' && repro !== '1') {
    throw new NbcArgError(`NBC_REPRODUCIBLE=${repro}: expected 1 (sums of Float64 or Float32 by the reductions give the same bits on any rank count, algorithm and executor) or 0`);
  }
  return {
    executor,
    algorithms: Object.freeze(algorithms),
    schedDump: env.NBC_SCHED_DUMP === '1' ? (text) => process.stderr.write(`${text}\n`) : null,
    offloadSpinUs,
    cost: loadCostParams(paramsFilePath(env)),
    oversubscribed,
    checkCalls: check === '1',
    reproducible: repro === '1',
    engine: true,
  };
}

/** The UCX error mode the environment asks for (NBC_UCX_ERR_MODE); NbcArgError on a bad value. */
export function ucxErrModeFromEnv(env: NodeJS.ProcessEnv = process.env): UcxErrMode {
  const v = env.NBC_UCX_ERR_MODE;
  if (v === undefined || v === '' || v === 'peer') return 'peer';
  if (v === 'none') return 'none';
  throw new NbcArgError(`NBC_UCX_ERR_MODE=${v}: expected peer (the default: operations on a failed peer raise NBC_ERR_PEER_FAILED) ` +
    `or none (UCX without peer error handling, as MPI runs it: faster streams of large messages, but a broken link aborts the process or goes unnoticed)`);
}
