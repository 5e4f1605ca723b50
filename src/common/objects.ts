/**
 * Names that come from data (record fields, JSON keys, map keys, header keys, leaf paths)
 * are keys like any other: `constructor`, `toString` or `__proto__` must never reach
 * Object.prototype. Objects keyed by such names are made without a prototype, and read
 * only through their own properties.
 */

/** An empty object without a prototype: assigning `__proto__` makes an ordinary key. For maps built once (ids by name). */
export function dataRecord<T = unknown>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/**
 * `record[key] = value` that makes `__proto__` an own key too. For the objects made per
 * value on the hot path: an object without a prototype is a slow dictionary in V8 (a
 * tenth of decoding time), an ordinary one with an own `__proto__` is not.
 */
export function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/** `record[key]` if the record itself holds the key; never a name inherited from Object.prototype. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
