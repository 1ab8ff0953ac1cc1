/** Assertions shared by the unit tests (which test src/ directly, not the built package). */
import assert from 'node:assert/strict';
import { NbcError } from '../src/errors.js';

/** For assert.throws: the error is an NbcError with `code`, and its message matches every pattern. */
export function hasCode(code: string, ...patterns: RegExp[]) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof NbcError, `expected an NbcError, got ${String(e)}`);
    assert.equal(e.code, code);
    for (const pattern of patterns) assert.match(e.message, pattern);
    return true;
  };
}
