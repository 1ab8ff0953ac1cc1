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
   * UCX primitives (native/nbc_ucx.c), present where libucx-dev was installed at build time:
   * a context, a worker per thread, endpoints from worker addresses, tagged sends and receives
   * as operation ids, explicit progress. `ucxTest` returns 1 pending, 2 done, 3 failed, and
   * fills `out` with [bytes received, sender tag] once finished (which frees the id).
   */
  ucxInit?(): UcxHandle;
  ucxWorker?(context: UcxHandle): UcxHandle;
  ucxAddress?(worker: UcxHandle): ArrayBuffer;
  ucxConnect?(worker: UcxHandle, address: Uint8Array): UcxHandle;
  ucxSend?(endpoint: UcxHandle, tag: bigint, data: Uint8Array): number;
  ucxRecv?(worker: UcxHandle, tag: bigint, mask: bigint, buffer: Uint8Array): number;
  ucxProgress?(worker: UcxHandle): number;
  ucxTest?(op: number, out: BigUint64Array): number;
}

/**
 * UCX settings that must be in the environment before the library loads, unless the user set
 * them: no UCX signal handlers (Node owns SIGSEGV and friends) and no malloc/mmap hooks (UCX's
 * memory events are for its registration cache, and Node's allocator must not be patched
 * under it); and emulated nodes on one host reach each other over UCX's network transport
 * (tcp on loopback), never its shared-memory ones, so "between nodes" stays a network path.
 */
const UCX_DEFAULTS: Record<string, string> = {
  UCX_ERROR_SIGNALS: '',
  UCX_MEM_MALLOC_HOOKS: 'no',
  UCX_MEM_MMAP_HOOK_MODE: 'none',
  UCX_TLS: 'tcp,self',
};

const ADDON = fileURLToPath(new URL('../../native/build/Release/nbc_native.node', import.meta.url));

let loaded: { addon: NativeAddon | null; why: string } | undefined;

/** The addon, or null; `why` says what was loaded or why not. */
export function nativeAddon(): { addon: NativeAddon | null; why: string } {
  if (loaded !== undefined) return loaded;
  if (process.env.NBC_NO_NATIVE === '1') return (loaded = { addon: null, why: 'disabled by NBC_NO_NATIVE=1' });
  if (!existsSync(ADDON)) return (loaded = { addon: null, why: `not built (${ADDON} is missing; npm run build builds it where a C compiler and the Node headers are present)` });
  for (const [k, v] of Object.entries(UCX_DEFAULTS)) if (process.env[k] === undefined) process.env[k] = v;
  try {
    const addon = createRequire(import.meta.url)(ADDON) as NativeAddon;
    return (loaded = { addon, why: ADDON });
  } catch (err) {
    return (loaded = { addon: null, why: `could not be loaded: ${(err as Error).message}` });
  }
}
