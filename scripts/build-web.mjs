#!/usr/bin/env node
/**
 * The browser bundles of `nbcoll/web` (part of `npm run build`): dist/web/nbcoll-web.js, the
 * page's launcher (launchWeb), and dist/web/nbcoll-rank.js, a rank worker's bootstrap and the
 * library a job imports as 'nbcoll' there. ES modules for browsers, built by esbuild from the
 * sources (the core imports no node:* module, so nothing is shimmed).
 */
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
await build({
  entryPoints: { 'nbcoll-web': `${root}src/web/index.ts`, 'nbcoll-rank': `${root}src/web/rank.ts` },
  outdir: `${root}dist/web`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
});
