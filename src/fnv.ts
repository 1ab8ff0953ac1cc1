/**
 * FNV-1a, 32-bit: the hash that the wire-up derives its port from (runtime/env.ts) and that
 * ranks compare their Cartesian grids by (comm/comm.ts). Core code: no node:* imports.
 */

/** 32-bit FNV-1a over the UTF-8 bytes of `text`, as an unsigned integer. */
export function fnv1a32(text: string): number {
  const bytes = new TextEncoder().encode(text);
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i] as number;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
