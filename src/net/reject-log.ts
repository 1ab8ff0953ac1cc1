/**
 * One logged reason per rejected connection, without letting a flood of bad connections flood
 * the log.
 *
 * Every listener (the rendezvous master, each node's link listener, the aggregation manager and
 * daemons) reports each connection it drops before it was authenticated through `reject`.
 * The first REJECT_LOG_LINES of a window of REJECT_SUMMARY_MS are written one line each:
 *
 *   <prefix>rejected connection from 127.0.0.1:40312: garbage handshake (bad magic bytes)
 *
 * Beyond that they are counted, and when the window ends (or the listener closes) one line
 * accounts for them all, naming the listener and each reason (digits folded to N) with its count:
 *
 *   <prefix>12345 more connections to 127.0.0.1:41000 rejected in the last 10.0 s
 *     (reasons: garbage handshake (bad magic bytes) x12000, short handshake (connection closed after N of 72 bytes) x345)
 *
 * So every rejected connection is in the log exactly once, as its own line or inside one count,
 * and a peer that opens thousands of bad connections costs the log REJECT_LOG_LINES + 1 lines
 * per window. A slow trickle is always logged line by line.
 */

/** Lines written one per connection in each window. */
export const REJECT_LOG_LINES = 20;
/** Length of a window, and the longest a suppressed rejection waits for its summary line. */
export const REJECT_SUMMARY_MS = 10_000;
/** Distinct reasons a summary names; the rest are counted as "other". */
const MAX_REASONS = 8;

export interface RejectLogOptions {
  /** One line per connection for this many rejections per window (default REJECT_LOG_LINES). */
  lines?: number;
  /** Window length in ms (default REJECT_SUMMARY_MS). */
  windowMs?: number;
}

export class RejectLog {
  /** Where the summary says the connections went (e.g. "127.0.0.1:41000"); set once listening. */
  listener = '?';
  private readonly lines: number;
  private readonly windowMs: number;
  private windowStart = 0;
  private written = 0;
  private suppressed = 0;
  private readonly reasons = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  /** Rejections reported, in total: for counters and tests. */
  total = 0;

  constructor(private readonly log: (line: string) => void, private readonly prefix: string, opts: RejectLogOptions = {}) {
    this.lines = opts.lines ?? REJECT_LOG_LINES;
    this.windowMs = opts.windowMs ?? REJECT_SUMMARY_MS;
  }

  /** Reports one rejected connection from `remote` ("address:port") and why. */
  reject(remote: string, reason: string): void {
    this.total++;
    const now = performance.now();
    if (this.timer === null && now - this.windowStart >= this.windowMs) {
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written < this.lines) {
      this.written++;
      this.log(`${this.prefix}rejected connection from ${remote}: ${reason}`);
      return;
    }
    this.suppressed++;
    const key = reason.replace(/\d+/g, 'N');
    if (this.reasons.has(key) || this.reasons.size < MAX_REASONS) this.reasons.set(key, (this.reasons.get(key) ?? 0) + 1);
    else this.reasons.set('other', (this.reasons.get('other') ?? 0) + 1);
    if (this.timer === null) {
      this.timer = setTimeout(() => this.summarise(), Math.max(1, this.windowStart + this.windowMs - now));
      this.timer.unref();
    }
  }

  /** Writes the summary of the current window now, if it suppressed anything. */
  flush(): void {
    this.summarise();
  }

  /** Flushes and stops the timer; call when the listener closes. */
  close(): void {
    this.summarise();
  }

  private summarise(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.suppressed === 0) return;
    const seconds = ((performance.now() - this.windowStart) / 1000).toFixed(1);
    const reasons = [...this.reasons].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} x${n}`).join(', ');
    this.log(`${this.prefix}${this.suppressed} more connection${this.suppressed === 1 ? '' : 's'} to ${this.listener} ` +
      `rejected in the last ${seconds} s (reasons: ${reasons})`);
    this.suppressed = 0;
    this.reasons.clear();
    // The next rejection opens a new window.
    this.windowStart = 0;
  }
}
