/**
 * Charts of benchmark results: one line per result over message size, as SVG or PNG.
 *
 * `chartSpec` builds a Vega-Lite spec (pure, so tests can inspect it); `renderChart` compiles
 * it to Vega, renders SVG headless (renderer 'none', no canvas or browser needed) and, for
 * `.png`, rasterises that SVG with resvg using the system's DejaVu fonts.
 *
 * Vega, Vega-Lite and resvg load on the first render, not with this module: they take about
 * 0.3 s to import, and every `nbc node` process (which registers the bench commands) would
 * otherwise pay it at start-up without drawing anything.
 */

import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { TopLevelSpec } from 'vega-lite';
import { NbcArgError } from '../errors.js';
import { formatBytes, resultLabel } from './report.js';
import type { BenchResult, BenchRow } from './result.js';

/** What the y axis shows: latency in microseconds (log scale) or overlap in percent (0..100). */
export type ChartMetric = 'latency' | 'overlap';

export interface ChartOptions {
  /** Default: 'overlap' if any result has `overlapPct`, else 'latency'. */
  metric?: ChartMetric;
  /** Chart title; default names the ops, rank counts and metric. */
  title?: string;
}

/** The file types `renderChart` writes, by extension. */
const FORMATS = ['.svg', '.png'] as const;
type ChartFormat = (typeof FORMATS)[number];

/** Font for every text in the chart; resvg finds it among the system fonts. */
const FONT = 'DejaVu Sans';
const WIDTH = 640;
const HEIGHT = 400;
/** PNGs are drawn at twice the SVG's size so text stays crisp. */
const PNG_ZOOM = 2;
/** At most this many size ticks on the x axis; more would overlap their labels. */
const MAX_X_TICKS = 10;

/** One point of the chart: a result's figure at one message size. */
interface Point {
  series: string;
  bytes: number;
  value: number;
}

function defaultMetric(results: readonly BenchResult[]): ChartMetric {
  return results.some((r) => r.results.some((row) => row.overlapPct !== undefined)) ? 'overlap' : 'latency';
}

/** The figure a row contributes for a metric, or undefined where it cannot be drawn. */
function pointValue(row: BenchRow, metric: ChartMetric): number | undefined {
  if (row.bytes <= 0) return undefined; // a log-scale x axis has no place for 0 bytes
  if (metric === 'overlap') return row.overlapPct;
  return row.latencyUs > 0 ? row.latencyUs : undefined; // nor a log-scale y axis for 0 us
}

/**
 * One legend entry per result: its label, with ' (2)', ' (3)', ... appended to repeats so two
 * results that ran alike still draw two lines.
 */
function seriesNames(results: readonly BenchResult[]): string[] {
  const seen = new Map<string, number>();
  return results.map((r) => {
    const label = resultLabel(r);
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    return n === 1 ? label : `${label} (${n})`;
  });
}

/**
 * Powers of two spanning the data, at most MAX_X_TICKS of them, always including both ends:
 * 8 B .. 1 MiB gives 8 B, 32 B, 128 B, ... 128 KiB, 1 MiB.
 */
function sizeTicks(points: readonly Point[]): number[] {
  const lo = Math.floor(Math.log2(Math.min(...points.map((p) => p.bytes))));
  const hi = Math.ceil(Math.log2(Math.max(...points.map((p) => p.bytes))));
  const stride = Math.max(1, Math.ceil((hi - lo) / (MAX_X_TICKS - 1)));
  const exponents: number[] = [];
  for (let e = lo; e <= hi - stride; e += stride) exponents.push(e);
  exponents.push(hi);
  return exponents.map((e) => 2 ** e);
}

/** A default title: the ops, the rank counts and the metric. */
function defaultTitle(results: readonly BenchResult[], metric: ChartMetric): string {
  const unique = (xs: Array<string | number>): string => [...new Set(xs)].join(', ');
  const what = metric === 'overlap' ? 'overlap of communication and compute' : 'latency';
  return `${unique(results.map((r) => r.op))} ${what}, ${unique(results.map((r) => r.ranks))} ranks`;
}

/**
 * The Vega-Lite spec of a chart: one line (with points) per result, x = message size per rank
 * on a log2 scale labelled 8 B .. 1 MiB, y = latency in us on a log scale or overlap in % on
 * 0..100. Results without the metric's figure contribute no points.
 */
export function chartSpec(results: readonly BenchResult[], opts: ChartOptions = {}): TopLevelSpec {
  if (results.length === 0) throw new NbcArgError('Cannot chart: no results given; expected at least one');
  const metric = opts.metric ?? defaultMetric(results);
  const names = seriesNames(results);

  const points: Point[] = [];
  results.forEach((r, i) => {
    for (const row of r.results) {
      const value = pointValue(row, metric);
      if (value !== undefined) points.push({ series: names[i] as string, bytes: row.bytes, value });
    }
  });
  if (points.length === 0) {
    throw new NbcArgError(
      `Cannot chart ${metric}: no result has a row with it at a size above 0 bytes; ` +
        (metric === 'overlap' ? 'expected a non-blocking result, or use metric latency' : 'expected latencies above 0 us'),
    );
  }

  const ticks = sizeTicks(points);
  // Tick labels are looked up, so the axis says exactly what the tables say (formatBytes).
  const labels = Object.fromEntries(ticks.map((t) => [t, formatBytes(t)]));
  const stat = [...new Set(results.map((r) => r.stat))].join('/');

  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: opts.title ?? defaultTitle(results, metric),
    width: WIDTH,
    height: HEIGHT,
    background: 'white',
    data: { values: points },
    mark: { type: 'line', point: true },
    encoding: {
      x: {
        field: 'bytes',
        type: 'quantitative',
        title: 'message size per rank',
        scale: { type: 'log', base: 2, domain: [ticks[0] as number, ticks[ticks.length - 1] as number], nice: false },
        axis: {
          values: ticks,
          labelExpr: `${JSON.stringify(labels)}[datum.value] || ''`,
          // sizeTicks already spaces the ticks; Vega's overlap check, which guesses text widths
          // without a canvas, would otherwise hide the last label.
          labelOverlap: false,
          grid: true,
        },
      },
      y:
        metric === 'overlap'
          ? { field: 'value', type: 'quantitative', title: `overlap % (${stat})`, scale: { domain: [0, 100] } }
          : { field: 'value', type: 'quantitative', title: `latency us (${stat})`, scale: { type: 'log' } },
      color: { field: 'series', type: 'nominal', title: null, sort: names, legend: { orient: 'bottom', direction: 'vertical', labelLimit: WIDTH } },
    },
    config: { font: FONT },
  };
}

/** The output format a file name asks for; throws NbcArgError for any other extension. */
export function chartFormat(file: string): ChartFormat {
  const ext = extname(file).toLowerCase();
  const format = FORMATS.find((f) => f === ext);
  if (format === undefined) {
    throw new NbcArgError(
      `Cannot write chart '${file}': extension '${ext || '(none)'}' is not supported; expected ${FORMATS.join(' or ')}`,
    );
  }
  return format;
}

/** Renders a Vega-Lite spec to SVG text without a browser or canvas. */
async function toSvg(spec: TopLevelSpec): Promise<string> {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Rasterises SVG to PNG with resvg, drawing text with the system's DejaVu fonts. */
async function toPng(svg: string): Promise<Buffer> {
  const { Resvg } = await import('@resvg/resvg-js');
  const resvg = new Resvg(svg, {
    font: { loadSystemFonts: true, defaultFontFamily: FONT },
    fitTo: { mode: 'zoom', value: PNG_ZOOM },
    background: 'white',
  });
  return resvg.render().asPng();
}

/**
 * Writes a chart of the results to `file`: SVG for `.svg`, PNG for `.png` (see `chartSpec`
 * for what it shows). Throws NbcArgError for any other extension, before doing any work.
 */
export async function renderChart(results: readonly BenchResult[], file: string, opts?: ChartOptions): Promise<void> {
  const format = chartFormat(file);
  const svg = await toSvg(chartSpec(results, opts));
  await writeFile(file, format === '.png' ? await toPng(svg) : svg);
}

/**
 * Writes any Vega-Lite spec as SVG or PNG by the file's extension, the same way renderChart
 * does (for charts that are not nbcbench results: the proof applications' phases).
 */
export async function renderSpec(spec: TopLevelSpec, file: string): Promise<void> {
  const format = chartFormat(file);
  const svg = await toSvg(spec);
  await writeFile(file, format === '.png' ? await toPng(svg) : svg);
}
