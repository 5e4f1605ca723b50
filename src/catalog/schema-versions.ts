/**
 * The table's schema versions in the catalog (table_schema and table_column): the newest,
 * one exact version for a rebuild, and a new version written under the table's lock.
 */
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { catalogColumns, type TableSchema } from '../schema/table-schema.js';
import type { TableRecord } from '../table/record.js';

export interface VersionedSchema {
  version: number;
  schema: TableSchema;
}

/** The table's newest schema version: what new files are built with. */
export async function currentSchema(catalog: Catalog | CatalogClient, tableId: bigint): Promise<VersionedSchema> {
  const result = await catalog.query<{ schema_version: number; schema: TableSchema }>(
    'SELECT schema_version, schema FROM offsetlake.table_schema WHERE table_id = $1 ORDER BY schema_version DESC LIMIT 1',
    [tableId],
  );
  const row = result.rows[0];
  if (!row) throw new Error(`table ${tableId} has no schema in the catalog`);
  return { version: row.schema_version, schema: row.schema };
}

/** One exact schema version: what a rebuild of a file built with it needs. */
export async function schemaVersion(catalog: Catalog | CatalogClient, tableId: bigint, version: number): Promise<TableSchema> {
  const result = await catalog.query<{ schema: TableSchema }>('SELECT schema FROM offsetlake.table_schema WHERE table_id = $1 AND schema_version = $2', [tableId, version]);
  const row = result.rows[0];
  if (!row) throw new Error(`table ${tableId} has no schema version ${version}`);
  return row.schema;
}

/** Every schema version of the table up to `version`, oldest first. */
export async function schemaVersionsUpTo(catalog: Catalog | CatalogClient, tableId: bigint, version: number): Promise<VersionedSchema[]> {
  const result = await catalog.query<{ schema_version: number; schema: TableSchema }>(
    'SELECT schema_version, schema FROM offsetlake.table_schema WHERE table_id = $1 AND schema_version <= $2 ORDER BY schema_version',
    [tableId, version],
  );
  return result.rows.map((row) => ({ version: row.schema_version, schema: row.schema }));
}

/**
 * A new schema version, when `merge` of the newest one changes it: in one transaction that
 * locks the table, so that two partitions never write the same version; the table_column
 * rows of changed columns ended and begun. Returns the newest version as the catalog gives
 * it back (as a rebuild will read it), never the copy in memory: one source for both, so
 * the bytes agree.
 */
export async function addSchemaVersion(catalog: Catalog, table: Pick<TableRecord, 'tableId'>, merge: (latest: TableSchema) => TableSchema): Promise<VersionedSchema> {
  return inTransaction(catalog, async (client) => {
    await client.query('SELECT 1 FROM offsetlake.lake_table WHERE table_id = $1 FOR UPDATE', [table.tableId]);
    const latest = await currentSchema(client, table.tableId);
    const next = merge(latest.schema);
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
    return currentSchema(client, table.tableId);
  });
}
