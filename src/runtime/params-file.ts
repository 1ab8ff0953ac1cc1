/**
 * Where the cost-model parameters (`coll/cost-model.ts`, written by `nbc calibrate`) live, and
 * reading and writing them.
 *
 * Location: `NBC_PARAMS=FILE` when set, else `$XDG_CACHE_HOME/nbcoll/params.json` (when
 * XDG_CACHE_HOME is an absolute path, as the XDG spec requires), else
 * `~/.cache/nbcoll/params.json`. A variable set to the empty string counts as unset.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { DEFAULT_PARAMS, parseParams, type CostParams, type ParamsFile } from '../coll/cost-model.js';
import { NbcArgError } from '../errors.js';

export function paramsFilePath(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const explicit = env.NBC_PARAMS;
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' && isAbsolute(xdg) ? xdg : join(home, '.cache');
  return join(cache, 'nbcoll', 'params.json');
}

/** The parameters file at `file`, validated; null when there is none. A bad file throws NbcArgError. */
export function readParamsFile(file: string = paramsFilePath()): ParamsFile | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new NbcArgError(`Cannot read the cost-model parameters from ${file}: ${(err as Error).message}`, { cause: err });
  }
  return parseParams(text, file);
}

/** The measured parameters when `nbc calibrate` has written them, else DEFAULT_PARAMS. */
export function loadCostParams(file: string = paramsFilePath()): CostParams {
  return readParamsFile(file)?.paths ?? DEFAULT_PARAMS;
}

/**
 * Writes `params` (and any extra fields, such as the samples it was fitted from) as JSON,
 * creating the folder. Written to a temporary file first and renamed, so a reader never sees
 * half a file.
 */
export function writeParamsFile(file: string, params: ParamsFile & Record<string, unknown>): void {
  parseParams(params, 'the parameters to write'); // never write a file that could not be read back
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(params, null, 2) + '\n');
  renameSync(tmp, file);
}
