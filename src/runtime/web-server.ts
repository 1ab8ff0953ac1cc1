/**
 * `nbc web`: a job's ranks as Web Workers of a page (nbcoll/web), served from 127.0.0.1 with
 * the headers that make the page cross-origin isolated, and with `headless` driven in
 * Debian's Chromium (puppeteer-core) to the job's end, as `nbc run` runs it.
 *
 * The page loads the launcher bundle (dist/web/nbcoll-web.js), fetches its configuration, and
 * runs /job.js: the job file bundled by esbuild with 'nbcoll' and 'nbcoll/testing' left to the
 * rank bundle (dist/web/nbcoll-rank.js), so the job and the rank bootstrap share one library.
 * Ranks' console lines come back in batches (POST /out) and the end in one POST /done.
 * Without a job file the page is the demo (examples/web/): an allreduce benchmark and a CG
 * solve among the workers, with live charts.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, extname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { NbcLaunchError } from '../errors.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST_WEB = join(ROOT, 'dist', 'web');
const DEMO = join(ROOT, 'examples', 'web');
/** uPlot's files, wherever npm put the package (beside this one when installed as a dependency). */
const UPLOT = dirname(createRequire(import.meta.url).resolve('uplot/package.json'));

/** The headers that make a page cross-origin isolated (SharedArrayBuffer), on every response. */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export interface WebServeOptions {
  /** The job file (.js, .mjs or .ts); null: the demo page. */
  job: string | null;
  ranks: number;
  args?: string[];
  /** Port on 127.0.0.1 (0: any free one). */
  port?: number;
  /** Fail the job after this long. */
  timeoutMs?: number;
  /** Each rank's line as it arrives (default: stdout / stderr, as `nbc run`). */
  onOutput?: (rank: number, stream: 'out' | 'err', text: string) => void;
  /** How long a rank's wait polls before parking, us (default launchWeb's). */
  spinUs?: number;
  /** The ranks' asynchronous waits through a helper worker (launchWeb's waitAsyncHelper). */
  waitAsyncHelper?: boolean;
  /** Leave the headers out (to show the error a page that is not isolated gets). */
  withoutIsolation?: boolean;
}

/** How a page's job ended. */
export interface WebJobEnd {
  ok: boolean;
  /** Each rank's result, by rank (ok only). */
  results?: unknown[];
  ms?: number;
  /** The failure, as launchWeb rejected with it. */
  message?: string;
  code?: string;
}

export interface WebServer {
  url: string;
  /** Resolves when the page reports the job's end. */
  done: Promise<WebJobEnd>;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.map': 'application/json',
  '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.png': 'image/png',
};

/** The job file bundled for the page: its own imports inlined, the library's left to the rank bundle. */
async function bundleJob(job: string): Promise<string> {
  const { build } = await import('esbuild');
  try {
    const r = await build({
      entryPoints: [job], bundle: true, write: false, format: 'esm', platform: 'browser', target: 'es2022', logLevel: 'silent',
      plugins: [{
        name: 'nbcoll',
        setup(b) {
          b.onResolve({ filter: /^nbcoll(\/testing)?$/ }, () => ({ path: '/nbcoll-rank.js', external: true }));
        },
      }],
    });
    return r.outputFiles[0]!.text;
  } catch (err) {
    const errors = (err as { errors?: Array<{ text: string; location?: { file: string; line: number } | null }> }).errors ?? [];
    const first = errors[0];
    const where = first?.location ? ` (${first.location.file}:${first.location.line})` : '';
    const nodeOnly = /node:|Could not resolve "(fs|path|os|crypto|child_process|worker_threads)"/.test(first?.text ?? '');
    throw new NbcLaunchError(`Cannot bundle the job ${job} for the browser: ${first?.text ?? (err as Error).message}${where}` +
      (nodeOnly ? '; a job for the page uses only the public API (no node: modules, no process)' : ''), { cause: err });
  }
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, isolated: boolean): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...(isolated ? ISOLATION_HEADERS : {}) });
  res.end(body);
}

/** A request body, at most 16 MiB (the ranks' lines in a batch, or the job's results). */
async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 16 << 20) throw new Error('request body beyond 16 MiB');
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The page that runs a job file and reports back (the demo page has its own). */
function jobPage(job: string, ranks: number): string {
  return `<!doctype html>
<meta charset="utf-8">
<title>nbcoll: ${job.split('/').pop()} on ${ranks} ranks</title>
<style>body { font: 14px system-ui, sans-serif; margin: 1.5em } pre { background: #f4f4f4; padding: 1em }</style>
<h1>nbcoll in the browser</h1>
<p id="status">Starting ${ranks} ranks as Web Workers...</p>
<pre id="out"></pre>
<script type="module">
import { launchWeb } from '/nbcoll-web.js';
const out = document.getElementById('out');
const status = document.getElementById('status');
const cfg = await (await fetch('/config.json')).json();
let queue = [];
let sending = Promise.resolve();
const flush = () => {
  if (queue.length === 0) return sending;
  const lines = queue;
  queue = [];
  sending = sending.then(() => fetch('/out', { method: 'POST', headers: { 'X-Nbc-Token': cfg.token }, body: JSON.stringify(lines) }));
  return sending;
};
const flusher = setInterval(flush, 50);
const json = (x) => JSON.stringify(x, (k, v) => (typeof v === 'bigint' ? v.toString() + 'n' : v));
let end;
try {
  const r = await launchWeb('/job.js', {
    ranks: cfg.ranks, args: cfg.args, timeoutMs: cfg.timeoutMs ?? undefined, spinUs: cfg.spinUs ?? undefined, waitAsyncHelper: cfg.waitAsyncHelper,
    onOutput: (rank, stream, text) => { out.textContent += text + '\\n'; queue.push([rank, stream, text]); },
  });
  status.textContent = 'Done: ' + cfg.ranks + ' ranks in ' + r.ms.toFixed(0) + ' ms.';
  end = { ok: true, results: r.results, ms: r.ms };
} catch (e) {
  status.textContent = 'Failed: ' + e.message;
  end = { ok: false, message: e.message, code: e.code };
}
clearInterval(flusher);
await flush();
document.body.dataset.done = '1';
await fetch('/done', { method: 'POST', headers: { 'X-Nbc-Token': cfg.token }, body: json(end) });
</script>
`;
}

/** Serves the page; resolves once listening. */
export async function serveWeb(o: WebServeOptions): Promise<WebServer> {
  if (!existsSync(join(DIST_WEB, 'nbcoll-web.js'))) {
    throw new NbcLaunchError(`Cannot serve the page: ${join(DIST_WEB, 'nbcoll-web.js')} is missing; expected npm run build to have made it`);
  }
  const job = o.job;
  if (job !== null) await bundleJob(job); // a job that cannot run in a page fails here, before anything is served
  const isolated = o.withoutIsolation !== true;
  const out = o.onOutput ?? ((_r: number, s: 'out' | 'err', t: string) => (s === 'out' ? process.stdout : process.stderr).write(`${t}\n`));
  let finish!: (end: WebJobEnd) => void;
  const done = new Promise<WebJobEnd>((resolve) => (finish = resolve));
  // The page's POSTs carry this server's token: another site open in the browser cannot read
  // it (no CORS here), so cannot fake the job's output or end; and the Host must be this one
  // (a rebound DNS name cannot read the job either).
  const token = randomBytes(16).toString('hex');
  const config = JSON.stringify({ ranks: o.ranks, args: o.args ?? [], timeoutMs: o.timeoutMs ?? null, spinUs: o.spinUs ?? null,
    waitAsyncHelper: o.waitAsyncHelper === true, token });
  let host = '';
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      if (req.headers.host !== host) {
        send(res, 421, 'text/plain', `this server answers ${host} only\n`, isolated);
      } else if (req.method === 'POST' && req.headers['x-nbc-token'] !== token) {
        send(res, 403, 'text/plain', 'a POST needs this server\'s token\n', isolated);
      } else if (req.method === 'POST' && path === '/out') {
        for (const [rank, stream, text] of JSON.parse(await body(req)) as Array<[number, 'out' | 'err', string]>) out(rank, stream, text);
        send(res, 204, 'text/plain', '', isolated);
      } else if (req.method === 'POST' && path === '/done') {
        finish(JSON.parse(await body(req)) as WebJobEnd);
        send(res, 204, 'text/plain', '', isolated);
      } else if (path === '/config.json') {
        send(res, 200, TYPES['.json']!, config, isolated);
      } else if (path === '/' || path === '/index.html') {
        send(res, 200, TYPES['.html']!, job === null ? readFileSync(join(DEMO, 'index.html')) : jobPage(job, o.ranks), isolated);
      } else if (path === '/job.js') {
        send(res, 200, TYPES['.js']!, job === null ? readFileSync(join(DEMO, 'demo-job.js')) : await bundleJob(job), isolated);
      } else if (/^\/nbcoll-(web|rank)\.js(\.map)?$/.test(path)) {
        send(res, 200, TYPES[extname(path)]!, readFileSync(join(DIST_WEB, path.slice(1))), isolated);
      } else if (job === null && /^\/[\w.-]+$/.test(path) && existsSync(join(DEMO, path.slice(1)))) {
        send(res, 200, TYPES[extname(path)] ?? 'application/octet-stream', readFileSync(join(DEMO, path.slice(1))), isolated);
      } else if (job === null && path === '/uplot.js') {
        send(res, 200, TYPES['.js']!, readFileSync(join(UPLOT, 'dist', 'uPlot.esm.js')), isolated);
      } else if (job === null && path === '/uplot.css') {
        send(res, 200, TYPES['.css']!, readFileSync(join(UPLOT, 'dist', 'uPlot.min.css')), isolated);
      } else {
        send(res, 404, 'text/plain', `not found: ${path}\n`, isolated);
      }
    })().catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, 'text/plain', `${(err as Error).message}\n`, isolated);
      if ((req.url ?? '').startsWith('/job.js')) finish({ ok: false, message: (err as Error).message });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  host = `127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}/`,
    done,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Debian's Chromium (or another Chrome): NBC_CHROMIUM where set, else chromium,
 * chromium-browser, google-chrome or google-chrome-stable on PATH; null where none is.
 */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env.NBC_CHROMIUM;
  if (named !== undefined && named !== '') return named;
  return onPath(env, ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']);
}

/** Firefox (Debian's ESR): NBC_FIREFOX where set, else firefox-esr or firefox on PATH; null where none is. */
export function firefoxPath(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env.NBC_FIREFOX;
  if (named !== undefined && named !== '') return named;
  return onPath(env, ['firefox-esr', 'firefox']);
}

function onPath(env: NodeJS.ProcessEnv, names: string[]): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    for (const name of names) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return null;
}

export interface HeadlessOptions {
  /** Which browser (default chromium): Firefox through WebDriver BiDi. */
  browser?: 'chromium' | 'firefox';
  /** Write a PNG of the page when the job has ended. */
  screenshot?: string;
  /** The window's size (default 1200 x 900). */
  width?: number;
  height?: number;
}

/**
 * Chromium features a headless job has no use for. The browser preloads its omnibox popup, a
 * WebUI page of its own, in a renderer of its own as it starts: a trace of a 2-rank job showed
 * that renderer's main thread busy for 350-640 ms of the job's first second, on a machine of 2
 * cores where the ranks need both (docs/web.md, "Measuring in a browser").
 */
const CHROMIUM_OFF = ['PreloadTopChromeWebUI', 'WebUIOmniboxPopup', 'WebUIOmniboxFullPopup', 'WebUIOmniboxAimPopup'];

/**
 * Opens `url` in headless Chromium and resolves with the job's end (from `done`); the browser
 * is closed whatever happens. Chromium's flags: no sandbox (CI runs as root), no GPU, and none
 * of its background connections (this machine's network is closed).
 */
export async function runHeadless(server: WebServer, o: HeadlessOptions = {}): Promise<WebJobEnd> {
  const firefox = o.browser === 'firefox';
  const executablePath = firefox ? firefoxPath() : chromiumPath();
  if (executablePath === null) {
    throw new NbcLaunchError(firefox
      ? 'Cannot run the page headless in Firefox: none found; expected NBC_FIREFOX=<path>, or firefox-esr on PATH (apt-get install firefox-esr)'
      : 'Cannot run the page headless: no Chromium found; expected NBC_CHROMIUM=<path>, or chromium on PATH (apt-get install chromium)');
  }
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = mkdtempSync(join(tmpdir(), firefox ? 'nbc-firefox-' : 'nbc-chromium-'));
  const browser = await puppeteer.launch(firefox
    ? { browser: 'firefox', executablePath, headless: true, userDataDir: profile }
    : {
      executablePath, headless: true, userDataDir: profile,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
        '--disable-sync', '--disable-dev-shm-usage', `--disable-features=${CHROMIUM_OFF.join(',')}`],
    });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: o.width ?? 1200, height: o.height ?? 900 });
    // A page that fails before it can report (a syntax error, a missing bundle) ends the job too.
    const crashed = new Promise<WebJobEnd>((resolve) => {
      page.on('pageerror', (err) => resolve({ ok: false, message: `the page failed: ${(err as Error).message}` }));
    });
    await page.goto(server.url);
    const end = await Promise.race([server.done, crashed]);
    if (o.screenshot !== undefined) {
      // The page marks its body once it has drawn the end (body[data-done]).
      await page.waitForSelector('body[data-done]', { timeout: 10_000 });
      await page.screenshot({ path: o.screenshot as `${string}.png`, fullPage: true });
    }
    return end;
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
