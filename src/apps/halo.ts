/**
 * Halo exchanges of the proof applications, through the neighbour collectives (the point of
 * seed 001: a halo exchange is a neighbourhood alltoall that can run behind the interior
 * matvec).
 *
 * - `cartHalo` (nbc cg, 7-point): the six face neighbours of a Cartesian communicator, with
 *   `neighborAlltoall` / `ineighborAlltoall`. That call takes one block size for every slot
 *   and every rank, so faces are padded to the largest face of the whole grid (agreed once
 *   with an allreduce); with `--n`, all faces are equal and nothing is padded.
 * - `graphHalo` (nbc pcg, 27-point): faces, edges and corners, the 26 neighbours of a
 *   distributed-graph communicator (absent ones on the global boundary simply not listed),
 *   with `neighborAlltoallv` / `ineighborAlltoallv` and exact block sizes.
 *
 * Packing and unpacking go through index lists built once (grid.ts regions), into buffers
 * allocated once.
 */
import { PROC_NULL, type CollOptions, type Communicator, type Request } from '../index.js';
import { gather, rankAt, recvRegion, scatter, sendRegion, type Box } from './grid.js';
import type { VectorHeap } from './kernels.js';

export class Halo {
  private readonly send: Float64Array;
  private readonly recv: Float64Array;
  private req: Request | null = null;

  private constructor(
    private readonly comm: Communicator,
    /** Per slot: ghosted indices to pack from (PROC_NULL slots: none). */
    private sendIdx: Int32Array[],
    private recvIdx: Int32Array[],
    /** Element offsets of each slot's block in the send / receive buffers. */
    private readonly sdispls: number[],
    private readonly rdispls: number[],
    private readonly scounts: number[],
    private readonly rcounts: number[],
    sendLen: number, recvLen: number,
    /** Equal blocks (neighborAlltoall) or exact ones (neighborAlltoallv). */
    private readonly equalBlocks: boolean,
    private readonly opts: CollOptions,
    heap: VectorHeap | null,
  ) {
    // In the solver's heap, the pack and unpack run in WebAssembly (kernels.ts).
    this.send = heap?.vector(sendLen) ?? new Float64Array(sendLen);
    this.recv = heap?.vector(recvLen) ?? new Float64Array(recvLen);
    if (heap !== null) {
      this.sendIdx = sendIdx.map((x) => heap.ints(x));
      this.recvIdx = recvIdx.map((x) => heap.ints(x));
    }
  }

  /** Bytes this rank sends per exchange (padding included). */
  get bytesSent(): number {
    return this.send.byteLength;
  }

  private pack(p: Float64Array): void {
    for (let i = 0; i < this.sendIdx.length; i++) gather(this.send, this.sdispls[i]!, p, this.sendIdx[i]!);
  }

  private unpack(p: Float64Array): void {
    for (let i = 0; i < this.recvIdx.length; i++) scatter(p, this.recv, this.rdispls[i]!, this.recvIdx[i]!);
  }

  /** Packs p's boundary and starts the exchange; finish() completes it into p's ghosts. */
  start(p: Float64Array): Request {
    this.pack(p);
    this.req = this.equalBlocks
      ? this.comm.ineighborAlltoall(this.send, this.recv, this.opts)
      : this.comm.ineighborAlltoallv(this.send, this.scounts, this.sdispls, this.recv, this.rcounts, this.rdispls, this.opts);
    return this.req;
  }

  finish(p: Float64Array): void {
    this.req!.wait();
    this.req = null;
    this.unpack(p);
  }

  /** The blocking exchange: pack, neighborAlltoall(v), unpack. */
  exchange(p: Float64Array): void {
    this.pack(p);
    if (this.equalBlocks) this.comm.neighborAlltoall(this.send, this.recv, this.opts);
    else this.comm.neighborAlltoallv(this.send, this.scounts, this.sdispls, this.recv, this.rcounts, this.rdispls, this.opts);
    this.unpack(p);
  }

  /**
   * The six face neighbours of `cart` (3-D, non-periodic) in neighbour-collective order (per
   * dimension the -1 then the +1 neighbour). Collective over `cart` (it agrees on the block).
   */
  static cart(cart: Communicator, box: Box, opts: CollOptions, heap: VectorHeap | null = null): Halo {
    const offsets: number[][] = [];
    const nbrs: number[] = [];
    for (let k = 0; k < 3; k++) {
      const { source, dest } = cart.shift(k, 1);
      const lo = [0, 0, 0];
      lo[k] = -1;
      const hi = [0, 0, 0];
      hi[k] = 1;
      offsets.push(lo, hi);
      nbrs.push(source, dest);
    }
    const [n0, n1, n2] = box.n;
    const maxFace = new Float64Array(1);
    cart.allreduce(Float64Array.of(Math.max(n1 * n2, n0 * n2, n0 * n1)), maxFace, 'max');
    const B = maxFace[0]!;
    const sendIdx = offsets.map((o, i) => (nbrs[i] === PROC_NULL ? new Int32Array(0) : sendRegion(box, o)));
    const recvIdx = offsets.map((o, i) => (nbrs[i] === PROC_NULL ? new Int32Array(0) : recvRegion(box, o)));
    const displs = offsets.map((_, i) => i * B);
    const counts = offsets.map(() => B);
    return new Halo(cart, sendIdx, recvIdx, displs, displs, counts, counts, 6 * B, 6 * B, true, opts, heap);
  }

  /**
   * The up to 26 neighbours (faces, edges, corners) of this rank's box on the process grid of
   * `box`, as a distributed graph over `world`. Collective over `world`: creates the graph.
   */
  static graph(world: Communicator, box: Box, opts: CollOptions, heap: VectorHeap | null = null): { halo: Halo; graph: Communicator } {
    const offsets: number[][] = [];
    const nbrs: number[] = [];
    for (let d0 = -1; d0 <= 1; d0++) {
      for (let d1 = -1; d1 <= 1; d1++) {
        for (let d2 = -1; d2 <= 1; d2++) {
          if (d0 === 0 && d1 === 0 && d2 === 0) continue;
          const r = rankAt(box.dims, [box.coords[0] + d0, box.coords[1] + d1, box.coords[2] + d2]);
          if (r < 0) continue;
          offsets.push([d0, d1, d2]);
          nbrs.push(r);
        }
      }
    }
    // Sources and destinations are the same list: the block to the neighbour at offset o is
    // our layer facing it, and the block from it fills our ghosts at o (it lists us at -o).
    const graph = world.distGraphCreateAdjacent(nbrs, nbrs);
    const sendIdx = offsets.map((o) => sendRegion(box, o));
    const recvIdx = offsets.map((o) => recvRegion(box, o));
    const scounts = sendIdx.map((x) => x.length);
    const rcounts = recvIdx.map((x) => x.length);
    const prefix = (c: number[]): number[] => {
      let at = 0;
      return c.map((x) => { const d = at; at += x; return d; });
    };
    const sum = (c: number[]): number => c.reduce((a, b) => a + b, 0);
    const halo = new Halo(graph, sendIdx, recvIdx, prefix(scounts), prefix(rcounts), scounts, rcounts, sum(scounts), sum(rcounts), false, opts, heap);
    return { halo, graph };
  }
}
