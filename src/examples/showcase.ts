/**
 * The second half of `npm start`: seed 001's proof in a few seconds, measured on the machine it
 * runs on beside what the network model says overlap could buy there. The 3-D Poisson CG
 * (`nbc cg`) on 2 emulated nodes x 1 rank over an emulated Gigabit Ethernet, on a grid whose
 * halo is heavy (40 x 120 x 120: each rank sends one 120 x 120 face per iteration), once with
 * the blocking halo exchange and once with the non-blocking one behind the interior matvec;
 * both check their solution against the exact one. Printed: how much of the halo wait the
 * overlap hid, against the model's bound (the halo's wire time, face bytes / bandwidth +
 * latency, hidden behind the interior matvec it runs beside).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppResult } from '../apps/run.js';
import { parseLinkSpec } from '../runtime/link-spec.js';

const LINK = 'gige';
const GLOBAL = '40,120,120';
const cli = fileURLToPath(new URL('../cli/nbc.js', import.meta.url));

/** Milliseconds per iteration of a phase. */
const perIter = (r: AppResult, phase: string): number => ((r.phases[phase]?.seconds ?? 0) * 1000) / r.iterations;

/**
 * The model of one iteration's halo for the busiest rank (one rank per node, so its faces
 * leave back to back through the node's one adapter): bytes sent, wire time (bytes /
 * bandwidth + latency) and the share of the matvec's rows that are interior (computed while
 * the halo is in flight).
 */
function haloModel(r: AppResult): { bytes: number; wireMs: number; interiorShare: number; formula: string } {
  const link = parseLinkSpec(LINK);
  let bytes = 0;
  let interior = 1;
  let rows = 1;
  r.local.forEach((n, d) => {
    const neighbours = Math.min(2, (r.processGrid[d] ?? 1) - 1);
    bytes += neighbours * 8 * r.local.reduce((a, m, e) => (e === d ? a : a * m), 1);
    interior *= Math.max(0, n - neighbours);
    rows *= n;
  });
  const wireMs = (bytes / (link.bandwidthBytesPerSec ?? Infinity) + (link.latencyUs ?? 0) / 1e6) * 1000;
  const formula = `bytes / ${((link.bandwidthBytesPerSec ?? Infinity) * 8 / 1e9).toFixed(0)} Gbit/s + ${link.latencyUs ?? 0} us`;
  return { bytes, wireMs, interiorShare: interior / rows, formula };
}

function report(blocking: AppResult, overlapped: AppResult): void {
  const m = haloModel(blocking);
  const computeMs = perIter(blocking, 'matvec') * m.interiorShare;
  const boundPct = Math.min(100, (100 * computeMs) / m.wireMs);
  const savedModelMs = Math.min(computeMs, m.wireMs);
  const waitB = perIter(blocking, 'halo');
  const waitNb = perIter(overlapped, 'halo');
  const hiddenPct = waitB > 0 ? 100 * (1 - waitNb / waitB) : 0;
  const faster = 100 * (1 - overlapped.perIterationMs / blocking.perIterationMs);
  const cpu = cpus();
  console.log(`what overlap buys here (${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}; ${blocking.nodes} nodes x ${blocking.ppn} rank, emulated GigE, grid ${GLOBAL.replaceAll(',', ' x ')}):`);
  console.log(`  model:    the halo is ${(m.bytes / 1024).toFixed(0)} KiB per rank per iteration, ${m.wireMs.toFixed(2)} ms on the wire (${m.formula}); ` +
    `the interior matvec beside it takes ${computeMs.toFixed(2)} ms, so up to ${boundPct.toFixed(0)} % of the wire time can hide ` +
    `(${savedModelMs.toFixed(2)} ms of ${blocking.perIterationMs.toFixed(2)} ms per iteration, ${((100 * savedModelMs) / blocking.perIterationMs).toFixed(0)} %)`);
  console.log(`  measured: halo wait ${waitB.toFixed(2)} ms per iteration blocking, ${waitNb.toFixed(2)} ms non-blocking: ${hiddenPct > 0 ? `${hiddenPct.toFixed(0)} % of it hidden` : 'none of it hidden'}; ` +
    `${blocking.perIterationMs.toFixed(2)} -> ${overlapped.perIterationMs.toFixed(2)} ms per iteration (${faster >= 0 ? `${faster.toFixed(0)} % faster` : `${(-faster).toFixed(0)} % slower`})`);
  if (waitB > 2 * m.wireMs) {
    console.log(`  the blocking wait is ${(waitB / m.wireMs).toFixed(1)}x the wire time: the rest is software and scheduling on this machine, which the model leaves out ` +
      '(seed 001: up to 34 % faster; npm run bench:multicore on 16 cores)');
  } else {
    console.log('  (seed 001: up to 34 % faster; npm run bench:multicore for the full comparison on 16 cores)');
  }
}

const dir = mkdtempSync(join(tmpdir(), 'nbc-showcase-'));
try {
  const run = (mode: string): AppResult => {
    const file = join(dir, `${mode}.json`);
    execFileSync(process.execPath, [cli, 'cg', '--ranks', '2', '--ppn', '1', '--global', GLOBAL, '--link', LINK, '--mode', mode, '--quiet', '--json', file],
      { stdio: 'inherit', timeout: 120_000 });
    return JSON.parse(readFileSync(file, 'utf8')) as AppResult;
  };
  const blocking = run('blocking');
  const overlapped = run('nonblocking');
  for (const r of [blocking, overlapped]) {
    const v = r.verification;
    console.log(`cg, ${r.mode} halo: ${r.iterations} iterations to ${r.finalRelResidual.toExponential(1)}, ` +
      `${r.perIterationMs.toFixed(2)} ms per iteration on ${r.nodes} nodes over emulated GigE; ` +
      `${v === null ? 'not verified' : `${v.ok ? 'verified' : 'VERIFICATION FAILED'}: ${v.detail}`}`);
    if (v !== null && !v.ok) process.exitCode = 1;
  }
  report(blocking, overlapped);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
