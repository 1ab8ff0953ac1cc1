/**
 * The chaos job (test/chaos/harness.ts): a seeded random mix of blocking and non-blocking
 * collectives on random communicators, every result checked against values each rank computes
 * by itself, so a wrong result can never pass silently.
 *
 *   args: <seed> <ops> <mode> [throwAt] [throwRank] [token] [how]
 *     mode       host | offload | hier | agg: the executor (hier: host with the hierarchical
 *                algorithm where the collective has one)
 *     throwAt    op index at which rank throwRank throws (the 'throw' fault), or, with how =
 *                return, returns from its job (the 'return' fault); -1 for none
 *     token      ignored (it names the job's processes for the harness)
 *
 * Output the harness reads (rank 0 only, one line each): `chaos-op K` once op K completed on
 * rank 0, `chaos-done N` at the end. A wrong result prints `CHAOS-WRONG ...` and throws.
 * These lines are written straight to file descriptor 1 (under `nbc run`, the launcher's own
 * stdout), not through the worker's process.stdout, which the node relays when its event loop
 * gets to it: the harness must see progress when it happens to land a fault mid-run.
 */
import { writeSync } from 'node:fs';
import { init, type Communicator, type Request } from 'nbcoll';
import { mulberry32 } from './common.ts';

type Mode = 'host' | 'offload' | 'hier' | 'agg';
type Kind = 'allreduce' | 'reduce' | 'bcast' | 'allgather' | 'alltoall' | 'barrier' | 'scan' | 'reduceScatterBlock';
const KINDS: readonly Kind[] = ['allreduce', 'reduce', 'bcast', 'allgather', 'alltoall', 'barrier', 'scan', 'reduceScatterBlock'];
/** The collectives the fabric reduces; the others run host algorithms under agg. */
const HIER_KINDS = new Set<Kind>(['allreduce', 'bcast', 'alltoall', 'barrier']);
type OpName = 'sum' | 'max' | 'min' | 'bxor';
const OPS: readonly OpName[] = ['sum', 'max', 'min', 'bxor'];

const world = await init();
const [seedArg, opsArg, modeArg, throwAtArg, throwRankArg, , howArg] = process.argv.slice(2);
const seed = Number(seedArg);
const nOps = Number(opsArg ?? 100);
const mode = (modeArg ?? 'host') as Mode;
const throwAt = Number(throwAtArg ?? -1);
const throwRank = Number(throwRankArg ?? 0);
const returns = howArg === 'return';

const say = (line: string): void => { writeSync(1, `${line}\n`); };

/** The same stream on every rank: every rank draws the same plan. */
const plan = mulberry32(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(plan() * xs.length)]!;

// Communicators: world, a dup, a split in two, a split by rank parity reversed (new rank order).
const comms: Communicator[] = [world, world.dup()];
const halves = world.split(world.rank % 2, world.size - world.rank);
if (halves !== null) comms.push(halves);
const split3 = world.size >= 3 ? world.split(world.rank % 3, world.rank) : null;
if (split3 !== null) comms.push(split3);

/** Value of element i contributed by comm rank r for op k: small integers, exact in any order. */
const val = (k: number, r: number, i: number): number => ((k * 131 + r * 17 + i * 7) % 23) - 11;

/** Sets a[i] = f(i) for every i and returns a (for either array type of a call). */
function fill<A extends Float64Array | Int32Array>(a: A, f: (i: number) => number): A {
  for (let i = 0; i < a.length; i++) a[i] = f(i);
  return a;
}

function fold(op: OpName, a: number, b: number): number {
  switch (op) {
    case 'sum': return a + b;
    case 'max': return Math.max(a, b);
    case 'min': return Math.min(a, b);
    case 'bxor': return a ^ b;
  }
}

/** The reduction over comm ranks 0..upto-1 of element i. */
function reduced(op: OpName, k: number, upto: number, i: number): number {
  let acc = val(k, 0, i);
  for (let r = 1; r < upto; r++) acc = fold(op, acc, val(k, r, i));
  return acc;
}

interface Pending {
  k: number;
  check: () => void;
  req: Request | null;
}

function wrong(k: number, what: string, got: number, want: number): never {
  const line = `CHAOS-WRONG op ${k} (${what}) on world rank ${world.rank}: got ${got}, expected ${want}`;
  say(line);
  throw new Error(line);
}

/** Starts op k on `c` (blocking when `blocking`); returns its check. */
function start(k: number, c: Communicator, kind: Kind, blocking: boolean): Pending {
  const n = 1 + Math.floor(plan() * 64) * (plan() < 0.2 ? 256 : 1); // mostly small, some up to 64K items
  const op = kind === 'alltoall' || kind === 'allgather' || kind === 'bcast' || kind === 'barrier' ? 'sum' : pick(OPS);
  const float = op !== 'bxor' && plan() < 0.5;
  const root = Math.floor(plan() * c.size);
  const Arr = float ? Float64Array : Int32Array;
  const ex = mode === 'hier' ? (HIER_KINDS.has(kind) ? { algorithm: 'hier' } : {}) : { executor: mode === 'agg' ? 'agg' as const : mode };
  const me = c.rank;
  const p = c.size;
  const mine = fill(new Arr(n), (i) => val(k, me, i));
  let req: Request | null = null;
  let check: () => void;
  const go = (blockingCall: () => void, nb: () => Request): void => {
    if (blocking) blockingCall();
    else req = nb();
  };
  switch (kind) {
    case 'allreduce': {
      const out = new Arr(n);
      go(() => c.allreduce(mine, out, op, ex), () => c.iallreduce(mine, out, op, ex));
      check = () => { for (let i = 0; i < n; i++) if (out[i] !== reduced(op, k, p, i)) wrong(k, `allreduce ${op} n=${n}`, out[i]!, reduced(op, k, p, i)); };
      break;
    }
    case 'reduce': {
      const out = me === root ? new Arr(n) : null;
      go(() => c.reduce(mine, out, op, root, ex), () => c.ireduce(mine, out, op, root, ex));
      check = () => { if (out !== null) for (let i = 0; i < n; i++) if (out[i] !== reduced(op, k, p, i)) wrong(k, `reduce ${op} root ${root}`, out[i]!, reduced(op, k, p, i)); };
      break;
    }
    case 'bcast': {
      const buf = me === root ? Arr.from(mine) : new Arr(n).fill(-99);
      go(() => c.bcast(buf, root, ex), () => c.ibcast(buf, root, ex));
      check = () => { for (let i = 0; i < n; i++) if (buf[i] !== val(k, root, i)) wrong(k, `bcast root ${root}`, buf[i]!, val(k, root, i)); };
      break;
    }
    case 'allgather': {
      const out = new Arr(n * p);
      go(() => c.allgather(mine, out, ex), () => c.iallgather(mine, out, ex));
      check = () => { for (let r = 0; r < p; r++) for (let i = 0; i < n; i++) if (out[r * n + i] !== val(k, r, i)) wrong(k, 'allgather', out[r * n + i]!, val(k, r, i)); };
      break;
    }
    case 'alltoall': {
      // block j of rank r holds val(k, r, j * n + i)
      const send = fill(new Arr(n * p), (x) => val(k, me, x));
      const out = new Arr(n * p);
      go(() => c.alltoall(send, out, ex), () => c.ialltoall(send, out, ex));
      check = () => { for (let r = 0; r < p; r++) for (let i = 0; i < n; i++) if (out[r * n + i] !== val(k, r, me * n + i)) wrong(k, 'alltoall', out[r * n + i]!, val(k, r, me * n + i)); };
      break;
    }
    case 'barrier':
      go(() => c.barrier(ex), () => c.ibarrier(ex));
      check = () => {};
      break;
    case 'scan': {
      const out = new Arr(n);
      go(() => c.scan(mine, out, op, ex), () => c.iscan(mine, out, op, ex));
      check = () => { for (let i = 0; i < n; i++) if (out[i] !== reduced(op, k, me + 1, i)) wrong(k, `scan ${op}`, out[i]!, reduced(op, k, me + 1, i)); };
      break;
    }
    case 'reduceScatterBlock': {
      const send = fill(new Arr(n * p), (x) => val(k, me, x));
      const out = new Arr(n);
      go(() => c.reduceScatterBlock(send, out, op, ex), () => c.ireduceScatterBlock(send, out, op, ex));
      check = () => { for (let i = 0; i < n; i++) if (out[i] !== reduced(op, k, p, me * n + i)) wrong(k, `reduceScatterBlock ${op}`, out[i]!, reduced(op, k, p, me * n + i)); };
      break;
    }
  }
  return { k, check: check!, req };
}

let done = 0;
const finish = (x: Pending): void => {
  x.req?.wait();
  x.check();
  if (world.rank === 0) say(`chaos-op ${x.k}`);
  done++;
};

let k = 0;
/** This rank returns from its job here (the 'return' fault): it leaves the loop and ends. */
let quit = false;
while (k < nOps && !quit) {
  // A batch: one blocking call, or up to 4 non-blocking ones on distinct communicators,
  // completed in a shuffled order (the same on every rank: collectives on one communicator
  // must be started in the same order, not completed).
  const batch = plan() < 0.4 ? 1 : 1 + Math.floor(plan() * Math.min(4, comms.length));
  const used = [...comms].sort(() => plan() - 0.5).slice(0, batch);
  const pending: Pending[] = [];
  for (const c of used) {
    if (k >= nOps) break;
    if (k === throwAt && world.rank === throwRank) {
      if (!returns) throw new Error(`chaos: rank ${world.rank} throws at op ${k} (the injected fault)`);
      quit = true;
      break;
    }
    pending.push(start(k, c, pick(KINDS), batch === 1 && plan() < 0.7));
    k++;
  }
  const order = pending.map((_, i) => i).sort(() => plan() - 0.5);
  for (const i of order) finish(pending[i]!);
}
if (world.rank === 0) say(`chaos-done ${done}`);
export default done;
