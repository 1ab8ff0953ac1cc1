/**
 * Side-by-side comparison of two benchmark results (`nbc bench compare A.json B.json`): at each
 * message size both measured, the headline time of each and the ratio B/A, plus overlap when
 * both have it. Ratios below 1 mean B is faster. Sizes only one result has are listed as
 * missing, not treated as errors, so runs over different size ranges still compare.
 */

import { describeResult, formatBytes, formatPct, formatUs, isOverlapRun, plainTable } from './report.js';
import type { BenchResult, BenchRow } from './result.js';

/** The two results at one message size. */
export interface CompareRow {
  bytes: number;
  /** A's headline time in us: latency, or overall time for non-blocking and persistent runs. */
  a: number;
  /** B's headline time in us, measured the same way as for A. */
  b: number;
  /** b / a: below 1 means B is faster. */
  ratio: number;
  /** A's overlap %, when both results have one at this size. */
  overlapA?: number;
  /** B's overlap %, when both results have one at this size. */
  overlapB?: number;
}

export interface Comparison {
  /** One row per size both results measured, in increasing size. */
  rows: CompareRow[];
  /** Sizes only A measured. */
  onlyInA: number[];
  /** Sizes only B measured. */
  onlyInB: number[];
  /** The comparison as text: what A and B are, a table, and any missing sizes. No trailing newline. */
  text: string;
}

/**
 * The figure that decides a run's speed: latency for blocking ops, the overall time (start,
 * compute, wait) for runs measured with the OSU overlap method.
 */
function headlineUs(r: BenchResult, row: BenchRow): number {
  return isOverlapRun(r) ? (row.overallUs ?? row.latencyUs) : row.latencyUs;
}

/** The name of a result's headline figure in column headings. */
function headlineName(r: BenchResult): string {
  return isOverlapRun(r) ? 'overall us' : 'latency us';
}

/** Compares B against A at every size both measured; see `Comparison`. */
export function compareResults(a: BenchResult, b: BenchResult): Comparison {
  const rowsOfB = new Map(b.results.map((row) => [row.bytes, row]));
  const sizesOfA = new Set(a.results.map((row) => row.bytes));

  const rows: CompareRow[] = [];
  for (const rowA of a.results) {
    const rowB = rowsOfB.get(rowA.bytes);
    if (rowB === undefined) continue;
    const timeA = headlineUs(a, rowA);
    const timeB = headlineUs(b, rowB);
    const row: CompareRow = { bytes: rowA.bytes, a: timeA, b: timeB, ratio: timeB / timeA };
    if (rowA.overlapPct !== undefined && rowB.overlapPct !== undefined) {
      row.overlapA = rowA.overlapPct;
      row.overlapB = rowB.overlapPct;
    }
    rows.push(row);
  }
  rows.sort((x, y) => x.bytes - y.bytes);
  const onlyInA = a.results.map((row) => row.bytes).filter((bytes) => !rowsOfB.has(bytes));
  const onlyInB = b.results.map((row) => row.bytes).filter((bytes) => !sizesOfA.has(bytes));

  return { rows, onlyInA, onlyInB, text: comparisonText(a, b, rows, onlyInA, onlyInB) };
}

/** The text form of a comparison: the two runs, the table, then sizes missing from either. */
function comparisonText(a: BenchResult, b: BenchResult, rows: CompareRow[], onlyInA: number[], onlyInB: number[]): string {
  const withOverlap = rows.some((row) => row.overlapA !== undefined);
  const head = ['size', `A ${headlineName(a)}`, `B ${headlineName(b)}`, 'B/A'];
  if (withOverlap) head.push('A overlap %', 'B overlap %');

  const table = plainTable(head);
  for (const row of rows) {
    const cells = [formatBytes(row.bytes), formatUs(row.a), formatUs(row.b), formatRatio(row.ratio)];
    if (withOverlap) cells.push(formatPct(row.overlapA), formatPct(row.overlapB));
    table.push(cells);
  }

  const lines = [`A: ${describeResult(a)}`, `B: ${describeResult(b)}`, table.toString()];
  if (rows.length === 0) lines.push('no message size was measured in both results');
  if (onlyInA.length > 0) lines.push(`missing in B (measured only in A): ${onlyInA.map(formatBytes).join(', ')}`);
  if (onlyInB.length > 0) lines.push(`missing in A (measured only in B): ${onlyInB.map(formatBytes).join(', ')}`);
  return lines.join('\n');
}

/** A ratio such as '0.85x', or '-' where A's time was 0. */
function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : '-';
}
