/**
 * `--link latency=50us,bandwidth=1gbit[,switch=90ns]` and `--topology flat|fat-tree:radix=R`:
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
export const TOPOLOGY_HELP = 'where the emulated nodes sit: flat (one hop between any two, the default) or fat-tree:radix=R (R hosts per leaf switch, R children per switch; host to host crosses 2l-1 switches, l the level of their lowest common switch)';

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

/** `flat` or `fat-tree:radix=R`: hosts per leaf switch (0: flat). */
export function parseTopology(text: string | undefined): number {
  const t = (text ?? 'flat').trim();
  if (t === 'flat') return 0;
  const m = /^fat-tree:radix=(\d+)$/.exec(t);
  const radix = m === null ? NaN : Number(m[1]);
  if (!(radix >= 2)) {
    throw new NbcArgError(`Cannot parse --topology '${t}': expected flat or fat-tree:radix=R with R >= 2 hosts per leaf switch, e.g. fat-tree:radix=4`);
  }
  return radix;
}

/** The wire model of `--link` (a spec, a preset name or parsed) and `--topology`. */
export function wireModelOf(link: string | LinkSpec, topology?: string): WireModel {
  const spec = typeof link === 'string' ? parseLinkSpec(link) : link;
  return {
    latencyUs: spec.latencyUs ?? 0,
    bandwidthBytesPerSec: spec.bandwidthBytesPerSec ?? Infinity,
    switchUs: spec.switchUs ?? 0,
    radix: parseTopology(topology),
  };
}
