/**
 * A table's schema: Kafka's columns first, then the value's. Versioned in the catalog;
 * a column keeps its id for life. Statistics are per primitive (leaf) column, keyed by
 * an id too: a top-level scalar's leaf has the column's id; a nested leaf (such as
 * `_headers.list.element.key`) gets an id of its own, recorded in `leafIds`. The nested
 * nodes between (`_headers.list.element`, a struct inside a struct) get ids of their own
 * too, in `nodeIds`, so that the table is a tree with an id on every node, as DuckLake
 * reads it. Ids are never reused: a new one is one more than every id the table had.
 */
import { kafkaTableColumns } from '../parquet/kafka-table.js';
import { innerNodePaths, leaves, type Column } from '../parquet/schema.js';
import type { TableFormat } from '../table/settings.js';
import type { RegistrySchema } from './registry.js';

/** Which part of a record a registry schema decodes. */
export type Side = 'key' | 'value';

/** A registry schema as a table-schema version keeps it: with the sides merged from it. */
export interface MergedSchema extends RegistrySchema {
  sides: Side[];
}
import { dataRecord, ownValue } from '../common/objects.js';

export interface TableColumn extends Column {
  id: number;
}

export interface TableSchema {
  columns: TableColumn[];
  /** Leaf path (joined with '.') → column id, for statistics. */
  leafIds: Record<string, number>;
  /**
   * Nested path (joined with '.') → id of every struct or list node below the top level.
   * Absent only in a schema read back from before catalog version 5, whose migration adds it.
   */
  nodeIds?: Record<string, number>;
  /**
   * Registry formats: every registry schema merged into this version, by id, with its
   * text and the sides (key, value) merged from it. A rebuild decodes with exactly these.
   */
  registrySchemas?: Record<string, MergedSchema>;
  /**
   * Registry formats: ids the records of files of this version named but the registry
   * answered with something that is not a readable schema (not JSON, no schema text, text
   * that does not parse as its type), with the sides asked and what was wrong. Their
   * records are error rows saying so, in every rebuild; the id is asked again for later
   * ranges and leaves this list (merged) once the registry answers it with a schema.
   */
  unreadableSchemas?: Record<string, UnreadableEntry>;
}

export interface UnreadableEntry {
  sides: Side[];
  reason: string;
}

/** The schema a table starts with: `kafkaTableColumns(format)`, numbered. */
export function initialSchema(format: TableFormat): TableSchema {
  const columns = kafkaTableColumns(format).map((column, id) => ({ ...column, id }));
  let nextId = columns.length;
  const leafIds = dataRecord<number>();
  for (const leaf of leaves(columns)) {
    const path = leaf.path.join('.');
    leafIds[path] = leaf.path.length === 1 ? columns.find((c) => c.name === leaf.path[0])!.id : nextId++;
  }
  const nodeIds = dataRecord<number>();
  for (const path of innerNodePaths(columns)) nodeIds[path.join('.')] = nextId++;
  return { columns, leafIds, nodeIds };
}

/**
 * Parquet field ids (encoders from v2 on write them): every top-level column by its name,
 * every nested leaf by its path, each the column id the catalog keeps statistics under,
 * and every nested struct or list node (`nodeIds`: `element` of a list of structs, a
 * struct inside a struct): the ids of the table's Iceberg schema (src/iceberg/schema.ts).
 * A list's repeated `list` group has none, as in Iceberg's own files. Encoders before v5
 * write the ids of top-level columns and leaves only (`WriterSettings.groupFieldIds`).
 */
export function fieldIds(schema: TableSchema): Record<string, number> {
  const ids = dataRecord<number>();
  for (const column of schema.columns) ids[column.name] = column.id;
  for (const [path, id] of Object.entries(schema.leafIds)) ids[path] = id;
  for (const [path, id] of Object.entries(schema.nodeIds ?? {})) ids[path] = id;
  return ids;
}

/** Every column id with its name, type text and parent: the catalog's `table_column` rows. */
export function catalogColumns(schema: TableSchema): { id: number; name: string; type: string; parent: number | null; nullable: boolean }[] {
  const rows = schema.columns.map((column) => ({ id: column.id, name: column.name, type: typeName(column), parent: null as number | null, nullable: column.nullable }));
  for (const leaf of leaves(schema.columns)) {
    if (leaf.path.length === 1) continue;
    const parent = schema.columns.find((c) => c.name === leaf.path[0])!;
    rows.push({ id: ownValue(schema.leafIds, leaf.path.join('.'))!, name: leaf.path.join('.'), type: typeName({ name: '', type: leaf.type, nullable: true }), parent: parent.id, nullable: true });
  }
  return rows;
}

/** The column's type as text, for the catalog's `table_column.column_type`. */
export function typeName(column: Column): string {
  const type = column.type;
  switch (type.kind) {
    case 'timestamp':
      return `timestamp(${type.unit}${type.utc ? ', utc' : ''})`;
    case 'decimal':
      return `decimal(${type.precision}, ${type.scale})`;
    case 'list':
      return `list<${typeName({ name: 'element', ...type.element })}>`;
    case 'struct':
      return `struct<${type.fields.map((field) => `${field.name}: ${typeName(field)}`).join(', ')}>`;
    default:
      return type.kind;
  }
}
