/**
 * Where a group lives in the fabric's tree, as pure functions of the tree and its members: the
 * leaf each member feeds, the trimmed subtree the group uses (the lowest AN whose subtree holds
 * every member's leaf, and the paths below it), and the configuration each AN of the group is
 * sent. The manager (manager.ts) decides when; this module decides where.
 */
import { defaultLeaf, leafCount, levelStart, parentOf, pathToRoot, type Ctrl, type TreeShape } from './wire.js';

/** A member as placement sees it: its index in the group, its node, the leaf AN it feeds. */
export interface PlacedMember {
  index: number;
  node: number;
  an: number;
}

/** What an AN's configuration needs of a group. */
export interface PlacedGroup {
  id: number;
  epoch: number;
  job: { index: number };
  slots: number;
  members: readonly PlacedMember[];
  /** Every AN of the group, sorted. */
  ans: readonly number[];
  root: number;
}

/** The leaf a node uses: its default leaf when alive, else the next live leaf; null when none is. */
export function liveLeaf(shape: TreeShape, node: number, alive: (an: number) => boolean): number | null {
  const first = levelStart(shape.radix, shape.levels - 1);
  const leaves = leafCount(shape);
  const d = defaultLeaf(shape, node) - first;
  for (let k = 0; k < leaves; k++) {
    const id = first + ((d + k) % leaves);
    if (alive(id)) return id;
  }
  return null;
}

/** The trimmed tree over the members' leaves: its root, and every AN on a path below it (sorted). */
export function trimToMembers(radix: number, leaves: readonly number[]): { root: number; ans: number[] } {
  const paths = [...new Set(leaves)].map((leaf) => pathToRoot(radix, leaf).reverse());
  let depth = 0;
  while (paths.every((p) => p[depth + 1] !== undefined && p[depth + 1] === paths[0]![depth + 1])) depth++;
  const root = paths[0]![depth]!;
  const ans = [...new Set(paths.flatMap((p) => p.slice(depth)))].sort((a, b) => a - b);
  return { root, ans };
}

/**
 * The configuration AN `a` needs for group `g`: its children in fixed order (members by index at
 * a leaf, child ANs by id above), and under which child each member lies (-1: not below `a`).
 */
export function groupConfig(radix: number, g: PlacedGroup, a: number): Ctrl {
  const children: Ctrl[] = [];
  const under: number[] = [];
  const direct = g.members.filter((m) => m.an === a);
  if (direct.length > 0) {
    for (const m of direct) children.push({ t: 'member', member: m.index, node: m.node });
    for (const m of g.members) under.push(direct.indexOf(m));
  } else {
    const kids = g.ans.filter((x) => parentOf(radix, x) === a);
    for (const k of kids) children.push({ t: 'an', an: k });
    for (const m of g.members) {
      const path = pathToRoot(radix, m.an);
      const i = path.indexOf(a);
      under.push(i <= 0 ? -1 : kids.indexOf(path[i - 1]!));
    }
  }
  return {
    t: 'group', id: g.id, epoch: g.epoch, job: g.job.index, slots: g.slots, count: g.members.length,
    hasParent: a !== g.root, children, under,
  };
}

/**
 * Why a fabric of `shape` cannot sit at the switches of a fat tree of `radix` hosts per leaf
 * switch (`--topology fat-tree:radix=R`) over `nodes` nodes, or null. It can when its radix is
 * R, so that node n's leaf daemon is the one of leaf switch floor(n / R) (defaultLeaf) and each
 * daemon's children are the switches below it, and when it has a leaf daemon for every leaf
 * switch the nodes use (else nodes of different switches would share one).
 */
export function fatTreeMismatch(shape: TreeShape, radix: number, nodes: number): string | null {
  if (shape.radix !== radix) {
    return `the fabric's radix ${shape.radix} is not the fat tree's ${radix}; expected radix=${radix}, so that each daemon sits at a switch`;
  }
  const switches = Math.ceil(nodes / radix);
  if (leafCount(shape) < switches) {
    let levels = 1;
    while (radix ** (levels - 1) < switches) levels++;
    return `${nodes} nodes sit under ${switches} leaf switches, but ${shape.levels} levels of radix ${radix} have ` +
      `${leafCount(shape)} leaf daemons; expected levels=${levels} or more`;
  }
  return null;
}
