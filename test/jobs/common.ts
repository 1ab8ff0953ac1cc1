/** Helpers shared by the test jobs. */
import { NbcError, Op } from 'nbcoll';

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
