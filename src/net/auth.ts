/**
 * Mutual HMAC challenge: every TCP connection proves the job secret before any frame flows.
 *
 * Three fixed-size messages (no length field is ever trusted):
 *
 *   A -> C  CHALLENGE  36 B  magic "NBC1" | acceptor nonce (32)
 *   C -> A  RESPONSE   72 B  magic "NBC1" | connector node id (u32 LE) | connector nonce (32)
 *                            | HMAC-SHA256(secret, "nbc-auth-v1|connector|" + acceptor nonce + node id u32 LE)
 *   A -> C  CONFIRM    32 B  HMAC-SHA256(secret, "nbc-auth-v1|acceptor|" + connector nonce)
 *
 * The acceptor speaks first, so a connector learns nothing before it has answered a fresh nonce;
 * the labels differ per direction, so one side's MAC can never be replayed as the other's.
 * The magic tells garbage (or a stranger's protocol) apart from a wrong secret.
 *
 * Both helpers leave the socket paused with no listeners of theirs attached and hand back the
 * bytes that arrived after the handshake in the same chunk (`leftover`): the caller attaches its
 * own 'data' listener, processes leftover first, then calls `socket.resume()`. The caller should
 * keep an 'error' listener on the socket from before the handshake until it is closed; the
 * helpers destroy the socket when the handshake fails.
 */
import { Buffer } from 'node:buffer';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { NbcArgError, NbcAuthError } from '../errors.js';

/** Protocol magic and version at the start of the first two messages. */
export const AUTH_MAGIC: Readonly<Buffer> = Buffer.from('NBC1', 'latin1');
/** The job secret is exactly 256 bits. */
export const SECRET_BYTES = 32;
export const NONCE_BYTES = 32;
export const MAC_BYTES = 32;
/** Acceptor -> connector: magic, acceptor nonce. */
export const CHALLENGE_BYTES = 4 + NONCE_BYTES;
/** Connector -> acceptor: magic, node id, connector nonce, MAC. */
export const RESPONSE_BYTES = 4 + 4 + NONCE_BYTES + MAC_BYTES;
/** Acceptor -> connector: MAC. */
export const CONFIRM_BYTES = MAC_BYTES;
/** A handshake not finished within this deadline fails. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5000;

const CONNECTOR_LABEL = Buffer.from('nbc-auth-v1|connector|', 'latin1');
const ACCEPTOR_LABEL = Buffer.from('nbc-auth-v1|acceptor|', 'latin1');
const LARGEST_MESSAGE = RESPONSE_BYTES;

export interface HandshakeOptions {
  /** Deadline for the whole handshake (default 5000 ms). */
  timeoutMs?: number;
  /** How messages name the other end (default: the socket's remote address). */
  remote?: string;
}

/**
 * A failed handshake. `code` is NBC_ERR_AUTH; `reason` is the short cause ("bad HMAC",
 * "garbage handshake (bad magic bytes)", "short handshake (...)", "timed out after 5000 ms",
 * "connection error: ...") and `remote` the other end's address, for logs.
 */
export class NbcHandshakeError extends NbcAuthError {
  readonly remote: string;
  readonly reason: string;
  constructor(message: string, remote: string, reason: string, options?: { cause?: unknown }) {
    super(message, options);
    this.remote = remote;
    this.reason = reason;
  }
}

/** "address:port" of the other end, for messages. */
export function remoteAddressOf(socket: Socket): string {
  const address = socket.remoteAddress ?? '?';
  const port = socket.remotePort ?? '?';
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

function checkSecret(secret: Uint8Array, what: string): void {
  if (!(secret instanceof Uint8Array) || secret.byteLength !== SECRET_BYTES) {
    throw new NbcArgError(
      `Cannot ${what}: the job secret must be a Buffer of ${SECRET_BYTES} bytes (256 bits)`);
  }
}

function checkTimeout(timeoutMs: number, what: string): void {
  if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw new NbcArgError(`Cannot ${what}: timeoutMs ${timeoutMs} is not a positive number`);
  }
}

function mac(secret: Uint8Array, label: Buffer, a: Uint8Array, b?: Uint8Array): Buffer {
  const h = createHmac('sha256', secret).update(label).update(a);
  if (b !== undefined) h.update(b);
  return h.digest();
}

function hasMagic(msg: Buffer): boolean {
  return msg[0] === AUTH_MAGIC[0] && msg[1] === AUTH_MAGIC[1] && msg[2] === AUTH_MAGIC[2] && msg[3] === AUTH_MAGIC[3];
}

/**
 * Handles one complete fixed-size message; returns the size of the next message to read, 0 when
 * the handshake is complete, or a string: the reason to fail.
 */
type Step = (msg: Buffer) => number | string;

/**
 * Reads fixed-size messages from `socket` and feeds them to `step` until it returns 0; resolves
 * with the bytes that followed the last message in its chunk.
 */
function runHandshake(
  socket: Socket, remote: string, messagePrefix: string, timeoutMs: number, firstSize: number,
  step: Step, start: () => void,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const buf = Buffer.allocUnsafe(LARGEST_MESSAGE);
    let need = firstSize;
    let filled = 0;
    let settled = false;

    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onEnd);
      socket.removeListener('error', onError);
    };
    const fail = (reason: string, cause?: unknown): void => {
      if (settled) return;
      cleanup();
      socket.destroy();
      reject(new NbcHandshakeError(`${messagePrefix} ${remote}: ${reason}`, remote, reason,
        cause === undefined ? undefined : { cause }));
    };
    const onData = (chunk: Buffer): void => {
      if (settled) return;
      let pos = 0;
      while (pos < chunk.length) {
        const n = chunk.copy(buf, filled, pos, Math.min(chunk.length, pos + need - filled));
        filled += n;
        pos += n;
        if (filled < need) return;
        const result = step(buf.subarray(0, need));
        filled = 0;
        if (typeof result === 'string') {
          fail(result);
          return;
        }
        if (result === 0) {
          cleanup();
          // Pause before our listener goes: in flowing mode, chunks without a listener are lost.
          socket.pause();
          resolve(chunk.subarray(pos));
          return;
        }
        need = result;
      }
    };
    const onEnd = (): void => {
      fail(`short handshake (connection closed after ${filled} of ${need} bytes)`);
    };
    const onError = (err: Error): void => {
      fail(`connection error: ${err.message}`, err);
    };
    const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs);

    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', onError);
    socket.resume();
    if (socket.destroyed) {
      fail('short handshake (connection already closed)');
      return;
    }
    start();
  });
}

/**
 * The acceptor's secret chosen by the id the connector claims (several keys on one listener, e.g.
 * an aggregation daemon serving several jobs): null when no key is known for that id, which fails
 * the handshake. The id is proven only by the MAC made with the key it selects.
 */
export type SecretLookup = (claimedNodeId: number) => Buffer | null;

/**
 * Runs the acceptor's side on a freshly accepted socket. `secret` may be a lookup by the
 * connector's claimed node id instead of one key. Resolves with the connector's node id
 * (proven by its MAC) and any bytes that followed its response; rejects with NbcHandshakeError
 * (an NbcAuthError) and destroys the socket on any failure.
 */
export function authenticateAsAcceptor(
  socket: Socket, secret: Buffer | SecretLookup, opts: HandshakeOptions = {},
): Promise<{ peerNodeId: number; leftover: Buffer }> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
  if (typeof secret !== 'function') checkSecret(secret, 'authenticate a connection');
  checkTimeout(timeoutMs, 'authenticate a connection');
  const remote = opts.remote ?? remoteAddressOf(socket);
  const challenge = Buffer.allocUnsafe(CHALLENGE_BYTES);
  AUTH_MAGIC.copy(challenge, 0);
  randomBytes(NONCE_BYTES).copy(challenge, 4);
  const nonce = challenge.subarray(4);
  let peerNodeId = -1;

  const step: Step = (msg) => {
    if (!hasMagic(msg)) return 'garbage handshake (bad magic bytes)';
    const claimed = msg.readUInt32LE(4);
    const key = typeof secret === 'function' ? secret(claimed) : secret;
    if (key === null) return `no secret known for connector id ${claimed}`;
    if (key.byteLength !== SECRET_BYTES) return `secret for connector id ${claimed} is not ${SECRET_BYTES} bytes`;
    const expected = mac(key, CONNECTOR_LABEL, nonce, msg.subarray(4, 8));
    if (!timingSafeEqual(msg.subarray(8 + NONCE_BYTES, RESPONSE_BYTES), expected)) return 'bad HMAC';
    peerNodeId = claimed;
    socket.write(mac(key, ACCEPTOR_LABEL, msg.subarray(8, 8 + NONCE_BYTES)));
    return 0;
  };
  return runHandshake(socket, remote, 'Cannot authenticate connection from', timeoutMs, RESPONSE_BYTES, step,
    () => socket.write(challenge))
    .then((leftover) => ({ peerNodeId, leftover }));
}

/**
 * Runs the connector's side (`nodeId` is this node's id, proven to the acceptor). May be called
 * before the socket has connected. Resolves once the acceptor has proven the secret too, with any
 * bytes that followed its confirmation; rejects with NbcHandshakeError and destroys the socket on
 * any failure, connection errors included.
 */
export function authenticateAsConnector(
  socket: Socket, secret: Buffer, nodeId: number, opts: HandshakeOptions = {},
): Promise<{ leftover: Buffer }> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
  checkSecret(secret, 'authenticate to a peer');
  checkTimeout(timeoutMs, 'authenticate to a peer');
  if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > 0xffff_ffff) {
    throw new NbcArgError(`Cannot authenticate to a peer: node id ${nodeId} is not an integer in 0..2^32-1`);
  }
  // Before 'connect' the socket does not know its remote address; the caller may name it.
  const remote = opts.remote ?? remoteAddressOf(socket);
  const response = Buffer.allocUnsafe(RESPONSE_BYTES);
  AUTH_MAGIC.copy(response, 0);
  response.writeUInt32LE(nodeId, 4);
  randomBytes(NONCE_BYTES).copy(response, 8);
  const nonce = response.subarray(8, 8 + NONCE_BYTES);
  let stage = 0;

  const step: Step = (msg) => {
    if (stage === 0) {
      if (!hasMagic(msg)) return 'garbage handshake (bad magic bytes)';
      mac(secret, CONNECTOR_LABEL, msg.subarray(4, CHALLENGE_BYTES), response.subarray(4, 8))
        .copy(response, 8 + NONCE_BYTES);
      socket.write(response);
      stage = 1;
      return CONFIRM_BYTES;
    }
    const expected = mac(secret, ACCEPTOR_LABEL, nonce);
    if (!timingSafeEqual(msg, expected)) return 'bad HMAC';
    return 0;
  };
  return runHandshake(socket, remote, 'Cannot authenticate to', timeoutMs, CHALLENGE_BYTES, step, () => {})
    .then((leftover) => ({ leftover }));
}

