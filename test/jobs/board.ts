// The host board across the node processes of one host (test/host-board.test.ts): rank 1, on
// node 1, blocks in a receive while rank 0, on node 0, watches its word on the board say so;
// once the receive has returned, rank 1 reads its own word again.
import type { Communicator } from 'nbcoll';
import { openHostBoard } from '../../dist/runtime/host-board.js';

export default function main(world: Communicator): unknown {
  const path = process.env.NBC_HOST_BOARD;
  const board = openHostBoard(world.size, -1, path);
  const word = new Int32Array(1);
  if (board === null) return { path, mapped: false };
  if (world.rank === 0) {
    const nap = new Int32Array(new SharedArrayBuffer(4));
    const deadline = performance.now() + 20_000;
    while (!board.waiting(1)) {
      if (performance.now() > deadline) throw new Error('rank 1 never showed as waiting on the host board');
      Atomics.wait(nap, 0, 0, 1); // look again every millisecond
    }
    world.send(word, 1, 5);
    world.recv(word, 1, 6);
    return { path, mapped: true, sawWaiting: true, waitingAfter: word[0] === 1 };
  }
  world.recv(word, 0, 5);
  word[0] = board.waiting(1) ? 1 : 0;
  world.send(word, 0, 6);
  return { path, mapped: true };
}
