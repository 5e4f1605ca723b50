/**
 * The one place that knows what a literal of the WHERE tree (src/sql/where.ts) means for
 * what prunes: as the key value an index holds for its column (`literalKey`), exactly as
 * src/indexes/columns.ts takes row values, and as a value of a statistic the catalog
 * keeps (`statisticValue`). Both give undefined whenever DuckDB's comparison of that
 * column with that literal might mean another value: then the condition prunes nothing
 * there (and `--plan` names it). Pure.
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
 *   string    a string literal, or one cast to VARCHAR: its UTF-8 bytes.
 *   binary    a string literal, or one cast to BLOB or VARCHAR (DuckDB casts a VARCHAR
 *             compared with a BLOB to BLOB), of ASCII without backslashes: DuckDB casts
 *             it byte for byte (a backslash starts a \xNN escape, non-ASCII is refused);
 *             `encode('…')`: the text's UTF-8 bytes.
 * Integer casts of integer digits arrive here as numbers, TIMESTAMP casts as timestamps.
 *
 * Statistics (src/query/prune.ts): `_partition` and `_offset` take integer digits;
 * `_timestamp` (epoch milliseconds) a TIMESTAMP or TIMESTAMPTZ literal or a string, to
 * the millisecond, UTC unless a zone is given.
 */
import type { KeyValue, ResolvedColumn } from '../indexes/columns.js';
import type { Literal } from '../sql/where.js';

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
export function literalKey(column: ResolvedColumn, literal: Literal): KeyValue | undefined {
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
      return (literal.kind === 'string' || literal.kind === 'varchar') && literal.text.isWellFormed() ? utf8.encode(literal.text) : undefined;
    case 'binary':
      if (literal.kind === 'utf8') return literal.text.isWellFormed() ? utf8.encode(literal.text) : undefined;
      return (literal.kind === 'string' || literal.kind === 'blob' || literal.kind === 'varchar') && blobText.test(literal.text) ? utf8.encode(literal.text) : undefined;
  }
}

// Date, optional time with at most millisecond precision, optional zone: what ms statistics can decide.
const millisText = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** A timestamp literal as epoch ms; one without a zone is UTC (the query session's time zone). */
export function timestampMillis(text: string): bigint | undefined {
  const m = millisText.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone] = m;
  let iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction.padEnd(fraction ? 4 : 0, '0')}`;
  iso += !zone || zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : BigInt(ms);
}

/** The columns whose min/max the catalog and the footers keep exactly as integers. */
export const statisticColumns: readonly string[] = ['_partition', '_offset', '_timestamp'];

/** The value `literal` stands for in a comparison with one of statisticColumns, or undefined when that is not certain. */
export function statisticValue(column: string, literal: Literal): bigint | undefined {
  if (column === '_timestamp') return literal.kind === 'timestamp' || literal.kind === 'timestamptz' || literal.kind === 'string' ? timestampMillis(literal.text) : undefined;
  if (column === '_offset' || column === '_partition') return literal.kind === 'number' && /^-?\d+$/.test(literal.text) ? BigInt(literal.text) : undefined;
  return undefined;
}
