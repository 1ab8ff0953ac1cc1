/**
 * The public types as a user's package sees them. A consumer project in a temp directory
 * (its own tsconfig: strict, NodeNext, noEmit) has `node_modules/nbcoll` linked to this
 * package, so `import ... from 'nbcoll'` resolves through package.json "exports"/"types" to
 * dist/*.d.ts, exactly as after `npm install`. Needs a build first: `npx tsc -p tsconfig.json`.
 *
 * Two consumer files in one program (one compile, a few seconds): `ok.ts` must check clean;
 * `bad.ts` must fail, each line marked `// @expect TSnnnn` with exactly that error, which
 * proves the consumer really is strict: a possibly-null result used as it is fails with
 * TS2531 ("Object is possibly 'null'") or, through a variable, TS18047 ("'grid' is possibly
 * 'null'"), never quietly passes as an any.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

type TypeScript = typeof import('typescript');

/** The repository root as the compiler will name it (symlinks resolved). */
const ROOT = realpathSync(fileURLToPath(new URL('..', import.meta.url)));
const requireHere = createRequire(import.meta.url);
/** The compiler this repository installed (node_modules/typescript); nothing is downloaded. */
const ts = requireHere(requireHere.resolve('typescript')) as TypeScript;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2022',
    types: ['node'],
    noEmit: true,
    // Check nbcoll's .d.ts files too, under the user's settings, rather than trust them
    // (typeCheck() leaves out @types/node's).
    skipLibCheck: false,
  },
  include: ['*.ts'],
};

/** Every call a user makes on communicators made from the world, with the types they get. */
const OK = `
import {
  init, initSync, dimsCreate, waitAll, Op, Comm, Communicator, PersistentRequest, Request,
  ErrorCode, NbcError, NbcArgError, NbcCommError, IN_PLACE, UNDEFINED,
  BinnedSum, type AnyRequest, type CartComm, type CollOptions, type CommStats, type ErrorCodeValue, type ExecutorsStats, type Status,
} from 'nbcoll';
import { launchWeb, isolationProblem, type WebLaunchResult } from 'nbcoll/web';

const world: Communicator = await init();
const same: Communicator = initSync();
const n = 8;
const send = world.alloc(Float64Array, n);
const recv = new Float64Array(n);

// dup: never null, keeps every collective, and so does its dup.
const dup = world.dup();
dup.allreduce(send, recv, 'sum');
dup.dup().barrier();
const dupIsCommunicator: Communicator = dup;

// split: null for UNDEFINED, so optional chaining or a check.
world.split(0)?.bcast(recv, 0);
const half = world.split(world.rank % 2, -world.rank);
if (half !== null) {
  half.allgather(send.subarray(0, 1), new Float64Array(half.size));
  half.free();
}
const outside: Communicator | null = world.split(UNDEFINED);

// splitShared: never null.
world.splitShared().barrier();
const node: Communicator = world.splitShared();

// create: null on ranks outside the group.
const evens = world.create(world.group().incl([0]));
evens?.reduce(send, recv, 'max', 0);

// cartCreate: null on ranks beyond the grid; the grid has the neighbour collectives.
const dims = dimsCreate(world.size, 2);
const cart = world.cartCreate(dims, [true, false]);
const halo = new Float64Array(2 * dims.length);
cart?.neighborAlltoall(halo, new Float64Array(halo.length));
if (cart !== null) {
  const { source, dest }: { source: number; dest: number } = cart.shift(0, 1);
  const coords: number[] = cart.coords();
  const r: Request = cart.ineighborAllgather(send.subarray(0, 1), new Float64Array(2 * dims.length));
  r.wait();
  void [source, dest, coords];
}
const asCart: CartComm | null = cart;
const gridDup: CartComm | undefined = cart?.dup();

// Non-blocking: a request is awaitable and gives a Status.
const opts: CollOptions = { algorithm: 'ring', executor: 'host' };
const status: Status = await world.iallreduce(send, recv, 'sum', opts);
const from: number = status.source;
waitAll([world.ibarrier(), dup.ibcast(recv, 0)]);

// Persistent: start() returns the request, which can be waited on or awaited.
const p: PersistentRequest = world.allreduceInit(IN_PLACE, recv, 'sum');
p.start().wait();
const again: Status = await p.start();
p.free();
const times = Op.create((inout: Float64Array, input: Float64Array) => {
  for (let i = 0; i < inout.length; i++) inout[i] = (inout[i] ?? 1) * (input[i] ?? 1);
}, { commutative: true });
dup.allreduceInit(send, recv, times).start().wait();
// Persistent requests join plain ones in waitAll and friends; wait() gives a Status too.
const pw = world.allreduceInit(send, recv, 'sum');
const statuses: Status[] = waitAll([pw.start(), world.ibarrier()]);
const pst: Status = pw.wait();
const anyOf: AnyRequest[] = [pw, world.ibarrier()];
waitAll(anyOf);
pw.free();
void [statuses, pst];

// Statistics: the rank's traffic, and its calls by the executor that ran them.
const st: CommStats = world.stats();
const ex: ExecutorsStats = world.stats().executors;
const fabricShare: number = ex.agg.onFabric / Math.max(1, ex.agg.calls);
void [st.host.messagesSent, st.interNode, fabricShare];

// The base class still types code written against plain communicators.
function ringOf(c: Comm): Comm { return c.dup(); }
const base: Comm = ringOf(world);

// Errors: stable codes, narrowed by instanceof.
try {
  world.split(-3);
} catch (e) {
  if (e instanceof NbcArgError) {
    const code: ErrorCodeValue = e.code;
    void code;
  } else if (e instanceof NbcError && e.code === ErrorCode.COMM) {
    const comm: NbcCommError | NbcError = e;
    void comm;
  }
}

// Reproducible reductions: options and the local accumulator.
const exact = new BinnedSum(3).addAll(recv).value();
world.scan(send, recv, 'sum', { reproducible: true, folds: 3, executor: 'offload' });
const rp: PersistentRequest = world.reduceScatterBlockInit(send, recv, 'sum', { reproducible: true });
void [exact, rp];

// The browser entry type-checks in a Node project too (it names no DOM type).
const page: Promise<WebLaunchResult> = launchWeb(new URL('./job.js', import.meta.url), { ranks: 2, timeoutMs: 1000 });
const why: string | null = isolationProblem();
void [page, why];

void [same, dupIsCommunicator, outside, node, asCart, gridDup, from, again, base];
`;

/** Each marked line must give exactly its error, and nothing else may fail. */
const BAD = `
import { init, UNDEFINED, type Communicator } from 'nbcoll';

const world = await init();
const buf = new Float64Array(4);
world.split(world.rank % 2).bcast(buf, 0); // @expect TS2531
const grid = world.cartCreate([world.size], [true]);
grid.neighborAllgather(buf, new Float64Array(8)); // @expect TS18047
world.create(world.group()).barrier(); // @expect TS2531
const none: Communicator = world.split(UNDEFINED); // @expect TS2322
world.allreduce(buf, buf, 'average'); // @expect TS2345
const r = world.iallreduce(buf, buf, 'sum');
const late: number = await r; // @expect TS2322
void [none, late];
`;

interface Found { file: string; line: number; code: number; text: string }

function consumerProject(): { dir: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'nbcoll-types-')));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  // The package itself, as `npm install ../nbcoll` would link it.
  symlinkSync(ROOT, join(dir, 'node_modules', 'nbcoll'), 'dir');
  // A user of a Node library has Node's types; take this repository's copy.
  symlinkSync(realpathSync(join(ROOT, 'node_modules', '@types', 'node')), join(dir, 'node_modules', '@types', 'node'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  writeFileSync(join(dir, 'ok.ts'), OK);
  writeFileSync(join(dir, 'bad.ts'), BAD);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Compiles the consumer project like `tsc -p dir` and returns every diagnostic. */
function typeCheck(dir: string): { found: Found[]; nbcollFiles: string[] } {
  const configPath = join(dir, 'tsconfig.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  assert.equal(read.error, undefined, 'consumer tsconfig.json parses');
  const config = ts.parseJsonConfigFileContent(read.config, ts.sys, dir, undefined, configPath);
  assert.deepEqual(config.errors, [], 'consumer tsconfig.json is valid');
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
  const nbcollFiles = program.getSourceFiles().filter((f) => f.fileName.startsWith(join(ROOT, 'dist')));
  // What `tsc -p dir` reports, less the checking of @types/node's own declarations (most of
  // the time, and not ours to test): the consumer's files and every nbcoll .d.ts it reaches.
  const checked = [...program.getRootFileNames().map((f) => program.getSourceFile(f)!), ...nbcollFiles];
  const diagnostics = [
    ...program.getConfigFileParsingDiagnostics(), ...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(),
    ...checked.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
  ];
  const found = diagnostics.map((d): Found => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined) return { file: '(global)', line: 0, code: d.code, text };
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return { file: d.file.fileName, line: line + 1, code: d.code, text };
  });
  return { found, nbcollFiles: nbcollFiles.map((f) => f.fileName) };
}

const show = (list: readonly Found[]): string => list.map((f) => `${f.file}:${f.line} TS${f.code} ${f.text}`).join('\n');

test('a strict NodeNext consumer package type-checks every collective on dup, split, splitShared, create and cartCreate results, and its null-unsafe uses fail with the expected codes', (t) => {
  assert.ok(existsSync(join(ROOT, 'dist', 'index.d.ts')), 'dist/index.d.ts exists; build first with npx tsc -p tsconfig.json');
  const { dir, cleanup } = consumerProject();
  t.after(cleanup);
  const { found, nbcollFiles } = typeCheck(dir);

  assert.ok(nbcollFiles.includes(join(ROOT, 'dist', 'index.d.ts')),
    `'nbcoll' resolves to this package's dist/index.d.ts through package.json (got ${nbcollFiles.slice(0, 3).join(', ')})`);

  const okFile = join(dir, 'ok.ts');
  const badFile = join(dir, 'bad.ts');
  const elsewhere = found.filter((f) => f.file !== okFile && f.file !== badFile);
  assert.deepEqual(elsewhere, [], `no errors in nbcoll's declarations or the setup:\n${show(elsewhere)}`);
  const inOk = found.filter((f) => f.file === okFile);
  assert.deepEqual(inOk, [], `ok.ts checks clean:\n${show(inOk)}`);

  const expected = BAD.split('\n').flatMap((text, i) => {
    const m = /\/\/ @expect TS(\d+)$/.exec(text);
    return m === null ? [] : [`${i + 1} TS${m[1]}`];
  });
  const got = found.filter((f) => f.file === badFile).map((f) => `${f.line} TS${f.code}`);
  assert.ok(expected.length >= 5, 'bad.ts marks its expected errors');
  assert.deepEqual(got, expected, `bad.ts fails on exactly its marked lines:\n${show(found.filter((f) => f.file === badFile))}`);
});
