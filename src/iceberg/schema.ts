/**
 * A table-schema version as an Iceberg schema (format v2), and the table's name mapping.
 * Pure. Field ids are the catalog's column ids, which are the data files' Parquet
 * field_ids: a top-level column by its id, a nested leaf by `leafIds`, a struct or list
 * node below the top level (a list's element `<col>.list.element`, a struct in a struct)
 * by `nodeIds`.
 *
 * Types: int32 → int, int64 → long, float, double, boolean, string and json → string
 * (v2 has no JSON type; stored as Parquet STRING from encoder v6 on), binary, date, decimal(P, S), timestamp with UTC → timestamptz,
 * without → timestamp. Iceberg v2 counts time in microseconds: a UTC millisecond column
 * is stored in micros from encoder v5 on, a local one from v6 on, and in older files
 * read widened (exactly); nanosecond ones are read cut to microseconds by the engines,
 * so their bounds are left out (src/iceberg/bounds.ts). A decimal above precision 38 has
 * no Iceberg type: it is given as the fixed bytes it is stored in, without bounds; from
 * encoder v6 on the file stores it so too (plain fixed bytes, without the DECIMAL
 * annotation nor bounds: parquet/writer-settings.ts `wideDecimalAsFixed`), before as
 * annotated decimals.
 *
 * One column is named otherwise: Kafka's `_partition` is `_kafka_partition`, since
 * Iceberg reserves `_partition` for a metadata column (Spark refuses a table that has
 * one). Engines read columns by field id (or the name mapping, which knows both names),
 * so the files stay as they are.
 *
 * The name mapping (`schema.name-mapping.default`) is what engines fall back on for a
 * file without field ids: files of encoder v1 have none, and files of v2 to v4 have none
 * on a nested group (a list's element group, a struct inside a struct); v5's have one on
 * every node but a list's repeated `list` group, as Iceberg's own writer makes them. Columns are never removed nor renamed, so the newest version's
 * mapping serves every file.
 */
import { decimalPhysical, ICEBERG_DECIMAL_PRECISION, type Column, type ColumnType, type FieldType, type ScalarType } from '../parquet/schema.js';
import type { TableSchema } from '../schema/table-schema.js';
import { ownValue } from '../common/objects.js';

export type IcebergType = string | IcebergStruct | IcebergList;

export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
}

export interface IcebergStruct {
  type: 'struct';
  fields: IcebergField[];
}

export interface IcebergList {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}

export interface IcebergSchema extends IcebergStruct {
  'schema-id': number;
}

export interface NameMappingField {
  'field-id': number;
  names: string[];
  fields?: NameMappingField[];
}

/** Iceberg's primitive type for one of ours. */
export function icebergPrimitive(type: ScalarType): string {
  switch (type.kind) {
    case 'int32':
      return 'int';
    case 'int64':
      return 'long';
    case 'float':
    case 'double':
    case 'boolean':
    case 'string':
    case 'binary':
    case 'date':
      return type.kind;
    case 'json':
      return 'string';
    case 'timestamp':
      return type.utc ? 'timestamptz' : 'timestamp';
    case 'decimal':
      return type.precision <= ICEBERG_DECIMAL_PRECISION ? `decimal(${type.precision}, ${type.scale})` : `fixed[${decimalPhysical(type.precision).length}]`;
  }
}

/** The id of a nested node or leaf at `path` (joined with '.'); a schema without one is the catalog's inconsistency. */
function nestedId(schema: TableSchema, path: string): number {
  const id = ownValue(schema.leafIds, path) ?? (schema.nodeIds ? ownValue(schema.nodeIds, path) : undefined);
  if (id === undefined) throw new Error(`the table schema has no id for ${path}`);
  return id;
}

function fieldType(schema: TableSchema, path: string, type: ColumnType): IcebergType {
  if (type.kind === 'struct') return { type: 'struct', fields: type.fields.map((field) => structField(schema, `${path}.${field.name}`, field)) };
  if (type.kind === 'list') {
    const elementPath = `${path}.list.element`;
    return { type: 'list', 'element-id': nestedId(schema, elementPath), element: fieldType(schema, elementPath, type.element.type), 'element-required': !type.element.nullable };
  }
  return icebergPrimitive(type);
}

function structField(schema: TableSchema, path: string, column: Column): IcebergField {
  return { id: nestedId(schema, path), name: column.name, required: !column.nullable, type: fieldType(schema, path, column.type) };
}

/** Top-level columns whose Iceberg name is not their own: Iceberg's reserved metadata column names. */
export const icebergNames: Readonly<Record<string, string>> = { _partition: '_kafka_partition' };

/** The Iceberg schema of one table-schema version; its schema-id is the version. */
export function icebergSchema(schema: TableSchema, version: number): IcebergSchema {
  return {
    type: 'struct',
    'schema-id': version,
    fields: schema.columns.map((column) => ({ id: column.id, name: ownValue(icebergNames, column.name) ?? column.name, required: !column.nullable, type: fieldType(schema, column.name, column.type) })),
  };
}

/** The highest field id of the schemas: Iceberg's last-column-id. */
export function highestFieldId(schemas: readonly IcebergStruct[]): number {
  let highest = 0;
  const visit = (type: IcebergType): void => {
    if (typeof type === 'string') return;
    if (type.type === 'list') {
      highest = Math.max(highest, type['element-id']);
      visit(type.element);
    } else {
      for (const field of type.fields) {
        highest = Math.max(highest, field.id);
        visit(field.type);
      }
    }
  };
  for (const schema of schemas) visit(schema);
  return highest;
}

/** The name mapping of a schema (Iceberg's JSON form), by the names the Parquet files use. */
export function nameMapping(schema: IcebergStruct): NameMappingField[] {
  const nested = (type: IcebergType): NameMappingField[] | undefined => {
    if (typeof type === 'string') return undefined;
    if (type.type === 'list') {
      const fields = nested(type.element);
      return [{ 'field-id': type['element-id'], names: ['element'], ...(fields ? { fields } : {}) }];
    }
    return nameMapping(type);
  };
  const fileNames = new Map(Object.entries(icebergNames).map(([file, iceberg]) => [iceberg, file]));
  return schema.fields.map((field) => {
    const fields = nested(field.type);
    const fileName = fileNames.get(field.name);
    return { 'field-id': field.id, names: fileName ? [field.name, fileName] : [field.name], ...(fields ? { fields } : {}) };
  });
}

/**
 * Every primitive field of the schema with its Iceberg type and whether it lies inside a
 * list, by field id: what the manifests' statistics are keyed and encoded by.
 */
export function primitiveFields(schema: TableSchema): Map<number, { type: ScalarType; inList: boolean }> {
  const out = new Map<number, { type: ScalarType; inList: boolean }>();
  const visit = (id: number, path: string, field: FieldType, inList: boolean): void => {
    const { type } = field;
    if (type.kind === 'struct') for (const child of type.fields) visit(nestedId(schema, `${path}.${child.name}`), `${path}.${child.name}`, child, inList);
    else if (type.kind === 'list') visit(nestedId(schema, `${path}.list.element`), `${path}.list.element`, type.element, true);
    else out.set(id, { type, inList });
  };
  for (const column of schema.columns) visit(column.id, column.name, column, false);
  return out;
}
