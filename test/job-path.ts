/**
 * Where a test job lives. `npm test` compiles test/jobs/*.ts to test/.jobs/*.js first (its
 * pretest step type-checks every test with tsconfig.test.json, then emits the jobs with
 * `tsc -p test/jobs/tsconfig.json`), so that a rank imports plain JavaScript: a TypeScript
 * entry makes every rank thread register tsx's loader and compile the job again, which costs
 * about 0.2 s per rank (a 16-rank job started in 6.5 s instead of 3 s).
 * When the build is missing or older than any job source (a job edited, then one test file run
 * by hand), the source itself is used, so a stale build is never what gets tested.
 */
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SOURCES = fileURLToPath(new URL('./jobs/', import.meta.url));
const BUILT = fileURLToPath(new URL('./.jobs/', import.meta.url));

const mtimeMs = (path: string): number => {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Number.NaN; // missing: compares false with everything
  }
};

let newestSource: number | undefined;

/** The path of job `name` (as in test/jobs, e.g. 'coll.ts'): its build if that is current. */
export function jobPath(name: string): string {
  newestSource ??= Math.max(...readdirSync(SOURCES).filter((f) => f.endsWith('.ts')).map((f) => mtimeMs(SOURCES + f)));
  const built = BUILT + name.replace(/\.ts$/, '.js');
  return mtimeMs(built) >= newestSource ? built : SOURCES + name;
}
