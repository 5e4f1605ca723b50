/**
 * Order and text form of statistics values. The catalog stores min/max as text, so the
 * text must be exact (no rounding, no truncation) and parse back to the value:
 *
 *   int32, int64      decimal integer ("-12", "9223372036854775807"), never rounded
 *   timestamp         decimal integer epoch in the column's unit ("1700000000123" for
 *                     millis): exact for micros and nanos too, and for any year
 *   date              decimal integer, days since 1970-01-01
 *   decimal           the exact decimal value with `scale` fraction digits ("-1.50")
 *   float, double     shortest text that reads back as the same double (float values
 *                     are float32 widened exactly); "-0" for negative zero, which sorts
 *                     before "0"; "Infinity", "-Infinity"; NaN is never a bound
 *   boolean           "false" < "true"
 *   string, json      the text itself, whole, ordered by UTF-8 bytes (code points)
 *   binary            lowercase hex, ordered by unsigned bytes — hex text sorts in the
 *                     same order as the bytes, which base64 does not
 */
import type { ScalarType } from './schema.js';

// ignoreBOM: a leading U+FEFF is part of the value (by default TextDecoder drops it)
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * -1, 0 or 1 as `a` sorts before, with or after `b` by unsigned bytes (a prefix first):
 * Buffer.compare's answer. Bounds usually differ within a few bytes, which JavaScript
 * finds without the ~100 ns of a call into Node; past 32 equal bytes Buffer.compare does the rest.
 */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  const head = n < 32 ? n : 32;
  for (let i = 0; i < head; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  if (head < n) return Buffer.compare(a, b);
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** Numeric order, with -0 before +0 (so a zero bound tells which zero the column holds); NaN is never compared. */
export function compareFloats(a: number, b: number): number {
  return a !== b ? a - b : Object.is(a, b) ? 0 : Object.is(a, -0) ? -1 : 1;
}

export function statText(type: ScalarType, value: unknown): string {
  switch (type.kind) {
    case 'int32':
    case 'date':
    case 'int64':
    case 'timestamp':
      return String(value as number | bigint);
    case 'decimal':
      return decimalText(value as bigint, type.scale);
    case 'float':
    case 'double':
      return Object.is(value, -0) ? '-0' : String(value as number);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
    case 'json':
      return utf8.decode(value as Uint8Array);
    case 'binary':
      return Buffer.from((value as Uint8Array).buffer, (value as Uint8Array).byteOffset, (value as Uint8Array).byteLength).toString('hex');
  }
}

export function decimalText(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}
