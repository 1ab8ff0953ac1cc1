import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { NbcError } from '../src/errors.js';
import { authenticateAsAcceptor, authenticateAsConnector, NbcHandshakeError } from '../src/net/auth.js';
import {
  encodeFrame, encodeFrameHeader, FrameDecoder, MAX_FRAME_BODY,
} from '../src/net/frame.js';
import { LinkManager, type LinkManagerOptions } from '../src/net/link.js';
import { dialAuthenticated, type AuthConn } from '../src/net/conn.js';
import { AuthListener } from '../src/net/listener.js';
import { EmulatedWire } from '../src/net/emulate.js';
import { LINK_PRESETS, parseLinkSpec } from '../src/runtime/link-spec.js';

type Frame = { from: number; type: number; body: Buffer };

/** Two link managers (nodes 0 and 1) that know each other's address. */
async function pair(extra: Partial<LinkManagerOptions> = {}, extraA: Partial<LinkManagerOptions> = {}) {
  const secret = randomBytes(32);
  const logs: string[] = [];
  const log = (msg: string): void => {
    logs.push(msg);
  };
  const a = new LinkManager({ nodeId: 0, secret, log, ...extra, ...extraA });
  const b = new LinkManager({ nodeId: 1, secret, log, ...extra });
  const pa = await a.listen();
  const pb = await b.listen();
  const table = [{ nodeId: 0, ...pa }, { nodeId: 1, ...pb }];
  a.setPeers(table);
  b.setPeers(table);
  const close = async (): Promise<void> => {
    await Promise.all([a.close(), b.close()]);
  };
  return { a, b, pa, pb, secret, logs, close };
}

/** Resolves with the next `count` frames `m` receives. */
function collect(m: LinkManager, count: number): Promise<Frame[]> {
  const frames: Frame[] = [];
  return new Promise((resolve) => {
    const onFrame = (from: number, type: number, body: Buffer): void => {
      frames.push({ from, type, body });
      if (frames.length === count) {
        m.removeListener('frame', onFrame);
        resolve(frames);
      }
    };
    m.on('frame', onFrame);
  });
}

function seqBody(i: number): Buffer {
  const b = Buffer.alloc(4 + (i % 37));
  b.writeUInt32LE(i, 0);
  b.fill(i & 0xff, 4);
  return b;
}

function assertSequence(frames: Frame[], from: number, count: number): void {
  assert.equal(frames.length, count);
  for (let i = 0; i < count; i++) {
    const f = frames[i]!;
    assert.equal(f.from, from);
    assert.equal(f.type, 7);
    assert.equal(f.body.readUInt32LE(0), i, `frame ${i} out of order`);
    assert.equal(f.body.length, 4 + (i % 37));
  }
}

/** A stream of frames of assorted sizes, and what should come out of it. */
function sampleStream(): { bytes: Buffer; expected: Array<[number, Buffer]> } {
  const expected: Array<[number, Buffer]> = [];
  const sizes = [0, 1, 2, 3, 4, 5, 17, 300, 0, 1];
  for (let i = 0; i < sizes.length; i++) {
    const body = Buffer.alloc(sizes[i]!);
    for (let j = 0; j < body.length; j++) body[j] = (i * 31 + j) & 0xff;
    expected.push([(i * 13) & 0xff, body]);
  }
  const bytes = Buffer.concat(expected.map(([type, body]) => encodeFrame(type, body)));
  return { bytes, expected };
}

function decodeAll(chunks: Buffer[]): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  const d = new FrameDecoder((type, body) => out.push([type, body]));
  for (const c of chunks) d.push(c);
  return out;
}

test('FrameDecoder decodes frames split at every byte boundary', { timeout: 10_000 }, () => {
  const { bytes, expected } = sampleStream();
  for (let cut = 0; cut <= bytes.length; cut++) {
    // Fresh copies, scribbled over after decoding: bodies must not alias the caller's chunks
    // across pushes.
    const first = Buffer.from(bytes.subarray(0, cut));
    const second = Buffer.from(bytes.subarray(cut));
    const got = decodeAll([first, second]);
    assert.deepEqual(got, expected, `split at ${cut}`);
  }
  const oneByteChunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i++) oneByteChunks.push(Buffer.from(bytes.subarray(i, i + 1)));
  assert.deepEqual(decodeAll(oneByteChunks), expected, 'one byte per chunk');
});

test('FrameDecoder decodes frames cut into three chunks at every pair of byte boundaries', { timeout: 10_000 }, () => {
  // Every state (length word, type byte, body) is entered and left at every offset in a chunk.
  const expected: Array<[number, Buffer]> = [0, 1, 2, 3, 4, 5, 17, 0, 1].map((size, i) => {
    const body = Buffer.alloc(size);
    for (let j = 0; j < size; j++) body[j] = (i * 7 + j) & 0xff;
    return [i + 1, body];
  });
  const bytes = Buffer.concat(expected.map(([type, body]) => encodeFrame(type, body)));
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) {
      const chunks = [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)].map((c) => Buffer.from(c));
      assert.deepEqual(decodeAll(chunks), expected, `cut at ${a} and ${b}`);
    }
  }
});

test('FrameDecoder rejects an oversize length however its length word is cut, before any body byte', { timeout: 10_000 }, () => {
  const word = encodeFrameHeader(1, MAX_FRAME_BODY + 1).subarray(0, 4);
  // Every way to cut 4 bytes into chunks: bit i of `cuts` set cuts after byte i.
  for (let cuts = 0; cuts < 8; cuts++) {
    const chunks: Buffer[] = [];
    let start = 0;
    for (let i = 0; i < 3; i++) {
      if ((cuts & (1 << i)) === 0) continue;
      chunks.push(Buffer.from(word.subarray(start, i + 1)));
      start = i + 1;
    }
    chunks.push(Buffer.from(word.subarray(start)));
    const d = new FrameDecoder(() => assert.fail('no frame expected'));
    for (const c of chunks.slice(0, -1)) d.push(c);
    assert.ok(!d.failed, `not failed before the last length byte (cuts ${cuts})`);
    assert.throws(() => d.push(chunks[chunks.length - 1]!), (e: unknown) =>
      e instanceof NbcError && e.code === 'NBC_ERR_ARG' && /exceeds the limit/.test(e.message), `cuts ${cuts}`);
    assert.ok(d.failed);
  }
});

test('FrameDecoder hands out bodies that stay valid after the callback', { timeout: 10_000 }, () => {
  const { bytes, expected } = sampleStream();
  const got: Array<[number, Buffer]> = [];
  const d = new FrameDecoder((type, body) => got.push([type, body]));
  const scratch = Buffer.alloc(7);
  for (let i = 0; i < bytes.length; i += 7) {
    const n = bytes.copy(scratch, 0, i, Math.min(bytes.length, i + 7));
    // Each chunk is a fresh copy (as sockets hand out), then the scratch is reused.
    d.push(Buffer.from(scratch.subarray(0, n)));
    scratch.fill(0xee);
  }
  assert.deepEqual(got, expected);
});

test('FrameDecoder decodes many frames from one chunk as views of that chunk', { timeout: 10_000 }, () => {
  const parts: Buffer[] = [];
  for (let i = 0; i < 1000; i++) parts.push(encodeFrame(9, seqBody(i)));
  const chunk = Buffer.concat(parts);
  const got: Buffer[] = [];
  new FrameDecoder((type, body) => {
    assert.equal(type, 9);
    got.push(body);
  }).push(chunk);
  assert.equal(got.length, 1000);
  for (let i = 0; i < 1000; i++) {
    assert.deepEqual(got[i], seqBody(i));
    assert.equal(got[i]!.buffer, chunk.buffer, 'a frame inside one chunk is a view, not a copy');
  }
});

test('FrameDecoder rejects a zero length and an oversize length, and stays failed', { timeout: 10_000 }, () => {
  const zero = new FrameDecoder(() => assert.fail('no frame expected'));
  assert.throws(() => zero.push(Buffer.from([0, 0, 0, 0, 1])), (e: unknown) =>
    e instanceof NbcError && e.code === 'NBC_ERR_ARG' && /length is 0/.test(e.message));
  assert.ok(zero.failed);
  assert.throws(() => zero.push(encodeFrame(1, Buffer.alloc(1))), NbcError);

  const big = new FrameDecoder(() => assert.fail('no frame expected'));
  const header = encodeFrameHeader(1, MAX_FRAME_BODY + 1);
  // Rejected from the length word alone, before any body byte arrives.
  assert.throws(() => big.push(header.subarray(0, 4)), (e: unknown) =>
    e instanceof NbcError && e.code === 'NBC_ERR_ARG' && /exceeds the limit/.test(e.message));

  const small = new FrameDecoder(() => {}, 10);
  small.push(encodeFrame(1, Buffer.alloc(10)));
  assert.throws(() => small.push(encodeFrame(1, Buffer.alloc(11))), NbcError);

  const huge = new FrameDecoder(() => assert.fail('no frame expected'));
  assert.throws(() => huge.push(Buffer.from([0xff, 0xff, 0xff, 0xff])), NbcError);
});

test('two link managers exchange 10,000 frames in both directions in order', { timeout: 30_000 }, async () => {
  const { a, b, close } = await pair();
  try {
    const N = 10_000;
    const atB = collect(b, N);
    const atA = collect(a, N);
    for (let i = 0; i < N; i++) {
      a.send(1, 7, [seqBody(i)]);
      b.send(0, 7, [seqBody(i).subarray(0, 2), seqBody(i).subarray(2)]);
    }
    assertSequence(await atB, 0, N);
    assertSequence(await atA, 1, N);
    assert.deepEqual(a.connectedPeers(), [1]);
    assert.deepEqual(b.connectedPeers(), [0]);
  } finally {
    await close();
  }
});

test('a frame with a 1 MiB body arrives intact and onWritten runs', { timeout: 30_000 }, async () => {
  const { a, b, close } = await pair();
  try {
    const payload = randomBytes(1024 * 1024);
    const head = Buffer.from('envelope');
    const arrived = collect(b, 2);
    let written = 0;
    a.send(1, 3, [head, payload.subarray(0, 1000), payload.subarray(1000)], (err) => {
      assert.ok(err == null);
      written++;
    });
    a.send(1, 4, [], () => written++);
    const [big, empty] = await arrived;
    assert.equal(big!.type, 3);
    assert.equal(big!.body.length, head.length + payload.length);
    assert.ok(big!.body.subarray(0, head.length).equals(head));
    assert.ok(big!.body.subarray(head.length).equals(payload));
    assert.equal(empty!.type, 4);
    assert.equal(empty!.body.length, 0);
    assert.equal(written, 2);
    assert.equal(a.writableBytesPending(1), 0);
  } finally {
    await close();
  }
});

test('send() refuses this node, reserved or bad types, oversize bodies and unknown peers', { timeout: 10_000 }, async () => {
  const { a, close } = await pair();
  try {
    assert.throws(() => a.send(0, 1, []), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_INTERNAL');
    assert.throws(() => a.send(1, 0, []), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_ARG');
    assert.throws(() => a.send(1, 256, []), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_ARG');
    assert.throws(() => a.send(1, 1, [Buffer.alloc(MAX_FRAME_BODY + 1)]),
      (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_ARG');
    assert.throws(() => a.send(5, 1, []), (e: unknown) => e instanceof NbcError && /address is unknown/.test(e.message));
  } finally {
    await close();
  }
});

test('simultaneous connects from both sides end with one connection and no lost or reordered frames',
  { timeout: 60_000 }, async () => {
    for (let round = 0; round < 8; round++) {
      const { a, b, logs, close } = await pair();
      let rejected = 0;
      a.on('rejected', () => rejected++);
      b.on('rejected', () => rejected++);
      try {
        const N = 300;
        const atB = collect(b, N);
        const atA = collect(a, N);
        // Both sides send in the same tick: both dial before either connection is accepted.
        for (let i = 0; i < N; i++) {
          a.send(1, 7, [seqBody(i)]);
          b.send(0, 7, [seqBody(i)]);
        }
        assertSequence(await atB, 0, N);
        assertSequence(await atA, 1, N);
        const la = a.linkInfo(1);
        const lb = b.linkInfo(0);
        assert.ok(la && lb);
        assert.equal(la.local, lb.remote, 'both ends use the same TCP connection');
        assert.equal(la.remote, lb.local);
        assert.equal(la.initiator, 0, 'the connection dialled by the lower node id wins');
        assert.equal(lb.initiator, 0);
        // A second exchange after the dust settled still uses that connection.
        const more = collect(b, 1);
        a.send(1, 7, [seqBody(0)]);
        await more;
        assert.deepEqual(a.linkInfo(1), la);
        assert.equal(rejected, 0, `no connection is reported as rejected: ${logs.join('; ')}`);
      } finally {
        await close();
      }
    }
  });

test('a higher node that dials first still ends up on one link with frames in order', { timeout: 30_000 }, async () => {
  for (let round = 0; round < 4; round++) {
    const { a, b, close } = await pair();
    try {
      const atA = collect(a, 200);
      // b dials: once its first frame is at a, the link b opened is the one a sends on.
      const first = once(a, 'frame');
      for (let i = 0; i < 100; i++) b.send(0, 7, [seqBody(i)]);
      await first;
      const atB = collect(b, 50);
      for (let i = 0; i < 50; i++) a.send(1, 7, [seqBody(i)]);
      for (let i = 100; i < 200; i++) b.send(0, 7, [seqBody(i)]);
      assertSequence(await atA, 1, 200);
      assertSequence(await atB, 0, 50);
      assert.equal(a.linkInfo(1)!.local, b.linkInfo(0)!.remote);
      assert.equal(a.linkInfo(1)!.initiator, 1, 'node 1 opened the link');
    } finally {
      await close();
    }
  }
});

/** Waits for the next 'rejected' event of `m`. */
function nextRejection(m: LinkManager): Promise<{ remote: string; reason: string }> {
  return new Promise((resolve) => m.once('rejected', (remote, reason) => resolve({ remote, reason })));
}

async function openSocket(port: number): Promise<Socket> {
  const s = connect({ host: '127.0.0.1', port });
  s.on('error', () => {});
  await once(s, 'connect');
  return s;
}

/** Reads and discards what arrives, so the socket notices when the other side closes. */
function drained(s: Socket): Socket {
  s.resume();
  return s;
}

test('connections without the secret, with a wrong secret or with garbage are rejected and logged, '
  + 'and the open link keeps working', { timeout: 30_000 }, async () => {
  const { a, b, pb, logs, close } = await pair({ handshakeTimeoutMs: 500 });
  try {
    const first = collect(b, 1);
    a.send(1, 7, [seqBody(0)]);
    await first;
    let lost = 0;
    a.on('peer-lost', () => lost++);
    b.on('peer-lost', () => lost++);

    // 1. No secret: a plain client that just writes frames.
    let r = nextRejection(b);
    const plain = drained(await openSocket(pb.port));
    for (let i = 0; i < 8; i++) plain.write(encodeFrame(7, seqBody(i)));
    let got = await r;
    assert.match(got.reason, /garbage handshake/);
    await once(plain, 'close');

    // 2. A wrong secret, speaking the real protocol.
    r = nextRejection(b);
    const wrong = await openSocket(pb.port);
    await assert.rejects(authenticateAsConnector(wrong, randomBytes(32), 0, { timeoutMs: 2000 }),
      (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_AUTH');
    got = await r;
    assert.equal(got.reason, 'bad HMAC');

    // 3. Garbage bytes.
    r = nextRejection(b);
    const garbage = await openSocket(pb.port);
    garbage.write(Buffer.concat([Buffer.from('GET / HTTP/1.1\r\n'), randomBytes(100)]));
    got = await r;
    assert.match(got.reason, /garbage handshake/);

    // 4. A short handshake, then close.
    r = nextRejection(b);
    const short = await openSocket(pb.port);
    short.end(Buffer.from('NBC1abc'));
    got = await r;
    assert.match(got.reason, /short handshake/);

    // 5. Silence: the handshake deadline.
    r = nextRejection(b);
    const silent = await openSocket(pb.port);
    got = await r;
    assert.match(got.reason, /timed out after 500 ms/);
    silent.destroy();

    assert.match(got.remote, /^127\.0\.0\.1:\d+$/);
    const rejections = logs.filter((l) => l.startsWith('nbc: node 1: rejected connection from 127.0.0.1:'));
    assert.equal(rejections.length, 5, logs.join('\n'));
    assert.ok(rejections.some((l) => /: bad HMAC$/.test(l)));

    // The established link is untouched.
    const atB = collect(b, 100);
    const atA = collect(a, 100);
    for (let i = 0; i < 100; i++) {
      a.send(1, 7, [seqBody(i)]);
      b.send(0, 7, [seqBody(i)]);
    }
    assertSequence(await atB, 0, 100);
    assertSequence(await atA, 1, 100);
    assert.equal(lost, 0);
    assert.deepEqual(a.connectedPeers(), [1]);
  } finally {
    await close();
  }
});

test('the handshake helpers authenticate both ways and hand over the bytes that follow', { timeout: 10_000 }, async () => {
  const secret = randomBytes(32);
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  try {
    const accepted = new Promise<{ peerNodeId: number; leftover: Buffer }>((resolve, reject) => {
      server.once('connection', (s: Socket) => {
        s.on('error', () => {});
        authenticateAsAcceptor(s, secret).then((r) => {
          s.write(Buffer.from('after-confirm'));
          resolve(r);
        }, reject);
      });
    });
    const c = connect({ host: '127.0.0.1', port });
    c.on('error', () => {});
    const { leftover } = await authenticateAsConnector(c, secret, 42, { remote: `127.0.0.1:${port}` });
    const { peerNodeId } = await accepted;
    assert.equal(peerNodeId, 42);
    let rest = leftover;
    if (rest.length < 13) {
      c.on('data', (d: Buffer) => {
        rest = Buffer.concat([rest, d]);
      });
      c.resume();
      while (rest.length < 13) await once(c, 'data');
    }
    assert.equal(rest.toString(), 'after-confirm');
    c.destroy();

    // The connector refuses an acceptor that does not know the secret.
    const fake = new Promise<void>((resolve) => {
      server.once('connection', (s: Socket) => {
        s.on('error', () => {});
        authenticateAsAcceptor(s, randomBytes(32)).catch(() => resolve());
      });
    });
    const c2 = connect({ host: '127.0.0.1', port });
    c2.on('error', () => {});
    await assert.rejects(authenticateAsConnector(c2, secret, 1), (e: unknown) =>
      e instanceof NbcHandshakeError && (e.reason === 'bad HMAC' || /short handshake/.test(e.reason)));
    await fake;
  } finally {
    server.close();
  }
});

test('an AuthListener hands out proven connections; a bad frame ends one once, and a wrong key is rejected and logged once',
  { timeout: 10_000 }, async () => {
    const secret = randomBytes(32);
    const lines: string[] = [];
    let accepted!: (v: [AuthConn, number]) => void;
    const gotConn = new Promise<[AuthConn, number]>((resolve) => {
      accepted = resolve;
    });
    let rejected!: (reason: string) => void;
    const gotRejection = new Promise<string>((resolve) => {
      rejected = resolve;
    });
    const listener = new AuthListener({
      secret, log: (l) => lines.push(l), rejectPrefix: 'test: ', errorPrefix: 'test listener: ',
      onConnection: (conn, id) => accepted([conn, id]),
      onRejected: (_remote, reason) => rejected(reason),
    });
    const { host, port } = await listener.listen();
    assert.equal(host, '127.0.0.1');
    const client = await dialAuthenticated(host, port, secret, 7);
    // Sent at once: it may arrive in the chunk that ends the handshake, before the owner starts.
    client.send(3, [Buffer.from('hello'), Buffer.from(' there')]);
    const [server, id] = await gotConn;
    assert.equal(id, 7);
    const frames: string[] = [];
    const reasons: string[] = [];
    let gotFrame!: () => void;
    const frameIn = new Promise<void>((resolve) => {
      gotFrame = resolve;
    });
    let serverClosed!: () => void;
    const closedIn = new Promise<void>((resolve) => {
      serverClosed = resolve;
    });
    server.start({
      onFrame: (type, body) => {
        frames.push(`${type}:${body.toString()}`);
        gotFrame();
      },
      onClose: (reason) => {
        reasons.push(reason);
        serverClosed();
      },
    });
    await frameIn;
    assert.deepEqual(frames, ['3:hello there']);
    client.socket.write(Buffer.from([0, 0, 0, 0, 9]));
    await closedIn;
    assert.equal(reasons.length, 1);
    assert.match(reasons[0]!, /^bad frame: .*length is 0/);
    assert.ok(server.closed);
    assert.equal(server.send(3, [Buffer.from('late')]), false, 'an ended connection sends nothing');
    client.close();

    await assert.rejects(dialAuthenticated(host, port, randomBytes(32), 8), (e: unknown) =>
      e instanceof NbcError && (e.code === 'NBC_ERR_PEER_FAILED' || e.code === 'NBC_ERR_AUTH'));
    assert.equal(await gotRejection, 'bad HMAC');
    await listener.close();
    assert.equal(lines.filter((l) => /^test: rejected connection from 127\.0\.0\.1:\d+: bad HMAC$/.test(l)).length, 1);
  });

test('peer-lost fires when the other side is destroyed, peer-closed when it closes in order', { timeout: 20_000 }, async () => {
  {
    const { a, b, close } = await pair();
    try {
      const first = collect(b, 1);
      a.send(1, 7, [seqBody(0)]);
      await first;
      const lost = once(a, 'peer-lost') as Promise<[number, Error]>;
      b.destroy();
      const [nodeId, err] = await lost;
      assert.equal(nodeId, 1);
      assert.ok(err instanceof NbcError && err.code === 'NBC_ERR_PEER_FAILED');
      assert.match(err.message, /node 1/);
      assert.throws(() => a.send(1, 7, [seqBody(1)]), (e: unknown) =>
        e instanceof NbcError && e.code === 'NBC_ERR_PEER_FAILED');
    } finally {
      await close();
    }
  }
  {
    const { a, b, close } = await pair();
    try {
      const first = collect(a, 1);
      b.send(0, 7, [seqBody(0)]);
      await first;
      let lost = 0;
      a.on('peer-lost', () => lost++);
      const closed = once(a, 'peer-closed');
      await b.close();
      const [nodeId] = await closed;
      assert.equal(nodeId, 1);
      assert.equal(lost, 0);
    } finally {
      await close();
    }
  }
});

test('dialling a node that is not listening reports peer-lost and fails queued frames', { timeout: 10_000 }, async () => {
  const secret = randomBytes(32);
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const a = new LinkManager({ nodeId: 0, secret, log: () => {} });
  try {
    a.setPeers([{ nodeId: 1, host: '127.0.0.1', port }]);
    let written: Error | null | undefined;
    const lost = once(a, 'peer-lost') as Promise<[number, Error]>;
    a.send(1, 7, [seqBody(0)], (err) => {
      written = err;
    });
    const [nodeId, err] = await lost;
    assert.equal(nodeId, 1);
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.ok(written instanceof NbcError);
  } finally {
    await a.close();
  }
});

test('emulated latency of 2 ms delays every frame by at least 2 ms', { timeout: 20_000 }, async () => {
  const { a, b, close } = await pair({ emulate: { latencyUs: 2000 } });
  try {
    const warm = collect(b, 1);
    a.send(1, 7, [seqBody(0)]);
    await warm;
    for (let i = 0; i < 5; i++) {
      const got = collect(b, 1);
      const t0 = performance.now();
      a.send(1, 7, [seqBody(i)]);
      await got;
      const elapsed = performance.now() - t0;
      assert.ok(elapsed >= 2, `frame took ${elapsed.toFixed(3)} ms`);
    }
  } finally {
    await close();
  }
});

test('emulated bandwidth caps throughput and keeps frames in order', { timeout: 20_000 }, async () => {
  // 1 MB/s: 100 frames of 1000 body bytes (1005 on the wire) need at least 100 ms.
  const { a, b, close } = await pair({ emulate: { bandwidthBytesPerSec: 1_000_000 } });
  try {
    const warm = collect(b, 1);
    a.send(1, 7, [seqBody(0)]);
    await warm;
    const N = 100;
    const got = collect(b, N);
    const t0 = performance.now();
    const body = Buffer.alloc(1000);
    for (let i = 0; i < N; i++) {
      const f = Buffer.from(body);
      f.writeUInt32LE(i, 0);
      a.send(1, 7, [f]);
    }
    assert.ok(a.writableBytesPending(1) > 0);
    const frames = await got;
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 100, `100 kB took ${elapsed.toFixed(1)} ms at 1 MB/s`);
    frames.forEach((f, i) => assert.equal(f.body.readUInt32LE(0), i));
    if (a.writableBytesPending(1) > 0) await once(a, 'drain');
    assert.equal(a.writableBytesPending(1), 0);
  } finally {
    await close();
  }
});

test('a wire that waits out the last microseconds of a frame gives its core away between re-checks', { timeout: 10_000 }, async () => {
  let yields = 0;
  const t0 = performance.now();
  const arrived = await new Promise<number>((resolve) => {
    const wire = new EmulatedWire<number>({ latencyUs: 400 }, () => resolve(performance.now()), undefined, () => { yields++; });
    wire.push(1, 8);
  });
  assert.ok(arrived - t0 >= 0.4, `the frame left after ${((arrived - t0) * 1000).toFixed(0)} us, before its 400 us`);
  assert.ok(yields > 0, 'the sub-millisecond wait yielded its core');
});

test('--link takes the presets gige, ib, edr and ddr, and names them when a setting is wrong', () => {
  assert.deepEqual(parseLinkSpec('gige'), { latencyUs: 50, bandwidthBytesPerSec: 125e6 });
  assert.deepEqual(parseLinkSpec('ib'), { latencyUs: 1.5, bandwidthBytesPerSec: 4.5e9, switchUs: 0.1 });
  assert.deepEqual(parseLinkSpec('edr'), { latencyUs: 0.7, bandwidthBytesPerSec: 12.5e9, switchUs: 0.09 });
  assert.deepEqual(parseLinkSpec('gige'), parseLinkSpec(LINK_PRESETS.gige!));
  assert.deepEqual(parseLinkSpec('latency=1ms,bandwidth=8mbit'), { latencyUs: 1000, bandwidthBytesPerSec: 1e6 });
  assert.throws(() => parseLinkSpec('ethernet'), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_ARG' && /gige or ib/.test(e.message));
});
