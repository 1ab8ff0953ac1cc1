/**
 * Where the simulator's parameters come from: `--params FILE|preset`, else the last
 * calibration (`nbc calibrate --loggp` writes `NBC_SIM_PARAMS`, else `loggp.json` beside the
 * cost model's params.json in the cache folder), else DEFAULT_SIM_PARAMS. Always says which.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { NbcArgError } from '../errors.js';
import { paramsFilePath } from '../runtime/params-file.js';
import { DEFAULT_SIM_PARAMS, parseSimParamsFile, PRESETS, type SimParams, type SimParamsFile } from './params.js';

export function simParamsFilePath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.NBC_SIM_PARAMS;
  if (explicit !== undefined && explicit !== '') return explicit;
  return join(dirname(paramsFilePath(env)), 'loggp.json');
}

/** The parameters named by `spec` (a preset or a file), else the calibrated file, else the defaults; `from` says which. */
export function loadSimParams(spec?: string, env: NodeJS.ProcessEnv = process.env): { params: SimParams; from: string } {
  if (spec !== undefined) {
    const preset = Object.hasOwn(PRESETS, spec) ? PRESETS[spec] : undefined;
    if (preset !== undefined) return { params: preset, from: `preset ${spec}` };
    let text: string;
    try {
      text = readFileSync(spec, 'utf8');
    } catch (err) {
      throw new NbcArgError(`Cannot read the simulator parameters '${spec}': ${(err as Error).message}; expected a file or one of the presets ${Object.keys(PRESETS).join(', ')}`, { cause: err });
    }
    return { params: parseSimParamsFile(text, spec).params, from: `file ${spec}` };
  }
  const file = simParamsFilePath(env);
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new NbcArgError(`Cannot read the simulator parameters from ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (text === null) return { params: DEFAULT_SIM_PARAMS, from: `defaults (no calibration at ${file}; run nbc calibrate --loggp)` };
  const f = parseSimParamsFile(text, file);
  return { params: f.params, from: `calibration of ${f.host} at ${f.measuredAt} (${file})` };
}

/** Writes a parameters file (validated first), through a temporary file and a rename. */
export function writeSimParamsFile(file: string, content: SimParamsFile): void {
  parseSimParamsFile(content, 'the parameters to write');
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(content, null, 2) + '\n');
  renameSync(tmp, file);
}
