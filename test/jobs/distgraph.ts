/**
 * Distributed-graph topologies, run on every rank of a job. Every rank builds the same global
 * edge list (deterministic in the case number), takes its own sources and destinations from it,
 * and checks each neighbour collective against a reference computed straight from that list:
 * the block in my receive slot i is the block my source s put in the destination slot holding
 * the k-th edge s -> me, where slot i holds the k-th edge s -> me among my sources. That search
 * knows nothing of the sub-tags the library uses to match messages.
 *
 * Modes (args[0]):
 *   props [executor]   every graph shape x neighborAllgather / neighborAlltoall /
 *                      ineighborAlltoall / neighborAlltoallv / neighborAlltoallInit
 *   bad                invalid graphs and calls raise their NbcError code on every rank, no hang
 */
import assert from 'node:assert/strict';
import { NbcError, dimsCreate, type Communicator } from 'nbcoll';
import { errorCodes, mulberry32 } from './common.ts';

type Edge = [number, number];


function shuffle<T>(xs: T[], rnd: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** The graphs every size is tested on: name and global edge list, in an order that matters. */
function graphs(p: number): Array<[string, Edge[]]> {
  const out: Array<[string, Edge[]]> = [];
  // Not symmetric: r sends to r+1 and r+2, so a rank's sources and destinations differ (and
  // repeat themselves on 1 or 2 ranks).
  const ring: Edge[] = [];
  for (let r = 0; r < p; r++) ring.push([r, (r + 1) % p], [r, (r + 2) % p]);
  out.push(['ring +1 +2', ring]);
  // Random multigraph: up to 3 parallel edges per ordered pair, self edges included, shuffled.
  for (const seed of [1, 2]) {
    const rnd = mulberry32(seed * 1000 + p);
    const edges: Edge[] = [];
    for (let a = 0; a < p; a++) for (let b = 0; b < p; b++) for (let k = Math.floor(rnd() * 4) - 1; k > 0; k--) edges.push([a, b]);
    out.push([`random multigraph ${seed}`, shuffle(edges, rnd)]);
  }
  // A star into rank 0: ranks > 0 have no sources, rank 0 no destinations.
  const star: Edge[] = [];
  for (let r = 1; r < p; r++) star.push([r, 0]);
  out.push(['star into 0', star]);
  // The 26-neighbour halo graph of a 3-D non-periodic process grid (what nbc pcg builds).
  const dims = dimsCreate(p, 3);
  const halo: Edge[] = [];
  const at = (c: number[]): number => (c[0]! * dims[1]! + c[1]!) * dims[2]! + c[2]!;
  for (let r = 0; r < p; r++) {
    const c = [Math.floor(r / (dims[1]! * dims[2]!)), Math.floor(r / dims[2]!) % dims[1]!, r % dims[2]!];
    for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) for (let dz = -1; dz <= 1; dz++) {
      const q = [c[0]! + dx, c[1]! + dy, c[2]! + dz];
      if ((dx || dy || dz) && q.every((v, i) => v >= 0 && v < dims[i]!)) halo.push([r, at(q)]);
    }
  }
  out.push(['26-neighbour halo', halo]);
  return out;
}

/** Value e of the block rank `src` puts in its destination slot `j` (case `salt`). */
const val = (src: number, j: number, e: number, salt: number): number => salt * 1e6 + src * 1e4 + j * 100 + e;

/** Elements on the edge in src's destination slot j (alltoallv): 0..3, so empty blocks occur. */
const lenOf = (src: number, j: number): number => (src * 7 + j * 3) % 4;

/** For my receive slot i: which source slot j of `src` feeds it (the reference search). */
function feeding(edges: Edge[], me: number, sources: number[], i: number): { src: number; j: number } {
  const src = sources[i]!;
  let k = 0;
  for (let q = 0; q < i; q++) if (sources[q] === src) k++;
  const dests = edges.filter((e) => e[0] === src).map((e) => e[1]);
  let seen = 0;
  for (let j = 0; j < dests.length; j++) {
    if (dests[j] === me && seen++ === k) return { src, j };
  }
  throw new Error(`reference: no edge ${src} -> ${me} number ${k}`);
}

function props(w: Communicator, executor: 'host' | 'offload'): number {
  const ex = { executor };
  const me = w.rank;
  let checks = 0;
  let salt = 0;
  for (const [name, edges] of graphs(w.size)) {
    salt++;
    const sources = edges.filter((e) => e[1] === me).map((e) => e[0]);
    const destinations = edges.filter((e) => e[0] === me).map((e) => e[1]);
    const g = w.distGraphCreateAdjacent(sources, destinations);
    assert.equal(g.topologyKind, 'dist-graph');
    assert.deepEqual(g.distGraphNeighborsCount(), { indegree: sources.length, outdegree: destinations.length, weighted: false });
    assert.deepEqual(g.distGraphNeighbors(), { sources, destinations, sourceWeights: null, destWeights: null });
    const indeg = sources.length;
    const outdeg = destinations.length;
    const n = 3;
    const POISON = -7;

    // neighborAllgather: slot i holds source i's whole send buffer.
    const mine = Float64Array.from({ length: n }, (_, e) => val(me, 0, e, salt));
    const ag = new Float64Array(n * indeg).fill(POISON);
    g.neighborAllgather(mine, ag, ex);
    for (let i = 0; i < indeg; i++) {
      for (let e = 0; e < n; e++) assert.equal(ag[i * n + e], val(sources[i]!, 0, e, salt), `${name}: neighborAllgather slot ${i} element ${e}`);
    }

    // neighborAlltoall (blocking, non-blocking and persistent): slot i holds block j of its source.
    const send = Float64Array.from({ length: n * outdeg }, (_, x) => val(me, Math.floor(x / n), x % n, salt));
    const expect = new Float64Array(n * indeg);
    for (let i = 0; i < indeg; i++) {
      const f = feeding(edges, me, sources, i);
      for (let e = 0; e < n; e++) expect[i * n + e] = val(f.src, f.j, e, salt);
    }
    const a1 = new Float64Array(n * indeg).fill(POISON);
    g.neighborAlltoall(send, a1, ex);
    assert.deepEqual(a1, expect, `${name}: neighborAlltoall`);
    const a2 = new Float64Array(n * indeg).fill(POISON);
    g.ineighborAlltoall(send, a2, ex).wait();
    assert.deepEqual(a2, expect, `${name}: ineighborAlltoall`);
    const a3 = new Float64Array(n * indeg).fill(POISON);
    const pr = g.neighborAlltoallInit(send, a3, ex);
    for (let round = 0; round < 2; round++) {
      a3.fill(POISON);
      pr.start();
      pr.wait();
      assert.deepEqual(a3, expect, `${name}: neighborAlltoallInit round ${round}`);
    }
    pr.free();

    // neighborAlltoallv: uneven (and empty) blocks, packed in reverse slot order on both sides.
    const scounts = destinations.map((_, j) => lenOf(me, j));
    const sdispls = new Array<number>(outdeg);
    let at = 0;
    for (let j = outdeg - 1; j >= 0; j--) { sdispls[j] = at; at += scounts[j]!; }
    const sv = new Float64Array(at);
    for (let j = 0; j < outdeg; j++) for (let e = 0; e < scounts[j]!; e++) sv[sdispls[j]! + e] = val(me, j, e, salt);
    const feeds = sources.map((_, i) => feeding(edges, me, sources, i));
    const rcounts = feeds.map((f) => lenOf(f.src, f.j));
    const rdispls = new Array<number>(indeg);
    at = 0;
    for (let i = indeg - 1; i >= 0; i--) { rdispls[i] = at; at += rcounts[i]!; }
    const rv = new Float64Array(at).fill(POISON);
    g.ineighborAlltoallv(sv, scounts, sdispls, rv, rcounts, rdispls, ex).wait();
    for (let i = 0; i < indeg; i++) {
      for (let e = 0; e < rcounts[i]!; e++) assert.equal(rv[rdispls[i]! + e], val(feeds[i]!.src, feeds[i]!.j, e, salt), `${name}: neighborAlltoallv slot ${i} element ${e}`);
    }
    // A dup keeps the graph.
    const d = g.dup();
    const a4 = new Float64Array(n * indeg).fill(POISON);
    d.neighborAlltoall(send, a4, ex);
    assert.deepEqual(a4, expect, `${name}: neighborAlltoall on a dup`);
    d.free();
    g.free();
    checks += 6;
  }
  return checks;
}

/** Runs `fn` expecting an NbcError; returns its code. */
function codeOf(fn: () => unknown): string {
  try {
    fn();
    return 'no error';
  } catch (err) {
    return err instanceof NbcError ? err.code : `not an NbcError: ${String(err)}`;
  }
}

function bad(w: Communicator): Record<string, string> {
  const me = w.rank;
  const p = w.size;
  const next = (me + 1) % p;
  const prev = (me + p - 1) % p;
  const codes: Record<string, string> = {};
  // Rank 0 sends to 1 one time too many: every rank learns of it, nobody waits.
  codes['edge listed by one end only'] = codeOf(() => w.distGraphCreateAdjacent([prev], me === 0 ? [next, next] : [next]));
  // The last rank names a rank out of range: it raises NBC_ERR_RANK, the others NBC_ERR_ARG.
  codes['rank out of range'] = codeOf(() => w.distGraphCreateAdjacent([prev], me === p - 1 ? [p] : [next]));
  codes['weights of the wrong length'] = codeOf(() => w.distGraphCreateAdjacent([prev], [next], { destWeights: [1, 2] }));
  // After the failures the communicator still works: a valid ring with weights.
  const g = w.distGraphCreateAdjacent([prev], [next], { sourceWeights: [3], destWeights: [4] });
  const got = g.distGraphNeighbors();
  assert.deepEqual(got, { sources: [prev], destinations: [next], sourceWeights: [3], destWeights: [4] });
  assert.equal(g.distGraphNeighborsCount().weighted, true);
  Object.assign(codes, errorCodes({
    'neighborAlltoall with a send buffer of the wrong length': () => g.neighborAlltoall(new Float64Array(3), new Float64Array(2)),
    'neighborAlltoallv with counts for the wrong degree': () => g.neighborAlltoallv(new Float64Array(2), [1, 1], [0, 1], new Float64Array(2), [1], [0]),
    'neighborAlltoall on a plain communicator': () => w.neighborAlltoall(new Float64Array(2), new Float64Array(2)),
    'distGraphNeighbors on a plain communicator': () => w.distGraphNeighbors(),
    'distGraphNeighbors on a Cartesian communicator': () => w.cartCreate([p], [true])!.distGraphNeighbors(),
    'coords on a graph communicator': () => g.coords(),
  }));
  return codes;
}

export default function main(w: Communicator, args: string[]): unknown {
  switch (args[0]) {
    case 'props': return props(w, (args[1] ?? 'host') as 'host' | 'offload');
    case 'bad': return bad(w);
    default: throw new Error(`unknown mode ${String(args[0])}`);
  }
}
