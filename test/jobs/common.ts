/** Helpers shared by the test jobs. */
import { NbcError } from 'nbcoll';

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
