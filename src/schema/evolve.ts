/**
 * Before a range's files are built: every (schema id, side) its records name that the
 * table schema has not merged yet is fetched from the registry and merged into a new
 * table-schema version (table_schema row; table_column rows ended and begun), in one
 * transaction that locks the table so two partitions never write the same version.
 * A registry that cannot be reached throws RegistryUnavailableError and nothing is
 * written; an id the registry does not know is not merged (its records become error
 * rows) and is asked for again with the next range.
 */
import type { Catalog } from '../catalog/db.js';
import { inTransaction } from '../catalog/db.js';
import type { TableRecord } from '../table/record.js';
import type { KafkaRecord } from '../kafka/record.js';
import { isRegistryFormat, sideColumns, unmergedIds, writerOf, type RegistryFormat } from './decode.js';
import { mergeFields, withIds } from './merge.js';
import type { RegistrySchema, SchemaRegistry } from './registry.js';
import { catalogColumns, type MergedSchema, type Side, type TableSchema } from './table-schema.js';
import { currentSchema, type VersionedSchema } from './versions.js';

const formatTypes: Record<RegistryFormat, RegistrySchema['type']> = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' };

/** `schema` with the given registry schemas merged in (pure); the same object when nothing changes. */
export function mergeRegistrySchemas(schema: TableSchema, format: RegistryFormat, incoming: readonly { schema: RegistrySchema; sides: ReadonlySet<Side> }[]): TableSchema {
  let columns = schema.columns as TableSchema['columns'] | ReturnType<typeof mergeFields>;
  const registrySchemas: Record<string, MergedSchema> = { ...schema.registrySchemas };
  let changed = false;
  for (const { schema: source, sides } of incoming) {
    const known = registrySchemas[source.id];
    const newSides = [...sides].filter((side) => !known?.sides.includes(side));
    if (newSides.length === 0) continue;
    changed = true;
    registrySchemas[source.id] = { ...source, sides: [...(known?.sides ?? []), ...newSides].sort() };
    // a schema of another format, or one that cannot be read, is kept (so that its records
    // keep failing the same way at rebuild) but adds no columns
    const writer = source.type === formatTypes[format] ? writerOf(source) : undefined;
    if (!writer || typeof writer === 'string') continue;
    for (const side of newSides.sort().reverse()) columns = mergeFields(columns, sideColumns(writer.type, side));
  }
  if (!changed) return schema;
  return { ...withIds(schema, columns), registrySchemas };
}

/** The table schema the range's records need: the current version, or a new one merged from the registry. */
export async function schemaForRecords(catalog: Catalog, table: TableRecord, current: VersionedSchema, records: Iterable<KafkaRecord>, registry: SchemaRegistry): Promise<VersionedSchema> {
  if (!isRegistryFormat(table.format)) return current;
  const wanted = unmergedIds(current.schema, records);
  if (wanted.size === 0) return current;
  const fetched: { schema: RegistrySchema; sides: Set<Side> }[] = [];
  for (const [id, sides] of [...wanted].sort(([a], [b]) => a - b)) {
    const schema = await registry.schemaById(id);
    if (schema) fetched.push({ schema, sides });
  }
  if (fetched.length === 0) return current;
  const format = table.format;
  return inTransaction(catalog, async (client) => {
    await client.query('SELECT 1 FROM offsetlake.lake_table WHERE table_id = $1 FOR UPDATE', [table.tableId]);
    const latest = await currentSchema(client, table.tableId);
    const next = mergeRegistrySchemas(latest.schema, format, fetched);
    if (next === latest.schema) return latest;
    const version = latest.version + 1;
    const ids = Object.keys(next.registrySchemas ?? {}).map(Number).sort((a, b) => a - b);
    await client.query('INSERT INTO offsetlake.table_schema (table_id, schema_version, schema, source_schema_ids) VALUES ($1, $2, $3, $4)', [table.tableId, version, JSON.stringify(next), ids]);
    const before = new Map(catalogColumns(latest.schema).map((row) => [row.id, row]));
    const rows = catalogColumns(next);
    for (const [order, row] of rows.entries()) {
      const old = before.get(row.id);
      if (old && old.name === row.name && old.type === row.type && old.parent === row.parent && old.nullable === row.nullable) continue;
      if (old) {
        await client.query('UPDATE offsetlake.table_column SET end_schema_version = $3 WHERE table_id = $1 AND column_id = $2 AND end_schema_version IS NULL', [table.tableId, row.id, version]);
      }
      await client.query(
        `INSERT INTO offsetlake.table_column (table_id, column_id, column_name, column_type, column_order, parent_column, nulls_allowed, begin_schema_version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [table.tableId, row.id, row.name, row.type, order, row.parent, row.nullable, version],
      );
    }
    // Files are built from the version as the catalog gives it back, as a rebuild will
    // read it, never from the copy in memory: one source for both, so the bytes agree.
    return currentSchema(client, table.tableId);
  });
}
