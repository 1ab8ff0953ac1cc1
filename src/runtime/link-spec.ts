/**
 * `--link latency=50us,bandwidth=1gbit`: the emulated network between nodes.
 * Latency takes ns, us, ms or s; bandwidth takes bit/s or byte/s units (kbit, mbit, gbit,
 * KB, MB, GB per second; `1gbit` is 1e9 bit/s). A preset name (`gige`, `ib`) stands for its spec.
 */
import { NbcArgError } from '../errors.js';

export interface LinkSpec {
  latencyUs?: number;
  bandwidthBytesPerSec?: number;
}

const TIME: Record<string, number> = { ns: 1e-3, us: 1, ms: 1e3, s: 1e6 };
const RATE: Record<string, number> = {
  bit: 1 / 8, kbit: 1e3 / 8, mbit: 1e6 / 8, gbit: 1e9 / 8,
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9,
};

/** The named networks of `--link`: seed 001's Gigabit Ethernet and InfiniBand. */
export const LINK_PRESETS: Readonly<Record<string, string>> = {
  gige: 'latency=50us,bandwidth=1gbit',
  ib: 'latency=2us,bandwidth=32gbit',
};

/** How `--link` is described in help texts. */
export const LINK_HELP = `emulated network between nodes: ${Object.entries(LINK_PRESETS).map(([k, v]) => `${k} = ${v}`).join('; ')}; or latency=..,bandwidth=..`;

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
    `and bandwidth=<n>(bit|kbit|mbit|gbit|B|KB|MB|GB), e.g. --link latency=50us,bandwidth=1gbit`);
}
