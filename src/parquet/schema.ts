/**
 * The column model of a data file, independent of any writer: a name, a type and
 * whether nulls are allowed. Kafka's columns and decoded value columns (Avro,
 * Protobuf, JSON Schema, later issues) are all described with it, and it maps onto
 * exactly one Parquet schema. That mapping is part of an encoder version's output:
 * changing it for an existing kind changes the bytes of files already in the catalog.
 */
import type { SchemaElement } from 'hyparquet-writer';

export type TimeUnit = 'millis' | 'micros' | 'nanos';

export type ScalarType =
  | { kind: 'int32' }
  | { kind: 'int64' }
  | { kind: 'float' }
  | { kind: 'double' }
  | { kind: 'boolean' }
  | { kind: 'string' }
  | { kind: 'json' }
  | { kind: 'binary' }
  | { kind: 'timestamp'; unit: TimeUnit; utc: boolean }
  | { kind: 'date' }
  | { kind: 'decimal'; precision: number; scale: number };

export interface FieldType {
  type: ColumnType;
  nullable: boolean;
}

export type ColumnType =
  | ScalarType
  | { kind: 'list'; element: FieldType }
  | { kind: 'struct'; fields: readonly Column[] };

export interface Column extends FieldType {
  name: string;
}

export type ScalarKind = ScalarType['kind'];

export function isScalar(type: ColumnType): type is ScalarType {
  return type.kind !== 'list' && type.kind !== 'struct';
}

/**
 * The widest decimal Iceberg has (its `decimal(P, S)` takes P up to 38): a wider one (only
 * Avro `decimal` makes one) is declared Iceberg `fixed[L]` (src/iceberg/schema.ts), and
 * encoder v6 stores it so (writer-settings.ts `wideDecimalAsFixed`).
 */
export const ICEBERG_DECIMAL_PRECISION = 38;

/** Physical representation of a decimal: the narrowest Parquet allows for its precision. */
export function decimalPhysical(precision: number): { type: 'INT32' | 'INT64' | 'FIXED_LEN_BYTE_ARRAY'; length?: number } {
  if (precision <= 9) return { type: 'INT32' };
  if (precision <= 18) return { type: 'INT64' };
  // smallest two's-complement width that holds ±(10^precision − 1)
  const max = 10n ** BigInt(precision) - 1n;
  let length = 1;
  while (max >= 1n << BigInt(8 * length - 1)) length++;
  return { type: 'FIXED_LEN_BYTE_ARRAY', length };
}

/**
 * Whether two types are the same, field by field. Never by their JSON text: a type read
 * back from the catalog's jsonb has its object keys in another order than the one built
 * in memory, yet it is the same type and must give the same file.
 */
export function sameType(a: ColumnType, b: ColumnType): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'timestamp': {
      const t = b as typeof a;
      return a.unit === t.unit && a.utc === t.utc;
    }
    case 'decimal': {
      const d = b as typeof a;
      return a.precision === d.precision && a.scale === d.scale;
    }
    case 'list': {
      const l = b as typeof a;
      return a.element.nullable === l.element.nullable && sameType(a.element.type, l.element.type);
    }
    case 'struct':
      return sameColumns(a.fields, (b as typeof a).fields);
    default:
      return true;
  }
}

/** Same names, nullability and types, in the same order. */
export function sameColumns(a: readonly Column[], b: readonly Column[]): boolean {
  return a.length === b.length && a.every((column, i) => column.name === b[i]!.name && column.nullable === b[i]!.nullable && sameType(column.type, b[i]!.type));
}

export function validateColumns(columns: readonly Column[], where = 'file'): void {
  const names = new Set<string>();
  for (const column of columns) {
    if (!column.name) throw new Error(`a column of the ${where} has an empty name`);
    // the catalog keeps names as Postgres text and jsonb, which hold neither
    if (column.name.includes('\u0000') || !column.name.isWellFormed()) throw new Error(`a column name of the ${where} holds U+0000 or a lone surrogate`);
    if (names.has(column.name)) throw new Error(`column ${column.name} appears twice in the ${where}`);
    names.add(column.name);
    validateType(column.type, column.name);
  }
}

function validateType(type: ColumnType, name: string): void {
  if (type.kind === 'decimal') {
    const { precision, scale } = type;
    if (!Number.isInteger(precision) || precision < 1) throw new Error(`column ${name}: decimal precision ${precision} must be a positive integer`);
    if (!Number.isInteger(scale) || scale < 0 || scale > precision) throw new Error(`column ${name}: decimal scale ${scale} must lie in 0..${precision}`);
  } else if (type.kind === 'list') {
    validateType(type.element.type, `${name}.element`);
  } else if (type.kind === 'struct') {
    if (type.fields.length === 0) throw new Error(`column ${name}: a struct needs at least one field`);
    validateColumns(type.fields, `struct ${name}`);
  }
}

/** The flattened Parquet schema (root first, depth-first) that the writer receives. */
export function parquetSchema(columns: readonly Column[]): SchemaElement[] {
  validateColumns(columns);
  const out: SchemaElement[] = [{ name: 'root', num_children: columns.length }];
  for (const column of columns) pushField(out, column.name, column);
  return out;
}

function pushField(out: SchemaElement[], name: string, field: FieldType): void {
  const repetition_type = field.nullable ? 'OPTIONAL' : 'REQUIRED';
  const { type } = field;
  if (type.kind === 'list') {
    // the three-level form the Parquet spec prescribes (LIST > repeated list > element)
    out.push({ name, repetition_type, num_children: 1, converted_type: 'LIST', logical_type: { type: 'LIST' } });
    out.push({ name: 'list', repetition_type: 'REPEATED', num_children: 1 });
    pushField(out, 'element', type.element);
    return;
  }
  if (type.kind === 'struct') {
    out.push({ name, repetition_type, num_children: type.fields.length });
    for (const child of type.fields) pushField(out, child.name, child);
    return;
  }
  out.push({ name, repetition_type, ...scalarElement(type) });
}

function scalarElement(type: ScalarType): Omit<SchemaElement, 'name'> {
  switch (type.kind) {
    case 'int32':
      return { type: 'INT32' };
    case 'int64':
      return { type: 'INT64' };
    case 'float':
      return { type: 'FLOAT' };
    case 'double':
      return { type: 'DOUBLE' };
    case 'boolean':
      return { type: 'BOOLEAN' };
    case 'string':
      return { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'json':
      // Logical type JSON over converted type UTF8, not JSON: hyparquet-writer
      // re-serialises values of converted type JSON (JSON.stringify), which would not
      // keep the record's text as it is; and without a converted type DuckDB reads the
      // column as BLOB. So DuckDB sees VARCHAR (its ->> operators work), readers that
      // honour logical types (Arrow, Spark) see JSON. Encoder v6 stores it as STRING
      // instead (writer-settings.ts `jsonAsString`), Iceberg's form of the `string` it declares.
      return { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'JSON' } };
    case 'binary':
      return { type: 'BYTE_ARRAY' };
    case 'timestamp': {
      const logical_type = { type: 'TIMESTAMP', isAdjustedToUTC: type.utc, unit: timeUnit(type.unit) } as const;
      // the legacy converted types imply UTC and know no nanoseconds
      const converted =
        type.utc && type.unit === 'millis' ? 'TIMESTAMP_MILLIS' : type.utc && type.unit === 'micros' ? 'TIMESTAMP_MICROS' : undefined;
      return converted ? { type: 'INT64', converted_type: converted, logical_type } : { type: 'INT64', logical_type };
    }
    case 'date':
      return { type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } };
    case 'decimal': {
      const { precision, scale } = type;
      const physical = decimalPhysical(precision);
      return {
        type: physical.type,
        ...(physical.length ? { type_length: physical.length } : {}),
        converted_type: 'DECIMAL',
        scale,
        precision,
        logical_type: { type: 'DECIMAL', precision, scale },
      };
    }
  }
}

function timeUnit(unit: TimeUnit): 'MILLIS' | 'MICROS' | 'NANOS' {
  return unit === 'millis' ? 'MILLIS' : unit === 'micros' ? 'MICROS' : 'NANOS';
}

/** One primitive column of the file, named by its Parquet path (`path_in_schema`). */
export interface Leaf {
  path: string[];
  type: ScalarType;
}

/**
 * The nested nodes that are neither a top-level column nor a leaf: a struct or list that
 * is a struct field or a list element, named by its Parquet path as leaves are (a list's
 * element is `<list>.list.element`). Engines that read the table as a tree (DuckLake)
 * need an id for each of them.
 */
export function innerNodePaths(columns: readonly Column[]): string[][] {
  const out: string[][] = [];
  const walk = (path: string[], type: ColumnType, top: boolean): void => {
    if (isScalar(type)) return;
    if (!top) out.push(path);
    if (type.kind === 'list') walk([...path, 'list', 'element'], type.element.type, false);
    else for (const f of type.fields) walk([...path, f.name], f.type, false);
  };
  for (const c of columns) walk([c.name], c.type, true);
  return out;
}

/** How many primitive columns (leaves) a field holds. */
export function leafCount(field: FieldType): number {
  const { type } = field;
  if (type.kind === 'list') return leafCount(type.element);
  if (type.kind === 'struct') return type.fields.reduce((n, f) => n + leafCount(f), 0);
  return 1;
}

/** The primitive columns in file order, as statistics and footers name them. */
export function leaves(columns: readonly Column[]): Leaf[] {
  const out: Leaf[] = [];
  const walk = (path: string[], type: ColumnType): void => {
    if (type.kind === 'list') walk([...path, 'list', 'element'], type.element.type);
    else if (type.kind === 'struct') for (const f of type.fields) walk([...path, f.name], f.type);
    else out.push({ path, type });
  };
  for (const c of columns) walk([c.name], c.type);
  return out;
}
