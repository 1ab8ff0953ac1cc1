/**
 * The aggregation fabric's group for one call in the simulator (seed 003; docs/agg.md): the
 * tree of aggregation nodes trimmed to the leaves of the call's nodes, the fragments a call
 * is cut into, the credit window, and the per-AN, per-fragment counters the engine
 * (engine.ts) advances as fragments go up and results come down.
 */
import type { Program } from './program.js';
import type { SimParams } from './params.js';

/** The fabric's group for one call: the tree trimmed to the nodes' leaves (docs/agg.md, placement). */
export class AggState {
  readonly frags: number;
  readonly window: number;
  /** Per AN: children in the group (member nodes at a leaf, child ANs above); busy-until. */
  readonly children: Int32Array;
  readonly anFree: Float64Array;
  /** Per (AN, fragment): copies arrived. */
  readonly count: Int32Array;
  readonly leafOf: Int32Array;
  /** Per node: links from the group root down to it. */
  readonly down: Int32Array;
  readonly sent: Int32Array;
  readonly got: Int32Array;
  readonly root: number;
  private readonly bytes: number;
  private readonly payload: number;

  constructor(prog: Program, params: SimParams) {
    const { radix: R, levels, payload, slots } = params.agg;
    this.bytes = prog.aggBytes;
    this.payload = Math.max(8, payload - (payload % 8)); // whole float64s
    this.frags = Math.max(1, Math.ceil(this.bytes / this.payload));
    this.window = Math.min(slots, this.frags);
    let ans = 0;
    let width = 1;
    for (let l = 0; l < levels; l++, width *= R) ans += width;
    const leaves = width / R;
    const firstLeaf = ans - leaves;
    const nodes = prog.nodes;
    this.children = new Int32Array(ans);
    this.anFree = new Float64Array(ans);
    this.count = new Int32Array(ans * this.frags);
    this.leafOf = new Int32Array(nodes);
    const used = new Uint8Array(ans);
    for (let k = 0; k < nodes; k++) {
      // Node n attaches to leaf floor(n / radix) mod leaves (docs/agg.md).
      const leaf = firstLeaf + (Math.floor(k / R) % leaves);
      this.leafOf[k] = leaf;
      this.children[leaf]!++;
      // Mark the path up; a parent counts a child AN once.
      for (let a = leaf; a > 0 && used[a] === 0; a = (a - 1) / R | 0) {
        used[a] = 1;
        this.children[(a - 1) / R | 0]!++;
      }
      used[0] = 1;
    }
    // The group root: the lowest AN whose subtree holds every member's leaf.
    let root = 0;
    while (root < firstLeaf && this.children[root] === 1) {
      let only = -1;
      for (let c = root * R + 1; c <= root * R + R; c++) if (used[c] === 1) only = c;
      root = only;
    }
    this.root = root;
    const depth = (a: number): number => {
      let d = 0;
      for (; a > 0; a = (a - 1) / R | 0) d++;
      return d;
    };
    this.down = new Int32Array(nodes);
    const rootDepth = depth(root);
    for (let k = 0; k < nodes; k++) this.down[k] = depth(this.leafOf[k]!) - rootDepth + 1;
    this.sent = new Int32Array(nodes);
    this.got = new Int32Array(nodes);
  }

  begin(k: number): void {
    this.sent[k] = this.window;
  }

  fragBytes(f: number): number {
    return f < this.frags - 1 ? this.payload : this.bytes - f * this.payload;
  }
}
