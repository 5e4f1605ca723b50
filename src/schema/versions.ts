import type { Catalog, CatalogClient } from '../catalog/db.js';
import type { TableSchema } from './table-schema.js';

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
