#!/usr/bin/env node
// Builds the optional native addon (native/, N-API) with node-gyp against the installed Node
// headers; nothing is downloaded. It builds the package it sits in: in a checkout, `npm run
// build` calls it; where nbcoll is installed as a dependency, `npx nbc build-native` does
// (npm does not run install scripts of dependencies unasked, and nbcoll has none). Where the
// toolchain or the headers are missing it prints one line saying what was skipped and why,
// and exits 0: nbcoll then runs on its pure-JS paths (`nbc info` tells). With --strict (what
// `nbc build-native` passes: the user asked for the addon) it exits 1 instead.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'native');
const strict = process.argv.includes('--strict');

function skip(why) {
  console.log(`nbcoll: native addon ${strict ? 'not built' : 'skipped'} (${why}); the pure-JS paths are used`);
  process.exit(strict ? 1 : 0);
}

/** The line of node-gyp's output that says what went wrong: the compiler's or make's, else gyp's, else the last. */
function firstError(text) {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.find((l) => /: (fatal )?error:|\*\*\*/.test(l)) ?? lines.find((l) => /ERR!/.test(l)) ?? lines.pop();
}

if (process.env.NBC_NO_NATIVE === '1') skip('NBC_NO_NATIVE=1');
if (!existsSync(join(dir, 'binding.gyp'))) skip(`no ${join(dir, 'binding.gyp')}`);

// node-gyp: the one npm names (npm_config_node_gyp, under npm run and npx), else the one npm ships, else one on PATH.
const candidates = [];
if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
if (process.env.npm_execpath) candidates.push(join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
candidates.push(join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
const gyp = candidates.find((c) => existsSync(c));

// Headers of the running Node (Debian's nodejs and the official tarballs put them under include/node).
const nodedir = [resolve(dirname(process.execPath), '..'), '/usr', '/usr/local'].find((d) => existsSync(join(d, 'include', 'node', 'node_api.h')));
if (nodedir === undefined) skip('no Node headers (include/node/node_api.h) next to this node');
const cc = spawnSync('cc', ['--version'], { stdio: 'ignore' });
if (cc.error !== undefined || cc.status !== 0) skip('no C compiler (cc)');

// UCX primitives where Debian's libucx-dev is present (binding.gyp checks the same header).
const ucx = existsSync('/usr/include/ucp/api/ucp.h') && process.env.NBC_NO_UCX !== '1';
const args = ['rebuild', `--nodedir=${nodedir}`, '--loglevel=error'];
const r = gyp !== undefined
  ? spawnSync(process.execPath, [gyp, ...args], { cwd: dir, encoding: 'utf8' })
  : spawnSync('node-gyp', args, { cwd: dir, encoding: 'utf8' });
if (r.error !== undefined) skip(`node-gyp not found: ${r.error.message}`);
if (r.status !== 0) skip(`node-gyp failed: ${firstError(`${r.stdout}\n${r.stderr}`) ?? `exit ${r.status}`}`);
const why = process.env.NBC_NO_UCX === '1' ? 'NBC_NO_UCX=1' : 'libucx-dev is not installed';
console.log(`nbcoll: native addon built (${join(dir, 'build', 'Release', 'nbc_native.node')}: sched_yield${ucx ? ', UCX' : `; no UCX: ${why}`})`);
