/** Helpers shared by the test jobs. */
import assert from 'node:assert/strict';
import { NbcError, Op, type Communicator, type MessageTrace } from 'nbcoll';

/**
 * Runs each named call and records the NbcError code it raised ('no error' when it did not),
 * so a test can compare every case at once.
 */
export function errorCodes(cases: Record<string, () => unknown>): Record<string, string> {
  const codes: Record<string, string> = {};
  for (const [name, fn] of Object.entries(cases)) {
    try {
      fn();
      codes[name] = 'no error';
    } catch (err) {
      codes[name] = err instanceof NbcError ? err.code : `not an NbcError: ${String(err)}`;
    }
  }
  return codes;
}

/** 'ok' when `fn` returns, else the NbcError's code and message (anything else is rethrown). */
export function outcome(fn: () => void): string {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (!(err instanceof NbcError)) throw err;
    return `${err.code}: ${err.message}`;
  }
}

/** 2x2 matrices, row-major: inout = input x inout. Not commutative, so a wrong fold order shows. */
export const matmul = Op.create((inout: Float64Array, input: Float64Array) => {
  for (let k = 0; k < inout.length; k += 4) {
    const a = input[k]!, b = input[k + 1]!, c = input[k + 2]!, d = input[k + 3]!;
    const e = inout[k]!, f = inout[k + 1]!, g = inout[k + 2]!, h = inout[k + 3]!;
    inout[k] = a * e + b * g;
    inout[k + 1] = a * f + b * h;
    inout[k + 2] = c * e + d * g;
    inout[k + 3] = c * f + d * h;
  }
}, { commutative: false, itemLength: 4, name: 'matmul' });

/**
 * mulberry32 (src/bench/prng.ts): the same stream on every rank, to generate test data
 * reproducibly. Imported from the build, as the other jobs import the library, so that this
 * file compiles on its own into test/.jobs (job-path.ts).
 */
export { mulberry32 } from '../../dist/bench/prng.js';

/** Messages of one direction as text, tags relative to their call; fails on a message of another context or call. */
export function messages(list: number[], run: { call: number }, ctx: number, what: string, dir: 'to' | 'from'): string[] {
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 4) {
    const [peer, mctx, tag, bytes] = [list[i]!, list[i + 1]!, list[i + 2]!, list[i + 3]!];
    const sub = tag - 16 * run.call;
    if (mctx !== ctx || sub < 0 || sub > 15) {
      assert.fail(`${what}: message ${i / 4} ${dir} ${peer} has context ${mctx} and tag ${tag}; expected context ${ctx} and a tag of call ${run.call} (${16 * run.call}..${16 * run.call + 15})`);
    }
    out.push(`${dir} ${peer} sub-tag ${sub}: ${bytes} B`);
  }
  return out;
}

/** Sorted by peer, keeping each peer's messages in order. */
export const perSource = (m: string[]): string[] => m
  .map((text, i) => ({ text, i, peer: Number(text.split(' ')[1]) }))
  .sort((a, b) => a.peer - b.peer || a.i - b.i)
  .map((x) => x.text);

/** One traced call: what it sent, received and started, its result, and its number on the communicator. */
export interface Traced {
  trace: Required<MessageTrace>;
  out: Uint8Array;
  call: number;
}

/**
 * Runs calls on a fresh communicator `c` one at a time, each traced (`Comm.traceMessages`),
 * numbering them from 0 as `c` numbers its collectives.
 */
export function tracer(c: Communicator): (run: () => Uint8Array) => Traced {
  let calls = 0;
  return (run) => {
    const trace: Required<MessageTrace> = { sends: [], recvs: [], schedules: 0, direct: 0 };
    c.traceMessages(trace);
    try {
      return { trace, out: run(), call: calls++ };
    } finally {
      c.traceMessages(null);
    }
  };
}
