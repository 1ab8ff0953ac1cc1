// The reference for scripts/bench-first-calls.sh: plain Node TCP ping-pong of 8 B on loopback
// between two processes (no nbcoll), CALLS round trips from the first on; writes the median
// one-way time (half the round trip, us) of every BUCKET consecutive ones as JSON to OUT.
// Usage: node scripts/first-calls-tcp.mjs OUT [CALLS [BUCKET]]
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';

if (process.argv[2] === '--echo') {
  const s = net.connect(Number(process.argv[3]), '127.0.0.1');
  s.setNoDelay(true);
  s.on('data', (d) => s.write(d));
  s.on('error', () => process.exit(0));
} else {
  const [out, callsArg, bucketArg] = process.argv.slice(2);
  const calls = Number(callsArg ?? 8000);
  const bucket = Number(bucketArg ?? 1000);
  const ts = new Float64Array(calls);
  const msg = Buffer.alloc(8);
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    let i = 0;
    let t = performance.now();
    s.on('data', () => {
      ts[i++] = ((performance.now() - t) * 1000) / 2;
      if (i === calls) {
        const medians = [];
        for (let k = 0; k < calls; k += bucket) medians.push(Array.from(ts.subarray(k, k + bucket)).sort((a, b) => a - b)[bucket >> 1]);
        writeFileSync(out, JSON.stringify({ calls, bucket, medians }));
        s.destroy();
        server.close();
        return;
      }
      t = performance.now();
      s.write(msg);
    });
    s.write(msg);
  }).listen(0, '127.0.0.1', () => {
    fork(new URL(import.meta.url).pathname, ['--echo', String(server.address().port)]);
  });
}
