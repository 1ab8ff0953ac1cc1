import { init } from 'nbcoll';

const world = await init();
console.log(`hello from rank ${world.rank} of ${world.size} on node ${world.nodeId} args=${process.argv.slice(2).join(',')}` +
  (process.env.HELLO_EXEC_ARGV === '1' ? ` execArgv=${process.execArgv.join(' ')}` : ''));
