/**
 * An index column against a table schema: what type of value it names, which index kinds
 * accept it, and each row's value taken from a file's prepared rows (the same values the
 * file's bytes hold, src/parquet/values.ts). Values, by key type:
 *   integer   bigint: int32, int64, date (days), timestamp (in the column's unit), decimal (unscaled)
 *   float     number: float, double (MINMAX only: equality on floats is not what users mean)
 *   boolean   boolean (BLOOM and POSTINGS only: two values have no useful range)
 *   string    UTF-8 bytes: string columns, json fields (`_value.a.b`, as VARCHAR)
 *   binary    bytes: binary columns (`_key`, raw `_value`), header values
 * A row's value is null when the column is null (or a field or header is absent) and
 * `unknownValue` when it exists but cannot be known exactly here (a json field that is a
 * float, an object…): a granule with such a row is never skipped.
 */
import type { TableFormat } from '../table/settings.js';
import type { Column, ColumnType, ScalarType } from '../parquet/schema.js';
import { columnValues, type PreparedData } from '../parquet/values.js';
import { ownValue } from '../common/objects.js';
import { IndexDefinitionError, indexColumnText, type IndexColumn, type IndexKind } from './definition.js';
import { jsonFieldReader, unknownText } from './json-field.js';

export type KeyType = 'integer' | 'float' | 'boolean' | 'string' | 'binary';
export type KeyValue = bigint | number | boolean | Uint8Array;
export { unknownText as unknownValue };
export type RowValue = KeyValue | null | typeof unknownText;

/** An index column resolved against a schema. */
export interface ResolvedColumn {
  column: IndexColumn;
  keyType: KeyType;
  /** The column's type as the file holds it (for literals: a timestamp's unit, a decimal's scale). */
  type: ScalarType;
  /** The type as the user reads it, for messages. */
  typeText: string;
  /** Each row's value. */
  values(data: PreparedData): RowValue[];
}

const accepted: Record<KeyType, readonly IndexKind[]> = {
  integer: ['minmax', 'bloom', 'postings'],
  string: ['minmax', 'bloom', 'postings'],
  binary: ['minmax', 'bloom', 'postings'],
  float: ['minmax'],
  boolean: ['bloom', 'postings'],
};

function keyTypeOf(type: ScalarType): KeyType | undefined {
  switch (type.kind) {
    case 'int32':
    case 'int64':
    case 'date':
    case 'timestamp':
    case 'decimal':
      return 'integer';
    case 'float':
    case 'double':
      return 'float';
    case 'boolean':
      return 'boolean';
    case 'string':
      return 'string';
    case 'binary':
      return 'binary';
    case 'json':
      return undefined;
  }
}

function typeText(type: ColumnType): string {
  switch (type.kind) {
    case 'timestamp':
      return `timestamp(${type.unit})`;
    case 'decimal':
      return `decimal(${type.precision}, ${type.scale})`;
    case 'double':
      return 'float64';
    case 'float':
      return 'float32';
    default:
      return type.kind;
  }
}

function toBigInt(value: unknown): bigint {
  return typeof value === 'bigint' ? value : BigInt(value as number);
}

function scalarValue(keyType: KeyType, value: unknown): RowValue {
  if (value === null || value === undefined) return null;
  return keyType === 'integer' ? toBigInt(value) : (value as KeyValue);
}

/**
 * Resolves `column` in the table's columns and checks that an index of `kind` accepts
 * it; every refusal names the column, its type and what it accepts.
 */
export function resolveIndexColumn(columns: readonly Column[], format: TableFormat, column: IndexColumn, kind: IndexKind): ResolvedColumn {
  const text = indexColumnText(column);
  const check = (keyType: KeyType, shown: string): void => {
    if (!accepted[keyType].includes(kind)) {
      throw new IndexDefinitionError(`column ${text} is ${shown}, which ${kind.toUpperCase()} does not accept: ${shown} accepts ${accepted[keyType].map((k) => k.toUpperCase()).join(' and ')}`);
    }
  };
  if (column.kind === 'header') {
    check('binary', 'a header value (blob)');
    const name = textEncoder.encode(column.name);
    const at = columns.findIndex((c) => c.name === '_headers');
    return {
      column, keyType: 'binary', type: { kind: 'binary' }, typeText: 'blob',
      values: (data) => (columnValues(data.arrays[at]!) as { key: Uint8Array; value: Uint8Array | null }[][]).map((headers) => firstHeader(headers, name)),
    };
  }
  if (column.kind === 'json') {
    if (format !== 'json') {
      throw new IndexDefinitionError(`column ${text}: fields of the value by path exist on json tables only; this table is ${format}${format === 'raw' ? '' : ', whose decoded fields are table columns: index them by name (a.b for a nested field)'}`);
    }
    check('string', 'a json field (varchar)');
    const at = columns.findIndex((c) => c.name === '_value');
    const field = jsonFieldReader(column.path);
    return {
      column, keyType: 'string', type: { kind: 'string' }, typeText: 'varchar',
      values: (data) => (columnValues(data.arrays[at]!) as (Uint8Array | null)[]).map((json) => (json === null ? null : field(json))),
    };
  }
  const [top, ...rest] = column.path;
  const at = columns.findIndex((c) => c.name === top);
  if (at < 0) throw new IndexDefinitionError(`column ${text}: the table has no column ${top} (its columns: ${columns.map((c) => c.name).join(', ')})`);
  let type: ColumnType = columns[at]!.type;
  for (const [depth, name] of rest.entries()) {
    if (type.kind === 'list') throw new IndexDefinitionError(`column ${text}: ${column.path.slice(0, depth + 1).join('.')} is a list, with any number of values per row; an index takes one value per row`);
    if (type.kind !== 'struct') throw new IndexDefinitionError(`column ${text}: ${column.path.slice(0, depth + 1).join('.')} is ${typeText(type)}, not a struct with a field ${name}`);
    const field: Column | undefined = type.fields.find((f) => f.name === name);
    if (!field) throw new IndexDefinitionError(`column ${text}: ${column.path.slice(0, depth + 1).join('.')} has no field ${name} (its fields: ${type.fields.map((f) => f.name).join(', ')})`);
    type = field.type;
  }
  if (type.kind === 'list' || type.kind === 'struct') {
    throw new IndexDefinitionError(`column ${text} is a ${type.kind}; an index takes one scalar value per row${type.kind === 'struct' ? ': index one of its fields (a.b)' : ', and a list holds any number of them'}`);
  }
  if (type.kind === 'json') {
    throw new IndexDefinitionError(`column ${text} is json text, which no index accepts whole: index a field of it by path (${text}.field)`);
  }
  const keyType = keyTypeOf(type)!;
  check(keyType, typeText(type));
  const scalar = type;
  return {
    column, keyType, type: scalar, typeText: typeText(scalar),
    values: (data) => {
      const top = columnValues(data.arrays[at]!);
      if (rest.length === 0) return top.map((value) => scalarValue(keyType, value));
      return top.map((value) => {
        let v: unknown = value;
        for (const name of rest) v = v === null || v === undefined ? null : ownValue(v as Record<string, unknown>, name);
        return scalarValue(keyType, v);
      });
    },
  };
}

const textEncoder = new TextEncoder();

/** The first header called `name` (keys are UTF-8 bytes once prepared): what `list_filter(_headers, h -> h.key = 'name')[1].value` gives in DuckDB. */
function firstHeader(headers: readonly { key: Uint8Array | string; value: Uint8Array | null }[], name: Uint8Array): RowValue {
  for (const header of headers) {
    const key = typeof header.key === 'string' ? textEncoder.encode(header.key) : header.key;
    if (key.length === name.length && Buffer.compare(key, name) === 0) return header.value;
  }
  return null;
}

/** A column that no longer resolves: every row unknown, so no granule is ever skipped on it. */
export function unresolvedColumn(column: IndexColumn, keyType: KeyType): ResolvedColumn {
  return { column, keyType, type: { kind: 'binary' }, typeText: 'unknown', values: (data) => new Array<RowValue>(data.rowCount).fill(unknownText) };
}

/** The index's columns against a file's columns; a column that does not resolve becomes `unresolvedColumn`. */
export function resolveForFile(columns: readonly Column[], format: TableFormat, indexColumns: readonly IndexColumn[], kind: IndexKind): ResolvedColumn[] {
  return indexColumns.map((column) => {
    try {
      return resolveIndexColumn(columns, format, column, kind);
    } catch (error) {
      if (error instanceof IndexDefinitionError) return unresolvedColumn(column, 'binary');
      throw error;
    }
  });
}
