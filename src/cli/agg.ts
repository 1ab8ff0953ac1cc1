/**
 * `nbc agg start|status|stop`: a shared aggregation fabric on this host (docs/agg.md).
 *
 * `start` leaves the manager and its daemons running after the command exits (their log goes
 * to the state file's path with `.log` appended) and writes the state file (mode 0600: it holds
 * the fabric secret). `status` and `stop` read it and talk to the manager over an
 * authenticated connection.
 */
import { chmodSync, closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import Table from 'cli-table3';
import { InvalidArgumentError, type Command } from 'commander';
import { NbcArgError } from '../errors.js';
import {
  aggStatePath, fabricStatus, readFabricState, startFabric, stopFabricAt, type FabricState,
} from '../agg/fabric.js';
import { isRunning } from '../agg/manager.js';
import { parseLinkSpec } from '../runtime/link-spec.js';

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a non-negative integer, got '${value}'`);
  return n;
}

function needState(): { path: string; state: FabricState } {
  const path = aggStatePath();
  const state = readFabricState(path);
  if (state === null) throw new NbcArgError(`Cannot find an aggregation fabric: no state file ${path}; expected one written by nbc agg start`);
  return { path, state };
}

interface AnRow { id: number; level: number; host: string; port: number; pid: number; alive: boolean; slotsUsed: number; slotsTotal: number; counters: Record<string, number> }
interface GroupRow { id: number; job: string; key: string; members: number; rootAn: number; ans: number[]; slots: number; epoch: number; rootFragments: number }
interface JobRow { id: string; index: number; nodes: number; reservations: Record<string, number> }

export function registerAgg(program: Command): void {
  const agg = program.command('agg').description('in-network aggregation fabric (seed 003): manager and daemons on this host');

  agg.command('start')
    .description('start a detached fabric: a manager and radix^0..radix^(levels-1) daemons')
    .requiredOption('--radix <R>', 'children per daemon (2..64)', int)
    .requiredOption('--levels <L>', 'levels of the tree (1..4)', int)
    .option('--listen <addr>', 'address the manager and daemons listen on', '127.0.0.1')
    .option('--port <P>', 'manager port (default: ephemeral)', int)
    .option('--payload <N>', 'bytes per slot (fragment payload)', int)
    .option('--slots <N>', 'slots per daemon', int)
    .option('--job-quota <N>', 'most slots one job may hold at one daemon', int)
    .option('--link <spec>', 'emulated link on every daemon hop, e.g. latency=20us')
    .action(async (o: { radix: number; levels: number; listen: string; port?: number; payload?: number; slots?: number; jobQuota?: number; link?: string }) => {
      const path = aggStatePath();
      const old = readFabricState(path);
      if (old !== null && old.pids.length > 0 && isRunning(old.pids[0]!)) {
        throw new NbcArgError(`Cannot start an aggregation fabric: one runs already (manager pid ${old.pids[0]}, state ${path}); nbc agg stop first`);
      }
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const logFd = openSync(`${path}.log`, 'a', 0o600);
      try {
        const f = await startFabric({
          radix: o.radix, levels: o.levels, listenHost: o.listen, port: o.port, payloadPerSlot: o.payload,
          slotsPerAn: o.slots, jobQuotaSlots: o.jobQuota, link: o.link === undefined ? undefined : parseLinkSpec(o.link),
          detached: true, logFd,
        });
        const state: FabricState = {
          manager: f.manager, secret: f.secret.toString('hex'), pids: f.pids, radix: o.radix, levels: o.levels,
          startedAt: new Date().toISOString(),
        };
        writeFileSync(path, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
        chmodSync(path, 0o600);
        const hp = f.manager.host.includes(':') ? `[${f.manager.host}]:${f.manager.port}` : `${f.manager.host}:${f.manager.port}`;
        process.stdout.write(`NBC_AGG_MANAGER=${hp}\n`);
        process.stderr.write(`nbc agg: ${f.pids.length - 1} daemons (radix ${o.radix}, ${o.levels} levels); state ${path}, log ${path}.log\n`);
      } finally {
        closeSync(logFd);
      }
    });

  agg.command('status')
    .description('show the tree, groups, reservations and counters of the running fabric')
    .option('--json', 'print the manager\'s answer as JSON')
    .action(async (o: { json?: boolean }) => {
      const { state } = needState();
      const s = await fabricStatus(state.manager, Buffer.from(state.secret, 'hex'));
      if (o.json) {
        process.stdout.write(JSON.stringify(s, null, 2) + '\n');
        return;
      }
      const ans = s.ans as AnRow[];
      const t = new Table({ style: { head: [], border: [] }, head: ['AN', 'level', 'address', 'pid', 'alive', 'slots', 'fragments', 'bytes', 'reduced', 'auth rej.', 'bad frames', 'errors'] });
      for (const a of ans) {
        const c = a.counters;
        t.push([a.id, a.level, `${a.host}:${a.port}`, a.pid, a.alive ? 'yes' : 'NO', `${a.slotsUsed}/${a.slotsTotal}`,
          c.fragments ?? 0, c.bytes ?? 0, c.reduced ?? 0, c.authRejections ?? 0, c.badFrames ?? 0, c.groupErrors ?? 0]);
      }
      const m = s.manager as { host: string; port: number; pid: number };
      process.stdout.write(`manager ${m.host}:${m.port} (pid ${m.pid}), radix ${String(s.radix)}, ${String(s.levels)} levels, ` +
        `${String(s.payloadPerSlot)} B per slot\n${t.toString()}\n`);
      const groups = s.groups as GroupRow[];
      if (groups.length > 0) {
        const g = new Table({ style: { head: [], border: [] }, head: ['group', 'job', 'key', 'members', 'root AN', 'ANs', 'slots', 'epoch', 'fragments'] });
        for (const x of groups) g.push([x.id, x.job, x.key, x.members, x.rootAn, x.ans.join(','), x.slots, x.epoch, x.rootFragments]);
        process.stdout.write(`${g.toString()}\n`);
      } else {
        process.stdout.write('no groups\n');
      }
      for (const j of s.jobs as JobRow[]) {
        const r = Object.entries(j.reservations).map(([an, n]) => `AN ${an}: ${n}`).join(', ') || 'none';
        process.stdout.write(`job '${j.id}' (${j.nodes} node connections): slots held ${r}\n`);
      }
      const c = s.counters as Record<string, number>;
      process.stdout.write(`manager counters: ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}\n`);
    });

  agg.command('stop')
    .description('stop the running fabric and remove its state file')
    .action(async () => {
      const { path, state } = needState();
      await stopFabricAt(state.manager, Buffer.from(state.secret, 'hex'), state.pids);
      rmSync(path, { force: true });
      process.stderr.write(`nbc agg: stopped (${state.pids.length} processes)\n`);
    });
}
