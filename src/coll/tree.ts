/**
 * k-nomial trees over relative ranks (vr = (rank - root) mod p). A node's parent clears the
 * lowest non-zero base-k digit of vr; its children add j * k^i (j = 1..k-1) for every digit
 * position i below that digit. The subtree of child c = vr + j*k^i is the contiguous range
 * [c, min(c + k^i, p)): this is what lets reductions keep rank order and gathers keep blocks
 * contiguous. k = 2 is the binomial tree.
 */
export interface TreeNode {
  /** Parent's relative rank, -1 at the root. */
  parent: number;
  /** Children's relative ranks, ascending, and the size of each child's subtree. */
  children: number[];
  subtree: number[];
  /** Size of this node's own subtree. */
  size: number;
}

export function knomialNode(vr: number, p: number, k: number): TreeNode {
  let parent = -1;
  let limit = 1;
  // find the lowest non-zero digit: its weight bounds the children
  while (limit < p) {
    if (Math.floor(vr / limit) % k !== 0) {
      parent = vr - (Math.floor(vr / limit) % k) * limit;
      break;
    }
    limit *= k;
  }
  const children: number[] = [];
  const subtree: number[] = [];
  for (let w = 1; w < limit && w < p; w *= k) {
    for (let j = 1; j < k; j++) {
      const c = vr + j * w;
      if (c >= p) break;
      children.push(c);
      subtree.push(Math.min(w, p - c));
    }
  }
  // ascending order of relative rank
  const order = children.map((c, i) => [c, subtree[i]!] as const).sort((a, b) => a[0] - b[0]);
  const size = Math.min(vr === 0 ? p : limit, p - vr);
  return { parent, children: order.map((x) => x[0]), subtree: order.map((x) => x[1]), size };
}

export const toActual = (vr: number, root: number, p: number): number => (vr + root) % p;
export const toRelative = (rank: number, root: number, p: number): number => (rank - root + p) % p;
