/** The catalog's side of `status`: per partition of every live table, what is indexed, held, leased, expired and lost. */
import type { Catalog } from './db.js';

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
            (SELECT count(*) FROM offsetlake.data_file f WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND f.expired_at IS NULL) AS files,
            (SELECT count(*) FROM offsetlake.data_file f WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND f.expired_at IS NOT NULL) AS expired_files,
            (SELECT coalesce(sum(s.value_count - s.null_count), 0)::bigint
               FROM offsetlake.data_file f JOIN offsetlake.file_column_stats s USING (data_file_id)
               JOIN offsetlake.table_column c ON c.table_id = f.table_id AND c.column_id = s.column_id AND c.column_name = '_error' AND c.parent_column IS NULL
                 AND c.begin_schema_version <= f.schema_version AND (c.end_schema_version IS NULL OR c.end_schema_version > f.schema_version)
              WHERE f.table_id = p.table_id AND f.partition_id = p.partition_id AND f.expired_at IS NULL) AS error_rows,
            (SELECT coalesce(sum(l.end_offset - l.start_offset), 0)::text FROM offsetlake.lost_interval l
              WHERE l.table_id = p.table_id AND l.partition_id = p.partition_id) AS lost_offsets
     FROM offsetlake.lake_partition p JOIN offsetlake.lake_table t USING (table_id)
     WHERE t.dropped_at IS NULL AND ($1::text IS NULL OR t.table_name = $1)
     ORDER BY t.table_name, p.partition_id`,
    [tableName ?? null],
  );
  return result.rows;
}
