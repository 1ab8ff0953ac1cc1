/**
 * Length-prefixed frames: the unit of everything that crosses a TCP link after the handshake.
 *
 *   offset 0  u32 LE  length = 1 + body length   (0 is invalid: every frame has a type byte)
 *   offset 4  u8      type
 *   offset 5  body    (length - 1 bytes)
 *
 * The decoder is an explicit state machine (after ws's receiver): it reads the length, then the
 * type, then the body, from chunks cut anywhere. It checks the declared length against a bound
 * before it allocates or waits for anything, so a peer cannot make it buffer more than one
 * frame's worth of bytes.
 */
import { Buffer } from 'node:buffer';
import { NbcArgError } from '../errors.js';

/** Bytes in front of every body: the u32 length and the u8 type. */
export const FRAME_HEADER_BYTES = 5;

/**
 * Largest body a frame may carry by default: 1 MiB of payload plus 256 bytes of room for the
 * headers of the layers above (a message envelope in front of a 1 MiB fragment).
 */
export const MAX_FRAME_BODY = 1024 * 1024 + 256;

/** The format's own limit: the length word counts the type byte. */
const FORMAT_MAX_BODY = 0xffff_fffe;

/** One shared empty body, handed out for frames that have none. */
const EMPTY = Buffer.alloc(0);

/**
 * Writes a frame header into `target` at `offset` (5 bytes). For callers that keep their own
 * header storage; `encodeFrameHeader` is the allocating convenience.
 */
export function writeFrameHeader(target: Uint8Array, offset: number, type: number, bodyLength: number): void {
  if (!Number.isInteger(type) || type < 0 || type > 0xff) {
    throw new NbcArgError(`Cannot encode a frame header: type ${type} is not an integer in 0..255`);
  }
  if (!Number.isInteger(bodyLength) || bodyLength < 0 || bodyLength > FORMAT_MAX_BODY) {
    throw new NbcArgError(
      `Cannot encode a frame header: body length ${bodyLength} is not an integer in 0..${FORMAT_MAX_BODY}`);
  }
  const length = bodyLength + 1;
  target[offset] = length & 0xff;
  target[offset + 1] = (length >>> 8) & 0xff;
  target[offset + 2] = (length >>> 16) & 0xff;
  target[offset + 3] = (length >>> 24) & 0xff;
  target[offset + 4] = type;
}

/** A fresh 5-byte header for a frame of `type` whose body is `bodyLength` bytes. */
export function encodeFrameHeader(type: number, bodyLength: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  writeFrameHeader(header, 0, type, bodyLength);
  return header;
}

/** A whole frame in one buffer (header and body); for small control frames. */
export function encodeFrame(type: number, body: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.byteLength);
  writeFrameHeader(frame, 0, type, body.byteLength);
  frame.set(body, FRAME_HEADER_BYTES);
  return frame;
}

/** Decoder states. */
const State = {
  /** Reading the 4-byte length word (possibly one byte per chunk). */
  Length: 0,
  /** Reading the type byte. */
  Type: 1,
  /** Copying a body that did not arrive inside one chunk. */
  Body: 2,
  /** A bad frame (or a throwing callback) was seen; the stream cannot be resynchronised. */
  Failed: 3,
} as const;
type State = (typeof State)[keyof typeof State];

export type FrameHandler = (type: number, body: Buffer) => void;

export class FrameDecoder {
  private state: State = State.Length;
  /** Length bytes read so far in State.Length. */
  private lengthBytes = 0;
  /** The declared length (1 + body length) of the frame being read. */
  private length = 0;
  private type = 0;
  /** The body being assembled across chunks (State.Body only). */
  private body: Buffer = EMPTY;
  private bodyFilled = 0;
  private failure: Error | null = null;

  /**
   * `onFrame` receives each frame's type and body. The body stays valid after the callback:
   * it is a view of the pushed chunk when the frame lies inside that chunk (so the chunk must not
   * be reused by the caller; socket chunks never are), else a fresh buffer.
   */
  constructor(private readonly onFrame: FrameHandler, private readonly maxBody = MAX_FRAME_BODY) {
    if (!Number.isInteger(maxBody) || maxBody < 0 || maxBody > FORMAT_MAX_BODY) {
      throw new NbcArgError(`Cannot create a frame decoder: maxBody ${maxBody} is not an integer in 0..${FORMAT_MAX_BODY}`);
    }
  }

  /** True once a bad frame was seen; every later push throws the same error. */
  get failed(): boolean {
    return this.state === State.Failed;
  }

  /**
   * Consumes `chunk`, calling onFrame for every frame it completes. Throws an NbcError
   * (NBC_ERR_ARG) for a declared length of 0 or above the bound; the caller must then drop the
   * connection. If onFrame throws, the rest of the chunk is not parsed, the decoder fails, and the
   * error propagates.
   */
  push(chunk: Buffer): void {
    if (this.state === State.Failed) throw this.failure!;
    try {
      this.consume(chunk);
    } catch (err) {
      this.state = State.Failed;
      this.failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  }

  private consume(chunk: Buffer): void {
    const end = chunk.length;
    let pos = 0;
    while (pos < end) {
      switch (this.state) {
        case State.Length: {
          if (this.lengthBytes === 0 && end - pos >= 4) {
            this.length = chunk.readUInt32LE(pos);
            pos += 4;
          } else {
            // Little-endian, one byte at a time; multiplication keeps the value unsigned.
            this.length += chunk[pos]! * 2 ** (8 * this.lengthBytes);
            pos++;
            if (++this.lengthBytes < 4) break;
            this.lengthBytes = 0;
          }
          if (this.length === 0) {
            throw new NbcArgError('Cannot decode frame: declared length is 0; every frame has at least a type byte');
          }
          if (this.length - 1 > this.maxBody) {
            throw new NbcArgError(
              `Cannot decode frame: declared body of ${this.length - 1} bytes exceeds the limit of ${this.maxBody}`);
          }
          this.state = State.Type;
          break;
        }
        case State.Type: {
          this.type = chunk[pos++]!;
          const bodyLength = this.length - 1;
          this.length = 0;
          if (bodyLength === 0) {
            this.state = State.Length;
            this.onFrame(this.type, EMPTY);
          } else if (end - pos >= bodyLength) {
            const body = chunk.subarray(pos, pos + bodyLength);
            pos += bodyLength;
            this.state = State.Length;
            this.onFrame(this.type, body);
          } else {
            this.body = Buffer.allocUnsafe(bodyLength);
            this.bodyFilled = chunk.copy(this.body, 0, pos, end);
            pos = end;
            this.state = State.Body;
          }
          break;
        }
        case State.Body: {
          const n = chunk.copy(this.body, this.bodyFilled, pos, end);
          pos += n;
          this.bodyFilled += n;
          if (this.bodyFilled === this.body.length) {
            const body = this.body;
            this.body = EMPTY;
            this.bodyFilled = 0;
            this.state = State.Length;
            this.onFrame(this.type, body);
          }
          break;
        }
        case State.Failed:
          throw this.failure!;
      }
    }
  }
}
