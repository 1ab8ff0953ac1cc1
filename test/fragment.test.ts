import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FRAGMENT_BYTES, forEachFragment, fragmentCount } from '../src/net/fragment.ts';

/** The fragments of a `total`-byte message, as [offset, bytes, last]. */
function fragments(total: number, size?: number): Array<[number, number, boolean]> {
  const out: Array<[number, number, boolean]> = [];
  forEachFragment(total, (offset, bytes, last) => out.push([offset, bytes, last]), size);
  return out;
}

/** The fragments cover [0, total) back to back, each at most `size`, only the last marked last. */
function assertCovers(total: number, size = FRAGMENT_BYTES): void {
  const f = fragments(total, size);
  assert.equal(f.length, fragmentCount(total, size), `${total} bytes: fragmentCount agrees`);
  let next = 0;
  f.forEach(([offset, bytes, last], i) => {
    assert.equal(offset, next, `${total} bytes: fragment ${i} starts where the previous one ended`);
    assert.ok(bytes >= 0 && bytes <= size, `${total} bytes: fragment ${i} holds ${bytes} bytes`);
    assert.ok(bytes > 0 || total === 0, `${total} bytes: only an empty message has an empty fragment`);
    assert.ok(i === f.length - 1 || bytes === size, `${total} bytes: every fragment but the last is full`);
    assert.equal(last, i === f.length - 1, `${total} bytes: only the last fragment is marked last`);
    next += bytes;
  });
  assert.equal(next, total, `${total} bytes: the fragments cover the message exactly`);
}

test('an empty message crosses as one empty fragment', () => {
  assert.deepEqual(fragments(0), [[0, 0, true]]);
  assert.equal(fragmentCount(0), 1);
});

test('fragments of 1 MiB cover a message exactly at the 1 MiB boundary', () => {
  assert.equal(FRAGMENT_BYTES, 1 << 20);
  assert.deepEqual(fragments(FRAGMENT_BYTES - 1), [[0, FRAGMENT_BYTES - 1, true]]);
  assert.deepEqual(fragments(FRAGMENT_BYTES), [[0, FRAGMENT_BYTES, true]]);
  assert.deepEqual(fragments(FRAGMENT_BYTES + 1), [[0, FRAGMENT_BYTES, false], [FRAGMENT_BYTES, 1, true]]);
  assert.deepEqual(fragments(2 * FRAGMENT_BYTES), [[0, FRAGMENT_BYTES, false], [FRAGMENT_BYTES, FRAGMENT_BYTES, true]]);
  for (const total of [1, 8, FRAGMENT_BYTES - 1, FRAGMENT_BYTES, FRAGMENT_BYTES + 1, 3 * FRAGMENT_BYTES, 3 * FRAGMENT_BYTES + 4095]) {
    assertCovers(total);
  }
});

test('fragments cover messages of odd sizes exactly, for any fragment size', () => {
  for (const size of [1, 2, 3, 7, 64, 1000]) {
    for (let total = 0; total <= 3 * size + 5; total++) assertCovers(total, size);
  }
  assertCovers(12_345_679);
});
