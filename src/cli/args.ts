/** Option parsers shared by the `nbc` commands (commander calls them with the option's text). */
import { InvalidArgumentError } from 'commander';

/** An integer >= 1, else commander's usage error. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return n;
}

/** An integer >= 0, else commander's usage error. */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a non-negative integer, got '${value}'`);
  return n;
}
