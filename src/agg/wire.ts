/**
 * The aggregation fabric's wire format, tree arithmetic and supported (op, dtype) table: what the
 * manager (AM), the daemons (ANs) and the node-side client must agree on. No sockets here.
 *
 * Every connection carries length-prefixed frames (net/frame.ts) after the HMAC handshake
 * (net/auth.ts). Frame types:
 *
 *   CTRL    1  UTF-8 JSON object with a `t` field: control messages (AM <-> AN, AM <-> client,
 *              AM <-> admin, AN -> AN hello). Never on a hot path.
 *   FRAG    2  one fragment going up:   FragHeader (28 B) | payload
 *   RESULT  3  one fragment coming down: ResultHeader (24 B) | payload (empty when flags has no
 *              RESULT_HAS_DATA: a completion for a member that is not the root of a reduce)
 *   GERROR  4  a group failed on this path: group u32 | epoch u32 | reason (UTF-8)
 *
 * All integers little-endian. FRAG body:
 *   0 group u32 | 4 epoch u32 | 8 seq u32 (operation number in the group, from 0) |
 *   12 frag u32 (fragment index in the operation) | 16 member u32 (sender's member index when a
 *   member sends; 0xffffffff between ANs) | 20 op u8 | 21 dtype u8 | 22 root i16 (-1: all) |
 *   24 stamp i32
 * RESULT body:
 *   0 group u32 | 4 epoch u32 | 8 seq u32 | 12 frag u32 | 16 flags u8 | 17 zero |
 *   18 root i16 (so each AN on the way down routes the data only toward the root member) |
 *   20 stamp i32
 *
 * `stamp`: under the emulated network (`--link`), the tick of the host clock the frame's
 * modelled network delivers it at (0: none); nobody in the fabric waits for it (stamps.ts).
 */
import { Buffer } from 'node:buffer';
import { NbcArgError } from '../errors.js';
import { DType } from '../ops/dtype.js';
import { OpCode } from '../ops/loops.js';
import { FABRIC_DTYPES, FABRIC_OPS } from '../sched/agg-executor.js';

export const FrameType = { Ctrl: 1, Frag: 2, Result: 3, GroupError: 4 } as const;

export const FRAG_HEADER_BYTES = 28;
export const RESULT_HEADER_BYTES = 24;
/** Offset of the stamp in a RESULT body. */
export const RESULT_STAMP = 20;
export const GERROR_HEADER_BYTES = 8;
/** `member` field of a FRAG sent by an AN (not a member). */
export const FROM_AN = 0xffff_ffff;
/** RESULT flags bit: the frame carries the reduced data (else it only completes the fragment). */
export const RESULT_HAS_DATA = 1;

/** Fragments of one operation are numbered below this (a 256 MiB message at 256 B per slot). */
export const MAX_FRAGMENTS = 1 << 20;
/** Smallest payloadPerSlot: one (value, index) pair of 64-bit elements. */
export const MIN_PAYLOAD = 16;
/** Largest payloadPerSlot (a frame must stay far below the decoder's limit). */
export const MAX_PAYLOAD = 64 * 1024;
/** Control frames are small; the decoder refuses anything larger than a fragment frame. */
export const MAX_BODY = MAX_PAYLOAD + 64;

/**
 * Connector ids in the handshake to an AN: below MEMBER_ID_BASE an AN id (proved with the fabric
 * secret); at or above it a member node, `MEMBER_ID_BASE | jobIndex << 16 | nodeId`, proved with
 * that job's key. So the id selects the key, and a member's frames are tied to its job.
 */
export const MEMBER_ID_BASE = 0x8000_0000;
export const MAX_JOB_INDEX = 0x7fff;
export const MAX_NODE_ID = 0xffff;

export function memberConnectorId(jobIndex: number, nodeId: number): number {
  return (MEMBER_ID_BASE | (jobIndex << 16) | nodeId) >>> 0;
}

export function splitConnectorId(id: number): { jobIndex: number; nodeId: number } | null {
  if (id < MEMBER_ID_BASE) return null;
  return { jobIndex: (id >>> 16) & MAX_JOB_INDEX, nodeId: id & MAX_NODE_ID };
}

// ---------------------------------------------------------------------------------------------
// Supported reductions.

const OP_NAMES: Record<number, string> = Object.fromEntries(Object.entries(OpCode).map(([k, v]) => [v, k]));
const DTYPE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(DType).map(([k, v]) => [v, k]));

/** Ops and element types the fabric reduces: one definition, the core's (selection uses it too). */
export { FABRIC_DTYPES as AGG_DTYPES, FABRIC_OPS as AGG_OPS } from '../sched/agg-executor.js';
const BITWISE: ReadonlySet<number> = new Set<number>([OpCode.band, OpCode.bor, OpCode.bxor]);
const FLOATS: ReadonlySet<number> = new Set<number>([DType.Float32, DType.Float64]);

/** Null when the fabric supports (op, dtype), else why not (for the fallback log). */
export function aggSupports(op: number, dtype: number): string | null {
  if (!FABRIC_OPS.has(op)) {
    return `op ${OP_NAMES[op] ?? op} is not reduced by the aggregation fabric (it reduces sum, min, max, minloc, maxloc, band, bor, bxor, land, lor, lxor)`;
  }
  if (!FABRIC_DTYPES.has(dtype)) {
    return `type ${DTYPE_NAMES[dtype] ?? dtype} is not reduced by the aggregation fabric (it reduces Int32, Uint32, Float32, Float64, BigInt64, BigUint64)`;
  }
  if (BITWISE.has(op) && FLOATS.has(dtype)) {
    return `op ${OP_NAMES[op]} is not defined for floating-point type ${DTYPE_NAMES[dtype]}`;
  }
  return null;
}

export function elementBytes(dtype: number): number {
  return dtype === DType.Float64 || dtype === DType.BigInt64 || dtype === DType.BigUint64 ? 8 : 4;
}

/** Smallest unit a fragment may hold: one element, or one (value, index) pair for minloc/maxloc. */
export function fragmentUnit(op: number, dtype: number): number {
  const e = elementBytes(dtype);
  return op === OpCode.minloc || op === OpCode.maxloc ? 2 * e : e;
}

/** Bytes per fragment: payloadPerSlot rounded down to whole units. */
export function fragmentBytes(payloadPerSlot: number, op: number, dtype: number): number {
  const unit = fragmentUnit(op, dtype);
  return payloadPerSlot - (payloadPerSlot % unit);
}

/** Fragments of a message of `bytes`: at least one, even for 0 bytes (a barrier). */
export function fragmentCount(bytes: number, fragBytes: number): number {
  return bytes === 0 ? 1 : Math.ceil(bytes / fragBytes);
}

// ---------------------------------------------------------------------------------------------
// The tree. ANs are numbered level by level: the root is 0, level k holds ids
// (radix^k - 1) / (radix - 1) .. (radix^(k+1) - 1) / (radix - 1) - 1; the parent of AN i > 0 is
// floor((i - 1) / radix) and its children are radix*i + 1 .. radix*i + radix.

export interface TreeShape {
  radix: number;
  levels: number;
}

export const MAX_RADIX = 64;
export const MAX_LEVELS = 4;
/** More daemons than this are more processes than one host should start. */
export const MAX_ANS = 512;

export function checkShape(s: TreeShape, what: string): void {
  if (!Number.isInteger(s.radix) || s.radix < 2 || s.radix > MAX_RADIX) {
    throw new NbcArgError(`Cannot ${what}: radix ${s.radix} is not an integer in 2..${MAX_RADIX}`);
  }
  if (!Number.isInteger(s.levels) || s.levels < 1 || s.levels > MAX_LEVELS) {
    throw new NbcArgError(`Cannot ${what}: levels ${s.levels} is not an integer in 1..${MAX_LEVELS}`);
  }
  const n = anCount(s);
  if (n > MAX_ANS) {
    throw new NbcArgError(`Cannot ${what}: radix ${s.radix} with ${s.levels} levels needs ${n} daemons; expected at most ${MAX_ANS}`);
  }
}

/** First AN id of `level`. */
export function levelStart(radix: number, level: number): number {
  return (radix ** level - 1) / (radix - 1);
}

export function anCount(s: TreeShape): number {
  return levelStart(s.radix, s.levels);
}

export function levelOf(radix: number, id: number): number {
  let level = 0;
  while (levelStart(radix, level + 1) <= id) level++;
  return level;
}

export function parentOf(radix: number, id: number): number | null {
  return id === 0 ? null : Math.floor((id - 1) / radix);
}

export function leafCount(s: TreeShape): number {
  return s.radix ** (s.levels - 1);
}

/** The leaf AN under which node `nodeId` of a job hangs: floor(n / radix) mod leaves. */
export function defaultLeaf(s: TreeShape, nodeId: number): number {
  return levelStart(s.radix, s.levels - 1) + (Math.floor(nodeId / s.radix) % leafCount(s));
}

/** AN ids from `id` up to the root, `id` first. */
export function pathToRoot(radix: number, id: number): number[] {
  const path = [id];
  for (let p = parentOf(radix, id); p !== null; p = parentOf(radix, p)) path.push(p);
  return path;
}

// ---------------------------------------------------------------------------------------------
// Data frames.

export interface FragHeader {
  group: number;
  epoch: number;
  seq: number;
  frag: number;
  member: number;
  op: number;
  dtype: number;
  root: number;
  /** Modelled arrival, ticks of the host clock (0: none; stamps.ts). */
  stamp: number;
}

/** Writes a FRAG header into the first FRAG_HEADER_BYTES of `b`. */
export function writeFragHeader(b: Buffer, h: FragHeader): void {
  b.writeUInt32LE(h.group, 0);
  b.writeUInt32LE(h.epoch, 4);
  b.writeUInt32LE(h.seq, 8);
  b.writeUInt32LE(h.frag, 12);
  b.writeUInt32LE(h.member, 16);
  b[20] = h.op;
  b[21] = h.dtype;
  b.writeInt16LE(h.root, 22);
  b.writeInt32LE(h.stamp | 0, 24);
}

/** Reads a FRAG header; the caller has checked body.length >= FRAG_HEADER_BYTES. */
export function readFragHeader(b: Buffer): FragHeader {
  return {
    group: b.readUInt32LE(0), epoch: b.readUInt32LE(4), seq: b.readUInt32LE(8), frag: b.readUInt32LE(12),
    member: b.readUInt32LE(16), op: b[20]!, dtype: b[21]!, root: b.readInt16LE(22),
    stamp: b.readInt32LE(24),
  };
}

export function writeResultHeader(
  b: Buffer, group: number, epoch: number, seq: number, frag: number, flags: number, root: number, stamp: number,
): void {
  b.writeUInt32LE(group, 0);
  b.writeUInt32LE(epoch, 4);
  b.writeUInt32LE(seq, 8);
  b.writeUInt32LE(frag, 12);
  b[16] = flags;
  b[17] = 0;
  b.writeInt16LE(root, 18);
  b.writeInt32LE(stamp | 0, RESULT_STAMP);
}

export function encodeGroupError(group: number, epoch: number, reason: string): Buffer {
  const text = Buffer.from(reason.slice(0, 1000), 'utf8');
  const b = Buffer.allocUnsafe(GERROR_HEADER_BYTES + text.length);
  b.writeUInt32LE(group, 0);
  b.writeUInt32LE(epoch, 4);
  text.copy(b, GERROR_HEADER_BYTES);
  return b;
}

// ---------------------------------------------------------------------------------------------
// Control messages (JSON). The `t` field names the message; see docs/agg.md for each.

export type Ctrl = { t: string } & Record<string, unknown>;

export function encodeCtrl(msg: Ctrl): Buffer {
  return Buffer.from(JSON.stringify(msg), 'utf8');
}

/** Parses a CTRL body; null when it is not a JSON object with a string `t`. */
export function decodeCtrl(body: Buffer): Ctrl | null {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  if (typeof (v as { t?: unknown }).t !== 'string') return null;
  return v as Ctrl;
}

/** Field readers that throw a plain Error naming the field; callers drop the connection. */
export function num(m: Ctrl, k: string, min = 0, max = 0xffff_ffff): number {
  const v = m[k];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new Error(`'${m.t}' field ${k} is ${JSON.stringify(v)}; expected an integer in ${min}..${max}`);
  }
  return v;
}

export function str(m: Ctrl, k: string, maxLen = 1000): string {
  const v = m[k];
  if (typeof v !== 'string' || v.length > maxLen) {
    throw new Error(`'${m.t}' field ${k} is not a string of at most ${maxLen} characters`);
  }
  return v;
}

export function numArray(m: Ctrl, k: string, min = 0, max = 0xffff_ffff, maxLen = 1 << 16): number[] {
  const v = m[k];
  if (!Array.isArray(v) || v.length > maxLen ||
    !v.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= min && x <= max)) {
    throw new Error(`'${m.t}' field ${k} is not an array of integers in ${min}..${max}`);
  }
  return v as number[];
}
