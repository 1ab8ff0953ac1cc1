/**
 * The offload executor (seed 000, CORE-Direct): the node engine runs ranks' schedules by
 * itself, so a rank that computes without calling into nbcoll still finds its collective
 * complete. It runs the very schedules the host executor runs, with the same rounds, DAG
 * dependencies, fold order and tags, so results are bitwise identical.
 *
 * Messages of offloaded schedules never touch the ranks' rings:
 * - both ends on this node: the engine matches the send with the receive and copies the bytes
 *   from one rank's region into the other's (both live in the node's shared memory);
 * - the receiver on another node: an engine-to-engine frame, matched there the same way.
 * Matching is by (destination world rank, context, tag + sub-tag, source rank in the
 * communicator), first in first out, exactly as the transport matches: so offloaded and
 * host-executed schedules exchange the same messages.
 *
 * Completion: the engine stores 1 (or 2 on error) into the request's completion word in the
 * rank's arena slice and rings the rank's doorbell. Core code: no node:* imports.
 */
import type { DType } from '../ops/dtype.js';
import { reduceRegions } from '../ops/regions.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, RECV, SEND, type Schedule } from './schedule.js';
import { nodeLayout, planTwoLevel, type InterNodeColl, type InterNodeShape, type Member, type NodeLayout, type TwoLevelCall } from './two-level.js';

/** Header of an offload frame between engines (Int32 words). */
export const OF_DST = 0;
export const OF_CTX = 1;
export const OF_TAG = 2;
export const OF_SRC = 3;
export const OF_TOTAL = 4;
export const OF_OFFSET = 5;
export const OF_ID = 6;
export const OF_WORDS = 8;
export const OF_BYTES = OF_WORDS * 4;
/** Largest payload of one offload frame (larger messages travel in pieces). */
export const OF_FRAGMENT = 1 << 20;

/** Completion word values. */
export const DONE_OK = 1;
export const DONE_ERROR = 2;

/** What the offload executor needs of its engine. */
export interface OffloadHost {
  nodeId: number;
  nodeOfRank: Int32Array;
  /** Byte views of every arena slice of this node. */
  slices: Uint8Array[];
  /** Sends one frame (header + payload) to another node's engine; `onWritten` once it left. */
  sendFrame(node: number, header: Int32Array, payload: Uint8Array, onWritten: () => void): void;
  /** The schedule the engines of a two-level collective run among themselves (one per node). */
  interNode(coll: InterNodeColl, s: InterNodeShape): Schedule;
  /** Stores `value` into the completion word at (slice, offset) and wakes rank endpoint `ep`. */
  complete(ep: number, slice: number, offset: number, value: number): void;
}

/** A region descriptor: arena slice, byte offset, bytes. */
export interface RegionRef {
  slice: number;
  offset: number;
  bytes: number;
}

interface Exec {
  ep: number;
  sched: Schedule;
  worldRanks: Int32Array;
  rank: number;
  ctx: number;
  tag: number;
  bufs: [Uint8Array, Uint8Array, Uint8Array];
  state: Int8Array;
  /** Rounds mode: the round in progress. */
  round: number;
  remaining: number;
  done: boolean;
  slotSlice: number;
  slotOffset: number;
  /** Engine-level schedules (two-level designs) report here instead of a completion word. */
  onDone?: (ok: boolean) => void;
}

interface TwoLevelPost extends Member {
  ep: number;
  slotSlice: number;
  slotOffset: number;
}

interface Waiting {
  exec: Exec;
  action: number;
  view: Uint8Array;
}

const STARTED = 1;
const FINISHED = 2;

export class OffloadEngine {
  private readonly schedules = new Map<string, Schedule>();
  private readonly comms = new Map<string, Int32Array>();
  private readonly posted = new Map<string, Waiting[]>();
  private readonly localSends = new Map<string, Waiting[]>();
  private readonly arrived = new Map<string, Uint8Array[]>();
  private readonly assembling = new Map<string, { data: Uint8Array; got: number }>();
  private readonly dirty: Exec[] = [];
  /** Two-level collectives waiting for the rest of their node's members. */
  private readonly groups = new Map<string, TwoLevelPost[]>();
  private readonly layouts = new WeakMap<Int32Array, NodeLayout>();
  private draining = false;
  private nextFrameId = 1;

  constructor(private readonly host: OffloadHost) {}

  registerSchedule(ep: number, id: number, sched: Schedule): void {
    this.schedules.set(`${ep}:${id}`, sched);
  }

  registerComm(ep: number, ctx: number, worldRanks: Int32Array): void {
    this.comms.set(`${ep}:${ctx}`, worldRanks);
  }

  /** Starts rank endpoint `ep`'s schedule `id` on its communicator `ctx`. */
  post(ep: number, id: number, ctx: number, rank: number, tag: number, send: RegionRef, recv: RegionRef, tmp: RegionRef,
    slotSlice: number, slotOffset: number): void {
    const sched = this.schedules.get(`${ep}:${id}`);
    const worldRanks = this.comms.get(`${ep}:${ctx}`);
    if (sched === undefined || worldRanks === undefined) {
      this.host.complete(ep, slotSlice, slotOffset, DONE_ERROR);
      return;
    }
    const view = (r: RegionRef): Uint8Array => this.host.slices[r.slice]!.subarray(r.offset, r.offset + r.bytes);
    const exec: Exec = {
      ep, sched, worldRanks, rank, ctx, tag, bufs: [view(send), view(recv), view(tmp)],
      state: new Int8Array(sched.nActions), round: 0, remaining: sched.nActions, done: false, slotSlice, slotOffset,
    };
    this.dirty.push(exec);
    this.drain();
  }

  /**
   * A two-level collective (sched/two-level.ts): each member of the node posts its buffers;
   * once every member of the communicator on this node has posted, the engine plans the call,
   * runs the engines' exchange (one participant per node, on the context -ctx-1, addressed to
   * each node's lowest member) and writes every local member's result. No rank does leader
   * work.
   */
  postTwoLevel(ep: number, ctx: number, rank: number, tag: number, send: RegionRef, recv: RegionRef,
    call: TwoLevelCall, slotSlice: number, slotOffset: number): void {
    const worldRanks = this.comms.get(`${ep}:${ctx}`);
    if (worldRanks === undefined) {
      this.host.complete(ep, slotSlice, slotOffset, DONE_ERROR);
      return;
    }
    let layout = this.layouts.get(worldRanks);
    if (layout === undefined) {
      layout = nodeLayout(worldRanks, this.host.nodeOfRank, this.host.nodeId);
      this.layouts.set(worldRanks, layout);
    }
    // Disjoint communicators from one split share a context id: the first member tells them apart.
    const key = `${ctx}:${tag}:${worldRanks[0]}`;
    let g = this.groups.get(key);
    if (g === undefined) {
      g = [];
      this.groups.set(key, g);
    }
    const view = (r: RegionRef): Uint8Array => this.host.slices[r.slice]!.subarray(r.offset, r.offset + r.bytes);
    g.push({ ep, rank, call, send: view(send), recv: view(recv), slotSlice, slotOffset });
    if (g.length < layout.members[layout.me]!.length) return;
    this.groups.delete(key);
    const posts = g.sort((a, b) => a.rank - b.rank);
    const plan = planTwoLevel(layout, posts);
    const finish = (ok: boolean): void => {
      const good = ok && plan.ok;
      if (good) plan.finish();
      for (const p of posts) this.host.complete(p.ep, p.slotSlice, p.slotOffset, good ? DONE_OK : DONE_ERROR);
    };
    const inter = plan.inter;
    if (inter === null) {
      finish(true);
      return;
    }
    const sched = this.host.interNode(inter.coll, inter.shape);
    const exec: Exec = {
      ep: -1, sched, worldRanks: layout.reps, rank: layout.me, ctx: -ctx - 1, tag,
      bufs: [inter.send, inter.recv, new Uint8Array(sched.tmpBytes)], state: new Int8Array(sched.nActions), round: 0,
      remaining: sched.nActions, done: false, slotSlice: -1, slotOffset: -1, onDone: finish,
    };
    this.dirty.push(exec);
    this.drain();
  }

  /** A frame of an offloaded message from another node's engine. */
  onFrame(from: number, header: Int32Array, payload: Uint8Array): void {
    const total = header[OF_TOTAL]!;
    const key = keyOf(header[OF_DST]!, header[OF_CTX]!, header[OF_TAG]!, header[OF_SRC]!);
    let data: Uint8Array;
    if (total === payload.byteLength && header[OF_OFFSET] === 0) {
      data = payload;
    } else {
      const id = `${from}:${header[OF_ID]}`;
      let a = this.assembling.get(id);
      if (a === undefined) {
        a = { data: new Uint8Array(total), got: 0 };
        this.assembling.set(id, a);
      }
      a.data.set(payload, header[OF_OFFSET]!);
      a.got += payload.byteLength;
      if (a.got < total) return;
      this.assembling.delete(id);
      data = a.data;
    }
    const q = this.posted.get(key);
    const w = q?.shift();
    if (w !== undefined) {
      if (q!.length === 0) this.posted.delete(key);
      this.deliver(w, data);
    } else {
      push(this.arrived, key, data === payload ? payload.slice() : data);
    }
    this.drain();
  }

  private deliver(w: Waiting, data: Uint8Array): void {
    if (data.byteLength !== w.view.byteLength) {
      this.fail(w.exec);
      return;
    }
    w.view.set(data);
    this.finish(w.exec, w.action);
  }

  private region(e: Exec, buf: number, off: number, bytes: number): Uint8Array {
    const b = buf === SEND ? e.bufs[0] : buf === RECV ? e.bufs[1] : e.bufs[2];
    return b.subarray(off, off + bytes);
  }

  /** Starts action i; local actions finish at once. */
  private start(e: Exec, i: number): void {
    const s = e.sched;
    e.state[i] = STARTED;
    const kind = s.kind[i]!;
    const a = this.region(e, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!);
    if (kind === A_SEND) {
      const dstWorld = e.worldRanks[s.peer[i]!]!;
      const tag = e.tag + s.sub[i]!;
      if (this.host.nodeOfRank[dstWorld] === this.host.nodeId) {
        const key = keyOf(dstWorld, e.ctx, tag, e.rank);
        const q = this.posted.get(key);
        const w = q?.shift();
        if (w !== undefined) {
          if (q!.length === 0) this.posted.delete(key);
          this.deliver(w, a);
          this.finish(e, i);
        } else {
          push(this.localSends, key, { exec: e, action: i, view: a });
        }
      } else {
        this.sendRemote(e, i, dstWorld, tag, a);
      }
      return;
    }
    if (kind === A_RECV) {
      const myWorld = e.worldRanks[e.rank]!;
      const key = keyOf(myWorld, e.ctx, e.tag + s.sub[i]!, s.peer[i]!);
      const waiting: Waiting = { exec: e, action: i, view: a };
      const ls = this.localSends.get(key);
      const sender = ls?.shift();
      if (sender !== undefined) {
        if (ls!.length === 0) this.localSends.delete(key);
        this.deliver(waiting, sender.view);
        this.finish(sender.exec, sender.action);
        return;
      }
      const ar = this.arrived.get(key);
      const data = ar?.shift();
      if (data !== undefined) {
        if (ar!.length === 0) this.arrived.delete(key);
        this.deliver(waiting, data);
        return;
      }
      push(this.posted, key, waiting);
      return;
    }
    if (kind === A_REDUCE) {
      const dt = s.dtype[i]! as DType;
      reduceRegions(s.peer[i]!, dt, a, this.region(e, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!));
    } else if (kind === A_COPY) {
      this.region(e, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!).set(a);
    }
    this.finish(e, i);
  }

  private sendRemote(e: Exec, i: number, dstWorld: number, tag: number, data: Uint8Array): void {
    const node = this.host.nodeOfRank[dstWorld]!;
    const id = this.nextFrameId++;
    const total = data.byteLength;
    let left = Math.max(1, Math.ceil(total / OF_FRAGMENT));
    for (let off = 0; off < total || (total === 0 && off === 0); off += OF_FRAGMENT) {
      const n = Math.min(OF_FRAGMENT, total - off);
      const h = new Int32Array(OF_WORDS);
      h[OF_DST] = dstWorld;
      h[OF_CTX] = e.ctx;
      h[OF_TAG] = tag;
      h[OF_SRC] = e.rank;
      h[OF_TOTAL] = total;
      h[OF_OFFSET] = off;
      h[OF_ID] = id;
      // The region stays untouched until the send action finishes, which is after the write.
      this.host.sendFrame(node, h, data.subarray(off, off + n), () => {
        if (--left === 0) {
          this.finish(e, i);
          this.drain();
        }
      });
      if (total === 0) break;
    }
  }

  private finish(e: Exec, i: number): void {
    if (e.state[i] === FINISHED) return;
    e.state[i] = FINISHED;
    e.remaining--;
    this.dirty.push(e);
  }

  private fail(e: Exec): void {
    if (e.done) return;
    e.done = true;
    if (e.onDone !== undefined) e.onDone(false);
    else this.host.complete(e.ep, e.slotSlice, e.slotOffset, DONE_ERROR);
  }

  /** Advances every execution that something happened to (iteratively: no deep recursion). */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      let e: Exec | undefined;
      while ((e = this.dirty.pop()) !== undefined) this.advance(e);
    } finally {
      this.draining = false;
    }
  }

  private advance(e: Exec): void {
    if (e.done) return;
    const s = e.sched;
    if (s.isDag) {
      const depStart = s.depStart!;
      const deps = s.deps!;
      for (let i = 0; i < s.nActions; i++) {
        if (e.state[i] !== 0) continue;
        let ready = true;
        for (let d = depStart[i]!; d < depStart[i + 1]!; d++) {
          if (e.state[deps[d]!] !== FINISHED) {
            ready = false;
            break;
          }
        }
        if (ready) this.start(e, i);
      }
    } else {
      for (;;) {
        const r = e.round;
        if (r >= s.nRounds) break;
        let open = false;
        for (let i = s.rounds[r]!; i < s.rounds[r + 1]!; i++) {
          if (e.state[i] === 0) this.start(e, i);
          if (e.state[i] !== FINISHED) open = true;
        }
        if (open) break;
        e.round++;
      }
    }
    if (e.remaining === 0 && !e.done) {
      e.done = true;
      if (e.onDone !== undefined) e.onDone(true);
      else this.host.complete(e.ep, e.slotSlice, e.slotOffset, DONE_OK);
    }
  }
}

function keyOf(dstWorld: number, ctx: number, tag: number, src: number): string {
  return `${dstWorld}:${ctx}:${tag}:${src}`;
}

function push<T>(m: Map<string, T[]>, key: string, v: T): void {
  const q = m.get(key);
  if (q === undefined) m.set(key, [v]);
  else q.push(v);
}
