/**
 * The shared memory of one node: created by the engine, handed to each rank worker through
 * workerData, attached to by both. See layout.ts for what lives where.
 */
import { NbcLaunchError } from '../errors.js';
import { controlBytes, endpointWord, kDoorbell, kSleeping, kWaiting, kWakeFd, ringBase, RING_HEADER_BYTES } from './layout.js';

export interface NodeLayout {
  /** Ranks on this node; endpoint `ranks` is the engine. */
  ranks: number;
  ringBytes: number;
  sliceBytes: number;
}

export interface NodeShared {
  layout: NodeLayout;
  control: SharedArrayBuffer;
  rings: SharedArrayBuffer;
  /** One arena slice per endpoint (ranks, then the engine). */
  slices: SharedArrayBuffer[];
  /**
   * Per slice, the shared WebAssembly memory it is the buffer of, or null for a plain
   * SharedArrayBuffer (no WebAssembly, `NBC_WASM=0`, a size that is no whole number of pages).
   * Reductions between regions of one such slice run in WebAssembly (ops/folds.ts). A thread
   * that attaches calls `adoptSliceMemories` before it makes views of the slices.
   */
  memories?: Array<SliceMemory | null>;
}

/** A shared WebAssembly memory, as far as the shared memory's code needs it. */
export interface SliceMemory {
  readonly buffer: SharedArrayBuffer;
}

interface SliceMemoryApi {
  Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => SliceMemory;
}

export const DEFAULT_RING_BYTES = 64 * 1024;
export const DEFAULT_SLICE_BYTES = 256 * 1024 * 1024;

/**
 * Why a node of `ranks` ranks cannot have rings of `ringBytes`, or null: the rings of every
 * endpoint pair live in one SharedArrayBuffer addressed by 32-bit offsets, so they must stay
 * below 2 GiB (with 64 KiB rings, 179 ranks per node).
 */
export function nodeSizeProblem(ranks: number, ringBytes = DEFAULT_RING_BYTES): string | null {
  const per = RING_HEADER_BYTES + ringBytes;
  const max = Math.floor(Math.sqrt(RINGS_LIMIT_BYTES / per)) - 1;
  if (ranks <= max) return null;
  const gib = ((ranks + 1) ** 2 * per / 2 ** 30).toFixed(1);
  return `${ranks} ranks on one node need ${gib} GiB of shared-memory rings (${ringBytes >> 10} KiB for each pair of endpoints), ` +
    `beyond the 2 GiB one node can address; expected at most ${max} ranks per node (--ppn), or smaller rings (NBC_RING_KB)`;
}

/** The rings' limit: offsets in them are 32-bit signed byte offsets. */
const RINGS_LIMIT_BYTES = 2 ** 31 - 1;

/**
 * The node's shared memory. `wasmSlices`: make each slice a shared WebAssembly memory, so that
 * reductions within one run in WebAssembly (the runtime passes false for `NBC_WASM=0`).
 */
export function createNodeShared(layout: NodeLayout, wasmSlices = true): NodeShared {
  const problem = nodeSizeProblem(layout.ranks, layout.ringBytes);
  if (problem !== null) throw new NbcLaunchError(`Cannot start the node: ${problem}`);
  const endpoints = layout.ranks + 1;
  const control = new SharedArrayBuffer(controlBytes(endpoints));
  const rings = new SharedArrayBuffer(endpoints * endpoints * (RING_HEADER_BYTES + layout.ringBytes));
  // Shared memories are committed lazily by the OS: an untouched slice costs no memory.
  const slices: SharedArrayBuffer[] = [];
  const memories: Array<SliceMemory | null> = [];
  for (let e = 0; e < endpoints; e++) {
    const memory = wasmSlices ? sliceMemory(layout.sliceBytes) : null;
    memories.push(memory);
    slices.push(memory === null ? new SharedArrayBuffer(layout.sliceBytes) : memory.buffer);
  }
  return { layout, control, rings, slices, memories };
}

const WASM_PAGE = 65536;

/** A shared WebAssembly memory of `bytes`, or null where there cannot be one. */
function sliceMemory(bytes: number): SliceMemory | null {
  const wa = (globalThis as { WebAssembly?: SliceMemoryApi }).WebAssembly;
  if (wa === undefined || bytes === 0 || bytes % WASM_PAGE !== 0) return null;
  const pages = bytes / WASM_PAGE;
  try {
    return new wa.Memory({ initial: pages, maximum: pages, shared: true });
  } catch {
    return null; // no shared memories here (a runtime without them), or no address space left: a plain one
  }
}

/**
 * Makes this thread address each slice through its WebAssembly memory's own buffer (a memory
 * and a buffer cloned into a thread apart are two objects there, and ops/folds.ts knows a
 * memory by its buffer). Call before making any view of `shared.slices`.
 */
export function adoptSliceMemories(shared: NodeShared): void {
  const memories = shared.memories;
  if (memories === undefined) return;
  for (let e = 0; e < memories.length; e++) {
    const memory = memories[e];
    if (memory !== null && memory !== undefined) shared.slices[e] = memory.buffer;
  }
}

export function ringOffset(shared: NodeShared, from: number, to: number): number {
  return ringBase(from, to, shared.layout.ranks + 1, shared.layout.ringBytes);
}

/**
 * A reader of the node's kWaiting counts: each call says whether a rank of the node took a
 * yielding wait step since this reader's previous call (its own view; other readers are not
 * disturbed).
 */
export function waitWatcher(control: Int32Array, ranks: number): () => boolean {
  const seen = new Int32Array(ranks);
  return () => {
    let waited = false;
    for (let r = 0; r < ranks; r++) {
      const n = Atomics.load(control, endpointWord(r, kWaiting));
      if (n !== seen[r]) {
        seen[r] = n;
        waited = true;
      }
    }
    return waited;
  };
}

/**
 * Wakes endpoint `ep` if it is parked (or about to park). Producers call this after
 * publishing. The doorbell is only bumped when the endpoint sleeps, which keeps the common
 * spinning case free of read-modify-write traffic. Why no wake-up is lost: the sleeper stores
 * kSleeping = 1, then reads the doorbell, then re-checks its rings, then waits on the value
 * it read. If our load of kSleeping saw 0, the sleeper's store came later in the single
 * total order of seq-cst atomics, so its ring re-check sees what we published before. If we
 * saw 1, we bump the doorbell, so its wait either sees a changed value or gets our notify.
 */
export function wake(control: Int32Array, ep: number): void {
  if (Atomics.load(control, endpointWord(ep, kSleeping)) !== 0) ringDoorbell(control, ep);
}

/** Rings endpoint `ep`'s doorbell unconditionally: the futex, and its eventfd where it has one. */
export function ringDoorbell(control: Int32Array, ep: number): void {
  Atomics.add(control, endpointWord(ep, kDoorbell), 1);
  Atomics.notify(control, endpointWord(ep, kDoorbell));
  const fd = Atomics.load(control, endpointWord(ep, kWakeFd));
  if (fd !== 0 && signalFd !== null) signalFd(fd);
}

let signalFd: ((fd: number) => void) | null = null;

/**
 * Gives this thread the means to ring an eventfd (the native addon's), so its wakes reach
 * ranks that sleep on their UCX worker. Every thread of a node whose ranks use UCX calls it.
 */
export function setFdSignal(fn: ((fd: number) => void) | null): void {
  signalFd = fn;
}
