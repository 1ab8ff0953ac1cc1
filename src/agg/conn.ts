/**
 * The fabric's use of the one authenticated connection (net/conn.ts): every hop of the fabric
 * (manager, daemons, clients, admin requests) is an AuthConn whose frames are bounded at the
 * fabric's MAX_BODY, and the daemons emulate the configured link on every hop they send. This
 * module adds the fabric's dial and its CTRL message; accepting is net/listener.ts's.
 */
import type { Buffer } from 'node:buffer';
import { dialAuthenticated, type AuthConn } from '../net/conn.js';
import type { LinkEmulation } from '../net/emulate.js';
import { encodeCtrl, FrameType, MAX_BODY, type Ctrl } from './wire.js';

export type { AuthConn as AggConn } from '../net/conn.js';

/** Sends one CTRL message (dropped when `conn` is absent or closed). */
export function sendCtrl(conn: AuthConn | null | undefined, msg: Ctrl): void {
  conn?.send(FrameType.Ctrl, [encodeCtrl(msg)]);
}

/**
 * Connects to host:port and proves `secret` as connector `id`: an authenticated connection, not
 * yet started, emulating `link` on what it sends. Rejects with NbcAuthError for a wrong key or
 * garbage, NbcPeerFailedError for a peer that is not there (net/conn.ts dialAuthenticated).
 */
export async function dial(
  host: string, port: number, secret: Buffer, id: number, timeoutMs = 5000, link?: LinkEmulation,
): Promise<AuthConn> {
  const conn = await dialAuthenticated(host, port, secret, id, { timeoutMs, maxBody: MAX_BODY });
  conn.emulate(link);
  return conn;
}
