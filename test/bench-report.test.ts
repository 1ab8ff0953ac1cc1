import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chartSpec, renderChart } from '../src/bench/chart.js';
import { compareResults } from '../src/bench/compare.js';
import { describeResult, formatBytes, formatCsv, formatOsu, formatTable } from '../src/bench/report.js';
import type { BenchResult, BenchRow } from '../src/bench/result.js';
import { ErrorCode } from '../src/errors.js';
import { hasCode } from './assert.ts';

function fixture(name: string): BenchResult {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), 'utf8')) as BenchResult;
}

/** A blocking allreduce, 8 B .. 1 MiB, 2 ranks. */
const blocking = fixture('bench-allreduce');
/** A non-blocking iallreduce with every field of BenchRow, 8 B .. 512 KiB, 4 ranks. */
const nonblocking = fixture('bench-iallreduce');

/** A number as OSU prints it (2 decimals), read back. */
const twoDecimals = (x: number | undefined): number => Number((x ?? NaN).toFixed(2));

/** The data lines of OSU text (neither comments nor blank), split into numbers. */
function osuRows(text: string): number[][] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => line.trim().split(/\s+/).map(Number));
}

/** Open and close tags of an SVG document pair up (self-closing tags stand alone). */
function assertBalancedTags(svg: string): void {
  const open: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([A-Za-z][\w:.-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (closing) assert.equal(open.pop(), name, `</${name}> closes the wrong tag`);
    else open.push(name as string);
  }
  assert.deepEqual(open, [], 'every tag is closed');
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nbc-bench-report-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A copy of a result with some rows dropped and every headline time scaled. */
function variant(r: BenchResult, keep: (row: BenchRow) => boolean, scale: number, label: string): BenchResult {
  const results = r.results.filter(keep).map((row) => ({
    ...row,
    latencyUs: row.latencyUs * scale,
    ...(row.overallUs === undefined ? {} : { overallUs: row.overallUs * scale }),
  }));
  return { ...r, label, results };
}

test('formatBytes() writes sizes as 8 B, 4 KiB, 1 MiB and 1.5 KiB', () => {
  assert.deepEqual([8, 4096, 1 << 20, 1536, 1023].map(formatBytes), ['8 B', '4 KiB', '1 MiB', '1.5 KiB', '1023 B']);
});

test('formatTable() titles the table with the run, lists every size, and shows the limits under it', () => {
  for (const r of [blocking, nonblocking]) {
    const text = formatTable(r);
    const [title] = text.split('\n');
    for (const part of [r.op, `${r.ranks} ranks`, `${r.ppn} per node`, r.executor, r.algorithm, r.link ?? 'link none']) {
      assert.ok(title?.includes(part), `title names ${part}: ${title}`);
    }
    for (const row of r.results) assert.match(text, new RegExp(`│ ${formatBytes(row.bytes)} +│`));
    const tableEnd = text.lastIndexOf('┘');
    for (const name of Object.keys(r.limits)) assert.ok(text.indexOf(name) > tableEnd, `${name} is listed under the table`);
  }
  assert.match(formatTable(blocking), /latency us/);
  assert.match(formatTable(nonblocking), /test\(\) every 10us/);
  for (const head of ['overall us', 'compute us', 'pure us', 'init us', 'test us', 'wait us', 'overhead us', 'overlap %']) {
    assert.ok(formatTable(nonblocking).includes(head), `non-blocking table has a '${head}' column`);
  }
});

test('formatCsv() writes a header naming every field present, then one line per size', () => {
  const lines = formatCsv(nonblocking).trimEnd().split('\n');
  const header = lines[0]?.split(',');
  assert.deepEqual(header, [
    'bytes', 'latencyUs', 'initUs', 'testUs', 'waitUs', 'overheadUs', 'pureUs', 'overallUs', 'computeUs', 'overlapPct',
    'perRank0', 'perRank1', 'perRank2', 'perRank3',
  ]);
  assert.equal(lines.length, 1 + nonblocking.results.length);
  const first = nonblocking.results[0] as BenchRow;
  // Every figure to 3 decimals (a nanosecond of a microsecond), nothing longer.
  const threeDecimals = (x: number | undefined): number => Number((x ?? NaN).toFixed(3));
  assert.deepEqual(lines[1]?.split(',').map(Number), [
    first.bytes, first.latencyUs, first.initUs, first.testUs, first.waitUs, first.overheadUs, first.pureUs,
    first.overallUs, first.computeUs, first.overlapPct, ...(first.perRank ?? []),
  ].map(threeDecimals));
  // performance.now() differences carry binary tails; the CSV does not.
  const tails = { ...blocking, results: [{ bytes: 8, latencyUs: 0.9510000002137531, perRank: [2.123999999980697, 1e-7] }] };
  assert.deepEqual(formatCsv(tails).trimEnd().split('\n'), ['bytes,latencyUs,perRank0,perRank1', '8,0.951,2.124,0']);

  const blockingLines = formatCsv(blocking).trimEnd().split('\n');
  assert.equal(blockingLines[0], 'bytes,latencyUs,perRank0,perRank1', 'only the fields present become columns');
  assert.equal(blockingLines.length, 1 + blocking.results.length);
});

test('formatOsu() prints the osu_allreduce header and rows that parse back into the same sizes and latencies', () => {
  const text = formatOsu({ ...blocking, stat: 'avg' });
  const lines = text.split('\n');
  assert.equal(lines[0], '# OSU MPI Allreduce Latency Test');
  assert.equal(lines[1], '# Size       Avg Latency(us)');
  // Another statistic than OSU's average is named in a comment line, which OSU parsers skip.
  const median = formatOsu({ ...blocking, stat: 'median' }).split('\n');
  assert.equal(median[1], "# Figures: the median over iterations, not OSU's average (--stat avg)");
  assert.deepEqual(median.slice(2), lines.slice(1));
  assert.equal(lines[2], '8                       0.90', 'rows are %-10d%18.2f');
  assert.deepEqual(osuRows(text), blocking.results.map((row) => [row.bytes, twoDecimals(row.latencyUs)]));
});

test('formatOsu() prints the osu_iallreduce header lines and rows that parse back into overall, compute, pure and overlap', () => {
  const text = formatOsu({ ...nonblocking, stat: 'avg' });
  const lines = text.split('\n');
  assert.deepEqual(lines.slice(0, 4), [
    '# OSU MPI Non-blocking Allreduce Latency Test',
    '# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait',
    '',
    '# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)',
  ]);
  assert.deepEqual(
    osuRows(text),
    nonblocking.results.map((row) => [row.bytes, ...[row.overallUs, row.computeUs, row.pureUs, row.overlapPct].map(twoDecimals)]),
  );
});

test('formatOsu() names the row that lacks a figure a non-blocking result needs', () => {
  const broken = variant(nonblocking, () => true, 1, 'broken');
  delete (broken.results[1] as BenchRow).computeUs;
  assert.throws(() => formatOsu(broken), hasCode(ErrorCode.ARG, /16 B row has no computeUs/));
});

test('chartSpec() draws one line per result over a log2 size axis labelled 8 B .. 1 MiB', () => {
  const spec = chartSpec([blocking, nonblocking], { metric: 'latency' }) as unknown as {
    mark: { type: string };
    data: { values: Array<{ series: string; bytes: number }> };
    encoding: {
      x: { scale: { type: string; base: number }; axis: { values: number[]; labelExpr: string } };
      y: { scale: { type: string } };
      color: { field: string };
    };
  };
  assert.equal(spec.mark.type, 'line');
  assert.equal(spec.encoding.color.field, 'series');
  const series = new Set(spec.data.values.map((p) => p.series));
  assert.deepEqual([...series], ['host/auto', 'offload, test() every 10us'], 'one series per result, legend from label or derived');
  assert.equal(spec.data.values.length, blocking.results.length + nonblocking.results.length);
  assert.deepEqual(spec.encoding.x.scale, { type: 'log', base: 2, domain: [8, 1 << 20], nice: false });
  assert.equal(spec.encoding.y.scale.type, 'log');
  const ticks = spec.encoding.x.axis.values;
  assert.equal(ticks[0], 8);
  assert.equal(ticks[ticks.length - 1], 1 << 20);
  assert.ok(ticks.length <= 10, `at most 10 size ticks, got ${ticks.length}`);
  assert.match(spec.encoding.x.axis.labelExpr, /"1048576":"1 MiB"/);
});

test('chartSpec() charts overlap on 0..100 by default when a result has overlap, and keeps repeated labels apart', () => {
  const again = { ...nonblocking };
  const spec = chartSpec([nonblocking, again]) as unknown as {
    data: { values: Array<{ series: string }> };
    encoding: { y: { scale: { domain: number[] } } };
  };
  assert.deepEqual(spec.encoding.y.scale.domain, [0, 100]);
  assert.deepEqual([...new Set(spec.data.values.map((p) => p.series))], ['offload, test() every 10us', 'offload, test() every 10us (2)']);
});

test('renderChart() writes a well-formed SVG with the lines drawn', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'chart.svg');
    await renderChart([blocking, nonblocking], file, { metric: 'latency' });
    const svg = await readFile(file, 'utf8');
    assert.ok(svg.startsWith('<svg'), 'starts with <svg');
    assert.ok(svg.includes('<path'), 'contains paths');
    assert.ok(svg.includes('>1 MiB</text>'), 'labels the largest size');
    assertBalancedTags(svg);
  });
});

test('renderChart() writes a PNG with the PNG signature and a non-empty IHDR', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'chart.png');
    await renderChart([blocking, nonblocking], file, { metric: 'latency', title: 'allreduce vs iallreduce' });
    const png = await readFile(file);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.toString('latin1', 12, 16), 'IHDR');
    assert.ok(png.readUInt32BE(16) > 0 && png.readUInt32BE(20) > 0, 'width and height are positive');
  });
});

test('renderChart() rejects an unsupported extension with NBC_ERR_ARG naming .svg and .png', async () => {
  await assert.rejects(renderChart([blocking], join(tmpdir(), 'chart.jpg')), hasCode(ErrorCode.ARG, /'\.jpg'/, /\.svg or \.png/));
  await assert.rejects(renderChart([blocking], 'chart'), hasCode(ErrorCode.ARG, /\(none\)/));
});

test('compareResults() gives B/A ratios at the shared sizes and lists sizes only one result has as missing', () => {
  const a = variant(nonblocking, (row) => row.bytes >= 32, 1, 'A');
  const b = variant(nonblocking, (row) => row.bytes <= 128 << 10, 0.5, 'B');
  const cmp = compareResults(a, b);

  assert.deepEqual(cmp.rows.map((row) => row.bytes), a.results.filter((row) => row.bytes <= 128 << 10).map((row) => row.bytes));
  for (const row of cmp.rows) {
    assert.ok(Math.abs(row.ratio - 0.5) < 1e-9, `B/A at ${row.bytes} B is 0.5, got ${row.ratio}`);
    assert.equal(row.b, row.a * 0.5);
    assert.equal(typeof row.overlapA, 'number');
    assert.equal(row.overlapA, row.overlapB);
  }
  assert.deepEqual(cmp.onlyInA, [256 << 10, 512 << 10]);
  assert.deepEqual(cmp.onlyInB, [8, 16]);
  assert.match(cmp.text, /0\.50x/);
  assert.match(cmp.text, /missing in B \(measured only in A\): 256 KiB, 512 KiB/);
  assert.match(cmp.text, /missing in A \(measured only in B\): 8 B, 16 B/);
});

test('compareResults() compares blocking latency with non-blocking overall time, without overlap columns', () => {
  const cmp = compareResults(blocking, nonblocking);
  const first = cmp.rows[0];
  assert.equal(first?.a, blocking.results[0]?.latencyUs);
  assert.equal(first?.b, nonblocking.results[0]?.overallUs);
  assert.equal(first?.overlapA, undefined);
  assert.doesNotMatch(cmp.text, /overlap %/);
  assert.deepEqual(cmp.onlyInA, [1 << 20]);
});

test('describeResult() says a result came from the simulator (nbc sim JSON), so compare tables tell the sides apart', () => {
  assert.doesNotMatch(describeResult(blocking), /simulated/);
  assert.match(describeResult({ ...blocking, simulated: { seed: 1 } } as BenchResult), /, simulated$/);
});
