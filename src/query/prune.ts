/**
 * Whether a file (or a partition's unindexed tail) may hold a row that satisfies every
 * extracted predicate, from what the catalog knows: its partition, its offsets and the
 * exact min/max of `_offset` and `_timestamp` (epoch milliseconds). Only those columns
 * are used, with integer and timestamp literals whose meaning is unambiguous; any other
 * predicate keeps the file. Pruning never changes an answer, DuckDB still applies the
 * whole WHERE clause to every row it reads.
 */
import type { DataFile } from '../catalog/file-reads.js';
import type { Literal, Predicate } from './sql-scan.js';

/** Inclusive bounds of a column's values, where known. */
export type Bounds = Map<string, { min: bigint; max: bigint }>;

const integer = /^-?\d+$/;
// Date, optional time with at most millisecond precision, optional zone: what ms statistics can decide.
const timestampText = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** A timestamp literal as epoch ms; one without a zone is UTC (the query session's time zone). */
export function timestampMillis(text: string): bigint | undefined {
  const m = timestampText.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone] = m;
  let iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction.padEnd(fraction ? 4 : 0, '0')}`;
  iso += !zone || zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : BigInt(ms);
}

function literalValue(column: string, literal: Literal): bigint | undefined {
  if (column === '_timestamp') return literal.kind === 'number' ? undefined : timestampMillis(literal.text);
  if (column === '_offset' || column === '_partition') return literal.kind === 'number' && integer.test(literal.text) ? BigInt(literal.text) : undefined;
  return undefined;
}

function mayHold(bounds: { min: bigint; max: bigint }, predicate: Predicate, column: string): boolean {
  const { min, max } = bounds;
  if (predicate.op === 'between') {
    const low = literalValue(column, predicate.low);
    const high = literalValue(column, predicate.high);
    return low === undefined || high === undefined || (max >= low && min <= high);
  }
  const v = literalValue(column, predicate.value);
  if (v === undefined) return true;
  switch (predicate.op) {
    case '=':
      return min <= v && v <= max;
    case '<':
      return min < v;
    case '<=':
      return min <= v;
    case '>':
      return max > v;
    case '>=':
      return max >= v;
  }
}

export function mayMatch(bounds: Bounds, predicates: readonly Predicate[]): boolean {
  return predicates.every((predicate) => {
    const known = bounds.get(predicate.column);
    return !known || mayHold(known, predicate, predicate.column);
  });
}

/** What the catalog knows of a file's values. */
export function fileBounds(file: DataFile): Bounds {
  const bounds: Bounds = new Map([
    ['_partition', { min: BigInt(file.partition), max: BigInt(file.partition) }],
    ['_offset', { min: file.startOffset, max: file.endOffset - 1n }],
  ]);
  for (const column of file.columns) {
    if ((column.columnName === '_offset' || column.columnName === '_timestamp') && column.min !== null && column.max !== null) {
      bounds.set(column.columnName, { min: BigInt(column.min), max: BigInt(column.max) });
    }
  }
  return bounds;
}
