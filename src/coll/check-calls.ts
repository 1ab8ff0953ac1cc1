/**
 * Checking that every rank makes the same collective call (NBC_CHECK_CALLS=1), as MPI
 * correctness checkers do (Intel MPI's -check_mpi, MUST): a debug aid, off by default.
 *
 * Each call's signature (kind, root, op, element type, bytes per rank, executor, algorithm) is
 * exchanged among the members before the call starts, and a call whose members disagree fails
 * on every one of them with NBC_ERR_ARG naming the first rank that differs from rank 0 and
 * how, instead of hanging or completing with wrong data. Counts of the v-collectives differ
 * between ranks by design and are not compared.
 */
import { NbcArgError } from '../errors.js';
import { fnv1a32 } from '../fnv.js';
import { dtypeName, type DType } from '../ops/dtype.js';
import { USER_OP_ID_BASE } from '../ops/op.js';
import { opById } from '../ops/regions.js';
import { EXECUTORS } from '../sched/executors.js';
import type { CollName } from './select.js';
import type { CollShape } from './shape.js';

/** Every collective kind, in a fixed order: the signature names one by its index. */
const KINDS: readonly CollName[] = [
  'barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'gatherv', 'scatter', 'scatterv', 'allgather', 'allgatherv',
  'alltoall', 'alltoallv', 'reduceScatterBlock', 'reduceScatter', 'scan', 'exscan', 'neighborAllgather',
  'neighborAlltoall', 'neighborAlltoallv',
];

/** Collectives whose bytes per rank differ between ranks by design (their counts are per rank). */
const PER_RANK_BYTES: ReadonlySet<CollName> = new Set(['gatherv', 'scatterv', 'allgatherv', 'alltoallv', 'reduceScatter', 'neighborAlltoallv']);

/** The executors in the registry's order: the signature names one by its index. */
const EXECUTOR_NAMES: readonly string[] = Object.keys(EXECUTORS);

const S_KIND = 0;
const S_ROOT = 1;
const S_OP = 2;
const S_DTYPE = 3;
const S_BYTES = 4;
const S_EXECUTOR = 5;
const S_ALGORITHM = 6;
/** The call's number on its communicator (for the message only: it is not compared). */
const S_SEQ = 7;
export const SIGNATURE_WORDS = 8;

/** The signature of a call as planned on this rank. */
export function callSignature(coll: CollName, s: CollShape, executor: string, algorithm: string, radix: number): Int32Array {
  const sig = new Int32Array(SIGNATURE_WORDS);
  sig[S_KIND] = KINDS.indexOf(coll);
  sig[S_ROOT] = s.root;
  sig[S_OP] = s.op;
  sig[S_DTYPE] = s.dtype;
  sig[S_BYTES] = PER_RANK_BYTES.has(coll) ? -1 : s.bytes;
  sig[S_EXECUTOR] = EXECUTOR_NAMES.indexOf(executor);
  sig[S_ALGORITHM] = fnv1a32(`${algorithm}:${radix}`) | 0;
  return sig;
}

/** Sets the call number on this communicator into `sig` (before each start). */
export function numberCall(sig: Int32Array, seq: number): void {
  sig[S_SEQ] = seq;
}

/**
 * The error for a call whose members' signatures (`all`, SIGNATURE_WORDS per rank in rank
 * order) differ, naming the first rank that differs from rank 0 and in what; null when they
 * all agree. Every rank computes the same answer from the same table.
 */
export function disagreement(all: Int32Array, size: number): NbcArgError | null {
  const w = SIGNATURE_WORDS;
  for (let r = 1; r < size; r++) {
    const diffs: string[] = [];
    const at = (i: number, rank: number): number => all[rank * w + i]!;
    const differs = (i: number): boolean => at(i, r) !== at(i, 0);
    if (differs(S_KIND)) diffs.push(`calls ${kindName(at(S_KIND, r))} where rank 0 calls ${kindName(at(S_KIND, 0))}`);
    else {
      if (differs(S_ROOT)) diffs.push(`passes root ${at(S_ROOT, r)} where rank 0 passes ${at(S_ROOT, 0)}`);
      if (differs(S_OP)) diffs.push(`passes op ${opName(at(S_OP, r))} where rank 0 passes ${opName(at(S_OP, 0))}`);
      if (differs(S_DTYPE)) diffs.push(`passes ${typeName(at(S_DTYPE, r))} elements where rank 0 passes ${typeName(at(S_DTYPE, 0))}`);
      if (differs(S_BYTES)) diffs.push(`passes ${at(S_BYTES, r)} bytes per rank where rank 0 passes ${at(S_BYTES, 0)}`);
      if (differs(S_EXECUTOR)) diffs.push(`runs it on executor ${EXECUTOR_NAMES[at(S_EXECUTOR, r)] ?? '?'} where rank 0 runs it on ${EXECUTOR_NAMES[at(S_EXECUTOR, 0)] ?? '?'}`);
      // The rest decides the algorithm, so a difference there is named only where nothing else differs.
      if (diffs.length === 0 && differs(S_ALGORITHM)) diffs.push('runs a different algorithm (an algorithm option or NBC_<COLLECTIVE>_ALGORITHM that differs)');
    }
    if (diffs.length === 0) continue;
    return new NbcArgError(
      `Collective call ${at(S_SEQ, 0)} on this communicator (${kindName(at(S_KIND, 0))} on rank 0): rank ${r} ${diffs.join(', ')}; ` +
      'expected every rank to make the same call (NBC_CHECK_CALLS)');
  }
  return null;
}

function kindName(i: number): string {
  return KINDS[i] ?? `an unknown collective (${i})`;
}

function opName(id: number): string {
  if (id >= USER_OP_ID_BASE) return `a user op (${id})`;
  try {
    return opById(id).name;
  } catch {
    return `#${id}`;
  }
}

function typeName(dt: number): string {
  try {
    return dtypeName(dt as DType);
  } catch {
    return `type #${dt}`;
  }
}
