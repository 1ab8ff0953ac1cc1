/**
 * Which JavaScript runtime runs a job's node processes (`nbc run --runtime`): Node, Bun or
 * Deno. The node processes and their rank threads are the same code on each: Bun and Deno run
 * `node:child_process`, `node:worker_threads` with SharedArrayBuffer, Atomics and the N-API
 * addon. What differs is how a runtime is started (`runtimeCommand`) and what it lacks
 * (`ucxUnsupported`, and the V8 flags the launcher gives Node only: launcher.ts).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NbcArgError, NbcLaunchError } from '../errors.js';

export type JsRuntime = 'node' | 'bun' | 'deno';
export const JS_RUNTIMES: readonly JsRuntime[] = ['node', 'bun', 'deno'];

export function parseJsRuntime(value: string, what = '--runtime'): JsRuntime {
  if ((JS_RUNTIMES as readonly string[]).includes(value)) return value as JsRuntime;
  throw new NbcArgError(`${what} '${value}': expected one of ${JS_RUNTIMES.join(', ')}`);
}

/** The runtime this thread runs on. */
export function currentJsRuntime(): JsRuntime {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return 'bun';
  if (g.Deno !== undefined) return 'deno';
  return 'node';
}

/** How to start a script on a runtime: `command ...args script ...`. */
export interface RuntimeCommand {
  runtime: JsRuntime;
  command: string;
  /** What goes before the script. */
  args: string[];
}

/**
 * Deno runs a script through `deno run`, with every permission: a node binds and dials TCP,
 * reads the environment, maps the host board under /dev/shm and loads the addon (FFI).
 */
const SCRIPT_ARGS: Readonly<Record<JsRuntime, readonly string[]>> = { node: [], bun: [], deno: ['run', '-A'] };

/** The package's root (two levels above dist/runtime). */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Every node_modules/.bin from `dir` up to the root, nearest first. */
function binDirsUp(dir: string): string[] {
  const dirs: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    dirs.push(join(d, 'node_modules', '.bin'));
    if (dirname(d) === d) return dirs;
  }
}

/**
 * The executable of `runtime`: `NBC_NODE`, `NBC_BUN` or `NBC_DENO` where set; else this
 * process's own when it runs on that runtime; else the first on PATH; else the first in a
 * node_modules/.bin above the working directory or above this package (the npm packages `bun`
 * and `deno` ship their binaries there). A runtime that cannot be found fails before anything
 * starts.
 */
export function runtimeCommand(runtime: JsRuntime, env: NodeJS.ProcessEnv = process.env): RuntimeCommand {
  const args = [...SCRIPT_ARGS[runtime]];
  const variable = `NBC_${runtime.toUpperCase()}`;
  const named = env[variable];
  if (named !== undefined && named !== '') {
    if (!executable(named)) throw new NbcLaunchError(`Cannot run the nodes on ${runtime}: ${variable}=${named} is not an executable file`);
    return { runtime, command: named, args };
  }
  if (currentJsRuntime() === runtime) return { runtime, command: process.execPath, args };
  const path = (env.PATH ?? '').split(delimiter).filter((d) => d !== '');
  const dirs = [...path, ...binDirsUp(process.cwd()), ...binDirsUp(PACKAGE_ROOT)];
  const found = dirs.map((d) => join(d, runtime)).find(executable);
  if (found === undefined) {
    throw new NbcLaunchError(`Cannot run the nodes on ${runtime}: no '${runtime}' executable on PATH or in a node_modules/.bin ` +
      `above ${process.cwd()}; expected ${variable}=<path to ${runtime}>, or npm install ${runtime}`);
  }
  return { runtime, command: found, args };
}

/**
 * Why this runtime cannot run the UCX transport, or null where it can. The addon waits for
 * UCX's event fd with libuv's uv_poll (native/nbc_ucx.c watchFd, the asynchronous waits): Bun
 * aborts at uv_poll_init (oven-sh/bun#18546), and under Deno 2.9 a node whose ranks waited
 * that way aborts with a double free when it ends (the handle is closed at thread teardown).
 */
export function ucxUnsupported(runtime: JsRuntime = currentJsRuntime()): string | null {
  if (runtime === 'node') return null;
  const name = runtime === 'bun' ? 'Bun' : 'Deno';
  return `it runs on ${name}, and the UCX transport needs Node (the addon waits on libuv's uv_poll, which ${name} ${runtime === 'bun' ? 'lacks' : 'mishandles'})`;
}
