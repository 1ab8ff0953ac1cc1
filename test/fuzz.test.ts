/**
 * In-process fuzzing of every parser that reads bytes from outside a process (test/fuzz/targets.ts
 * says what each one is checked for). FUZZ_RUNS sets the runs per target (default 300: the whole
 * file in well under 40 s on two cores), FUZZ_SEED the seed (default: random, printed, and
 * printed again by fast-check with the counterexample's path when a property fails, so
 * `FUZZ_SEED=<seed> node --import tsx --test test/fuzz.test.ts` replays it).
 * The long runs are `npm run fuzz` (docs/reliability.md, "Fuzzing").
 */
import { test } from 'node:test';
import fc from 'fast-check';
import { TARGETS } from './fuzz/targets.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 300);
const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fff_ffff);
console.log(`fuzz: ${runs} runs per target, FUZZ_SEED=${seed}`);

for (const t of TARGETS) {
  test(`fuzz: ${t.name}`, { timeout: 60_000 }, async () => {
    await fc.assert(t.property() as fc.IAsyncProperty<never>, { numRuns: runs, seed });
  });
}
