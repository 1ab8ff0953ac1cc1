import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { test } from 'node:test';
import { NbcError } from '../src/errors.js';
import { authenticateAsConnector } from '../src/net/auth.js';
import {
  RendezvousClient, RendezvousServer, type AbortMessage, type RendezvousTable,
} from '../src/runtime/rendezvous.js';

async function startServer(nodes: number) {
  const secret = randomBytes(32);
  const logs: string[] = [];
  const server = new RendezvousServer({ secret, nodes, log: (m) => logs.push(m) });
  const port = await server.listen();
  return { secret, server, port, logs };
}

function join(secret: Buffer, port: number, nodeId: number, timeoutMs = 10_000, linkHost = '127.0.0.1') {
  const client = new RendezvousClient();
  const table = client.connect({
    secret, nodeId, host: '127.0.0.1', port, timeoutMs,
    hello: { host: linkHost, port: 40_000 + nodeId, nranks: 2 + nodeId, extra: { shm: `seg-${nodeId}` } },
  });
  return { client, table };
}

test('three clients receive the same table, sorted by node id', { timeout: 15_000 }, async () => {
  const { secret, server, port } = await startServer(3);
  // Join out of order.
  const joined = [2, 0, 1].map((id) => join(secret, port, id));
  try {
    const tables = await Promise.all(joined.map((j) => j.table));
    const expected: RendezvousTable = {
      nodes: [0, 1, 2].map((id) => ({
        nodeId: id, host: '127.0.0.1', port: 40_000 + id, nranks: 2 + id, pid: process.pid,
        hostname: tables[0]!.nodes[id]!.hostname, extra: { shm: `seg-${id}` },
      })),
    };
    for (const t of tables) assert.deepEqual(t, expected);
  } finally {
    await Promise.all(joined.map((j) => j.client.close()));
    await server.close();
  }
});

test('a node whose links listen on every interface is listed where the server saw it, never at a wildcard', { timeout: 15_000 }, async () => {
  const { secret, server, port } = await startServer(3);
  const joined = [['0.0.0.0', 0], ['::', 1], ['127.0.0.1', 2]].map(([host, id]) => join(secret, port, id as number, 10_000, host as string));
  try {
    for (const t of await Promise.all(joined.map((j) => j.table))) {
      assert.deepEqual(t.nodes.map((n) => n.host), ['127.0.0.1', '127.0.0.1', '127.0.0.1']);
    }
  } finally {
    await Promise.all(joined.map((j) => j.client.close()));
    await server.close();
  }
});

test('a client without the secret and a duplicate node id are rejected while the job wires up',
  { timeout: 15_000 }, async () => {
    const { secret, server, port, logs } = await startServer(2);
    const rejected: string[] = [];
    server.on('rejected', (_remote, reason) => rejected.push(reason));
    const j0 = join(secret, port, 0);
    try {
      // A wrong secret.
      const r1 = once(server, 'rejected');
      const intruder = new RendezvousClient();
      await assert.rejects(intruder.connect({
        secret: randomBytes(32), nodeId: 1, host: '127.0.0.1', port, timeoutMs: 5000,
        hello: { host: '127.0.0.1', port: 1, nranks: 1 },
      }), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_AUTH');
      await r1;

      // No handshake at all: a plain socket sending JSON.
      const r2 = once(server, 'rejected');
      const plain = connect({ host: '127.0.0.1', port });
      plain.on('error', () => {});
      plain.resume();
      plain.write(`${JSON.stringify({ nodeId: 1, host: 'x', port: 1 })}\n`.repeat(4));
      await r2;
      plain.destroy();

      // A second node 0 (it knows the secret).
      const dup = new RendezvousClient();
      await assert.rejects(dup.connect({
        secret, nodeId: 0, host: '127.0.0.1', port, timeoutMs: 5000,
        hello: { host: '127.0.0.1', port: 2, nranks: 1 },
      }), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_LAUNCH' && /duplicate node id 0/.test(e.message));

      // An id out of range.
      const far = new RendezvousClient();
      await assert.rejects(far.connect({
        secret, nodeId: 7, host: '127.0.0.1', port, timeoutMs: 5000,
        hello: { host: '127.0.0.1', port: 3, nranks: 1 },
      }), (e: unknown) => e instanceof NbcError && /out of range/.test(e.message));

      assert.equal(rejected[0], 'bad HMAC');
      assert.match(rejected[1]!, /garbage handshake/);
      assert.equal(rejected.length, 4);
      assert.ok(logs.some((l) => /^nbc: rendezvous: rejected connection from 127\.0\.0\.1:\d+: bad HMAC$/.test(l)));

      // The genuine nodes still wire up.
      const j1 = join(secret, port, 1);
      const [t0, t1] = await Promise.all([j0.table, j1.table]);
      assert.deepEqual(t0, t1);
      assert.equal(t0.nodes.length, 2);
      await j1.client.close();
    } finally {
      await j0.client.close();
      await server.close();
    }
  });

test('a client closing before DONE makes every other node receive ABORT naming it', { timeout: 15_000 }, async () => {
  const { secret, server, port } = await startServer(3);
  const joined = [0, 1, 2].map((id) => join(secret, port, id));
  try {
    await Promise.all(joined.map((j) => j.table));
    const aborts = [joined[0]!, joined[1]!].map((j) => once(j.client, 'abort') as Promise<[AbortMessage]>);
    await joined[2]!.client.close();
    for (const [msg] of await Promise.all(aborts)) {
      assert.equal(msg.origin, 2);
      assert.match(msg.reason, new RegExp(`^node 2 \\(pid ${process.pid}\\) lost: connection closed`));
      assert.equal(msg.exitCode, 1);
    }
  } finally {
    await Promise.all(joined.map((j) => j.client.close()));
    await server.close();
  }
});

test('a killed node process makes the others receive ABORT naming it, without waiting for a timeout',
  { timeout: 20_000 }, async () => {
    const { secret, server, port } = await startServer(3);
    const joined = [0, 1].map((id) => join(secret, port, id));
    // Node 2 is a real process that joins, reports the table, then is killed.
    const script = `
      import { RendezvousClient } from './src/runtime/rendezvous.ts';
      const c = new RendezvousClient();
      await c.connect({ secret: Buffer.from('${secret.toString('hex')}', 'hex'), nodeId: 2, host: '127.0.0.1',
        port: ${port}, hello: { host: '127.0.0.1', port: 9, nranks: 1 } });
      process.stdout.write('joined\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await once(child.stdout, 'data');
      await Promise.all(joined.map((j) => j.table));
      const aborts = joined.map((j) => once(j.client, 'abort') as Promise<[AbortMessage]>);
      // No deadline is involved: the server has no timer that could produce this ABORT; the
      // socket closed by the kernel is what tells it.
      child.kill('SIGKILL');
      for (const [msg] of await Promise.all(aborts)) {
        assert.equal(msg.origin, 2);
        assert.match(msg.reason, new RegExp(`^node 2 \\(pid ${child.pid}\\) lost: connection closed`));
      }
    } finally {
      child.kill('SIGKILL');
      await Promise.all(joined.map((j) => j.client.close()));
      await server.close();
    }
  });

test('an ABORT from one node reaches every node, and BROADCAST reaches every node in order', { timeout: 15_000 },
  async () => {
    const { secret, server, port } = await startServer(3);
    const joined = [0, 1, 2].map((id) => join(secret, port, id));
    try {
      await Promise.all(joined.map((j) => j.table));
      const payloads = joined.map((j) => new Promise<unknown[]>((resolve) => {
        const got: unknown[] = [];
        j.client.on('broadcast', (p) => {
          got.push(p);
          if (got.length === 2) resolve(got);
        });
      }));
      joined[1]!.client.broadcast({ step: 1 });
      joined[1]!.client.broadcast({ step: 2 });
      for (const got of await Promise.all(payloads)) assert.deepEqual(got, [{ step: 1 }, { step: 2 }]);

      const aborts = joined.map((j) => once(j.client, 'abort') as Promise<[AbortMessage]>);
      joined[1]!.client.abort('rank 3 threw: RangeError: boom', 3);
      for (const [msg] of await Promise.all(aborts)) {
        assert.deepEqual(msg, { reason: 'rank 3 threw: RangeError: boom', exitCode: 3, origin: 1 });
      }
    } finally {
      await Promise.all(joined.map((j) => j.client.close()));
      await server.close();
    }
  });

test('when every node sends DONE, every node receives SHUTDOWN and no ABORT', { timeout: 15_000 }, async () => {
  const { secret, server, port } = await startServer(3);
  const joined = [0, 1, 2].map((id) => join(secret, port, id));
  try {
    await Promise.all(joined.map((j) => j.table));
    let aborts = 0;
    let lost = 0;
    for (const j of joined) {
      j.client.on('abort', () => aborts++);
      j.client.on('lost', () => lost++);
    }
    const shutdowns = joined.map((j) => once(j.client, 'shutdown'));
    for (const j of joined) j.client.done();
    await Promise.all(shutdowns);
    // Closing after DONE is orderly: nobody is reported lost.
    await Promise.all(joined.map((j) => j.client.close()));
    await server.close();
    assert.equal(aborts, 0);
    assert.equal(lost, 0);
  } finally {
    await Promise.all(joined.map((j) => j.client.close()));
    await server.close();
  }
});

test('a client retries until the server is up, and gives up with a timeout naming the address', { timeout: 15_000 },
  async () => {
    // Find a free port, then leave it closed for a while.
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    const secret = randomBytes(32);
    const early = new RendezvousClient();
    await assert.rejects(early.connect({
      secret, nodeId: 0, host: '127.0.0.1', port, timeoutMs: 300,
      hello: { host: '127.0.0.1', port: 1, nranks: 1 },
    }), (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_TIMEOUT'
      && e.message.includes(`127.0.0.1:${port}`) && /ECONNREFUSED/.test(e.message));

    // A client that starts first connects once the server listens.
    const client = new RendezvousClient();
    let firstRetry!: () => void;
    const retrying = new Promise<void>((resolve) => {
      firstRetry = resolve;
    });
    const tablePromise = client.connect({
      secret, nodeId: 0, host: '127.0.0.1', port, timeoutMs: 10_000,
      hello: { host: '127.0.0.1', port: 1, nranks: 1 },
      onRetry: (attempt, err) => {
        assert.match(err.message, /ECONNREFUSED/);
        if (attempt === 1) firstRetry();
      },
    });
    await retrying;
    const server = new RendezvousServer({ secret, nodes: 1, port, log: () => {} });
    await server.listen();
    try {
      const table = await tablePromise;
      assert.equal(table.nodes.length, 1);
    } finally {
      await client.close();
      await server.close();
    }
  });

test('a node connecting with the job secret but never sending HELLO times out at the other nodes',
  { timeout: 15_000 }, async () => {
    const { secret, server, port } = await startServer(2);
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    try {
      await authenticateAsConnector(socket, secret, 1);
      const j0 = join(secret, port, 0, 300);
      await assert.rejects(j0.table, (e: unknown) => e instanceof NbcError && e.code === 'NBC_ERR_TIMEOUT'
        && /not every node joined/.test(e.message));
      await j0.client.close();
    } finally {
      socket.destroy();
      await server.close();
    }
  });
