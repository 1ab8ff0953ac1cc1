#!/usr/bin/env node
// Prints the files under src/ longer than a line limit and the functions (declarations,
// methods, arrows, constructors, accessors) longer than a function limit, longest first, so
// that "no file over ~700 lines, no function over ~100" is checked by a command, not by eye.
// Usage: node scripts/sizes.mjs [--file-lines 700] [--function-lines 100] [--strict]
// With --strict it exits 1 when anything is over; without, it only reports.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import ts from 'typescript';

const { values } = parseArgs({
  options: {
    'file-lines': { type: 'string', default: '700' },
    'function-lines': { type: 'string', default: '100' },
    strict: { type: 'boolean', default: false },
  },
});
const fileLimit = Number(values['file-lines']);
const functionLimit = Number(values['function-lines']);
const root = new URL('..', import.meta.url).pathname;

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) yield path;
  }
}

function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  return '(anonymous)';
}

const longFiles = [];
const longFunctions = [];
let files = 0;
let functions = 0;
for (const path of sources(join(root, 'src'))) {
  const text = readFileSync(path, 'utf8');
  const rel = relative(root, path);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  files++;
  if (lines > fileLimit) longFiles.push({ rel, lines });
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      functions++;
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const n = end - start + 1;
      if (n > functionLimit) longFunctions.push({ rel, line: start + 1, name: nameOf(node, sf), lines: n });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

longFiles.sort((a, b) => b.lines - a.lines);
longFunctions.sort((a, b) => b.lines - a.lines);
console.log(`${files} files, ${functions} functions under src/`);
console.log(`files over ${fileLimit} lines: ${longFiles.length}`);
for (const f of longFiles) console.log(`  ${String(f.lines).padStart(5)}  ${f.rel}`);
console.log(`functions over ${functionLimit} lines: ${longFunctions.length}`);
for (const f of longFunctions) console.log(`  ${String(f.lines).padStart(5)}  ${f.rel}:${f.line}  ${f.name}`);
if (values.strict && (longFiles.length > 0 || longFunctions.length > 0)) process.exit(1);
