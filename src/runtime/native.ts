/**
 * The optional native addon (native/nbc_native.c, built by scripts/build-native.mjs): loaded
 * once per thread when it was built, else null with the reason, which `nbc info` prints.
 * Everything works without it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** An opaque UCX handle (context, worker or endpoint). */
export type UcxHandle = { readonly __ucx: unique symbol };

export interface NativeAddon {
  /** sched_yield(2): this thread's core to another runnable thread, now. */
  schedYield(): void;
  /**
   * prctl(PR_SET_TIMERSLACK) for this thread: how many nanoseconds the kernel may defer its
   * timed sleeps (absent in an addon built before it). True when it took.
   */
  timerSlack?(ns: number): boolean;
  /**
   * memmove(3) of `bytes` bytes from `src` at `srcAt` to `dst` at `dstAt` (absent in an addon
   * built before it). V8 copies shared memory word by word; this is the C library's copy.
   */
  copy?(dst: Uint8Array, dstAt: number, src: Uint8Array, srcAt: number, bytes: number): void;
  /**
   * `bytes` bytes of the existing file at `path` (extended with zeros where shorter), mapped
   * shared: memory the processes of one host see together (absent in an addon built before it).
   */
  mapShared?(path: string, bytes: number): ArrayBuffer;
  /**
   * UCX primitives (native/nbc_ucx.c), present where libucx-dev was installed at build time;
   * the UCX transport (p2p/ucx.ts) is built on them. State is per thread.
   */
  /** A context with tag matching and wake-up events. */
  ucxInit?(): UcxHandle;
  /** A worker for this thread (UCS_THREAD_MODE_SINGLE). */
  ucxWorker?(context: UcxHandle): UcxHandle;
  ucxAddress?(worker: UcxHandle): ArrayBuffer;
  /** An endpoint to the worker at `address`, with peer error handling unless `handleErrors` is false. */
  ucxConnect?(worker: UcxHandle, address: Uint8Array, handleErrors?: boolean): UcxHandle;
  /** Null while the endpoint is healthy, else the UCX error that broke it. */
  ucxFailed?(endpoint: UcxHandle): string | null;
  /** A tagged send of `data` (its first `length` bytes): an operation id, or -1 when it completed in the call. */
  ucxSend?(endpoint: UcxHandle, tag: bigint, data: Uint8Array, length?: number): number;
  /** A tagged receive into `buffer`: an operation id. */
  ucxRecv?(worker: UcxHandle, tag: bigint, mask: bigint, buffer: Uint8Array): number;
  /**
   * The next header message (tag bit 63 clear), received into `stage` by a receive that stays
   * posted between calls: its length, with `out` = [length, sender tag, operations UCX
   * completed so far]; -1 when none has arrived (the worker is progressed once), -2 when one
   * was longer than `stage`. One `stage` per worker; it holds the header until the next call.
   */
  ucxPoll?: {
    (worker: UcxHandle, stage: Uint8Array, out: BigUint64Array, progress?: boolean): number;
    /** With the stage and out of the worker's last long call (kept by the addon). */
    (worker: UcxHandle, progress?: boolean): number;
  };
  /** An operation id completing when every send of the worker has left it, or -1. */
  ucxFlush?(worker: UcxHandle): number;
  ucxProgress?(worker: UcxHandle): number;
  /** 1 pending, 2 done, 3 failed; once finished, `out` = [bytes received, sender tag] and the id is freed. */
  ucxTest?(op: number, out: BigUint64Array): number;
  /** The worker's event fd (readable on events once armed). */
  ucxEventFd?(worker: UcxHandle): number;
  /** Arms the event fd: true, or false when events are pending (progress instead of sleeping). */
  ucxArm?(worker: UcxHandle): boolean;
  /** A new non-blocking eventfd: the doorbell of a rank that sleeps in pollFds. */
  wakeFd?(): number;
  /** Rings an eventfd; any thread may. */
  signalFd?(fd: number): void;
  /** Sleeps until either fd is readable or `timeoutMs` passes (fractions of a ms too: ppoll); empties `wakeFd`. */
  pollFds?(eventFd: number, wakeFd: number, timeoutMs: number): boolean;
  /** Calls `callback` once from this thread's event loop when `fd` is readable; does not keep the loop alive. */
  watchFd?(fd: number, callback: () => void): void;
}

/**
 * UCX's tcp transport as nbcoll tunes it, unless the user set it: send segments of 64 KiB
 * instead of 8 KiB. Measured on loopback, 2 ranks on 2 nodes, allreduce, 7 interleaved rounds
 * (BENCHMARKS.md, "Across nodes: UCX and the TCP path"; `bench/results/ucx-segments-rx/`): with
 * the receive segments at UCX's 64 KiB as well, 64 KiB 37.8 us and 512 KiB 257 us (medians);
 * with 512 KiB receive segments, nbcoll's setting before, 35.2 and 312 us; with UCX's 8 KiB send
 * segments 47-54 and 244-257 us (bench/HISTORY.md, "Segment sizes", has the run that chose 512
 * KiB receive segments). 8 B and the 1 MiB stream did not move. (`ucx_perftest`'s tag_bw, whose
 * receives are posted before the data comes and which puts with UCX_ERR_HANDLING_MODE_NONE, is
 * faster with UCX's own sizes, so `nbc bench` measures the limit with those: withoutUcxTuning.)
 */
const UCX_TCP_TUNING: Readonly<Record<string, string>> = {
  UCX_TCP_TX_SEG_SIZE: '64k',
};

/**
 * UCX settings that must be in the environment before the library loads, unless the user set
 * them: no UCX signal handlers (Node owns SIGSEGV and friends) and no malloc/mmap hooks (UCX's
 * memory events are for its registration cache, and Node's allocator must not be patched
 * under it); emulated nodes on one host reach each other over UCX's network transport
 * (tcp on loopback), never its shared-memory ones, so "between nodes" stays a network path;
 * and the tcp transport's segment sizes (UCX_TCP_TUNING).
 */
const UCX_DEFAULTS: Record<string, string> = {
  UCX_ERROR_SIGNALS: '',
  UCX_MEM_MALLOC_HOOKS: 'no',
  UCX_MEM_MMAP_HOOK_MODE: 'none',
  UCX_TLS: 'tcp,self',
  ...UCX_TCP_TUNING,
};

/** The UCX_TCP_TUNING keys nativeAddon() put in process.env because the user had not set them. */
const tuningApplied = new Set<string>();

/** `env` without the tuning nbcoll applied itself: for UCX's own tools, run at UCX's defaults. */
export function withoutUcxTuning(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of tuningApplied) delete out[k];
  return out;
}

const ADDON = fileURLToPath(new URL('../../native/build/Release/nbc_native.node', import.meta.url));

let loaded: { addon: NativeAddon | null; why: string } | undefined;

/** The addon, or null; `why` says what was loaded or why not. */
export function nativeAddon(): { addon: NativeAddon | null; why: string } {
  if (loaded !== undefined) return loaded;
  if (process.env.NBC_NO_NATIVE === '1') return (loaded = { addon: null, why: 'disabled by NBC_NO_NATIVE=1' });
  if (!existsSync(ADDON)) return (loaded = { addon: null, why: `not built (${ADDON} is missing; npx nbc build-native builds it where a C compiler and the Node headers are present)` });
  for (const [k, v] of Object.entries(UCX_DEFAULTS)) {
    if (process.env[k] !== undefined) continue;
    process.env[k] = v;
    if (k in UCX_TCP_TUNING) tuningApplied.add(k);
  }
  try {
    const addon = createRequire(import.meta.url)(ADDON) as NativeAddon;
    return (loaded = { addon, why: ADDON });
  } catch (err) {
    return (loaded = { addon: null, why: `could not be loaded: ${(err as Error).message}` });
  }
}
