/**
 * `nbc info`: what this installation can use on this machine, and why not where it cannot:
 * transports between nodes, ways of waiting, executors, and the cost-model parameters.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import { fabricFromEnv } from '../agg/fabric.js';
import { EXECUTORS } from '../sched/executors.js';
import { NATIVE_COPY_MIN } from '../shm/copy.js';
import { isUcxAddon } from '../p2p/ucx.js';
import { nativeAddon, type NativeAddon } from '../runtime/native.js';
import { paramsFilePath, readParamsFile } from '../runtime/params-file.js';
import { DEFAULT_YIELD_US, ucxUnavailable } from '../runtime/node-main.js';
import { ucxErrModeFromEnv } from '../runtime/config.js';

/** The installed UCX version and a space, from `ucx_info -v` where present, else ''. */
function ucxVersion(): string {
  try {
    const out = execFileSync('ucx_info', ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
    const m = /# Version (\S+)/.exec(out);
    return m ? `${m[1]} ` : '';
  } catch {
    return '';
  }
}

/** What a loaded addon provides, in `nbc info`'s words: 'sched_yield, memmove, shared maps, UCX'. */
export function addonFeatures(addon: NativeAddon): string {
  const has = ['sched_yield'];
  if (addon.copy !== undefined) has.push('memmove');
  if (addon.mapShared !== undefined) has.push('shared maps');
  has.push(isUcxAddon(addon) ? 'UCX' : 'no UCX');
  return has.join(', ');
}

/** The `native addon` line: where the loaded addon is and what it has, or why there is none. */
function addonLine(native: { addon: NativeAddon | null; why: string }, ucxHeaders: boolean): InfoLine {
  if (native.addon !== null) {
    const noUcx = isUcxAddon(native.addon) ? '' : ucxHeaders ? ' (npx nbc build-native rebuilds it with UCX)' : ' (libucx-dev is not installed)';
    return { what: 'native addon', available: true, detail: `${native.why}: ${addonFeatures(native.addon)}${noUcx}` };
  }
  return { what: 'native addon', available: false, detail: native.why };
}

export interface InfoLine {
  what: string;
  available: boolean;
  detail: string;
}

/** The UCX error mode NBC_UCX_ERR_MODE asks for, in words (or what is wrong with it). */
function errModeText(): string {
  try {
    return ucxErrModeFromEnv() === 'peer'
      ? 'NBC_UCX_ERR_MODE=peer: a failed peer fails the operations on it'
      : 'NBC_UCX_ERR_MODE=none: no peer error handling, faster streams of large messages';
  } catch (err) {
    return (err as Error).message;
  }
}

export function collectInfo(): InfoLine[] {
  const native = nativeAddon();
  const noUcx = ucxUnavailable();
  const ucxHeaders = existsSync('/usr/include/ucp/api/ucp.h');
  const params = paramsFilePath();
  let cost = `defaults (no ${params}; nbc calibrate writes it)`;
  try {
    const f = readParamsFile(params);
    if (f !== null) cost = `${params}, measured ${f.measuredAt}`;
  } catch (err) {
    cost = `unreadable: ${(err as Error).message}`;
  }
  // The fabric `agg` calls would join: NBC_AGG_MANAGER (shared), else each `nbc run --agg` starts its own.
  let fabric: string;
  let joined = false;
  try {
    const f = fabricFromEnv(process.env);
    joined = f !== null;
    fabric = f === null
      ? 'none configured: nbc run --agg radix=R,levels=L starts one per job, NBC_AGG_MANAGER=host:port joins a shared one (nbc agg start); without one agg calls run host algorithms'
      : `NBC_AGG_MANAGER=${f.manager.host}:${f.manager.port} (agg calls join it)`;
  } catch (err) {
    fabric = (err as Error).message;
  }
  return [
    addonLine(native, ucxHeaders),
    { what: 'transport tcp', available: true, detail: 'engine-to-engine TCP links, authenticated (pure JS)' },
    {
      what: 'transport ucx', available: noUcx === null,
      detail: noUcx === null
        ? `rank to rank over UCX ${ucxVersion()}between nodes (UCX_TLS=${process.env.UCX_TLS ?? 'tcp,self'}, ${errModeText()}); chosen by --transport auto (the default) when every node has it`
        : `${noUcx}${native.addon !== null && !ucxHeaders ? ' (libucx-dev is not installed)' : ''}`,
    },
    { what: 'wait: UCX events', available: noUcx === null, detail: noUcx === null ? 'a parked rank sleeps in poll(2) on its UCX worker and its eventfd doorbell' : 'needs the UCX transport' },
    { what: 'wait: spin, then park', available: true, detail: 'Atomics.wait on the rank doorbell (always)' },
    {
      what: 'wait: sched_yield', available: native.addon !== null,
      detail: native.addon !== null
        ? `native addon ${native.why}; used when a host runs more ranks than its ${availableParallelism()} cores (NBC_YIELD_US, default ${DEFAULT_YIELD_US} us)`
        : `native addon ${native.why}`,
    },
    {
      what: 'flag board', available: process.env.NBC_FLAT !== '0',
      detail: process.env.NBC_FLAT === '0'
        ? 'off (NBC_FLAT=0): barriers and small allreduces go over the rings'
        : process.env.NBC_FLAT === '1'
          ? 'on for every one-node job (NBC_FLAT=1): blocking barriers and allreduces up to 1 KiB of communicators of every rank through shared flags'
          : `blocking barriers and allreduces up to 1 KiB of communicators of every rank through shared flags on a one-node job of more ranks than its ${availableParallelism()} cores (NBC_FLAT, default auto)`,
    },
    {
      what: 'copy: memmove', available: native.addon?.copy !== undefined,
      detail: native.addon === null
        ? `native addon ${native.why}; payloads to and from shared memory are copied by TypedArray.set`
        : native.addon.copy === undefined
          ? 'the native addon predates it (npx nbc build-native rebuilds it); payloads to and from shared memory are copied by TypedArray.set'
          : `payloads of ${NATIVE_COPY_MIN} B and more to and from shared memory (the node's arena and rings)`,
    },
    ...Object.entries(EXECUTORS).map(([name, row]) => ({ what: `executor ${name}`, available: true, detail: row.description })),
    { what: 'aggregation fabric', available: joined, detail: fabric },
    { what: 'cost model', available: true, detail: cost },
  ];
}

export function registerInfo(program: Command): void {
  program.command('info')
    .description('what this installation can use here (transports, waits, executors, cost model), and why not')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => {
      const lines = collectInfo();
      if (o.json) {
        process.stdout.write(`${JSON.stringify(lines, null, 2)}\n`);
        return;
      }
      for (const l of lines) process.stdout.write(`${l.available ? 'yes' : 'no '}  ${l.what.padEnd(24)} ${l.detail}\n`);
    });
}
