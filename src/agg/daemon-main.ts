/**
 * Entry point of an aggregation daemon process, started by the manager:
 *
 *   node daemon-main.js '<json DaemonOptions without secret and log>' [--private]
 *
 * The fabric secret comes in NBC_AGG_SECRET (64 hex digits), never on the command line (which
 * every user of the host can read); it is removed from the environment at once. With --private
 * the daemon exits when its stdin (a pipe from the manager) closes: a private fabric dies with
 * its manager even when the manager is killed.
 */
import { Buffer } from 'node:buffer';
import { Daemon, type DaemonOptions } from './daemon.js';

const secretHex = process.env.NBC_AGG_SECRET ?? '';
delete process.env.NBC_AGG_SECRET;
const secret = Buffer.from(secretHex, 'hex');
const config = JSON.parse(process.argv[2] ?? '{}') as Omit<DaemonOptions, 'secret' | 'log'>;
const prefix = `[agg AN ${config.id} pid ${process.pid}] `;
const log = (line: string): void => {
  process.stderr.write(prefix + line + '\n');
};
if (secret.length !== 32) {
  log('NBC_AGG_SECRET is not 64 hex digits; exiting');
  process.exit(2);
}
const daemon = new Daemon({ ...config, secret, log });
process.on('SIGTERM', () => daemon.stop(0));
process.on('SIGINT', () => daemon.stop(0));
process.stderr.on('error', () => {});
if (process.argv.includes('--private')) {
  process.stdin.on('end', () => daemon.stop(0));
  process.stdin.on('close', () => daemon.stop(0));
  process.stdin.on('error', () => daemon.stop(0));
  process.stdin.resume();
}
await daemon.start();
