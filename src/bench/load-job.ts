/**
 * The load job (test/load.test.ts, `npm run load`), one scenario per mode (args[0], with a
 * JSON object of parameters in args[1]):
 *
 *   outstanding  many non-blocking collectives on many communicators (dup and split), all
 *                posted before any completes, then completed in a seeded scrambled order:
 *                wait on a random permutation, then waitAny and testAny over what is left;
 *                every result checked against its sequential reference (coll-cases.ts).
 *   slow         one rank (0) stops receiving, computing or blocked on a receive that comes
 *                last, while every other rank keeps sending to it; then it receives every
 *                message and checks order and content. Resident memory is sampled from
 *                outside (the test or cli/load.ts): back-pressure must hold it, not buffers.
 *   flood        `count` small messages from every rank to every other rank, eager, sent with
 *                a window of isends and received with ANY_SOURCE and ANY_TAG: per sender the
 *                sequence numbers must arrive in order (MPI's non-overtaking rule), every
 *                payload's checksum must match, none lost, none extra.
 */
import { getHeapStatistics } from 'node:v8';
import type { Communicator } from '../coll/communicator.js';
import { ANY_SOURCE, ANY_TAG } from '../p2p/constants.js';
import { testAll, testAny, waitAll, waitAny, type Request } from '../p2p/request.js';
import { COLL_CASES, type Posted } from './coll-cases.js';
import { mulberry32 as prng } from './prng.js';

function shuffle<T>(xs: T[], rnd: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

// ---- outstanding ------------------------------------------------------------------------

export interface OutstandingArgs {
  /** Collectives posted before any is completed. */
  total: number;
  /** Communicators they spread over (world, dups and splits). */
  comms: number;
  seed: number;
  /** Elements per rank are drawn from these. */
  sizes: number[];
  /** Collectives by name (coll-cases.ts); default: every non-blocking one. */
  colls?: string[];
}

export interface OutstandingResult {
  posted: number;
  checked: number;
  byColl: Record<string, number>;
  /** How many completed by: permutation wait, waitAny, testAny. */
  completedBy: { wait: number; waitAny: number; testAny: number };
  postMs: number;
  completeMs: number;
}

function outstanding(world: Communicator, a: OutstandingArgs): OutstandingResult {
  const comms: Communicator[] = [world];
  for (let k = 1; k < a.comms; k++) {
    // dups and splits in turn, from world or from one made before (the same on every rank)
    const parent = comms[k % comms.length]!;
    comms.push(k % 2 === 1 ? parent.dup() : parent.split(parent.rank % 2, parent.size - parent.rank)!);
  }
  const cases = a.colls === undefined ? COLL_CASES : COLL_CASES.filter((c) => a.colls!.includes(c.name));
  // Every rank draws the same sequence of calls: which collective, on which communicator, how big.
  const rnd = prng(a.seed);
  const posted: Posted[] = [];
  const names: string[] = [];
  const t0 = performance.now();
  for (let k = 0; k < a.total; k++) {
    const cc = cases[Math.floor(rnd() * cases.length)]!;
    const c = comms[Math.floor(rnd() * comms.length)]!;
    const n = a.sizes[Math.floor(rnd() * a.sizes.length)]!;
    posted.push(cc.start(c, n, k, 'nonblocking', undefined));
    names.push(cc.name);
  }
  const t1 = performance.now();
  // Completion order differs on every rank: a permutation seeded by the rank.
  const order = shuffle(posted.map((_, i) => i), prng(a.seed * 7919 + world.rank + 1));
  const third = Math.ceil(order.length / 3);
  const by = { wait: 0, waitAny: 0, testAny: 0 };
  for (const i of order.slice(0, third)) {
    posted[i]!.req!.wait();
    by.wait++;
  }
  const rest = order.slice(third);
  const left: Request[] = rest.map((i) => posted[i]!.req as Request);
  const useAny = left.splice(0, Math.ceil(left.length / 2));
  while (useAny.length > 0) {
    const j = waitAny(useAny);
    useAny[j] = useAny[useAny.length - 1]!;
    useAny.pop();
    by.waitAny++;
  }
  while (left.length > 0) {
    const j = testAny(left);
    if (j < 0) continue; // testAny progressed once; poll again
    left[j] = left[left.length - 1]!;
    left.pop();
    by.testAny++;
  }
  const t2 = performance.now();
  const byColl: Record<string, number> = {};
  posted.forEach((p, k) => {
    p.check();
    byColl[names[k]!] = (byColl[names[k]!] ?? 0) + 1;
  });
  for (const c of comms.slice(1)) c.free();
  return { posted: posted.length, checked: posted.length, byColl, completedBy: by, postMs: t1 - t0, completeMs: t2 - t1 };
}

// ---- slow receiver ----------------------------------------------------------------------

export interface SlowArgs {
  /** How long the receiver stops receiving, s. */
  seconds: number;
  /** Payload bytes per message (at least 8: sequence number and checksum). */
  bytes: number;
  /** What the receiver does meanwhile: 'compute' (no library calls) or 'blocked' (waits on a receive that comes last). */
  receiver: 'compute' | 'blocked';
  /**
   * How senders send: 'send' (blocking) or 'isend' (windows of `window` isends, tested). A
   * blocked receiver needs 'isend': once the eager credit is spent a blocking send waits for
   * its receive, which the receiver posts only after the release that comes last (a program
   * MPI calls unsafe: it relies on buffering).
   */
  sender: 'send' | 'isend';
  window?: number;
}

export interface SlowResult {
  /** Senders: messages sent while the receiver stood still. Receiver: messages received in all. */
  messages: number;
  bytes: number;
  /** This rank's V8 heap, MiB (senders: the largest seen while sending). */
  heapMb: number;
  /** Receiver: when it stopped and resumed receiving (Date.now()), to judge memory in between. */
  stall?: [number, number];
  /** Senders over UCX: the most eager sends UCX held unfinished at once (TransportStats.ucxPeakInFlight). */
  ucxPeakInFlight?: number;
  /** Senders: small sends that went by rendezvous for want of eager credit (TransportStats.creditRendezvous). */
  creditRendezvous?: number;
}

const TAG_DATA = 1;
const TAG_END = 2;
const TAG_RELEASE = 3;

/** Fills message `seq` of `src`: Int32 words (seq, src, then a pattern), last word a checksum. */
function stamp(m: Int32Array, src: number, seq: number): void {
  m[0] = seq;
  m[1] = src;
  let sum = seq ^ src;
  for (let i = 2; i < m.length - 1; i++) {
    m[i] = (seq * 2654435761 + i * 40503 + src) | 0;
    sum = (sum + m[i]!) | 0;
  }
  m[m.length - 1] = sum;
}

function verify(m: Int32Array, src: number, seq: number, what: string): void {
  if (m[0] !== seq || m[1] !== src) throw new Error(`${what}: got message (seq ${m[0]}, from ${m[1]}), expected (seq ${seq}, from ${src})`);
  let sum = seq ^ src;
  for (let i = 2; i < m.length - 1; i++) sum = (sum + m[i]!) | 0;
  if (m[m.length - 1] !== sum) throw new Error(`${what}: message ${seq} from ${src} has checksum ${m[m.length - 1]}, expected ${sum}`);
}

function slow(w: Communicator, a: SlowArgs): SlowResult {
  const words = Math.max(3, Math.ceil(a.bytes / 4));
  const last = w.size - 1;
  // Wire up every pair first: over UCX an endpoint's first message needs both workers to
  // progress, so a barrier message rank 0 sent on a fresh endpoint just before its stall
  // would wait the whole stall there (MPI's progress rule), and its sender with it.
  w.alltoall(new Int32Array(w.size), new Int32Array(w.size));
  w.alltoall(new Int32Array(w.size), new Int32Array(w.size));
  // One end for everyone, on the host's clock (performance.timeOrigin + now(), shared by the
  // processes of one host): the senders stop sending when the receiver resumes. Each timing
  // its own `seconds` from a barrier, a sender that left it late on a crowded host kept
  // sending after the receiver had resumed, and was counted as if it had sent into the stall
  // (CI, 2026-11-24: 3165 messages where the ring holds ~580).
  const until = Float64Array.of(performance.timeOrigin + performance.now() + a.seconds * 1000);
  w.bcast(until, 0);
  const running = (): boolean => performance.timeOrigin + performance.now() < until[0]!;
  if (w.rank !== 0) {
    const window = a.window ?? 64;
    const msgs = Array.from({ length: a.sender === 'isend' ? window : 1 }, () => new Int32Array(words));
    let seq = 0;
    let heapMb = 0;
    // A window of rendezvous isends completes only once the receiver takes them (MPI gives no
    // buffering): the window is tested, not waited for, so that the stall's end is announced
    // while it is still out, and waited for after.
    let out: Request[] = [];
    while (running()) {
      if ((seq & 1023) === 0) heapMb = Math.max(heapMb, getHeapStatistics().total_heap_size / 1048576);
      if (a.sender === 'send') {
        stamp(msgs[0]!, w.rank, seq);
        w.send(msgs[0]!, 0, TAG_DATA);
        seq++;
      } else if (out.length === 0) {
        for (const m of msgs) {
          stamp(m, w.rank, seq++);
          out.push(w.isend(m, 0, TAG_DATA));
        }
      } else if (testAll(out)) {
        out = [];
      }
    }
    // Not blocking sends: past the credit they would wait for receives that come after the release.
    out.push(w.isend(Int32Array.of(seq), 0, TAG_END));
    if (w.rank === last) out.push(w.isend(Int32Array.of(seq), 0, TAG_RELEASE));
    waitAll(out);
    const host = w.stats().host;
    return { messages: seq, bytes: seq * words * 4, heapMb: Math.round(heapMb), ucxPeakInFlight: host.ucxPeakInFlight, creditRendezvous: host.creditRendezvous };
  }
  // The receiver stands still: no library call at all, or blocked on the last sender's release.
  const stallStart = Date.now();
  if (a.receiver === 'compute') {
    let x = 0;
    while (running()) for (let i = 0; i < 1e5; i++) x = (x * 1664525 + 1013904223) | 0;
    if (x === 0.5) console.log('unreachable'); // keeps the loop from being optimised away
  }
  let stallEnd = Date.now(); // computing: the stall ends here; blocked: once the release arrives
  const release = new Int32Array(1);
  if (a.receiver === 'blocked') {
    w.recv(release, last, TAG_RELEASE);
    stallEnd = Date.now();
  }
  // Now receive everything, in order per sender (non-overtaking), checking each message.
  const m = new Int32Array(words);
  const end = new Int32Array(words);
  let total = 0;
  for (let s = 1; s < w.size; s++) {
    for (let seq = 0; ; seq++) {
      const st = w.recv(m, s, ANY_TAG);
      if (st.tag === TAG_END) {
        end.set(m.subarray(0, 1));
        if (end[0] !== seq) throw new Error(`sender ${s} says it sent ${end[0]} messages, ${seq} arrived`);
        total += seq;
        break;
      }
      verify(m, s, seq, 'slow receiver');
    }
  }
  // A computing receiver takes the release last, in its sender's order: received first, it
  // would wait behind that sender's blocking sends, which (their eager credit spent) wait for
  // the receives above.
  if (a.receiver === 'compute') w.recv(release, last, TAG_RELEASE);
  return { messages: total, bytes: total * words * 4, heapMb: Math.round(getHeapStatistics().total_heap_size / 1048576), stall: [stallStart, stallEnd] };
}

// ---- flood ------------------------------------------------------------------------------

export interface FloodArgs {
  /** Messages from every rank to every other rank. */
  count: number;
  /** Payload bytes (at least 12). */
  bytes: number;
  /** Isends in flight per destination before waiting. */
  window: number;
}

export interface FloodResult {
  sent: number;
  received: number;
  ms: number;
}

function flood(w: Communicator, a: FloodArgs): FloodResult {
  const words = Math.max(3, Math.ceil(a.bytes / 4));
  const p = w.size;
  const t0 = performance.now();
  const want = a.count * (p - 1);
  // A circle of wildcard receives, reposted as they are consumed: posted receives match in the
  // order they were posted, so consuming them from the head sees messages in arrival order.
  const slots = Math.max(1, Math.min(a.window * (p - 1), want));
  const bufs = Array.from({ length: slots }, () => new Int32Array(words));
  const reqs: Request[] = [];
  let posted = 0;
  for (; posted < slots && posted < want; posted++) reqs.push(w.irecv(bufs[posted]!, ANY_SOURCE, ANY_TAG));
  const nextSeq = new Int32Array(p);
  let head = 0;
  let received = 0;
  const drain = (): void => {
    while (received < want && reqs[head]!.done) {
      const r = reqs[head]!;
      if (r.error) throw r.error;
      const src = r.status.source;
      const seq = nextSeq[src]!;
      if (r.status.tag !== (seq & 0x7fff)) throw new Error(`flood: message ${seq} from ${src} came with tag ${r.status.tag}: overtaken`);
      verify(bufs[head]!, src, seq, 'flood');
      nextSeq[src] = seq + 1;
      received++;
      if (posted < want) {
        reqs[head] = w.irecv(bufs[head]!, ANY_SOURCE, ANY_TAG);
        posted++;
      }
      head = (head + 1) % slots;
    }
  };
  const out = Array.from({ length: a.window }, () => new Int32Array(words));
  for (let base = 0; base < a.count; base += a.window) {
    const n = Math.min(a.window, a.count - base);
    for (let d = 1; d < p; d++) {
      const dst = (w.rank + d) % p;
      const sends: Request[] = [];
      for (let j = 0; j < n; j++) {
        stamp(out[j]!, w.rank, base + j);
        sends.push(w.isend(out[j]!, dst, (base + j) & 0x7fff));
      }
      while (!testAll(sends)) drain();
      drain();
    }
  }
  while (received < want) {
    reqs[head]!.wait();
    drain();
  }
  for (let s = 0; s < p; s++) {
    if (s !== w.rank && nextSeq[s] !== a.count) throw new Error(`flood: ${nextSeq[s]} messages from ${s}, expected ${a.count}`);
  }
  return { sent: a.count * (p - 1), received, ms: performance.now() - t0 };
}

export default function main(w: Communicator, args: string[]): unknown {
  const params = JSON.parse(args[1] ?? '{}') as unknown;
  switch (args[0]) {
    case 'outstanding': return outstanding(w, params as OutstandingArgs);
    case 'slow': return slow(w, params as SlowArgs);
    case 'flood': return flood(w, params as FloodArgs);
    default: throw new Error(`unknown load mode '${args[0]}'; expected outstanding, slow or flood`);
  }
}
