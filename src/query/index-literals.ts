/**
 * A literal of the WHERE clause as the key value an index holds for its column, exactly
 * as src/indexes/columns.ts takes row values, or undefined whenever DuckDB's comparison
 * of that column with that literal might mean another value (then the index is not used
 * for the condition). Pure.
 *
 *   integer   int32/int64: integer digits. date: DATE 'Y-M-D' or 'Y-M-D' (days). timestamp:
 *             TIMESTAMP '…' or '…' without a zone (the session is UTC), with no more
 *             fraction digits than the column's unit keeps; not for nanosecond columns
 *             (DuckDB may compare them truncated to micros). decimal(p, s): digits with at most s significant decimals,
 *             unscaled.
 *   float     float64 only, digits with at most 15 significant digits (exact as a double,
 *             as DuckDB reads them). float32 is refused: DuckDB may cast the literal to
 *             FLOAT (`0.1::FLOAT = 0.1` is true) where the index holds the double.
 *   boolean   TRUE / FALSE.
 *   string    a string literal: its UTF-8 bytes.
 *   binary    a string literal of ASCII without backslashes: DuckDB casts it to BLOB byte
 *             for byte (a backslash starts a \xNN escape, non-ASCII is refused).
 */
import type { KeyValue, ResolvedColumn } from '../indexes/columns.js';
import type { IndexLiteral } from './index-predicates.js';

// At most 38 digits: DuckDB reads a longer number literal as a DOUBLE, rounded.
const integerText = /^-?\d{1,38}$/;
const decimalText = /^(-?)(\d{1,38})(?:\.(\d{1,38}))?$/;
const dateText = /^(\d{4})-(\d{2})-(\d{2})$/;
const timestampText = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?$/;
const blobText = /^[\x00-\x5b\x5d-\x7f]*$/;
const utf8 = new TextEncoder();

const unitDigits = { millis: 3, micros: 6, nanos: 6 } as const;
const unitScale = { millis: 1n, micros: 1000n, nanos: 1_000_000n } as const;

/** Days since 1970-01-01 of a valid calendar date, or undefined. */
function epochDays(y: string, m: string, d: string): number | undefined {
  const ms = Date.UTC(Number(y), Number(m) - 1, Number(d));
  const back = new Date(ms);
  if (back.getUTCFullYear() !== Number(y) || back.getUTCMonth() !== Number(m) - 1 || back.getUTCDate() !== Number(d)) return undefined;
  return ms / 86_400_000;
}

function timestampValue(text: string, unit: keyof typeof unitDigits): bigint | undefined {
  const m = timestampText.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = ''] = m;
  const days = epochDays(y!, mo!, d!);
  if (days === undefined || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  if (fraction.replace(/0+$/, '').length > unitDigits[unit]) return undefined;
  const seconds = BigInt(days) * 86_400n + BigInt(Number(h) * 3600 + Number(mi) * 60 + Number(s));
  const millis = seconds * 1000n + BigInt(fraction.padEnd(3, '0').slice(0, 3));
  const belowMillis = BigInt(fraction.padEnd(9, '0').slice(3, 9)); // nanoseconds below the millisecond
  return millis * unitScale[unit] + (unit === 'millis' ? 0n : unit === 'micros' ? belowMillis / 1000n : belowMillis);
}

function decimalValue(text: string, scale: number): bigint | undefined {
  const m = decimalText.exec(text);
  if (!m) return undefined;
  const [, sign, whole, fraction = ''] = m;
  if (whole!.length + fraction.length > 38) return undefined;
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > scale) return undefined;
  const unscaled = BigInt(`${whole}${trimmed.padEnd(scale, '0')}`);
  return sign ? -unscaled : unscaled;
}

function doubleValue(text: string): number | undefined {
  const m = decimalText.exec(text);
  if (!m) return undefined;
  const digits = `${m[2]}${m[3] ?? ''}`.replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length > 15 || (m[3]?.length ?? 0) > 15) return undefined;
  return Number(text);
}

/** The key value `literal` stands for in a comparison with `column`, or undefined when that is not certain. */
export function literalKey(column: ResolvedColumn, literal: IndexLiteral): KeyValue | undefined {
  const { type } = column;
  switch (column.keyType) {
    case 'integer':
      if (type.kind === 'int32' || type.kind === 'int64') return literal.kind === 'number' && integerText.test(literal.text) ? BigInt(literal.text) : undefined;
      if (type.kind === 'decimal') return literal.kind === 'number' ? decimalValue(literal.text, type.scale) : undefined;
      if (type.kind === 'date') {
        const m = (literal.kind === 'date' || literal.kind === 'string') && dateText.exec(literal.text);
        const days = m ? epochDays(m[1]!, m[2]!, m[3]!) : undefined;
        return days === undefined ? undefined : BigInt(days);
      }
      // DuckDB may compare a nanosecond column after truncating it to microseconds: not the index's values.
      if (type.kind === 'timestamp' && type.unit !== 'nanos') return literal.kind === 'timestamp' || literal.kind === 'string' ? timestampValue(literal.text, type.unit) : undefined;
      return undefined;
    case 'float':
      return type.kind === 'double' && literal.kind === 'number' ? doubleValue(literal.text) : undefined;
    case 'boolean':
      return literal.kind === 'boolean' ? literal.value : undefined;
    case 'string':
      return literal.kind === 'string' && literal.text.isWellFormed() ? utf8.encode(literal.text) : undefined;
    case 'binary':
      return literal.kind === 'string' && blobText.test(literal.text) ? utf8.encode(literal.text) : undefined;
  }
}
