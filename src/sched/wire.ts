/**
 * A schedule as a flat Int32Array, to ship to the node engine (offload executor) through a
 * ring record, and back into a Schedule there. Layout: [nActions, nRounds, tmpBytes, dag,
 * depCount, algorithm length, rounds (nRounds + 1), then per-field arrays of nActions: kind,
 * peer, bufA, offA, bytesA, bufB, offB, dtype, sub; then depStart (nActions + 1) and deps
 * when dag; then the algorithm name as char codes].
 *
 * The decoder trusts nothing: the words come from another thread through shared memory, and a
 * garbage schedule must not become out-of-range regions, a dependency cycle (a run that never
 * finishes) or a huge allocation in the engine. It checks every field against what a builder
 * can produce and throws NbcArgError naming the first bad one. What needs the call's context
 * (peers against the communicator size, regions against the posted buffers, op ids against
 * the predefined ops) is the executor's to check, once per post (sched/offload.ts).
 */
import { NbcArgError } from '../errors.js';
import { bytesPerElement, DTYPE_COUNT, type DType } from '../ops/dtype.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, Schedule, TMP } from './schedule.js';

/** Words in front of the rounds. */
const HEADER_WORDS = 6;
/** Longest algorithm name the wire carries (names are short; composed ones stay far below). */
export const MAX_ALGORITHM_NAME = 1024;
/** Sub-tags are 0..15 (schedule.ts). */
const MAX_SUB = 15;
const INT32_MAX = 0x7fff_ffff;

export function encodeSchedule(s: Schedule): Int32Array {
  const n = s.nActions;
  const depCount = s.deps?.length ?? 0;
  const name = s.algorithm;
  const words = HEADER_WORDS + (s.nRounds + 1) + 9 * n + (s.isDag ? n + 1 + depCount : 0) + name.length;
  const out = new Int32Array(words);
  let w = 0;
  out[w++] = n;
  out[w++] = s.nRounds;
  out[w++] = s.tmpBytes;
  out[w++] = s.isDag ? 1 : 0;
  out[w++] = depCount;
  out[w++] = name.length;
  out.set(s.rounds, w); w += s.nRounds + 1;
  for (const a of [s.kind, s.peer, s.bufA, s.offA, s.bytesA, s.bufB, s.offB, s.dtype, s.sub]) {
    out.set(a, w);
    w += n;
  }
  if (s.isDag) {
    out.set(s.depStart!, w); w += n + 1;
    out.set(s.deps!, w); w += depCount;
  }
  for (let i = 0; i < name.length; i++) out[w++] = name.charCodeAt(i);
  return out;
}

/**
 * Rebuilds a schedule from `encodeSchedule`'s words. Throws NbcArgError when the words are not
 * a well-formed schedule: a length that does not add up, counts below 0, rounds that do not
 * partition the actions, an unknown action kind, buffer or dtype, a negative offset or length,
 * a region past 2^31 - 1, a sub-tag outside 0..15, a dependency on an action that is not an
 * earlier one (so every DAG is acyclic), a name longer than MAX_ALGORITHM_NAME.
 */
export function decodeSchedule(x: Int32Array): Schedule {
  const bad = (why: string): never => {
    throw new NbcArgError(`Cannot decode a schedule of ${x.length} words: ${why}`);
  };
  if (x.length < HEADER_WORDS) bad(`expected at least ${HEADER_WORDS} header words`);
  const n = x[0]!;
  const nRounds = x[1]!;
  const tmpBytes = x[2]!;
  const dagWord = x[3]!;
  const depCount = x[4]!;
  const nameLen = x[5]!;
  if (n < 0) bad(`action count ${n} is negative`);
  if (nRounds < 1) bad(`round count ${nRounds} is below 1`);
  if (tmpBytes < 0) bad(`scratch size ${tmpBytes} is negative`);
  if (dagWord !== 0 && dagWord !== 1) bad(`DAG flag ${dagWord} is neither 0 nor 1`);
  if (depCount < 0) bad(`dependency count ${depCount} is negative`);
  if (dagWord === 0 && depCount !== 0) bad(`a schedule in rounds declares ${depCount} dependencies`);
  if (nameLen < 0 || nameLen > MAX_ALGORITHM_NAME) bad(`algorithm name length ${nameLen} is not in 0..${MAX_ALGORITHM_NAME}`);
  const dag = dagWord === 1;
  // Plain numbers: no overflow for any Int32 inputs, and nothing is allocated before this holds.
  const expected = HEADER_WORDS + (nRounds + 1) + 9 * n + (dag ? n + 1 + depCount : 0) + nameLen;
  if (expected !== x.length) {
    bad(`its header (${n} actions, ${nRounds} rounds, ${depCount} dependencies, a ${nameLen}-character name) needs ${expected} words`);
  }

  let w = HEADER_WORDS;
  const rounds = x.slice(w, w + nRounds + 1); w += nRounds + 1;
  if (rounds[0] !== 0 || rounds[nRounds] !== n) bad(`rounds run from ${rounds[0]} to ${rounds[nRounds]}; expected 0 to ${n}`);
  for (let r = 0; r < nRounds; r++) {
    if (rounds[r + 1]! < rounds[r]!) bad(`round ${r + 1} starts at action ${rounds[r + 1]}, before round ${r} (${rounds[r]})`);
  }
  const fields = (): Int32Array => { const a = x.subarray(w, w + n); w += n; return a; };
  const kindW = fields(); const peerW = fields(); const bufAW = fields(); const offAW = fields(); const bytesAW = fields();
  const bufBW = fields(); const offBW = fields(); const dtypeW = fields(); const subW = fields();
  const region = (i: number, which: string, buf: number, off: number, bytes: number): void => {
    if (buf < 0 || buf > TMP) bad(`action ${i} names buffer ${buf} for its ${which}; expected 0 (SEND), 1 (RECV) or 2 (TMP)`);
    if (off < 0) bad(`action ${i} has a negative ${which} offset ${off}`);
    if (bytes < 0) bad(`action ${i} has a negative length ${bytes}`);
    if (off + bytes > INT32_MAX) bad(`action ${i}'s ${which} ends at byte ${off + bytes}, past 2^31 - 1`);
  };
  for (let i = 0; i < n; i++) {
    const kind = kindW[i]!;
    if (kind < A_SEND || kind > A_COPY) bad(`action ${i} has kind ${kind}; expected 1 (send), 2 (recv), 3 (reduce) or 4 (copy)`);
    region(i, 'source', bufAW[i]!, offAW[i]!, bytesAW[i]!);
    if (kind === A_SEND || kind === A_RECV) {
      if (peerW[i]! < 0) bad(`action ${i} (${kind === A_SEND ? 'send' : 'recv'}) names peer ${peerW[i]}`);
      if (subW[i]! < 0 || subW[i]! > MAX_SUB) bad(`action ${i} has sub-tag ${subW[i]}; expected 0..${MAX_SUB}`);
      if (bufBW[i] !== 0) bad(`action ${i} (${kind === A_SEND ? 'send' : 'recv'}) names a second buffer ${bufBW[i]}`);
    } else {
      region(i, 'destination', bufBW[i]!, offBW[i]!, bytesAW[i]!);
      if (subW[i] !== 0) bad(`action ${i} (${kind === A_REDUCE ? 'reduce' : 'copy'}) has sub-tag ${subW[i]}`);
    }
    if (kind === A_REDUCE) {
      const dt = dtypeW[i]!;
      if (dt < 0 || dt >= DTYPE_COUNT) bad(`action ${i} (reduce) has dtype ${dt}; expected 0..${DTYPE_COUNT - 1}`);
      if (peerW[i]! < 0) bad(`action ${i} (reduce) has op id ${peerW[i]}`);
      const bpe = bytesPerElement(dt as DType);
      if (bytesAW[i]! % bpe !== 0) bad(`action ${i} (reduce) covers ${bytesAW[i]} bytes, not whole ${bpe}-byte elements`);
    } else if (dtypeW[i]! < 0 || dtypeW[i]! >= DTYPE_COUNT) {
      bad(`action ${i} has dtype ${dtypeW[i]}; expected 0..${DTYPE_COUNT - 1}`);
    }
  }
  // Int8 fields were range-checked above, so narrowing them keeps every value.
  const kind = Int8Array.from(kindW); const peer = peerW.slice(); const bufA = Int8Array.from(bufAW);
  const offA = offAW.slice(); const bytesA = bytesAW.slice(); const bufB = Int8Array.from(bufBW); const offB = offBW.slice();
  const dtype = Int8Array.from(dtypeW); const sub = Int8Array.from(subW);

  let depStart: Int32Array | null = null;
  let deps: Int32Array | null = null;
  if (dag) {
    depStart = x.slice(w, w + n + 1); w += n + 1;
    deps = x.slice(w, w + depCount); w += depCount;
    if (depStart[0] !== 0 || depStart[n] !== depCount) {
      bad(`dependency lists run from ${depStart[0]} to ${depStart[n]}; expected 0 to ${depCount}`);
    }
    for (let i = 0; i < n; i++) {
      const from = depStart[i]!;
      const to = depStart[i + 1]!;
      if (to < from) bad(`action ${i}'s dependency list ends (${to}) before it starts (${from})`);
      for (let d = from; d < to; d++) {
        const j = deps[d]!;
        if (j < 0 || j >= i) bad(`action ${i} depends on action ${j}; expected an earlier action (0..${i - 1})`);
      }
    }
  }
  let algorithm = '';
  for (let i = 0; i < nameLen; i++) {
    const c = x[w + i]!;
    if (c < 0 || c > 0xffff) bad(`algorithm name character ${i} is ${c}; expected a UTF-16 code unit`);
    algorithm += String.fromCharCode(c);
  }
  return new Schedule(n, nRounds, rounds, kind, peer, bufA, offA, bytesA, bufB, offB, dtype, sub, depStart, deps, tmpBytes, algorithm);
}
