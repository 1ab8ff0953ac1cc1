/**
 * The part of the WebAssembly JavaScript API the project uses (its lib has no DOM types), and
 * the one way it loads a module: from the base64 text that scripts/build-wasm.mjs generates,
 * synchronously, in any runtime. Core code: no node:* imports, no process.*; whether to use
 * WebAssembly at all (`NBC_WASM`) is the runtime's and the apps' decision.
 */

export interface WasmMemory {
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
}

export interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
}

/** WebAssembly, where the runtime has it. */
export const WA: WasmApi | undefined = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

/** Compiles a module from its base64 bytes; null where the runtime has no WebAssembly. */
export function compileBase64(base64: string): object | null {
  if (WA === undefined) return null;
  const bin = atob(base64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new WA!.Module(bytes);
}
