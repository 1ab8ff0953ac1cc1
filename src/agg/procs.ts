/**
 * The fabric's processes seen from outside: signalling one that may be gone, telling whether
 * one still runs (a zombie does not), and waiting for a set to be gone.
 */
import { readFileSync } from 'node:fs';

export function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** True while `pid` runs (a zombie counts as gone: it runs no code and holds no socket). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readStat(pid);
  return stat === null || !/^\d+ \(.*\) Z/.test(stat);
}

function readStat(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
}

/** Resolves once none of `pids` runs, or after `ms`. */
export async function waitGone(pids: number[], ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  for (;;) {
    if (pids.every((p) => !isRunning(p))) return true;
    if (performance.now() >= end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}
