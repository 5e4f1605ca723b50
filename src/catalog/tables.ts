import { catalogColumns, type TableSchema } from '../schema/table-schema.js';
import { StoredSettingError, storedSettings, type TableFormat } from '../table/settings.js';
import { checkTableName, TableError, type NewTable, type TableRecord } from '../table/record.js';
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { topicNameProblem } from '../kafka/topic-names.js';

export function checkTopicName(topic: string): void {
  const problem = topicNameProblem(topic);
  if (problem) throw new TableError(problem);
}

interface TableRow {
  table_id: bigint;
  table_name: string;
  topic: string;
  format: TableFormat;
  /** As stored: read once, by storedSettings, into the record's typed settings. */
  settings: unknown;
  created_at: Date;
  topic_id: string | null;
}

/** The columns of lake_table a TableRecord is made of. */
export const tableColumns = 'table_id, table_name, topic, format, settings, created_at, topic_id';

/**
 * A row as a TableRecord, its settings parsed once (storedSettings). A row whose settings
 * cannot be read is still listed, so that one such table stops no other: reading its
 * `settings` throws the StoredSettingError that says why, wherever the table is used
 * (`unreadableSettings`, src/table/record.ts, asks without throwing).
 */
export function toRecord(row: TableRow): TableRecord {
  const record = { tableId: row.table_id, name: row.table_name, topic: row.topic, format: row.format, createdAt: row.created_at, topicId: row.topic_id };
  try {
    return { ...record, settings: storedSettings(row.table_name, row.settings) };
  } catch (error) {
    if (!(error instanceof StoredSettingError)) throw error;
    return Object.defineProperty(record, 'settings', { enumerable: true, get: (): never => { throw error; } }) as TableRecord;
  }
}

/**
 * Adds the table, its partitions and its first (empty) table-schema version in one
 * transaction; `alsoIn` adds what belongs to the new table in the same one (its inline indexes).
 */
export async function createTable(catalog: Catalog, table: NewTable, initialSchema: TableSchema, alsoIn?: (client: CatalogClient, table: TableRecord) => Promise<void>): Promise<TableRecord> {
  checkTableName(table.name);
  checkTopicName(table.topic);
  return inTransaction(catalog, async (client) => {
    const inserted = await client.query<TableRow>(
      `INSERT INTO offsetlake.lake_table (table_name, topic, format, settings, topic_id) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (table_name) WHERE dropped_at IS NULL DO NOTHING
       RETURNING ${tableColumns}`,
      [table.name, table.topic, table.format, JSON.stringify(table.settings), table.topicId],
    );
    const row = inserted.rows[0];
    if (!row) throw new TableError(`table "${table.name}" already exists`);
    await client.query('INSERT INTO offsetlake.table_schema (table_id, schema_version, schema) VALUES ($1, 1, $2)', [row.table_id, JSON.stringify(initialSchema)]);
    const columns = catalogColumns(initialSchema);
    await client.query(
      `INSERT INTO offsetlake.table_column (table_id, column_id, column_name, column_type, column_order, parent_column, nulls_allowed, begin_schema_version)
       SELECT $1, id, name, type, ord, parent, nullable, 1
       FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::int[], $7::bool[]) AS c(id, name, type, ord, parent, nullable)`,
      [row.table_id, columns.map((c) => c.id), columns.map((c) => c.name), columns.map((c) => c.type), columns.map((_, i) => i), columns.map((c) => c.parent), columns.map((c) => c.nullable)],
    );
    await addPartitions(client, row.table_id, table.partitionStarts);
    if (alsoIn) await alsoIn(client, toRecord(row));
    return toRecord(row);
  });
}

/** Adds partitions not yet known, each with an empty indexed range at its start; known ones are left alone. */
export async function addPartitions(client: CatalogClient | Catalog, tableId: bigint, starts: ReadonlyMap<number, bigint>): Promise<number[]> {
  if (starts.size === 0) return [];
  const ids = [...starts.keys()];
  const offsets = ids.map((id) => String(starts.get(id)));
  const added = await client.query<{ partition_id: number }>(
    `INSERT INTO offsetlake.lake_partition (table_id, partition_id, indexed_start, indexed_end)
     SELECT $1, p, o, o FROM unnest($2::int[], $3::bigint[]) AS s(p, o)
     ON CONFLICT DO NOTHING RETURNING partition_id`,
    [tableId, ids, offsets],
  );
  return added.rows.map((row) => row.partition_id).sort((a, b) => a - b);
}

export async function listTables(catalog: Catalog): Promise<TableRecord[]> {
  const result = await catalog.query<TableRow>(
    `SELECT ${tableColumns} FROM offsetlake.lake_table WHERE dropped_at IS NULL ORDER BY table_name`,
  );
  return result.rows.map(toRecord);
}

export async function findTable(catalog: Catalog | CatalogClient, name: string): Promise<TableRecord> {
  checkTableName(name);
  const result = await catalog.query<TableRow>(
    `SELECT ${tableColumns} FROM offsetlake.lake_table WHERE table_name = $1 AND dropped_at IS NULL`,
    [name],
  );
  const row = result.rows[0];
  if (!row) throw new TableError(`no table named "${name}"`);
  return toRecord(row);
}

/** A live table by its id (jobs such as backfill carry the id across steps). */
export async function findTableById(catalog: Catalog | CatalogClient, tableId: bigint): Promise<TableRecord> {
  const result = await catalog.query<TableRow>(
    `SELECT ${tableColumns} FROM offsetlake.lake_table WHERE table_id = $1 AND dropped_at IS NULL`,
    [tableId],
  );
  const row = result.rows[0];
  if (!row) throw new TableError(`no live table with id ${tableId}`);
  return toRecord(row);
}

/** Marks the table dropped: it leaves `table list` and indexing; its catalog rows stay as history. */
export async function dropTable(catalog: Catalog, name: string, options: { ifExists?: boolean } = {}): Promise<boolean> {
  const result = await catalog.query(
    `UPDATE offsetlake.lake_table SET dropped_at = now() WHERE table_name = $1 AND dropped_at IS NULL`,
    [name],
  );
  if (result.rowCount === 0 && !options.ifExists) throw new TableError(`no table named "${name}"`);
  // Its files stay as history; its secondary indexes are derived state no read can use any more.
  await catalog.query('DELETE FROM offsetlake.secondary_index WHERE table_id IN (SELECT table_id FROM offsetlake.lake_table WHERE table_name = $1 AND dropped_at IS NOT NULL)', [name]);
  return (result.rowCount ?? 0) > 0;
}

/** A table made before catalog version 9 takes the id its topic has now, once (table-topic/topic-identity.ts). */
export async function adoptTopicId(catalog: Catalog | CatalogClient, tableId: bigint, topicId: string): Promise<void> {
  await catalog.query('UPDATE offsetlake.lake_table SET topic_id = $2 WHERE table_id = $1 AND topic_id IS NULL', [tableId, topicId]);
}

/** The live tables over `topic`, oldest first: what an MSK delivery of the topic indexes. */
export async function tablesOfTopic(catalog: Catalog, topic: string): Promise<TableRecord[]> {
  const result = await catalog.query<TableRow>(`SELECT ${tableColumns} FROM offsetlake.lake_table WHERE topic = $1 AND dropped_at IS NULL ORDER BY table_id`, [topic]);
  return result.rows.map(toRecord);
}

/** The table's uuid (Iceberg's table-uuid). */
export async function tableUuid(catalog: Catalog | CatalogClient, tableId: bigint): Promise<string> {
  const result = await catalog.query<{ table_uuid: string }>('SELECT table_uuid::text FROM offsetlake.lake_table WHERE table_id = $1', [tableId]);
  return result.rows[0]!.table_uuid;
}
