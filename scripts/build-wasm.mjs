#!/usr/bin/env node
// Assembles src/apps/kernels.wat (the apps' kernels in WebAssembly) into src/apps/kernels-wasm.ts,
// the module's bytes as base64, so that every runtime (Node, Bun, Deno, a bundle) loads them
// synchronously with the code. Run after editing the .wat: `node scripts/build-wasm.mjs`;
// `--check` exits 1 where the committed file is not the .wat's (test/kernels.test.ts runs it).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabtInit from 'wabt';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WAT = `${ROOT}src/apps/kernels.wat`;
const TS = `${ROOT}src/apps/kernels-wasm.ts`;

export async function assemble() {
  const wabt = await wabtInit();
  const mod = wabt.parseWat('kernels.wat', readFileSync(WAT, 'utf8'), { simd: true });
  try {
    mod.validate();
    const { buffer } = mod.toBinary({ write_debug_names: false });
    const b64 = Buffer.from(buffer).toString('base64');
    const lines = b64.match(/.{1,96}/g) ?? [];
    return [
      '// Generated from kernels.wat by scripts/build-wasm.mjs: do not edit.',
      `/** The assembled kernels.wat (${buffer.length} bytes), base64. */`,
      'export const KERNELS_WASM_BASE64 =',
      lines.map((l) => `  '${l}'`).join(' +\n') + ';',
      '',
    ].join('\n');
  } finally {
    mod.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await assemble();
  if (process.argv.includes('--check')) {
    if (readFileSync(TS, 'utf8') !== text) {
      process.stderr.write('src/apps/kernels-wasm.ts is not kernels.wat assembled: run node scripts/build-wasm.mjs\n');
      process.exit(1);
    }
  } else {
    writeFileSync(TS, text);
  }
}
