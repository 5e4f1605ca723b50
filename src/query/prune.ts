/**
 * Whether a file (or a partition's unindexed tail) may hold a row that satisfies every
 * extracted predicate, from what the catalog knows: its partition, its offsets and the
 * exact min/max of `_offset` and `_timestamp` (epoch milliseconds). Only those columns
 * are used, with integer and timestamp literals whose meaning is unambiguous; any other
 * predicate keeps the file. Pruning never changes an answer, DuckDB still applies the
 * whole WHERE clause to every row it reads.
 */
import type { FileMetaData, SchemaElement } from 'hyparquet';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { Granule } from '../catalog/file-writes.js';
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
export function fileBounds(file: CatalogFile): Bounds {
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

/** Whether a footer leaf holds epoch milliseconds (the only timestamp unit the predicates' literals compare with). */
function isMillis(element: SchemaElement): boolean {
  if (element.type !== 'INT64') return false;
  const logical = element.logical_type;
  if (logical) return logical.type === 'TIMESTAMP' && logical.unit === 'MILLIS';
  return element.converted_type === 'TIMESTAMP_MILLIS';
}

/** A statistics value as an integer, or undefined when it is not one we can compare exactly. */
function statisticInteger(value: unknown, millis: boolean): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  // hyparquet turns TIMESTAMP statistics into Dates; only millisecond ones are exact as such.
  if (millis && value instanceof Date && !Number.isNaN(value.getTime())) return BigInt(value.getTime());
  return undefined;
}

/** The footer schema's top-level columns by name (a nested field of the same name is not one). */
function topLevelElements(schema: readonly SchemaElement[]): Map<string, SchemaElement> {
  const out = new Map<string, SchemaElement>();
  let at = 1;
  const skip = (): void => {
    const children = schema[at++]?.num_children ?? 0;
    for (let c = 0; c < children; c++) skip();
  };
  for (let c = 0; c < (schema[0]?.num_children ?? 0) && at < schema.length; c++) {
    out.set(schema[at]!.name, schema[at]!);
    skip();
  }
  return out;
}

/**
 * What one row group of a file can hold, for the columns the predicates may name: the
 * file's partition; `_offset` and `_timestamp` from the row group's footer statistics
 * where they are present and exact, and `_offset` from the granule's offset span when
 * they are not. A column without a trustworthy bound is left out, so it keeps the row
 * group.
 */
export function rowGroupBounds(file: CatalogFile, metadata: FileMetaData, rowGroup: number, granule?: Granule): Bounds {
  const bounds: Bounds = new Map([['_partition', { min: BigInt(file.partition), max: BigInt(file.partition) }]]);
  if (granule) bounds.set('_offset', { min: granule.startOffset, max: granule.endOffset - 1n });
  const elements = topLevelElements(metadata.schema);
  for (const chunk of metadata.row_groups[rowGroup]?.columns ?? []) {
    const meta = chunk.meta_data;
    const name = meta?.path_in_schema.length === 1 ? meta.path_in_schema[0]! : undefined;
    if (name !== '_offset' && name !== '_timestamp') continue;
    const element = elements.get(name);
    const stats = meta?.statistics;
    if (!element || !stats || stats.is_min_value_exact === false || stats.is_max_value_exact === false) continue;
    const millis = isMillis(element);
    if (name === '_timestamp' && !millis) continue;
    if (name === '_offset' && element.type !== 'INT64') continue;
    const min = statisticInteger(stats.min_value, millis);
    const max = statisticInteger(stats.max_value, millis);
    if (min !== undefined && max !== undefined && min <= max) bounds.set(name, { min, max });
  }
  return bounds;
}
