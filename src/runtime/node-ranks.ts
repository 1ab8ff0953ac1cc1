/**
 * A node's ranks: one worker thread each (rank-main.ts), its output piped to the node's with an
 * optional "[rank] " prefix. A rank is done when it exits with code 0 and its streams have
 * ended (with UCX: when it reports its result, since it lingers after); once every rank of the
 * node is done, the node reports the results (`done`). A rank that throws or exits non-zero
 * fails the node, except that an error which only follows from one elsewhere waits a moment
 * (CONSEQUENCE_GRACE_MS) for the report that names its cause.
 */
import { Worker } from 'node:worker_threads';
import { REPORTED_ELSEWHERE } from '../p2p/constants.js';
import { formatError, type NodeLife } from './node-life.js';
import type { RankBoot, RankReport } from './rank-main.js';

/**
 * How long a node holds back a rank's error that only follows from one elsewhere (its message
 * ends with REPORTED_ELSEWHERE) before it reports it as the job's failure: long enough for the
 * rank where the first error happened to finish its collective and its node to report that
 * (chaos: a rank that returned early was otherwise named, in 1 trial of 6 on this VM, only by
 * the flagged data it caused).
 */
const CONSEQUENCE_GRACE_MS = 300;

export interface RankResult {
  rank: number;
  result: unknown;
}

/** What the node does with what its ranks report. */
export interface RankEvents {
  /** Local rank `i` has its UCX worker (the UCX transport). */
  ucxAddress(i: number, address: Uint8Array): void;
  /** Every rank of the node is done; their results, by rank. */
  done(results: RankResult[]): void;
}

/** Starts a worker per boot (local rank order), each with its output tagged when `tag`. */
export function startRanks(life: NodeLife, boots: RankBoot[], tag: boolean, ev: RankEvents): void {
  const results: RankResult[] = [];
  let running = boots.length;
  const finished = (): void => {
    if (--running === 0 && !life.ending) {
      results.sort((a, b) => a.rank - b.rank);
      ev.done(results);
    }
  };
  boots.forEach((boot, i) => startRank(life, boot, tag, (m) => {
    if (m.type === 'result') results.push({ rank: m.rank, result: m.result });
    else ev.ucxAddress(i, m.address);
  }, finished));
}

/** One rank's worker: `report` hears its messages, `finished` is called once when it is done. */
function startRank(life: NodeLife, boot: RankBoot, tag: boolean, report: (m: RankReport) => void, finished: () => void): void {
  const rank = boot.placement.worldRank;
  const nodeRank = boot.placement.nodeId;
  const w = new Worker(new URL('./rank-main.js', import.meta.url), { workerData: boot, argv: boot.args, stdout: true, stderr: true, name: `nbc rank ${rank}` });
  life.workers.push(w);
  const streamsOpen = { n: 2 };
  let exitCode: number | null = null;
  let counted = false;
  /** This rank is done: once, on its exit (or, with UCX, on its result; it lingers after). */
  const done = (): void => {
    if (counted) return;
    counted = true;
    finished();
  };
  /** A consequence error waits to be reported (CONSEQUENCE_GRACE_MS): its exit must not report first. */
  let reportLater = false;
  const settle = (): void => {
    if (exitCode === null || streamsOpen.n > 0 || reportLater) return;
    if (exitCode !== 0) {
      life.fail(`rank ${rank} (node ${nodeRank}) exited with code ${exitCode}`, exitCode);
      return;
    }
    done();
  };
  const prefix = tag ? `[${rank}] ` : '';
  pipeOutput(w.stdout, process.stdout, prefix, () => { streamsOpen.n--; settle(); });
  pipeOutput(w.stderr, process.stderr, prefix, () => { streamsOpen.n--; settle(); });
  w.on('message', (m: RankReport) => {
    report(m);
    if (m.type === 'result' && boot.ucx === true) done();
  });
  w.on('error', (err) => {
    const reason = `rank ${rank} (node ${nodeRank}) failed: ${formatError(err)}`;
    if (!(err instanceof Error && err.message.includes(REPORTED_ELSEWHERE))) {
      life.fail(reason, 1);
      return;
    }
    // Data flagged invalid, or the job aborting: it follows from an error elsewhere, which
    // its own node reports once that rank's collective ends. Waiting a moment lets that report,
    // which names the cause, come first; if it does, this node just stops.
    reportLater = true;
    setTimeout(() => life.fail(reason, 1), CONSEQUENCE_GRACE_MS);
  });
  w.on('exit', (code) => {
    exitCode = code;
    settle();
  });
  life.exits.push(new Promise((resolve) => w.once('exit', () => resolve())));
}

/** Copies a worker's output stream to ours, prefixing every line when asked. */
function pipeOutput(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, prefix: string, onEnd: () => void): void {
  if (prefix === '') {
    from.on('data', (chunk: Buffer) => to.write(chunk));
  } else {
    let partial = '';
    from.setEncoding('utf8');
    from.on('data', (chunk: string) => {
      const text = partial + chunk;
      const lines = text.split('\n');
      partial = lines.pop()!;
      if (lines.length > 0) to.write(lines.map((l) => prefix + l + '\n').join(''));
    });
    from.on('end', () => {
      if (partial !== '') to.write(prefix + partial + '\n');
    });
  }
  from.on('end', onEnd);
}
