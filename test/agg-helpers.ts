/**
 * Helpers for the aggregation fabric tests: member nodes as in-process clients, a sequential
 * reference of the fabric's documented reduction order, and deadlines on every wait.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AggClient, type AggGroup } from '../src/agg/client.ts';
import type { FabricHandle } from '../src/agg/fabric.ts';
import { reduceRegions } from '../src/ops/regions.ts';

/** Rejects with a message naming `what` unless `p` settles within `ms`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]);
}

export interface Job {
  id: string;
  key: Buffer;
  clients: AggClient[];
}

/** Connects one client per node id: the member nodes of one job. */
export async function connectJob(f: FabricHandle, nodes: number[], jobId = `job-${randomBytes(3).toString('hex')}`,
  extra: { joinTimeoutMs?: number; link?: { latencyUs?: number } } = {}): Promise<Job> {
  const key = randomBytes(32);
  const clients = await within(Promise.all(nodes.map((nodeId) => AggClient.connect({
    manager: f.manager, fabricSecret: f.secret, jobId, jobKey: key, nodeId, ...extra,
  }))), 5000, `connecting job ${jobId}`);
  return { id: jobId, key, clients };
}

export function closeJob(j: Job): void {
  for (const c of j.clients) c.close();
}

/** Every client joins `key`; asserts all got a group (same id) and returns them. */
export async function joinAll(j: Job, key: string, want?: { slots?: number }): Promise<AggGroup[]> {
  const answers = await within(Promise.all(j.clients.map((c, i) => c.join(key, i, j.clients.length, want))), 15_000, `join ${key}`);
  for (const a of answers) assert.ok(!('refused' in a), `join '${key}' refused: ${'refused' in a ? a.refused : ''}`);
  const groups = answers as AggGroup[];
  assert.ok(groups.every((g) => g.id === groups[0]!.id), 'every member got the same group');
  return groups;
}

/** One collective reduce at every member; resolves with each member's output (or error). */
export function reduceAll(groups: AggGroup[], data: Uint8Array[], op: number, dtype: number, root = -1): Promise<(Uint8Array | Error | null)[]> {
  return Promise.all(groups.map((g, i) => new Promise<Uint8Array | Error | null>((resolve) => {
    const out = root === -1 || root === i ? new Uint8Array(data[i]!.byteLength) : null;
    g.reduce(data[i]!, out, op, dtype, root, (err) => resolve(err ?? out));
  })));
}

// ---- the reference: the fabric's tree and fixed order, computed here independently --------

export interface Shape { radix: number; levels: number }

const levelStart = (r: number, l: number): number => (r ** l - 1) / (r - 1);
const parent = (r: number, id: number): number => Math.floor((id - 1) / r);

/** The leaf AN of node n: floor(n / radix) mod leaves, numbered level by level. */
export function leafOf(s: Shape, node: number): number {
  return levelStart(s.radix, s.levels - 1) + (Math.floor(node / s.radix) % s.radix ** (s.levels - 1));
}

/** The ANs of the trimmed tree for members on `nodes`, sorted; and its root. */
export function trimmed(s: Shape, nodes: number[]): { root: number; ans: number[] } {
  const paths = [...new Set(nodes.map((n) => leafOf(s, n)))].map((leaf) => {
    const p = [leaf];
    while (p[p.length - 1] !== 0) p.push(parent(s.radix, p[p.length - 1]!));
    return p.reverse();
  });
  let d = 0;
  while (paths.every((p) => p[d + 1] !== undefined && p[d + 1] === paths[0]![d + 1])) d++;
  return { root: paths[0]![d]!, ans: [...new Set(paths.flatMap((p) => p.slice(d)))].sort((a, b) => a - b) };
}

/**
 * The documented order: at each AN, children in fixed order (members by index at a leaf, child
 * ANs by id above) reduced right to left, c0 ⊕ (c1 ⊕ (... ⊕ c[n-1])).
 */
export function reference(s: Shape, nodes: number[], data: Uint8Array[], op: number, dtype: number): Uint8Array {
  const { root, ans } = trimmed(s, nodes);
  const inGroup = new Set(ans);
  const value = (an: number): Uint8Array => {
    const members = nodes.map((n, i) => [n, i] as const).filter(([n]) => leafOf(s, n) === an).map(([, i]) => data[i]!);
    const parts = members.length > 0 ? members
      : ans.filter((x) => x !== 0 && inGroup.has(x) && parent(s.radix, x) === an).map(value);
    const acc = new Uint8Array(parts[parts.length - 1]!);
    for (let i = parts.length - 2; i >= 0; i--) reduceRegions(op, dtype as never, parts[i]!, acc);
    return acc;
  };
  return value(root);
}

/** Random Float64 values of wildly different magnitudes, so that the order shows in the bits. */
export function floats(n: number): Uint8Array {
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = (Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 12);
  return new Uint8Array(a.buffer);
}

export function ints(n: number, bound = 1000): Uint8Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.floor((Math.random() - 0.5) * 2 * bound);
  return new Uint8Array(a.buffer);
}

export function bigints(n: number): Uint8Array {
  const a = new BigInt64Array(n);
  for (let i = 0; i < n; i++) a[i] = BigInt(Math.floor((Math.random() - 0.5) * 2 ** 52)) * 977n;
  return new Uint8Array(a.buffer);
}

/** (value, index) Float64 pairs with many ties in value. */
export function locPairs(pairs: number, member: number): Uint8Array {
  const a = new Float64Array(2 * pairs);
  for (let i = 0; i < pairs; i++) {
    a[2 * i] = Math.floor(Math.random() * 4);
    a[2 * i + 1] = member;
  }
  return new Uint8Array(a.buffer);
}

/** c0 ⊕ (c1 ⊕ (... ⊕ c[n-1])): one AN's fixed order over its children. */
export function foldRight(parts: Uint8Array[], op: number, dtype: number): Uint8Array {
  const acc = new Uint8Array(parts[parts.length - 1]!);
  for (let i = parts.length - 2; i >= 0; i--) reduceRegions(op, dtype as never, parts[i]!, acc);
  return acc;
}
