/**
 * A schedule as a flat Int32Array, to ship to the node engine (offload executor) through a
 * ring record, and back into a Schedule there. Layout: [nActions, nRounds, tmpBytes, dag,
 * depCount, algorithm length, rounds (nRounds + 1), then per-field arrays of nActions: kind,
 * peer, bufA, offA, bytesA, bufB, offB, dtype, sub; then depStart (nActions + 1) and deps
 * when dag; then the algorithm name as char codes].
 */
import { Schedule } from './schedule.js';

export function encodeSchedule(s: Schedule): Int32Array {
  const n = s.nActions;
  const depCount = s.deps?.length ?? 0;
  const name = s.algorithm;
  const words = 6 + (s.nRounds + 1) + 9 * n + (s.isDag ? n + 1 + depCount : 0) + name.length;
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

export function decodeSchedule(x: Int32Array): Schedule {
  let w = 0;
  const n = x[w++]!;
  const nRounds = x[w++]!;
  const tmpBytes = x[w++]!;
  const dag = x[w++] === 1;
  const depCount = x[w++]!;
  const nameLen = x[w++]!;
  const rounds = x.slice(w, w + nRounds + 1); w += nRounds + 1;
  const i8 = (): Int8Array => { const a = Int8Array.from(x.subarray(w, w + n)); w += n; return a; };
  const i32 = (): Int32Array => { const a = x.slice(w, w + n); w += n; return a; };
  const kind = i8(); const peer = i32(); const bufA = i8(); const offA = i32(); const bytesA = i32();
  const bufB = i8(); const offB = i32(); const dtype = i8(); const sub = i8();
  let depStart: Int32Array | null = null;
  let deps: Int32Array | null = null;
  if (dag) {
    depStart = x.slice(w, w + n + 1); w += n + 1;
    deps = x.slice(w, w + depCount); w += depCount;
  }
  const algorithm = String.fromCharCode(...x.subarray(w, w + nameLen));
  return new Schedule(n, nRounds, rounds, kind, peer, bufA, offA, bytesA, bufB, offB, dtype, sub, depStart, deps, tmpBytes, algorithm);
}
