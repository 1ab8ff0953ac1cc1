#!/usr/bin/env node
// Assembles the project's WebAssembly: src/apps/kernels.wat (the apps' kernels) into
// src/apps/kernels-wasm.ts and src/ops/folds.wat (the reductions) into src/ops/folds-wasm.ts,
// each module's bytes as base64, so that every runtime (Node, Bun, Deno, a bundle) loads them
// synchronously with the code. Run after editing a .wat: `node scripts/build-wasm.mjs`;
// `--check` exits 1 where a committed file is not its .wat's (test/kernels.test.ts runs it).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabtInit from 'wabt';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Each module: its source, the generated file, and the name of the constant it exports. */
export const MODULES = [
  { wat: 'src/apps/kernels.wat', ts: 'src/apps/kernels-wasm.ts', name: 'KERNELS_WASM_BASE64' },
  { wat: 'src/ops/folds.wat', ts: 'src/ops/folds-wasm.ts', name: 'FOLDS_WASM_BASE64' },
];

export async function assemble(m) {
  const wabt = await wabtInit();
  const file = m.wat.slice(m.wat.lastIndexOf('/') + 1);
  const features = { simd: true, threads: true };
  const mod = wabt.parseWat(file, readFileSync(`${ROOT}${m.wat}`, 'utf8'), features);
  try {
    mod.validate(features);
    const { buffer } = mod.toBinary({ write_debug_names: false });
    const b64 = Buffer.from(buffer).toString('base64');
    const lines = b64.match(/.{1,96}/g) ?? [];
    return [
      `// Generated from ${file} by scripts/build-wasm.mjs: do not edit.`,
      `/** The assembled ${file} (${buffer.length} bytes), base64. */`,
      `export const ${m.name} =`,
      lines.map((l) => `  '${l}'`).join(' +\n') + ';',
      '',
    ].join('\n');
  } finally {
    mod.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let stale = 0;
  for (const m of MODULES) {
    const text = await assemble(m);
    if (!process.argv.includes('--check')) writeFileSync(`${ROOT}${m.ts}`, text);
    else if (readFileSync(`${ROOT}${m.ts}`, 'utf8') !== text) {
      process.stderr.write(`${m.ts} is not ${m.wat} assembled: run node scripts/build-wasm.mjs\n`);
      stale++;
    }
  }
  if (stale > 0) process.exit(1);
}
