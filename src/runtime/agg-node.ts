/**
 * A node's side of the aggregation fabric (seed 003): the engine's bridge between `agg` calls
 * (sched/offload.ts hands it the node's folded contribution) and the fabric's client
 * (agg/client.ts), which feeds the node's leaf daemon and gets the result back.
 *
 * Groups. A communicator gets a fabric group on its first `agg` call: every node of it joins
 * under the same key (context id and lowest world rank, as the engines name communicators),
 * and the manager answers every member the same, so either all use the fabric or all fall back
 * to the engines' own exchange: the decision is collective, and logged once per communicator
 * with its reason. Calls that arrive while the join is pending wait for it, in order, so every
 * member issues a group's operations in the same order.
 *
 * Faults. When the group fails (a daemon, link or member node died; the fabric revokes it),
 * its pending calls complete with NBC_ERR_PEER_FAILED, and so does every later call on that
 * communicator: a node that has learnt of the failure cannot know which of its peers' next
 * calls were already sent into the dead group, so any other rule could pair different calls
 * or leave a peer waiting. As with a revoked MPI communicator (ULFM), the job recovers on a
 * new communicator (`comm.dup()`), which joins a fresh group or falls back, again collectively.
 */
import type { AggExchange } from '../sched/offload.js';
import { DONE_FABRIC, DONE_PEER_FAILED } from '../sched/offload.js';
import type { NodeLayout } from '../sched/two-level.js';

/** What the node needs of a fabric group (agg/client.ts AggGroup). */
export interface FabricGroup {
  readonly failed: Error | null;
  readonly ans: readonly number[];
  /** `done` gets the result's modelled arrival too (ticks; 0: none), which the ranks wait out. */
  reduce(data: Uint8Array, out: Uint8Array | null, op: number, dtype: number, root: number, done: (err: Error | null, arrive?: number) => void): void;
  leave(): void;
}

/** What the node needs of the fabric's client (agg/client.ts AggClient). */
export interface FabricClient {
  join(key: string, index: number, count: number, want?: { slots?: number }): Promise<FabricGroup | { refused: string }>;
  close(): void;
}

interface CommState {
  group: FabricGroup | null;
  /** Why the fabric does not serve this communicator (the collective answer), or null. */
  refused: string | null;
  /** The failure that revoked its group, or null. */
  failed: Error | null;
  /** Calls waiting for the join, in arrival order. */
  waiting: Array<() => void> | null;
}

const EMPTY = new Uint8Array(0);
/** A barrier travels as an empty sum of 32-bit integers (ops/loops.ts OpCode.sum, ops/dtype.ts DType.Int32). */
const BARRIER_OP = 0;
const BARRIER_DTYPE = 5;

export class AggNode {
  private readonly comms = new Map<string, CommState>();
  /** Counters for comm.stats() and logs. */
  readonly stats = { aggregated: 0, fellBack: 0, failed: 0 };

  /**
   * @param client the fabric's client, or null when this node could not reach the fabric
   *   (`unavailable` says why); every communicator then falls back, as the manager tells the
   *   other members once this node's join is overdue.
   */
  constructor(
    private readonly client: FabricClient | null,
    private readonly unavailable: string,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * OffloadHost.aggregate: one `agg` call's exchange among nodes. `done` gets the result's
   * modelled arrival under the emulated network (0: none): the engine passes it to the ranks,
   * which wait it out (sched/offload-client.ts); nothing on the way waits.
   */
  aggregate(key: string, layout: NodeLayout, x: AggExchange, fallback: () => void, done: (value: number, arrive?: number) => void): void {
    let st = this.comms.get(key);
    if (st === undefined) {
      st = { group: null, refused: null, failed: null, waiting: null };
      this.comms.set(key, st);
      this.join(key, st, layout);
    }
    if (st.waiting !== null) {
      st.waiting.push(() => this.aggregate(key, layout, x, fallback, done));
      return;
    }
    if (st.refused !== null) {
      this.stats.fellBack++;
      fallback();
      return;
    }
    const group = st.group!;
    const failure = st.failed ?? group.failed;
    if (failure !== null) {
      this.revoked(key, st, failure);
      this.stats.failed++;
      done(DONE_PEER_FAILED);
      return;
    }
    const root = x.coll === 'reduce' ? x.rootNode : -1;
    const out = x.coll === 'barrier' ? EMPTY : root < 0 || root === layout.me ? x.recv : null;
    const op = x.coll === 'barrier' ? BARRIER_OP : x.op;
    const dtype = x.coll === 'barrier' ? BARRIER_DTYPE : x.dtype;
    group.reduce(x.coll === 'barrier' ? EMPTY : x.send, out, op, dtype, root, (err, arrive) => {
      if (err === null) {
        this.stats.aggregated++;
        done(DONE_FABRIC, arrive ?? 0);
        return;
      }
      this.revoked(key, st, err);
      this.stats.failed++;
      done(DONE_PEER_FAILED);
    });
  }

  /** Leaves every group (the job ends). */
  close(): void {
    for (const st of this.comms.values()) st.group?.leave();
    this.comms.clear();
    this.client?.close();
  }

  private join(key: string, st: CommState, layout: NodeLayout): void {
    if (this.client === null) {
      this.decide(key, st, { refused: this.unavailable });
      return;
    }
    st.waiting = [];
    this.client.join(key, layout.me, layout.reps.length).then(
      (answer) => this.decide(key, st, answer),
      (err: unknown) => this.decide(key, st, { refused: `the join failed: ${(err as Error).message}` }),
    );
  }

  private decide(key: string, st: CommState, answer: FabricGroup | { refused: string }): void {
    if ('refused' in answer) {
      st.refused = answer.refused;
      this.log(`agg: communicator ${key} uses host algorithms among the nodes' engines: ${answer.refused}`);
    } else {
      st.group = answer;
    }
    const waiting = st.waiting ?? [];
    st.waiting = null;
    for (const call of waiting) call();
  }

  private revoked(key: string, st: CommState, err: Error): void {
    if (st.failed !== null) return;
    st.failed = err;
    this.log(`agg: communicator ${key} lost its fabric group: ${err.message}; its later agg calls fail with NBC_ERR_PEER_FAILED (a new communicator joins a fresh group)`);
  }
}
