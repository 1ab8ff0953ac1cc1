/**
 * Entry point of the aggregation manager process, started by startFabric:
 *
 *   node manager-main.js '<json ManagerOptions>'
 *
 * The fabric secret comes in NBC_AGG_SECRET (64 hex digits) and is removed from the
 * environment (daemons get it the same way). Once every daemon has registered and linked to its
 * parent, one line goes to stdout: `READY {"host":..,"port":..,"pids":[..]}` (AM pid first);
 * a start that fails prints `FAILED <reason>` and exits 1. Everything else is logged to stderr.
 * SIGTERM and SIGINT stop the daemons, then the manager. With `private`, the manager does the
 * same when its stdin (a pipe from the process that started it) closes.
 */
import { Buffer } from 'node:buffer';
import { Manager, type ManagerOptions } from './manager.js';

const secret = Buffer.from(process.env.NBC_AGG_SECRET ?? '', 'hex');
delete process.env.NBC_AGG_SECRET;
const options = JSON.parse(process.argv[2] ?? '{}') as ManagerOptions;
const log = (line: string): void => {
  process.stderr.write(`[agg AM pid ${process.pid}] ${line}\n`);
};
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

if (secret.length !== 32) {
  process.stdout.write('FAILED NBC_AGG_SECRET is not 64 hex digits\n');
  process.exit(1);
}

const manager = new Manager(options, secret, log);
let exiting = false;
const shutdown = (why: string): void => {
  if (exiting) return;
  exiting = true;
  log(`stopping (${why})`);
  void manager.stop().then(() => process.exit(0));
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
if (options.private) {
  process.stdin.on('end', () => shutdown('parent gone'));
  process.stdin.on('close', () => shutdown('parent gone'));
  process.stdin.on('error', () => shutdown('parent gone'));
  process.stdin.resume();
}

try {
  await manager.start();
  const pids = [process.pid, ...manager.anPids()];
  process.stdout.write(`READY ${JSON.stringify({ host: options.listenHost, port: manager.port, pids })}\n`);
  log(`fabric ready: radix ${options.radix}, ${options.levels} levels, ${pids.length - 1} daemons, listening on ${options.listenHost}:${manager.port}`);
} catch (err) {
  process.stdout.write(`FAILED ${(err as Error).message}\n`);
  await manager.stop();
  process.exit(1);
}
