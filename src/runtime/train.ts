/**
 * Training the JIT before a job runs. A fresh job's first thousands of calls run several times
 * slower while V8 tiers its hot paths up, and a short solve never leaves that phase.
 *
 * Every rank of a job runs the same short sequence of the library's own calls on a private
 * duplicate of the world, before the job's module is loaded: the schedule interpreter, the
 * matching, the ring and UCX paths, the reduction kernels and the waits see real traffic, so V8
 * has their feedback, and the optimised code, by the job's first call. Only the library warms
 * up; the job's own code does not.
 *
 * The calls are those of the applications that suffer most (seed 000's PCG, seed 001's CG): 8 B
 * and 24 B allreduces, blocking and non-blocking; neighbour alltoalls of 2 KiB faces on a
 * periodic ring (a halo; blocking, non-blocking, and with exact block sizes); a barrier. NBC_TRAIN=<rounds> asks for it; by default a job is not
 * trained, since training costs start-up time about as long as the warm-up it saves (300 rounds:
 * 0.14-0.23 s on 4 ranks of 2 cores; BENCHMARKS.md, "Strong scaling").
 */
import type { Communicator } from '../coll/communicator.js';
import { NbcArgError } from '../errors.js';

/** Rounds from NBC_TRAIN (a non-negative integer), else 0; an invalid value is an error. */
export function trainRounds(env: Record<string, string | undefined>): number {
  const v = env.NBC_TRAIN;
  if (v === undefined || v === '') return 0;
  if (!/^\d{1,6}$/.test(v)) throw new NbcArgError(`NBC_TRAIN '${v}': expected a number of training rounds, 0 to 999999 (0 or unset: none)`);
  return Number(v);
}

/** Runs the training sequence `rounds` times on a duplicate of `world` (collective). */
export function train(world: Communicator, rounds: number): void {
  if (rounds <= 0 || world.size === 1) return;
  const comm = world.dup();
  const ring = comm.cartCreate([comm.size], [true])!;
  const one = new Float64Array(1);
  const oneOut = new Float64Array(1);
  const three = new Float64Array(3);
  const threeOut = new Float64Array(3);
  // 2 KiB per neighbour: a 16 x 16 face of doubles
  const face = 256;
  const send = new Float64Array(2 * face);
  const recv = new Float64Array(2 * face);
  const counts = [face - 16, face - 16];
  const displs = [0, face];
  for (let i = 0; i < rounds; i++) {
    one[0] = i;
    comm.allreduce(one, oneOut, 'sum');
    three[0] = i;
    comm.allreduce(three, threeOut, 'sum');
    const r = comm.iallreduce(one, oneOut, 'sum');
    ring.neighborAlltoall(send, recv);
    const h = ring.ineighborAlltoall(send, recv);
    h.wait();
    r.wait();
    // the halo of seed 000's PCG: exact block sizes, started before a matvec, waited after
    ring.ineighborAlltoallv(send, counts, displs, recv, counts, displs).wait();
  }
  comm.barrier();
  ring.free();
  comm.free();
}
