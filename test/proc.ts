/**
 * What the reliability harnesses read from /proc about a job's processes, with no hook in the
 * library: the process tree, a process's environment and command line, and its TCP sockets
 * (listening and established) by matching the socket inodes open in /proc/<pid>/fd against
 * /proc/net/tcp{,6}. Linux only; every reader tolerates a process that is gone meanwhile.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Parent pid of `pid`, or -1 once it is gone. */
export function ppidOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return -1;
  }
}

/** Every live descendant of `root`. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const pp = ppidOf(pid);
    if (pp > 0) (children.get(pp) ?? children.set(pp, []).get(pp)!).push(pid);
  }
  const out: number[] = [];
  const stack = [...(children.get(root) ?? [])];
  while (stack.length > 0) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

/** True while `pid` runs (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

/** The command line, arguments joined by spaces ('' once gone). */
export function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** The environment ({} once gone). */
export function environOf(pid: number): Record<string, string> {
  try {
    return Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  } catch {
    return {};
  }
}

/** Socket inode -> owning pid, for the sockets open in any of `pids`. */
export function socketOwners(pids: Iterable<number>): Map<string, number> {
  const owner = new Map<string, number>();
  for (const pid of pids) {
    let fds: string[] = [];
    try { fds = readdirSync(`/proc/${pid}/fd`); } catch { continue; }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) owner.set(m[1]!, pid);
      } catch { /* closed meanwhile */ }
    }
  }
  return owner;
}

export interface TcpSocket {
  /** "a.b.c.d:port" (IPv4, or IPv4-mapped IPv6). */
  local: string;
  remote: string;
  inode: string;
}

/** /proc/net/tcp{,6} state codes. */
export const TCP_ESTABLISHED = '01';
export const TCP_LISTEN = '0A';

/** Every TCP socket of this network namespace in `state`. */
export function tcpSockets(state: string): TcpSocket[] {
  const out: TcpSocket[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== state) continue;
      out.push({ local: hexAddr(f[1]!), remote: hexAddr(f[2]!), inode: f[9]! });
    }
  }
  return out;
}

/** The port of an "address:port" string. */
export const portOf = (addr: string): number => Number(addr.slice(addr.lastIndexOf(':') + 1));

/** "0100007F:9C40" -> "127.0.0.1:40000". */
function hexAddr(text: string): string {
  const [addr, port] = text.split(':') as [string, string];
  const v4 = addr.length === 8 ? addr : addr.slice(24);
  const bytes = [6, 4, 2, 0].map((i) => parseInt(v4.slice(i, i + 2), 16));
  return `${bytes.join('.')}:${parseInt(port, 16)}`;
}
