/**
 * The optional native addon (native/nbc_native.c, built by scripts/build-native.mjs): loaded
 * once per thread when it was built, else null with the reason, which `nbc info` prints.
 * Everything works without it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface NativeAddon {
  /** sched_yield(2): this thread's core to another runnable thread, now. */
  schedYield(): void;
}

const ADDON = fileURLToPath(new URL('../../native/build/Release/nbc_native.node', import.meta.url));

let loaded: { addon: NativeAddon | null; why: string } | undefined;

/** The addon, or null; `why` says what was loaded or why not. */
export function nativeAddon(): { addon: NativeAddon | null; why: string } {
  if (loaded !== undefined) return loaded;
  if (process.env.NBC_NO_NATIVE === '1') return (loaded = { addon: null, why: 'disabled by NBC_NO_NATIVE=1' });
  if (!existsSync(ADDON)) return (loaded = { addon: null, why: `not built (${ADDON} is missing; npm run build builds it where a C compiler and the Node headers are present)` });
  try {
    const addon = createRequire(import.meta.url)(ADDON) as NativeAddon;
    return (loaded = { addon, why: ADDON });
  } catch (err) {
    return (loaded = { addon: null, why: `could not be loaded: ${(err as Error).message}` });
  }
}
