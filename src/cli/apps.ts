/**
 * `nbc cg` and `nbc pcg`: the proof applications (src/apps) on a local emulated cluster.
 * The CLI only launches: it starts ceil(ranks / ppn) node processes with the `--link`
 * emulation between them and hands every other flag to the job file, which parses, solves,
 * verifies and reports by itself, exactly as it does under `nbc run`, `nbc node` or mpirun:
 *
 *   nbc pcg --ranks 8 --ppn 4 --n 20 --variant overlap --executor offload --json r.json
 *   nbc run -n 8 --ppn 4 dist/apps/pcg.js --n 20 --variant overlap      # the same job
 *   nbc cg --ranks 4 --ppn 1 --link gige --mode nonblocking --test-interval 2000
 */
import { fileURLToPath } from 'node:url';
import { Option, type Command } from 'commander';
import { parseAppArgs } from '../apps/run.js';
import { launch } from '../runtime/launcher.js';
import { LINK_HELP, linkSpecOf, parseLinkSpec, TOPOLOGY_HELP } from '../runtime/link-spec.js';
import { parseTransport } from '../runtime/node-main.js';
import { positiveInt } from './args.js';

const JOBS = {
  cg: fileURLToPath(new URL('../apps/cg.js', import.meta.url)),
  pcg: fileURLToPath(new URL('../apps/pcg.js', import.meta.url)),
};

/** Flags forwarded to the job as given (the job validates them, so `nbc run` behaves the same). */
const FORWARDED = ['n', 'global', 'tol', 'maxIter', 'warmup', 'variant', 'mode', 'executor', 'algorithm', 'testInterval', 'noise', 'json', 'chart', 'verify'] as const;
const FLAG: Record<(typeof FORWARDED)[number], string> = {
  n: '--n', global: '--global', tol: '--tol', maxIter: '--max-iter', warmup: '--warmup', variant: '--variant', mode: '--mode', executor: '--executor',
  algorithm: '--algorithm', testInterval: '--test-interval', noise: '--noise', json: '--json', chart: '--chart', verify: '--verify',
};

type AppCliOptions = Partial<Record<(typeof FORWARDED)[number], string>> & {
  ranks: number; ppn?: number; link?: string; topology?: string; transport?: string; timeout?: number; verbose?: boolean; quiet?: boolean;
};

function register(program: Command, app: 'cg' | 'pcg', description: string): Command {
  const c = program.command(app)
    .description(description)
    .option('--ranks <N>', 'ranks of the emulated cluster', positiveInt, 4)
    .option('--ppn <P>', 'ranks per node (default: all on one node)', positiveInt)
    .option('--link <gige|ib|spec>', LINK_HELP)
    .option('--topology <flat|fat-tree:radix=R[,levels=L]>', TOPOLOGY_HELP)
    .option('--transport <t>', 'between nodes: ucx, tcp or auto (default NBC_TRANSPORT, else auto)')
    .option('--timeout <seconds>', 'kill the job after this many seconds', positiveInt)
    .option('--n <N>', `unknowns per rank per dimension (default ${app === 'pcg' ? 40 : 30})`)
    .option('--global <NX,NY,NZ>', 'global grid instead of --n (split as evenly as the process grid allows)')
    .option('--tol <t>', 'stop when ||r|| / ||b|| < t (default 1e-8)')
    .option('--max-iter <k>', 'iteration limit (default 10000)')
    .option('--warmup <k>', 'untimed solves before the timed one (default 0; a fresh job\'s first few thousand calls are slower while V8 warms up)')
    .option('--executor <e>', 'executor of the collectives: host, offload or agg (default host)')
    .option('--algorithm <a>', 'allreduce algorithm of the inner products (default: the selection table)')
    .option('--noise <D@F>', "seed 000's OS noise: D of busy work every 1/F on every rank, e.g. 100us@1kHz")
    .option('--verify <v>', 'auto (small grids), on or off: check against the exact solution / a sequential reference')
    .option('--verbose', 'print the residual of every iteration')
    .option('--quiet', 'print nothing (with --json)')
    .option('--json <file>', 'write the result as JSON')
    .option('--chart <file>', 'write a chart of the phases (.svg or .png)');
  if (app === 'cg') {
    c.addOption(new Option('--mode <m>', 'halo exchange: neighborAlltoall or ineighborAlltoall around the interior matvec (default nonblocking)').choices(['blocking', 'nonblocking']))
      .option('--test-interval <rows>', 'test() the halo every so many rows of the interior matvec (0 = never; default 0)');
  } else {
    c.addOption(new Option('--variant <v>', 'seed 000 Figure 3, 6 or 7 (default overlap)').choices(['alg1', 'alg2', 'overlap']))
      .option('--test-interval <rows>', 'test() the halo every so many rows of the interior matvec (0 = never; default 0)');
  }
  return c.action(async (o: AppCliOptions) => {
    const link = o.link === undefined ? undefined : linkSpecOf(o.link);
    if (link !== undefined) parseLinkSpec(link); // fail fast on a bad spec
    const args: string[] = [];
    for (const k of FORWARDED) if (o[k] !== undefined) args.push(FLAG[k], String(o[k]));
    if (o.verbose) args.push('--verbose');
    if (o.quiet) args.push('--quiet');
    if (o.link !== undefined) args.push('--link', o.link);
    parseAppArgs(app, args); // every rank parses them too: a bad value fails here, once, before any start
    const r = await launch(JOBS[app], {
      ranks: o.ranks, ppn: o.ppn, args, link, topology: o.topology, transport: o.transport === undefined ? undefined : parseTransport(o.transport),
      timeoutMs: o.timeout === undefined ? undefined : o.timeout * 1000, handleSignals: true,
    });
    process.exitCode = r.exitCode;
  });
}

export function registerApps(program: Command): void {
  register(program, 'cg', "seed 001's 3-D Poisson CG (7-point, matrix-free) with a blocking or overlapped halo exchange");
  register(program, 'pcg', "seed 000's PCG on hypre's ij -27pt problem: Algorithm 1, Algorithm 2 or Overlap-PCG");
}
