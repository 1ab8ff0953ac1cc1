/**
 * The flagship demo (`npm start`): a 6-rank job on 3 emulated nodes of 2 ranks. It shows the
 * two data paths and the building blocks later collectives stand on:
 *  - a ring exchange (every rank to its right neighbour: half the hops cross nodes, over UCX
 *    where the native addon has it, else TCP);
 *  - a token passed around all ranks, accumulating who touched it;
 *  - per-node communicators (splitShared) and a Cartesian grid with shifts;
 *  - a 16 MiB message from registered (shared) memory, intra- and inter-node;
 *  - collectives on schedules: an allreduce checked against the closed form, a non-blocking
 *    allreduce overlapped with local work, a broadcast;
 *  - what each rank sent, by path.
 */
import { init, ANY_SOURCE } from '../index.js';

const world = await init();
const { rank, size } = world;
const right = (rank + 1) % size;
const left = (rank - 1 + size) % size;
const say = (text: string): void => console.log(text);
/** How this job reaches other nodes, as the transport chose (--transport, NBC_TRANSPORT). */
const betweenNodes = world.stats().interNode === 'ucx' ? 'UCX' : 'TCP';

// 1. Ring: send my rank to the right, receive from the left.
const got = new Int32Array(1);
const r = world.irecv(got, left, 1);
world.send(Int32Array.of(rank * 100), right, 1);
r.wait();
const path = world.nodeId === Math.floor(left / 2) ? 'shared memory' : betweenNodes;
say(`ring: got ${got[0]} from rank ${left} via ${path}`);

// 2. Token ring: rank 0 starts a token; each rank appends itself.
const token = new Int32Array(size + 1);
if (rank === 0) {
  token[0] = 1;
  token[1] = 0;
  world.send(token, right, 2);
  const st = world.recv(token, ANY_SOURCE, 2);
  say(`token came back from rank ${st.source} after visiting [${Array.from(token.subarray(1, token[0]! + 1)).join(' -> ')}]`);
} else {
  world.recv(token, left, 2);
  token[token[0]! + 1] = rank;
  token[0]!++;
  world.send(token, right, 2);
}

// 3. Communicators: one per node, and a 3x2 grid.
const node = world.splitShared();
const cart = world.cartCreate([3, 2], [true, false])!;
const { source, dest } = cart.shift(0, 1);
say(`node ${world.nodeId}: rank ${node.rank} of ${node.size} here; grid coords [${cart.coords().join(',')}], ` +
  `shift(0,+1): from ${source} to ${dest}`);

// 4. A 16 MiB message from registered memory: rank 0 to rank 1 (same node) and to rank 2 (next node).
const n = (16 << 20) / 8;
if (rank === 0) {
  const big = world.alloc(Float64Array, n);
  for (let i = 0; i < n; i++) big[i] = i;
  for (const peer of [1, 2]) {
    const t0 = performance.now();
    world.send(big, peer, 3);
    world.recv(new Uint8Array(1), peer, 4);
    const ms = performance.now() - t0;
    say(`16 MiB to rank ${peer} (${peer === 1 ? 'shared memory' : betweenNodes}): ${ms.toFixed(1)} ms, ${((16 << 20) / ms / 1e6).toFixed(2)} GB/s`);
  }
} else if (rank === 1 || rank === 2) {
  const into = new Float64Array(n);
  world.recv(into, 0, 3);
  let ok = true;
  for (let i = 0; i < n; i += 1023) if (into[i] !== i) ok = false;
  world.send(Uint8Array.of(ok ? 1 : 0), 0, 4);
  if (!ok) throw new Error('16 MiB message corrupted');
}

// 5. Collectives: blocking allreduce, non-blocking allreduce under computation, broadcast.
const v = Float64Array.from({ length: 1000 }, (_, i) => rank * 1000 + i);
const sum = new Float64Array(1000);
world.allreduce(v, sum, 'sum');
const expect = (i: number): number => 1000 * (size * (size - 1)) / 2 + size * i;
if (sum.some((x, i) => x !== expect(i))) throw new Error('allreduce gave a wrong sum');
const req = world.iallreduce(Float64Array.of(rank), new Float64Array(1), 'max');
let work = 0;
for (let i = 0; i < 200_000; i++) work += Math.sqrt(i); // compute while the allreduce is in flight
req.wait();
const cfg = new Int32Array(4);
if (rank === 0) cfg.set([6, 2, 3, 42]);
world.bcast(cfg, 0);
if (rank === 0) {
  say(`allreduce of 1000 doubles over ${size} ranks: correct (element 999 = ${sum[999]}); ` +
    `iallreduce overlapped ${work.toFixed(0)} units of work; bcast delivered [${cfg.join(', ')}]`);
}

const s = world.stats().host;
say(`sent ${s.messagesSent} messages (${s.intraNodeMessages} through shared memory, ${s.interNodeMessages} ${world.stats().interNode === 'ucx' ? 'over UCX' : 'over TCP through the engines'}), ${s.bytesSent} bytes`);
