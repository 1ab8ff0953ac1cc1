/** The exact sum of doubles as a BigInt count of 2^-1074, independent of the library: the oracle of the reproducible-sum tests. */
export function exactUnits(xs: readonly number[]): bigint {
  const view = new DataView(new ArrayBuffer(8));
  let s = 0n;
  for (const x of xs) {
    if (x === 0) continue;
    view.setFloat64(0, x);
    const hi = view.getUint32(0);
    const e = (hi >>> 20) & 0x7ff;
    let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4));
    if (e !== 0) m |= 1n << 52n;
    const v = m << BigInt(e === 0 ? 0 : e - 1);
    s += hi >>> 31 ? -v : v;
  }
  return s;
}
