/**
 * `--link latency=50us,bandwidth=1gbit[,switch=90ns]` and `--topology flat|fat-tree:radix=R[,levels=L]`:
 * the emulated network between nodes (p2p/wire.ts models it; docs/wire.md).
 * Latency and switch take ns, us, ms or s; bandwidth takes bit/s or byte/s units (kbit, mbit,
 * gbit, KB, MB, GB per second; `1gbit` is 1e9 bit/s). A preset name stands for its spec.
 */
import { NbcArgError } from '../errors.js';
import type { WireModel } from '../p2p/wire.js';

export interface LinkSpec {
  /** One way between two hosts on one switch (flat: any two), us. */
  latencyUs?: number;
  bandwidthBytesPerSec?: number;
  /** Each further switch hop in a fat tree, us. */
  switchUs?: number;
}

const TIME: Record<string, number> = { ns: 1e-3, us: 1, ms: 1e3, s: 1e6 };
const RATE: Record<string, number> = {
  bit: 1 / 8, kbit: 1e3 / 8, mbit: 1e6 / 8, gbit: 1e9 / 8,
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9,
};

/** The named networks of `--link`, each the network of a seed's measurements. */
export const LINK_PRESETS: Readonly<Record<string, string>> = {
  // Seeds 001 and 002 (odin, Gigabit Ethernet beside InfiniBand): 1 Gbit/s is the standard's
  // rate; 50 us one way is TCP over Gigabit Ethernet of that period (the seeds give no figure).
  gige: 'latency=50us,bandwidth=1gbit',
  // Seed 000, section II-A: InfiniBand QDR with ConnectX-2, "36 Gbps end-to-end bandwidth and
  // about 1.0 to 1.5 us latency" (the upper end taken).
  ib: 'latency=1.5us,bandwidth=36gbit,switch=0.1us',
  // Seed 003, section V: 100 Gb/s EDR, SwitchIB-2 switches (36 ports) in a two-level fat tree,
  // ConnectX-4 adapters. 0.09 us per switch is SwitchIB-2's port-to-port latency (Mellanox's
  // product brief); 0.7 us host to host on one switch, ConnectX-4's (the seed gives neither).
  edr: 'latency=0.7us,bandwidth=100gbit,switch=0.09us',
  // Seed 004: multicore nodes on InfiniBand 4x DDR: 20 Gb/s signalling, 16 Gb/s of data after
  // 8b/10b coding; 3 us one way, MVAPICH on DDR adapters of that period (the seed gives none).
  ddr: 'latency=3us,bandwidth=16gbit,switch=0.2us',
};

/** How `--topology` is described in help texts. */
export const TOPOLOGY_HELP = 'where the emulated nodes sit: flat (one hop between any two, the default) or fat-tree:radix=R[,levels=L] (R hosts per leaf switch, R children per switch, L levels holding R^L hosts; host to host crosses 2l-1 switches, l the level of their lowest common switch); needs --link';

/** How `--link` is described in help texts. */
export const LINK_HELP = `emulated network between nodes, on every transport: ${Object.entries(LINK_PRESETS).map(([k, v]) => `${k} = ${v}`).join('; ')}; or latency=..,bandwidth=..[,switch=..]`;

/** `gige`, `ib` or a spec (`latency=..,bandwidth=..`), as a spec. */
export function linkSpecOf(link: string): string {
  return LINK_PRESETS[link.trim()] ?? link;
}

export function parseLinkSpec(text: string): LinkSpec {
  text = linkSpecOf(text);
  const spec: LinkSpec = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [key, value = ''] = part.split('=').map((s) => s.trim());
    const m = /^([0-9]*\.?[0-9]+)\s*([a-zA-Z/]*)$/.exec(value);
    if (m === null) throw bad(part);
    const n = Number(m[1]);
    const unit = m[2]!.toLowerCase().replace(/\/s$|ps$/, '');
    if (key === 'latency') {
      const f = TIME[unit || 'us'];
      if (f === undefined) throw bad(part);
      spec.latencyUs = n * f;
    } else if (key === 'switch') {
      const f = TIME[unit || 'us'];
      if (f === undefined) throw bad(part);
      spec.switchUs = n * f;
    } else if (key === 'bandwidth') {
      const f = RATE[unit || 'b'];
      if (f === undefined || n <= 0) throw bad(part);
      spec.bandwidthBytesPerSec = n * f;
    } else {
      throw bad(part);
    }
  }
  return spec;
}

function bad(part: string): NbcArgError {
  return new NbcArgError(
    `Cannot parse link setting '${part}': expected ${Object.keys(LINK_PRESETS).join(' or ')}, or latency=<n>(ns|us|ms|s) ` +
    `and bandwidth=<n>(bit|kbit|mbit|gbit|B|KB|MB|GB), optionally switch=<n>(ns|us), e.g. --link latency=50us,bandwidth=1gbit`);
}

/** Where the emulated nodes sit: `radix` hosts per leaf switch (0: flat), and how many levels of switches (null: as many as the nodes need). */
export interface WireTopology {
  radix: number;
  levels: number | null;
}

function badTopology(t: string, why: string): NbcArgError {
  return new NbcArgError(`Cannot parse --topology '${t}': ${why}; expected flat or fat-tree:radix=R[,levels=L] with R >= 2 hosts per leaf switch and L >= 1 levels, e.g. fat-tree:radix=4,levels=2`);
}

/** `flat` or `fat-tree:radix=R[,levels=L]` (the two settings in either order). */
export function parseTopology(text: string | undefined): WireTopology {
  const t = (text ?? 'flat').trim();
  if (t === 'flat') return { radix: 0, levels: null };
  if (!t.startsWith('fat-tree:')) throw badTopology(t, 'unknown kind');
  const settings = new Map<string, number>();
  for (const part of t.slice('fat-tree:'.length).split(',')) {
    const m = /^\s*(radix|levels)\s*=\s*(\d+)\s*$/.exec(part);
    if (m === null) throw badTopology(t, `cannot read '${part.trim()}'`);
    if (settings.has(m[1]!)) throw badTopology(t, `${m[1]} given twice`);
    settings.set(m[1]!, Number(m[2]));
  }
  const radix = settings.get('radix');
  if (radix === undefined) throw badTopology(t, 'radix missing');
  if (radix < 2) throw badTopology(t, `radix ${radix} is below 2`);
  const levels = settings.get('levels') ?? null;
  if (levels !== null && levels < 1) throw badTopology(t, `levels ${levels} is below 1`);
  return { radix, levels };
}

/**
 * Checks `--topology` against the job: it needs `--link` (it places nodes on the emulated
 * network), and a fat tree of L levels holds R^L hosts, which the job's `nodes` must fit in.
 */
export function checkTopology(topology: string | undefined, link: unknown, nodes?: number): void {
  if (topology === undefined) return;
  if (link === undefined || link === null) {
    throw new NbcArgError(`Cannot use --topology ${topology} without --link: the topology places nodes on the emulated network, which --link describes (e.g. --link ib --topology ${topology})`);
  }
  const topo = parseTopology(topology);
  if (nodes === undefined || topo.levels === null) return;
  const hosts = topo.radix ** topo.levels;
  if (nodes > hosts) {
    throw new NbcArgError(`Cannot place ${nodes} nodes on --topology ${topology}: a fat tree of ${topo.levels} level(s) of radix ${topo.radix} holds ${hosts} hosts; raise levels or radix, or drop levels=`);
  }
}

/** The wire model of `--link` (a spec, a preset name or parsed) and `--topology`. */
export function wireModelOf(link: string | LinkSpec, topology?: string, nodes?: number): WireModel {
  const spec = typeof link === 'string' ? parseLinkSpec(link) : link;
  checkTopology(topology, link, nodes);
  return {
    latencyUs: spec.latencyUs ?? 0,
    bandwidthBytesPerSec: spec.bandwidthBytesPerSec ?? Infinity,
    switchUs: spec.switchUs ?? 0,
    radix: parseTopology(topology).radix,
  };
}
