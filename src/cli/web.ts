/**
 * `nbc web [--ranks N] [--headless] [job]`: a job's ranks as Web Workers of a page served on
 * 127.0.0.1 (runtime/web-server.ts). With --headless, Debian's Chromium runs the page to the
 * job's end: each rank's output is printed as `nbc run` prints it, and the exit code is the
 * job's (1 when a rank failed, 124 on --timeout). Without a job, the demo page.
 */
import { writeFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { checkJobFile } from '../runtime/launcher.js';
import { runHeadless, serveWeb } from '../runtime/web-server.js';
import { positiveInt } from './args.js';

export function registerWeb(program: Command): void {
  program.command('web')
    .description("run a job's ranks as Web Workers of a cross-origin-isolated page on 127.0.0.1 (no job: the demo page)")
    .option('--ranks <n>', 'how many ranks', positiveInt, 4)
    .option('--port <n>', 'port on 127.0.0.1 (default: any free one)', positiveInt)
    .option('--headless', "run the page in a headless browser to the job's end (NBC_CHROMIUM, else chromium on PATH)")
    .option('--browser <name>', 'with --headless: chromium (default) or firefox (NBC_FIREFOX, else firefox-esr on PATH)', (v: string) => {
      if (v !== 'chromium' && v !== 'firefox') throw new InvalidArgumentError("expected 'chromium' or 'firefox'");
      return v;
    })
    .option('--timeout <seconds>', 'fail the job after this many seconds (exit code 124)', positiveInt)
    .option('--screenshot <file.png>', 'with --headless: a picture of the page at the end')
    .option('--json <file>', "with --headless: write the job's end (results by rank, ms) as JSON")
    .argument('[job]', 'job file (.js, .mjs or .ts) using only the public API')
    .argument('[args...]', 'arguments for the job')
    .action(async (job: string | undefined, args: string[], o: {
      ranks: number; port?: number; headless?: boolean; browser?: 'chromium' | 'firefox'; timeout?: number; screenshot?: string; json?: string;
    }) => {
      if (job !== undefined) checkJobFile(job);
      const server = await serveWeb({ job: job ?? null, ranks: o.ranks, args, port: o.port, timeoutMs: o.timeout === undefined ? undefined : o.timeout * 1000 });
      if (o.headless !== true) {
        process.stdout.write(`nbc web: ${job ?? 'the demo'} on ${o.ranks} ranks at ${server.url} (Ctrl-C stops)\n`);
        await server.done;
        return; // the server keeps serving until interrupted
      }
      try {
        const end = await runHeadless(server, { screenshot: o.screenshot, browser: o.browser });
        if (o.json !== undefined) writeFileSync(o.json, JSON.stringify(end, null, 2) + '\n');
        if (!end.ok) {
          process.stderr.write(`nbc web: ${end.message ?? 'the job failed'}\n`);
          process.exitCode = /did not finish within/.test(end.message ?? '') ? 124 : 1;
        }
      } finally {
        await server.close();
      }
    });
}
