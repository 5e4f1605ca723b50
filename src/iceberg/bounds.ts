/**
 * A statistics bound (the catalog's exact text, src/parquet/stat-text.ts) in Iceberg's
 * single-value binary serialization (the table spec's appendix D), for the type the
 * manifest's schema gives the column. Pure.
 *
 *   int, date          4 bytes, little-endian two's complement
 *   long               8 bytes, little-endian (also an int column widened to long)
 *   float, double      4 / 8 bytes, IEEE 754 little-endian (a float widened to double
 *                      keeps its value exactly)
 *   boolean            one byte, 0x00 or 0x01
 *   timestamp(tz)      8 bytes little-endian microseconds: a millisecond bound times
 *                      1000, exact; a nanosecond bound has no exact microsecond form
 *                      that engines compare truncated values with, so it is left out
 *   string             UTF-8 bytes, whole (no truncation)
 *   binary             the bytes (our text is their hex)
 *   decimal(P, S)      the unscaled value, big-endian two's complement, fewest bytes
 *
 * `undefined`: a bound we do not hold exactly in this type, left out of the manifest
 * rather than approximated.
 */
import { ICEBERG_DECIMAL_PRECISION, type ScalarType } from '../parquet/schema.js';

/** The unscaled integer of exact decimal text with `scale` fraction digits ("-1.50" at scale 2 → -150). */
export function unscaledDecimal(text: string, scale: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match || (match[3] ?? '').length !== scale) throw new Error(`"${text}" is not a decimal with ${scale} fraction digits`);
  const magnitude = BigInt(`${match[2]}${match[3] ?? ''}`);
  return match[1] ? -magnitude : magnitude;
}

/** Two's complement, big-endian, in the fewest bytes that keep the sign (0 is one byte 0x00). */
export function twosComplementBigEndian(value: bigint): Uint8Array {
  let length = 1;
  while (value < -(1n << BigInt(8 * length - 1)) || value >= 1n << BigInt(8 * length - 1)) length++;
  const out = new Uint8Array(length);
  let rest = BigInt.asUintN(8 * length, value);
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

function littleEndian(bytes: number, write: (view: DataView) => void): Uint8Array {
  const out = new Uint8Array(bytes);
  write(new DataView(out.buffer));
  return out;
}

function float(text: string): number {
  return text === '-0' ? -0 : Number(text);
}

/**
 * The bound `text` of a column stored as `stored` (the file's type), serialized for the
 * Iceberg type of `wanted` (the manifest's schema: the same, or a widening of it).
 */
export function icebergBound(stored: ScalarType, wanted: ScalarType, text: string): Uint8Array | undefined {
  switch (wanted.kind) {
    case 'int32':
    case 'date':
      return littleEndian(4, (view) => view.setInt32(0, Number(text), true));
    case 'int64':
      return littleEndian(8, (view) => view.setBigInt64(0, BigInt(text), true));
    case 'float':
      return littleEndian(4, (view) => view.setFloat32(0, float(text), true));
    case 'double':
      return littleEndian(8, (view) => view.setFloat64(0, float(text), true));
    case 'boolean':
      return Uint8Array.of(text === 'true' ? 1 : 0);
    case 'timestamp': {
      if (stored.kind !== 'timestamp' || stored.unit === 'nanos' || wanted.unit === 'nanos') return undefined;
      const micros = stored.unit === 'millis' ? BigInt(text) * 1000n : BigInt(text);
      return littleEndian(8, (view) => view.setBigInt64(0, micros, true));
    }
    case 'string':
    case 'json':
      return new TextEncoder().encode(text);
    case 'binary':
      return Uint8Array.from(Buffer.from(text, 'hex'));
    case 'decimal':
      if (wanted.precision > ICEBERG_DECIMAL_PRECISION || stored.kind !== 'decimal' || stored.scale !== wanted.scale) return undefined;
      return twosComplementBigEndian(unscaledDecimal(text, wanted.scale));
  }
}
