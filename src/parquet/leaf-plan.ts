/**
 * The file's Parquet schema as stored (the column model, with the types the writer
 * settings change) and one plan per primitive column (leaf): its physical type, levels
 * and unit. Its own module because every later step (shredding, pages, bounds, the
 * footer) reads a leaf's plan and none of them decides it.
 */
import type { SchemaElement } from 'hyparquet-writer';
import { type Column, type ColumnType, type FieldType, ICEBERG_DECIMAL_PRECISION, leaves, parquetSchema, type ScalarType } from './schema.js';
import type { WriterSettings } from './writer-settings.js';

/** Parquet's physical types, numbered as parquet.thrift's `Type`. */
export const physicalIds = { BOOLEAN: 0, INT32: 1, INT64: 2, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 } as const;
export type Physical = keyof typeof physicalIds;

/** One primitive column of the file and where its values come from. */
export interface LeafPlan {
  path: string[];
  type: ScalarType;
  physical: Physical;
  typeLength: number;
  maxDef: number;
  maxRep: number;
  /** Top-level column it belongs to. */
  column: number;
  /** Its index among the top-level column's leaves (shredding order). */
  within: number;
  /** What the file holds is the value times this: 1000 for a millisecond timestamp stored in micros, else 1. */
  scale: 1 | 1000;
  /** Whether the file bounds it (footer min/max, ColumnIndex): not a decimal stored as plain fixed bytes (`wideDecimalAsFixed`). */
  fileBounds: boolean;
}

function physicalOf(element: SchemaElement): Physical {
  const type = element.type;
  if (!type || !(type in physicalIds)) throw new Error(`no physical type for schema element ${element.name}`);
  return type as Physical;
}

/** Whether a leaf of this type is stored in micros, its values times 1000 (`utcMillisAsMicros`, `localMillisAsMicros`). */
const millisAsMicros = (type: ScalarType, settings: WriterSettings): boolean =>
  type.kind === 'timestamp' && type.unit === 'millis' && (type.utc ? settings.utcMillisAsMicros === true : settings.localMillisAsMicros === true);

/** The type a column is stored as: millisecond timestamps in micros, JSON text as a string, where the settings say so. */
function storedType(type: ColumnType, settings: WriterSettings): ColumnType {
  if (type.kind === 'list') return { kind: 'list', element: { ...type.element, type: storedType(type.element.type, settings) } };
  if (type.kind === 'struct') return { kind: 'struct', fields: type.fields.map((field) => ({ ...field, type: storedType(field.type, settings) })) };
  if (type.kind === 'timestamp' && millisAsMicros(type, settings)) return { kind: 'timestamp', unit: 'micros', utc: type.utc };
  if (type.kind === 'json' && settings.jsonAsString) return { kind: 'string' };
  return type;
}

/** Whether a leaf of this type is stored as plain fixed bytes, without the DECIMAL annotation (`wideDecimalAsFixed`). */
const decimalAsFixed = (type: ScalarType, settings: WriterSettings): boolean =>
  type.kind === 'decimal' && type.precision > ICEBERG_DECIMAL_PRECISION && settings.wideDecimalAsFixed === true;

/** The file's Parquet schema (parquetSchema of the columns as stored). */
export function storedSchema(columns: readonly Column[], settings: WriterSettings): SchemaElement[] {
  const changesTypes = settings.utcMillisAsMicros || settings.localMillisAsMicros || settings.jsonAsString;
  const schema = parquetSchema(changesTypes ? columns.map((column) => ({ ...column, type: storedType(column.type, settings) })) : columns);
  if (!settings.wideDecimalAsFixed) return schema;
  // the column model has no fixed type: the decimal's element loses its annotation (its physical type and length are already fixed bytes)
  return schema.map((element) =>
    element.logical_type?.type === 'DECIMAL' && element.logical_type.precision > ICEBERG_DECIMAL_PRECISION
      ? { name: element.name, type: element.type, type_length: element.type_length, repetition_type: element.repetition_type }
      : element,
  );
}

/** Leaves in schema order, with their levels, matched to parquetSchema's elements. */
export function leafPlans(columns: readonly Column[], schema: readonly SchemaElement[], settings: WriterSettings): LeafPlan[] {
  const plans: LeafPlan[] = [];
  const elements = schema.filter((e) => e.type !== undefined);
  const all = leaves(columns);
  columns.forEach((column, c) => {
    let within = 0;
    const walk = (path: string[], field: FieldType, def: number, rep: number): void => {
      const d = def + (field.nullable ? 1 : 0);
      const { type } = field;
      if (type.kind === 'list') walk([...path, 'list', 'element'], type.element, d + 1, rep + 1);
      else if (type.kind === 'struct') for (const f of type.fields) walk([...path, f.name], f, d, rep);
      else {
        const element = elements[plans.length]!;
        const leaf = all[plans.length]!;
        if (leaf.path.join('.') !== path.join('.')) throw new Error(`leaf order mismatch at ${path.join('.')}`);
        const scale = millisAsMicros(type, settings) ? 1000 : 1;
        const fileBounds = !decimalAsFixed(type, settings);
        plans.push({ path, type, physical: physicalOf(element), typeLength: element.type_length ?? 0, maxDef: d, maxRep: rep, column: c, within: within++, scale, fileBounds });
      }
    };
    walk([column.name], column, 0, 0);
  });
  return plans;
}
