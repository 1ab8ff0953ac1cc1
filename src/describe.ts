/**
 * How error messages name a value they refuse: `null`, `undefined`, `the string 'x'`,
 * `an Int32Array`, `a DataView`, `number 3`. One place, so every message reads alike.
 */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `the string '${v}'`;
  if (typeof v === 'object' || typeof v === 'function') {
    const name = (v as { constructor?: { name?: string } }).constructor?.name || (typeof v === 'function' ? 'function' : 'object');
    return withArticle(name);
  }
  return `${typeof v} ${String(v)}`;
}

/** `an Int32Array`, `a Float64Array`: a type's name after its indefinite article. */
export function withArticle(name: string): string {
  return `${/^[AEIOU]/i.test(name) ? 'an' : 'a'} ${name}`;
}
