/**
 * A rank that returns from its job while its peers still wait for it (KIND_FIN,
 * p2p/transport.ts). The last rank, or rank 1, returns at once; the others wait on it and report
 * what they got: an NbcError's code (with its message's first words), or 'ok'.
 *
 * Modes (args[0]):
 *   collective E N  every rank but the last calls allreduce of N doubles with executor E
 *   recv            rank 0 receives from rank 1 (blocking), which never sends
 *   late            rank 0 waits for rank 1's word through a receive rank 1 never sends, then
 *                   posts another receive from it: it fails at once
 *   send N          rank 0 sends N bytes to rank 1, which never receives
 *   delivered       rank 1 sends an eager and (without waiting) a large message to rank 0 and
 *                   returns; rank 0
 *                   first waits (a receive that fails) until rank 1's word has arrived, then
 *                   receives both: what a rank sent before it returned is never lost
 *   uncaught        as `collective host 4`, without catching: the job fails naming the rank
 */
import type { Communicator, ExecutorName } from 'nbcoll';
import { outcome } from './common.ts';

const LARGE = 1 << 20;

export default function finished(w: Communicator, args: string[]): string {
  const mode = args[0];
  const last = w.size - 1;
  switch (mode) {
    case 'collective': {
      if (w.rank === last) return 'returned';
      const executor = args[1] as ExecutorName;
      const n = Number(args[2]);
      return outcome(() => w.allreduce(new Float64Array(n).fill(1), new Float64Array(n), 'sum', { executor }));
    }
    case 'uncaught': {
      if (w.rank === last) return 'returned';
      w.allreduce(new Float64Array(4).fill(1), new Float64Array(4), 'sum');
      return 'completed';
    }
    case 'recv': {
      if (w.rank === 1) return 'returned';
      if (w.rank !== 0) return 'idle';
      return outcome(() => w.recv(new Uint8Array(8), 1, 7));
    }
    case 'late': {
      if (w.rank === 1) return 'returned';
      if (w.rank !== 0) return 'idle';
      const first = outcome(() => w.recv(new Uint8Array(8), 1, 7));
      const r = w.irecv(new Uint8Array(8), 1, 8);
      // Already complete: it failed when posted, with nothing to progress.
      const done = r.test.bind(r);
      return `${first.split(':')[0]} / ${outcome(() => { if (!done()) throw new Error('the late receive is still pending'); })}`;
    }
    case 'send': {
      if (w.rank === 1) return 'returned';
      if (w.rank !== 0) return 'idle';
      const bytes = Number(args[1]);
      return outcome(() => w.send(new Uint8Array(bytes).fill(5), 1, 3));
    }
    case 'delivered': {
      if (w.rank === 1) {
        w.send(Float64Array.of(1, 2, 3), 0, 1);
        const big = new Uint8Array(LARGE);
        for (let i = 0; i < LARGE; i++) big[i] = (i * 7) & 0xff;
        // Not waited for: its payload is staged in the node's arena (or, over UCX, the rank's
        // worker lingers until the job ends), as with a send request that MPI_Request_free let go.
        w.isend(big, 0, 2);
        return 'returned';
      }
      if (w.rank !== 0) return 'idle';
      const word = outcome(() => w.recv(new Uint8Array(8), 1, 9));
      const small = new Float64Array(3);
      w.recv(small, 1, 1);
      const big = new Uint8Array(LARGE);
      w.recv(big, 1, 2);
      let bad = 0;
      for (let i = 0; i < LARGE; i++) if (big[i] !== ((i * 7) & 0xff)) bad++;
      return `${word.split(':')[0]} / ${small.join(',')} / ${bad} bad bytes`;
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}
