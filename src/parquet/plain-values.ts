/**
 * PLAIN encoding of a page's values into the page buffer, and the page's bounds taken in
 * the same pass (the statistics of the footer, the page index and the catalog all come
 * from here). Its own module because it is the hot loop of encoding: one loop per
 * physical type and per way the values are held, kept apart so each stays monomorphic.
 */
import type { LeafPlan } from './leaf-plan.js';
import type { LeafChunk } from './shred.js';
import { compareBytes, compareFloats } from './stat-text.js';
import { ByteSpans, SafeInt64s } from './values.js';

/** A page's bounds, as values (cut and written as bytes only by the page index and the footer). */
export interface PageBounds {
  min: unknown;
  max: unknown;
  nulls: number;
  nans: number;
  /** Whether the page holds any value that is a bound (not null, not NaN). */
  bounded: boolean;
}

export function writeValues(into: Uint8Array, view: DataView, leaf: LeafPlan, vector: LeafChunk['values'], offset: number, def: Uint8Array | null, from: number, to: number, at: number): PageBounds {
  const { maxDef, physical } = leaf;
  if (leaf.scale !== 1) return writeScaledInt64s(view, leaf, vector, offset, def, from, to, at);
  if (vector instanceof ByteSpans) return writeSpans(into, view, vector, offset, def, maxDef, from, to, at);
  if (vector instanceof SafeInt64s) return writeSafeInt64s(view, vector, offset, def, maxDef, from, to, at);
  const values = vector;
  let nulls = 0;
  let nans = 0;
  let min: unknown;
  let max: unknown;
  switch (physical) {
    case 'BYTE_ARRAY': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as Uint8Array;
        view.setUint32(at, v.length, true);
        into.set(v, at + 4);
        at += 4 + v.length;
        if (min === undefined) min = max = v;
        else if (compareBytes(v, min as Uint8Array) < 0) min = v;
        else if (compareBytes(v, max as Uint8Array) > 0) max = v;
      }
      break;
    }
    case 'INT32': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const raw = values[offset + i];
        const v = typeof raw === 'bigint' ? Number(raw) : (raw as number);
        view.setInt32(at, v, true);
        at += 4;
        if (min === undefined || v < (min as number)) min = v;
        if (max === undefined || v > (max as number)) max = v;
      }
      break;
    }
    case 'INT64': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as bigint;
        view.setBigInt64(at, v, true);
        at += 8;
        if (min === undefined || v < (min as bigint)) min = v;
        if (max === undefined || v > (max as bigint)) max = v;
      }
      break;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      const double = physical === 'DOUBLE';
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as number;
        if (double) view.setFloat64(at, v, true);
        else view.setFloat32(at, v, true);
        at += double ? 8 : 4;
        if (Number.isNaN(v)) nans++;
        else {
          if (min === undefined || compareFloats(v, min as number) < 0) min = v;
          if (max === undefined || compareFloats(v, max as number) > 0) max = v;
        }
      }
      break;
    }
    case 'BOOLEAN': {
      let bit = 0;
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as boolean;
        if (bit === 0) into[at] = 0;
        if (v) into[at]! |= 1 << bit;
        if (++bit === 8) {
          bit = 0;
          at++;
        }
        if (min === undefined || (!v && min)) min = v;
        if (max === undefined || (v && !max)) max = v;
      }
      break;
    }
    case 'FIXED_LEN_BYTE_ARRAY': {
      const length = leaf.typeLength;
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as bigint;
        writeBigEndian(into, at, v, length);
        at += length;
        if (min === undefined || v < (min as bigint)) min = v;
        if (max === undefined || v > (max as bigint)) max = v;
      }
      break;
    }
  }
  return { min, max, nulls, nans, bounded: min !== undefined };
}

/** writeValues of BYTE_ARRAY spans: each copied from where it lies, the bounds compared there too; only the bounds become arrays. */
function writeSpans(into: Uint8Array, view: DataView, spans: ByteSpans, offset: number, def: Uint8Array | null, maxDef: number, from: number, to: number, at: number): PageBounds {
  const { sources, source, starts, lengths } = spans;
  let nulls = 0;
  let min = -1;
  let max = -1;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const k = offset + i;
    const length = lengths[k]!;
    const bytes = sources[source[k]!]!;
    const start = starts[k]!;
    view.setUint32(at, length, true);
    at += 4;
    if (length <= 16) for (let b = 0; b < length; b++) into[at + b] = bytes[start + b]!;
    else into.set(bytes.subarray(start, start + length), at);
    at += length;
    if (min < 0) min = max = k;
    else if (compareSpans(spans, k, min) < 0) min = k;
    else if (compareSpans(spans, k, max) > 0) max = k;
  }
  if (min < 0) return { min: undefined, max: undefined, nulls, nans: 0, bounded: false };
  return { min: spans.at(min), max: spans.at(max), nulls, nans: 0, bounded: true };
}

/** compareBytes of spans a and b, where they lie. */
function compareSpans(spans: ByteSpans, a: number, b: number): number {
  const x = spans.sources[spans.source[a]!]!;
  const y = spans.sources[spans.source[b]!]!;
  const xAt = spans.starts[a]!;
  const yAt = spans.starts[b]!;
  const xLength = spans.lengths[a]!;
  const yLength = spans.lengths[b]!;
  const n = xLength < yLength ? xLength : yLength;
  for (let i = 0; i < n; i++) {
    const p = x[xAt + i]!;
    const q = y[yAt + i]!;
    if (p !== q) return p < q ? -1 : 1;
  }
  return xLength < yLength ? -1 : xLength > yLength ? 1 : 0;
}

const TWO_TO_32 = 2 ** 32;

/** writeValues of int64s held as safe-integer numbers: two's complement in two words, no bigint but the bounds. */
function writeSafeInt64s(view: DataView, vector: SafeInt64s, offset: number, def: Uint8Array | null, maxDef: number, from: number, to: number, at: number): PageBounds {
  const { numbers } = vector;
  let nulls = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const v = numbers[offset + i]!;
    view.setUint32(at, v >>> 0, true); // ToUint32 is v modulo 2^32: the low word of any safe integer
    view.setInt32(at + 4, Math.floor(v / TWO_TO_32), true);
    at += 8;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) return { min: undefined, max: undefined, nulls, nans: 0, bounded: false };
  return { min: BigInt(min), max: BigInt(max), nulls, nans: 0, bounded: true };
}

/** A value that the file's stored unit cannot hold (a UTC millisecond timestamp beyond ±292,277 years in micros). */
export class OutOfStoredRangeError extends Error {}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** The largest magnitude whose product with 1000 is still a safe integer. */
const SAFE_TIMES_1000 = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

/**
 * writeValues of an int64 leaf stored times `leaf.scale` (a millisecond timestamp in
 * micros): the bounds are of the values as given, in the column's own unit.
 */
function writeScaledInt64s(view: DataView, leaf: LeafPlan, vector: LeafChunk['values'], offset: number, def: Uint8Array | null, from: number, to: number, at: number): PageBounds {
  const { maxDef, scale } = leaf;
  const numbers = vector instanceof SafeInt64s ? vector.numbers : undefined;
  const values = vector as ArrayLike<unknown>;
  let nulls = 0;
  // bounds of safe-integer numbers as numbers (no bigint per value), of bigints as bigints
  let minNumber = Infinity;
  let maxNumber = -Infinity;
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const raw = numbers ? numbers[offset + i]! : (values[offset + i] as bigint | number);
    if (typeof raw === 'number' && raw <= SAFE_TIMES_1000 && raw >= -SAFE_TIMES_1000) {
      const v = raw * scale;
      view.setUint32(at, v >>> 0, true);
      view.setInt32(at + 4, Math.floor(v / TWO_TO_32), true);
    } else {
      const v = BigInt(raw) * BigInt(scale);
      if (v < INT64_MIN || v > INT64_MAX) throw new OutOfStoredRangeError(`${leaf.path.join('.')}: ${raw} times ${scale} leaves int64: the value has no form in the unit the file stores`);
      view.setBigInt64(at, v, true);
    }
    at += 8;
    if (typeof raw === 'number') {
      if (raw < minNumber) minNumber = raw;
      if (raw > maxNumber) maxNumber = raw;
    } else {
      if (min === undefined || raw < min) min = raw;
      if (max === undefined || raw > max) max = raw;
    }
  }
  if (minNumber !== Infinity) {
    if (min === undefined || BigInt(minNumber) < min) min = BigInt(minNumber);
    if (max === undefined || BigInt(maxNumber) > max) max = BigInt(maxNumber);
  }
  return { min, max, nulls, nans: 0, bounded: min !== undefined };
}

/** Two's complement, big-endian, `length` bytes: the FIXED_LEN_BYTE_ARRAY form of a decimal. */
export function writeBigEndian(into: Uint8Array, at: number, value: bigint, length: number): void {
  let v = BigInt.asUintN(length * 8, value);
  for (let k = length - 1; k >= 0; k--) {
    into[at + k] = Number(v & 0xffn);
    v >>= 8n;
  }
}
