/**
 * The published package (issue 41, "packaging"): what `npm pack` puts in the tarball, and a
 * project that installs the tarball, builds the native addon with the one documented command
 * (`npx nbc build-native`), and runs a job with it. The tarball's native sources are checked
 * against the ones native/binding.gyp names, parsed, so a new source file cannot be left out
 * again (nbc_ucx.c once was: installed packages could not build their addon).
 *
 * The end-to-end test packs the built dist/ (npm test's pretest builds it), installs offline
 * from npm's cache where it can (--prefer-offline), and takes about 20-30 s on a 2-core VM,
 * most of it compiling the addon.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const UCX_HEADER = '/usr/include/ucp/api/ucp.h';

type Info = Array<{ what: string; available: boolean; detail: string }>;

/**
 * The environment for npm and nbc in another project: without the settings `npm test` passes
 * down about this one (npm_config_local_prefix would make npm install into this checkout), the
 * test runner's marker, and a NBC_NO_NATIVE that would skip the build under test.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(lifecycle|package)_|^npm_config_(local_prefix|prefix|global)$|^(NODE_TEST_CONTEXT|INIT_CWD|NBC_NO_NATIVE|NBC_NO_UCX)$/i.test(k)) continue;
    env[k] = v;
  }
  return env;
}

/**
 * A gyp file's value: gyp files are Python literals (single or double quotes, # comments,
 * trailing commas), turned into JSON string by string.
 */
function parseGyp(text: string): unknown {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (ch === '"' || ch === "'") {
      let s = '';
      for (i++; text[i] !== ch; i++) {
        if (i >= text.length) throw new Error('binding.gyp: a string does not end');
        if (text[i] === '\\') s += text[++i] === 'n' ? '\n' : text[i];
        else s += text[i];
      }
      out += JSON.stringify(s);
    } else {
      out += ch;
    }
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, '$1'));
}

/** Every file named in a `sources` list (sources, sources+, ...) anywhere in `gyp`, relative to native/. */
function gypSources(gyp: unknown): string[] {
  const found: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const e of v) walk(e);
    else if (v !== null && typeof v === 'object') {
      for (const [k, e] of Object.entries(v)) {
        if (/^sources\W?$/.test(k) && Array.isArray(e)) found.push(...e.map(String));
        else walk(e);
      }
    }
  };
  walk(gyp);
  return found;
}

/** The paths package.json names as entry points (main, types, bin, exports), without './'. */
function entryPoints(pkg: { main?: string; types?: string; bin?: string | Record<string, string>; exports?: unknown }): { code: string[]; types: string[] } {
  const code: string[] = [];
  const types: string[] = [];
  const norm = (p: string): string => posix.normalize(p);
  if (pkg.main !== undefined) code.push(norm(pkg.main));
  if (pkg.types !== undefined) types.push(norm(pkg.types));
  if (typeof pkg.bin === 'string') code.push(norm(pkg.bin));
  else for (const b of Object.values(pkg.bin ?? {})) code.push(norm(b));
  const walk = (v: unknown, key: string): void => {
    if (typeof v === 'string') (key === 'types' ? types : code).push(norm(v));
    else if (v !== null && typeof v === 'object') for (const [k, e] of Object.entries(v)) walk(e, k);
  };
  walk(pkg.exports, '');
  return { code: code.filter((p) => p !== 'package.json'), types };
}

test('binding.gyp parses as gyp writes it: quotes of both kinds, comments, trailing commas', () => {
  assert.deepEqual(parseGyp(`{ # a comment\n 'targets': [{ "sources": ['a.c', "b's.c",], 'x': '#not a comment' },], }`),
    { targets: [{ sources: ['a.c', "b's.c"], x: '#not a comment' }] });
  assert.deepEqual(gypSources({ targets: [{ sources: ['a.c'], conditions: [['x==1', { 'sources+': ['b.c'] }]] }] }), ['a.c', 'b.c']);
});

test('npm pack holds every source binding.gyp names, the build script, the dist entry points and their type declarations, and no build output', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: root, encoding: 'utf8', env: cleanEnv(), timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
  const files = new Set((JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path));
  const has = (p: string, what: string): void => assert.ok(files.has(p), `the tarball lacks ${p} (${what}); package.json "files" must name it`);

  const gyp = parseGyp(readFileSync(join(root, 'native', 'binding.gyp'), 'utf8'));
  const sources = gypSources(gyp);
  assert.ok(sources.length > 0, 'native/binding.gyp names no sources');
  has('native/binding.gyp', 'node-gyp reads it');
  for (const s of sources) has(posix.join('native', s), 'a source native/binding.gyp names');
  // #include "..." of the sources: headers next to them must travel too
  for (const s of sources) {
    for (const m of readFileSync(join(root, 'native', s), 'utf8').matchAll(/^#include "([^"]+)"/gm)) has(posix.join('native', m[1]!), `included by native/${s}`);
  }
  has('scripts/build-native.mjs', 'nbc build-native runs it');

  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Parameters<typeof entryPoints>[0];
  const { code, types } = entryPoints(pkg);
  assert.ok(code.includes('dist/cli/nbc.js') && types.includes('dist/index.d.ts'), `entry points read from package.json: ${code.join(', ')}; ${types.join(', ')}`);
  for (const p of code) has(p, 'an entry point of package.json; npm run build writes dist/');
  for (const p of types) has(p, 'a type declaration package.json names');
  has('dist/cli/build-native.js', 'the build-native command');

  const built = [...files].filter((p) => p.startsWith('native/build/') || p.endsWith('.node') || p.startsWith('src/') || p.startsWith('test/'));
  assert.deepEqual(built, [], 'no addon built on this machine, sources or tests in the tarball');
});

/** Why the addon cannot be built here, or false: the toolchain build-native.mjs needs. */
function toolchainMissing(): string | false {
  const cc = spawnSync('cc', ['--version'], { stdio: 'ignore' });
  if (cc.error !== undefined || cc.status !== 0) return 'no C compiler (cc): the addon cannot be built here';
  const dirs = [resolve(dirname(process.execPath), '..'), '/usr', '/usr/local'];
  if (!dirs.some((d) => existsSync(join(d, 'include', 'node', 'node_api.h')))) return 'no Node headers (include/node/node_api.h): the addon cannot be built here';
  return false;
}

// A job the installed package runs: the package imported by its name, one allreduce.
const JOB = `import { init } from 'nbcoll';
const world = await init();
const sum = new Float64Array(1);
world.allreduce(Float64Array.of(world.rank + 1), sum, 'sum');
if (world.rank === 0) console.log('sum ' + sum[0]);
`;

test('a project that installs the tarball builds the addon with npx nbc build-native, nbc info reports it loaded, and a job runs with it',
  { skip: toolchainMissing(), timeout: 150_000 }, async (t) => {
    const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'nbcoll-package-')));
    t.after(() => rmSync(tmp, { recursive: true, force: true }));
    const env = cleanEnv();
    const run = (cmd: string, args: string[], cwd: string, timeout: number): string => {
      const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout });
      assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ''}:\n${r.stdout}\n${r.stderr}`);
      return r.stdout;
    };
    const times: string[] = [];
    const timed = <R>(what: string, f: () => R): R => {
      const t0 = performance.now();
      try {
        return f();
      } finally {
        times.push(`${what} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    };
    t.after(() => t.diagnostic(times.join(', ')));

    const packed = timed('pack', () => JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], root, 60_000)) as Array<{ filename: string }>);
    const tarball = join(tmp, packed[0]!.filename);
    const proj = join(tmp, 'project');
    mkdirSync(proj);
    writeFileSync(join(proj, 'package.json'), '{ "name": "uses-nbcoll", "private": true, "type": "module" }\n');
    timed('install', () => run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], proj, 90_000));

    const pkgDir = join(proj, 'node_modules', 'nbcoll');
    const built = timed('build-native', () => run('npx', ['--no', 'nbc', 'build-native'], proj, 120_000));
    assert.match(built, /native addon built/);
    assert.match(built, /native addon loads \(sched_yield, memmove/);

    const info = timed('info', () => JSON.parse(run('npx', ['--no', 'nbc', 'info', '--json'], proj, 30_000)) as Info);
    const line = (what: string): Info[number] => info.find((l) => l.what === what) ?? assert.fail(`nbc info has no '${what}' line`);
    const addon = line('native addon');
    assert.equal(addon.available, true, addon.detail);
    // the installed package's own addon, not this checkout's
    assert.ok(addon.detail.startsWith(join(pkgDir, 'native', 'build', 'Release', 'nbc_native.node')), addon.detail);
    assert.equal(line('wait: sched_yield').available, true);
    assert.equal(line('copy: memmove').available, true);

    writeFileSync(join(proj, 'job.mjs'), JOB);
    const ucx = existsSync(UCX_HEADER);
    const transport = ucx ? 'ucx' : 'tcp';
    const job = timed(`job over ${transport}`, () => run('npx', ['--no', 'nbc', 'run', '-n', '2', '--ppn', '1', '--transport', transport, '--timeout', '60', 'job.mjs'], proj, 90_000));
    assert.match(job, /^sum 3$/m);

    await t.test('with UCX where libucx-dev is installed', { skip: ucx ? false : `${UCX_HEADER} is missing (libucx-dev is not installed): the addon was built without UCX` }, () => {
      assert.match(addon.detail, /, UCX$/);
      const tr = line('transport ucx');
      assert.equal(tr.available, true, tr.detail);
      assert.equal(line('wait: UCX events').available, true);
    });
  });
