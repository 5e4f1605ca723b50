/** The catalog's side of `status`: per partition of every live table, what is indexed, held, leased, expired and lost. */
import { liveFile } from './live-files.js';
import type { Catalog, CatalogClient } from './db.js';

export interface PartitionRow {
  table_name: string;
  topic: string;
  topic_id: string | null;
  partition_id: number;
  indexed_start: bigint;
  indexed_end: bigint;
  lease_owner: string | null;
  lease_epoch: bigint;
  lease_live: boolean;
  open_range_bytes: bigint;
  open_range_records: bigint;
  open_range_since: Date | null;
  waiting_reason: string | null;
  files: bigint;
  expired_files: bigint;
  error_rows: bigint;
  backfill_cursor: bigint | null;
  backfill_target: bigint | null;
  earliest_offset: bigint | null;
  lost_offsets: string;
}

/** Every partition of the live tables (or of one), by table name and partition. */
export async function partitionRows(catalog: Catalog, tableName?: string): Promise<PartitionRow[]> {
  const result = await catalog.query<PartitionRow>(
    `SELECT t.table_name, t.topic, t.topic_id, p.partition_id, p.indexed_start, p.indexed_end, p.lease_owner, p.lease_epoch,
            coalesce(p.lease_expires_at > now(), false) AS lease_live, p.open_range_bytes, p.open_range_records,
            p.open_range_since, p.waiting_reason, p.backfill_cursor, p.backfill_target, p.earliest_offset,
            (SELECT count(*) FROM offsetlake.data_file f WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND ${liveFile('f')}) AS files,
            (SELECT count(*) FROM offsetlake.data_file f WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND f.expired_at IS NOT NULL) AS expired_files,
            (SELECT coalesce(sum(s.value_count - s.null_count), 0)::bigint
               FROM offsetlake.data_file f JOIN offsetlake.file_column_stats s USING (data_file_id)
               JOIN offsetlake.table_column c ON c.table_id = f.table_id AND c.column_id = s.column_id AND c.column_name = '_error' AND c.parent_column IS NULL
                 AND c.begin_schema_version <= f.schema_version AND (c.end_schema_version IS NULL OR c.end_schema_version > f.schema_version)
              WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND ${liveFile('f')}) AS error_rows,
            (SELECT coalesce(sum(l.end_offset - l.start_offset), 0)::text FROM offsetlake.lost_interval l
              WHERE l.table_id = p.table_id AND l.partition_id = p.partition_id) AS lost_offsets
     FROM offsetlake.lake_partition p JOIN offsetlake.lake_table t USING (table_id)
     WHERE t.dropped_at IS NULL AND ($1::text IS NULL OR t.table_name = $1)
     ORDER BY t.table_name, p.partition_id`,
    [tableName ?? null],
  );
  return result.rows;
}

/**
 * Partitions whose open range has waited its table's file_window by `nowMs` and whose lease
 * has lapsed (no delivery holds them): the idle tick seals them.
 */
export async function partitionsDueForAge(catalog: Catalog, nowMs: number): Promise<{ topic: string; table_id: bigint; partition_id: number }[]> {
  const due = await catalog.query<{ topic: string; table_id: bigint; partition_id: number }>(
    `SELECT t.topic, t.table_id, p.partition_id
     FROM offsetlake.lake_partition p JOIN offsetlake.lake_table t USING (table_id)
     WHERE t.dropped_at IS NULL AND p.open_range_records > 0
       AND p.open_range_since <= to_timestamp(($1::double precision - (t.settings->>'file_window')::double precision) / 1000)
       AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= now())
     ORDER BY t.table_id, p.partition_id`,
    [nowMs],
  );
  return due.rows;
}

/** The table's partitions, and whether each has a backfill plan (a cursor). */
export async function partitionPlans(catalog: Catalog | CatalogClient, tableId: bigint): Promise<{ partition: number; planned: boolean }[]> {
  const result = await catalog.query<{ partition_id: number; planned: boolean }>(
    'SELECT partition_id, backfill_cursor IS NOT NULL AS planned FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id',
    [tableId],
  );
  return result.rows.map((row) => ({ partition: row.partition_id, planned: row.planned }));
}

/** Each partition's indexed end (where its files stop), by partition. */
export async function indexedEnds(catalog: Catalog | CatalogClient, tableId: bigint): Promise<{ partition: number; indexedEnd: bigint }[]> {
  const result = await catalog.query<{ partition_id: number; indexed_end: bigint }>(
    'SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id',
    [tableId],
  );
  return result.rows.map((row) => ({ partition: row.partition_id, indexedEnd: BigInt(row.indexed_end) }));
}
