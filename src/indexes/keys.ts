/**
 * The key of a row for BLOOM and POSTINGS: the row's values of the index's columns, each
 * tagged with its type and length-prefixed, so a composite key is one byte string; the
 * POSTINGS bucket of a key; and the order of key values (MINMAX). Pure.
 */
import { xxhash64 } from './bloom.js';
import type { KeyType, KeyValue } from './columns.js';

const TAG: Record<KeyType, number> = { integer: 1, string: 2, binary: 3, boolean: 4, float: 5 };
const ascii = new TextEncoder();

/** A value's bytes in a key: integers and floats as their decimal text, text and blobs as they are. */
function valueBytes(keyType: KeyType, value: KeyValue): Uint8Array | null {
  if (keyType === 'boolean') return null;
  if (keyType === 'integer') return ascii.encode((value as bigint).toString());
  if (keyType === 'float') return ascii.encode(String(value));
  return value as Uint8Array;
}

function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    length++;
  }
  return length;
}

/**
 * The key of one combination of column values (in the index's column order): per value
 * its type tag, then a boolean's one byte or the length (varint) and bytes of the rest.
 * Built in a Buffer of exactly its size (hot: once per row and index).
 */
export function encodeKey(keyTypes: readonly KeyType[], values: readonly KeyValue[]): Buffer {
  if (keyTypes.length === 1) return encodeOne(keyTypes[0]!, values[0]!);
  const parts: (Uint8Array | null)[] = new Array(keyTypes.length);
  let size = 0;
  for (let c = 0; c < keyTypes.length; c++) {
    const bytes = valueBytes(keyTypes[c]!, values[c]!);
    parts[c] = bytes;
    size += bytes === null ? 2 : 1 + varintLength(bytes.length) + bytes.length;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let c = 0; c < keyTypes.length; c++) at = writeValue(out, at, keyTypes[c]!, values[c]!, parts[c]!);
  return out;
}

/** The key of one value: the common case, without the list of parts. */
function encodeOne(keyType: KeyType, value: KeyValue): Buffer {
  const bytes = valueBytes(keyType, value);
  const out = Buffer.allocUnsafe(bytes === null ? 2 : 1 + varintLength(bytes.length) + bytes.length);
  writeValue(out, 0, keyType, value, bytes);
  return out;
}

/** Writes one value's tag and bytes at `at`; returns where the next one goes. */
function writeValue(out: Buffer, at: number, keyType: KeyType, value: KeyValue, bytes: Uint8Array | null): number {
  out[at++] = TAG[keyType];
  if (bytes === null) {
    out[at++] = value ? 1 : 0;
    return at;
  }
  let n = bytes.length;
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  out.set(bytes, at);
  return at + bytes.length;
}

/** The POSTINGS bucket of a key. */
export function postingBucket(key: Uint8Array, buckets: number): number {
  return Number(xxhash64(key) % BigInt(buckets));
}

/** Compares two values of one key type as DuckDB orders them (bytes for text and blobs; NaN is not passed here). */
export function compareValues(keyType: KeyType, a: KeyValue, b: KeyValue): number {
  if (keyType === 'string' || keyType === 'binary') return Buffer.compare(a as Uint8Array, b as Uint8Array);
  if (keyType === 'boolean') return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

