/**
 * The soak job (`npm run soak`): every rank cycles through every collective (coll-cases.ts) on
 * every executor variant, in blocking, non-blocking and persistent form, on sizes from eager
 * to rendezvous, until rank 0 says the time is up; every result is checked against its
 * reference. Each cycle also exchanges point-to-point messages around a ring and creates and
 * frees communicators (dup and split), so state that outlives a call (plans, contexts,
 * unexpected messages, arena slices) shows up as memory that grows. The launcher side
 * (cli/soak.ts) samples the node processes' resident memory meanwhile.
 */
import { writeSync } from 'node:fs';
import type { CollOptions, Communicator } from '../coll/communicator.js';
import { NbcError } from '../errors.js';
import { COLL_CASES, type CallMode } from './coll-cases.js';

export interface SoakJobArgs {
  seconds: number;
  /** Elements per rank, cycled through. */
  sizes: number[];
  /** Executor variants by name: 'host', 'offload', 'hier' (host, algorithm hier), 'agg'. */
  variants: string[];
  /** Print a progress line from rank 0 this often (s); 0: never. */
  reportSeconds: number;
  /** Every rank rests this long after each cycle (pacing on a shared machine), ms. */
  restMs?: number;
  /** Rank 0 names every call before it starts (to find the one that hangs). */
  trace?: boolean;
}

export interface SoakJobResult {
  cycles: number;
  calls: number;
  /** Calls completed and checked, by `collective/variant`. */
  perCase: Record<string, number>;
  /** `collective/variant` pairs the library refuses (checked once, then skipped), with the code. */
  refused: Record<string, string>;
  p2pMessages: number;
  commsCreated: number;
}

/**
 * A line on the node's stdout now: console.log in a rank thread waits for the thread's event
 * loop, which a job that never awaits (this one) does not turn until it ends.
 */
const say = (line: string): void => {
  writeSync(1, `${line}\n`);
};

const MODES: readonly CallMode[] = ['blocking', 'nonblocking', 'persistent'];

export function variantOptions(v: string): CollOptions | undefined {
  switch (v) {
    case 'host': return undefined;
    case 'offload': return { executor: 'offload' };
    case 'hier': return { algorithm: 'hier' };
    case 'agg': return { executor: 'agg' };
    default: throw new Error(`unknown soak variant '${v}'; expected host, offload, hier or agg`);
  }
}

/** Codes that mean "this collective does not run on this variant", raised before any message. */
const REFUSALS = new Set(['NBC_ERR_ARG', 'NBC_ERR_OP', 'NBC_ERR_UNSUPPORTED']);

function ringExchange(c: Communicator, n: number, salt: number): number {
  const right = (c.rank + 1) % c.size;
  const left = (c.rank - 1 + c.size) % c.size;
  const send = new Int32Array(n);
  for (let i = 0; i < n; i++) send[i] = c.rank * 1000 + i + salt;
  const recv = new Int32Array(n);
  const r = c.irecv(recv, left, salt & 0x7fff);
  const s = c.isend(send, right, salt & 0x7fff);
  r.wait();
  s.wait();
  for (let i = 0; i < n; i++) {
    if (recv[i] !== left * 1000 + i + salt) throw new Error(`ring exchange ${salt}: element ${i} is ${recv[i]}, expected ${left * 1000 + i + salt}`);
  }
  return 2;
}

export default function main(world: Communicator, args: string[]): SoakJobResult {
  const a = JSON.parse(args[0] ?? '{}') as SoakJobArgs;
  const started = performance.now();
  const res: SoakJobResult = { cycles: 0, calls: 0, perCase: {}, refused: {}, p2pMessages: 0, commsCreated: 0 };
  const flag = new Int32Array(1);
  let lastReport = started;
  const rest = new Int32Array(new SharedArrayBuffer(4));
  for (let k = 0; ; k++) {
    // Rank 0's clock decides, so every rank runs the same number of cycles.
    if (world.rank === 0) flag[0] = (performance.now() - started) / 1000 < a.seconds ? 1 : 0;
    world.bcast(flag, 0);
    if (flag[0] === 0) break;
    const n = a.sizes[k % a.sizes.length]!;
    const mode = MODES[k % MODES.length]!;
    // A fresh communicator every cycle, freed at its end: world, dup and split take turns.
    const kind = k % 3;
    const comm = kind === 0 ? world : kind === 1 ? world.dup() : world.split(world.rank % 2, world.size - world.rank)!;
    if (kind !== 0) res.commsCreated++;
    for (const cc of COLL_CASES) {
      for (const v of a.variants) {
        const key = `${cc.name}/${v}`;
        if (key in res.refused) continue;
        if (a.trace === true && world.rank === 0) say(`soak: cycle ${k} ${key} ${mode} n=${n} on ${['world', 'dup', 'split'][kind]}`);
        let posted;
        try {
          posted = cc.start(comm, n, k, mode, variantOptions(v));
        } catch (err) {
          if (err instanceof NbcError && REFUSALS.has(err.code)) {
            res.refused[key] = err.code;
            continue;
          }
          throw err;
        }
        posted.req?.wait();
        posted.check();
        posted.free();
        res.perCase[key] = (res.perCase[key] ?? 0) + 1;
        res.calls++;
      }
    }
    res.p2pMessages += ringExchange(comm, n, k);
    if (kind !== 0) comm.free();
    res.cycles++;
    if ((a.restMs ?? 0) > 0) Atomics.wait(rest, 0, 0, a.restMs); // pacing only: nothing wakes it
    if (world.rank === 0 && a.reportSeconds > 0 && performance.now() - lastReport > a.reportSeconds * 1000) {
      lastReport = performance.now();
      say(`soak: ${Math.round((lastReport - started) / 1000)} s, ${res.cycles} cycles, ${res.calls} collective calls checked`);
    }
  }
  return res;
}
