/** Failure scenarios: args[0] = throw | exit | sigkill | sigstop, args[1] = the rank that fails. */
import { init } from 'nbcoll';

const world = await init();
const [mode, who] = [process.argv[2], Number(process.argv[3])];
if (world.rank === who) {
  if (mode === 'throw') throw new Error(`boom from rank ${world.rank}`);
  if (mode === 'exit') process.exit(7);
  if (mode === 'sigkill') process.kill(process.pid, 'SIGKILL');
  // Its node stops with every socket open: only silence tells.
  if (mode === 'sigstop') process.kill(process.pid, 'SIGSTOP');
}
if (mode === 'ready') console.log(`rank ${world.rank} ready`);
// Everyone else blocks on a message that never comes: only the abort can end them.
world.recv(new Uint8Array(1), who >= 0 ? who : (world.rank + 1) % world.size, 99);
