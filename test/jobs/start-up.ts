// A job for test/start-up.test.ts: the node process's flags, and a check that a trained job's
// own collectives and point-to-point messages are untouched by the training (same results,
// the first tag and sequence numbers of the world are the job's).
import type { Communicator } from 'nbcoll';

export default function startUp(world: Communicator): { execArgv: string[]; sum: number; got: number } {
  const x = Float64Array.of(world.rank + 1);
  const y = new Float64Array(1);
  world.allreduce(x, y, 'sum');
  const r = world.iallreduce(x, new Float64Array(1), 'sum');
  r.wait();
  // a ring of sends with tag 0: a training message left over would be matched here
  const got = new Int32Array(1);
  const req = world.irecv(got, (world.rank + world.size - 1) % world.size, 0);
  world.send(Int32Array.of(world.rank), (world.rank + 1) % world.size, 0);
  req.wait();
  world.barrier();
  return { execArgv: process.execArgv, sum: y[0]!, got: got[0]! };
}
