#!/usr/bin/env node
/**
 * The `nbc` command: run jobs, join jobs started by other launchers, benchmark, calibrate,
 * build the native addon of an installed package.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { NbcError } from '../errors.js';
import { detectWireup } from '../runtime/env.js';
import { parentFlushed } from '../runtime/node-life.js';
import { JS_RUNTIMES, parseJsRuntime } from '../runtime/js-runtime.js';
import { checkJobFile, launch } from '../runtime/launcher.js';
import { checkTopology, LINK_HELP, parseLinkSpec, TOPOLOGY_HELP } from '../runtime/link-spec.js';
import { parseTransport, runNode, type TransportChoice } from '../runtime/node-main.js';
import { registerAgg } from './agg.js';
import { registerApps } from './apps.js';
import { registerBench } from './bench.js';
import { registerBuildNative } from './build-native.js';
import { registerInfo } from './info.js';
import { registerCalibrate } from './calibrate.js';
import { registerSim } from './sim.js';
import { registerWeb } from './web.js';
import { positiveInt } from './args.js';

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name}=${v}: expected a non-negative integer`);
  return n;
}

/** `-n`/`--np`; mpirun's `-np 4` reaches here as `-n p`, which gets a hint. */
function npArg(value: string): number {
  if (value === 'p') throw new InvalidArgumentError("expected a positive integer, got 'p' (mpirun's -np 4 reads as -n p here: write -n 4 or --np 4)");
  return positiveInt(value);
}

/** `--transport`, else NBC_TRANSPORT, else undefined (the node's default, auto). */
export function transportOption(flag: string | undefined): TransportChoice | undefined {
  if (flag !== undefined) return parseTransport(flag);
  const env = process.env.NBC_TRANSPORT;
  return env === undefined || env === '' ? undefined : parseTransport(env, 'NBC_TRANSPORT');
}

// Output piped into a reader that stops early (`nbc info | head`) ends the command quietly.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

/** The installed package's version (package.json, two levels above dist/cli). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

// Usage errors exit 2, as nbc's own argument errors do (NbcError below): commander reports them
// and throws (exitOverride) instead of exiting 1; help and --version still exit 0.
const program = new Command('nbc')
  .description('nbcoll: MPI-class collectives for TypeScript on Node.js')
  .version(packageVersion(), '-V, --version', "print nbcoll's version")
  .exitOverride()
  .enablePositionalOptions();

program.command('run')
  .description('run a job: ceil(N/P) node processes on this host, P rank threads each')
  .requiredOption('-n, --np <N>', 'number of ranks', npArg)
  .option('--ppn <P>', 'ranks per node (default: all on one node)', positiveInt)
  .option('--tag-output', 'prefix every output line with its rank')
  .option('--link <gige|ib|spec>', LINK_HELP)
  .option('--topology <flat|fat-tree:radix=R[,levels=L]>', TOPOLOGY_HELP)
  .option('--transport <t>', 'between nodes: ucx, tcp or auto (default NBC_TRANSPORT, else auto: UCX where every node has it)')
  .option('--runtime <r>', `what runs the nodes and ranks: ${JS_RUNTIMES.join(', ')} (default: the one running nbc; NBC_BUN, NBC_DENO, else PATH, else node_modules/.bin)`)
  .option('--timeout <seconds>', 'kill the job after this many seconds (exit code 124)', positiveInt)
  .option('--agg <spec>', 'a private aggregation fabric for this job (executor agg), e.g. radix=4,levels=2[,payload=256]')
  .argument('<job>', 'job file (.js or .ts)')
  .argument('[args...]', 'arguments for the job')
  .passThroughOptions()
  .action(async (job: string, args: string[], o: {
    np: number; ppn?: number; tagOutput?: boolean; link?: string; topology?: string; timeout?: number; transport?: string; runtime?: string;
    agg?: string;
  }) => {
    if (o.link !== undefined) parseLinkSpec(o.link); // fail fast on a bad spec
    const r = await launch(job, {
      ranks: o.np, ppn: o.ppn, args, tagOutput: o.tagOutput, link: o.link, topology: o.topology, transport: transportOption(o.transport),
      runtime: o.runtime === undefined ? undefined : parseJsRuntime(o.runtime),
      timeoutMs: o.timeout === undefined ? undefined : o.timeout * 1000, handleSignals: true, agg: o.agg,
    });
    process.exitCode = r.exitCode;
  });

program.command('node')
  .description('run one node of a job started by another launcher (mpirun, srun, ...)')
  .requiredOption('--ppn <P>', 'ranks on this node', positiveInt)
  .option('--tag-output', 'prefix every output line with its rank')
  .option('--link <gige|ib|spec>', LINK_HELP)
  .option('--topology <flat|fat-tree:radix=R[,levels=L]>', TOPOLOGY_HELP)
  .option('--bind <host>', 'address this node listens on (default 127.0.0.1, or NBC_BIND_ADDR)')
  .option('--transport <t>', 'to other nodes: ucx, tcp or auto (default NBC_TRANSPORT, else auto)')
  .argument('<job>', 'job file (.js or .ts)')
  .argument('[args...]', 'arguments for the job')
  .passThroughOptions()
  .action(async (job: string, args: string[], o: { ppn: number; tagOutput?: boolean; link?: string; topology?: string; bind?: string; transport?: string }) => {
    const wireup = detectWireup();
    checkTopology(o.topology, o.link, wireup.nodes);
    const ringKb = envInt('NBC_RING_KB');
    const arenaMb = envInt('NBC_ARENA_MB');
    const creditKb = envInt('NBC_EAGER_CREDIT_KB');
    checkJobFile(job);
    const code = await runNode({
      entry: resolvePath(job),
      args,
      ranks: o.ppn,
      wireup,
      tagOutput: o.tagOutput,
      bindHost: o.bind ?? process.env.NBC_BIND_ADDR,
      link: o.link !== undefined ? parseLinkSpec(o.link) : undefined,
      topology: o.topology,
      ringBytes: ringKb === undefined ? undefined : ringKb * 1024,
      sliceBytes: arenaMb === undefined ? undefined : arenaMb * 1024 * 1024,
      eagerLimit: envInt('NBC_EAGER_LIMIT'),
      eagerCredit: creditKb === undefined ? undefined : creditKb * 1024,
      spinUs: envInt('NBC_SPIN_US'),
      yieldUs: envInt('NBC_YIELD_US'),
      engineSpinUs: envInt('NBC_ENGINE_SPIN_US'),
      silenceMs: envInt('NBC_NODE_SILENCE_MS'),
      transport: transportOption(o.transport) ?? 'auto',
    });
    await parentFlushed();
    process.exit(code);
  });

program.command('secret')
  .description('print a fresh job secret (64 hex digits) for NBC_SECRET')
  .action(() => {
    process.stdout.write(randomBytes(32).toString('hex') + '\n');
  });

registerAgg(program);
registerBench(program);
registerApps(program);
registerCalibrate(program);
registerBuildNative(program);
registerInfo(program);
registerSim(program);
registerWeb(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2); // commander printed it
  if (err instanceof NbcError) {
    process.stderr.write(`nbc: ${err.message} [${err.code}]\n`);
    process.exit(2);
  }
  throw err;
}
