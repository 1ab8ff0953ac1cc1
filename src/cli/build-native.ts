/**
 * `nbc build-native`: builds the optional native addon of this installation, in place (its
 * packaged native/ sources, by its packaged scripts/build-native.mjs, into its
 * native/build/Release). npm does not run a dependency's install scripts unasked, so a project
 * that installed nbcoll runs `npx nbc build-native` once, and again after installing
 * libucx-dev or changing Node; a checkout gets the same from `npm run build`.
 *
 * Unlike `npm run build`, which skips the addon with one line where the toolchain is missing,
 * this exits 1 when the addon was not built or does not load: the user asked for it. It loads
 * what it built before saying so, so a build that compiles but cannot load (a missing shared
 * library) fails here, not at a job's first wait.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { nativeAddon } from '../runtime/native.js';
import { addonFeatures } from './info.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/build-native.mjs', import.meta.url));

export function registerBuildNative(program: Command): void {
  program.command('build-native')
    .description('build the optional native addon of this installation (sched_yield, memmove; UCX where libucx-dev is installed)')
    .option('--no-ucx', 'without UCX, even where libucx-dev is installed')
    .action((o: { ucx: boolean }) => {
      const env = o.ucx ? process.env : { ...process.env, NBC_NO_UCX: '1' };
      const r = spawnSync(process.execPath, [SCRIPT, '--strict'], { stdio: 'inherit', env });
      if (r.error !== undefined) process.stderr.write(`nbc: ${SCRIPT}: ${r.error.message}\n`);
      if (r.status !== 0) {
        process.exitCode = 1;
        return;
      }
      const { addon, why } = nativeAddon();
      if (addon === null) {
        process.stderr.write(`nbc: the native addon was built but ${why}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`nbcoll: native addon loads (${addonFeatures(addon)}); npx nbc info says what is in use\n`);
    });
}
