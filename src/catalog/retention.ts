/** The catalog's side of the retention check: which partitions are due, and the expiry of files Kafka no longer holds. */
import { inTransaction, type Catalog } from './db.js';
import { liveFile } from './live-files.js';
import type { TableRecord } from '../table/record.js';

/** A partition's indexed start and backfill plan. */
export interface Plan {
  indexed_start: bigint;
  backfill_target: bigint | null;
  backfill_cursor: bigint | null;
}

/** A partition after its files below Kafka's earliest offset expired: how many, and its plan before and after. */
export interface ExpiredBelow extends Plan {
  partition_id: number;
  expired: number;
  before: Plan;
}

/** The table's partitions to check: all, or (`dueOnly`) those last checked at least its retention_check ago. */
export async function partitionsDueForRetention(catalog: Catalog, table: Pick<TableRecord, 'tableId' | 'settings'>, dueOnly: boolean): Promise<number[]> {
  const due = await catalog.query<{ partition_id: number }>(
    `SELECT partition_id FROM offsetlake.lake_partition WHERE table_id = $1
       AND (NOT $2 OR earliest_checked_at IS NULL OR earliest_checked_at <= now() - make_interval(secs => $3::double precision / 1000))
     ORDER BY partition_id`,
    [table.tableId, dueOnly, table.settings.retention_check],
  );
  return due.rows.map((row) => row.partition_id);
}

/**
 * Expires the partition's files that start below `earliest` and moves its indexed_start
 * and backfill plan up, in one short transaction. The partition row is locked first
 * (FOR NO KEY UPDATE, as every commit does) so that no commit interleaves.
 */
export async function expireFilesBelow(catalog: Catalog, tableId: bigint, partition: number, earliest: bigint): Promise<ExpiredBelow> {
  return inTransaction(catalog, async (client) => {
    const before = await client.query<Plan>(
      'SELECT indexed_start, backfill_target, backfill_cursor FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2 FOR NO KEY UPDATE',
      [tableId, partition],
    );
    const expired = await client.query<{ data_file_id: bigint }>(
      `UPDATE offsetlake.data_file SET expired_at = now()
       WHERE table_id = $1 AND partition_id = $2 AND expired_at IS NULL AND start_offset < $3 RETURNING data_file_id`,
      [tableId, partition, earliest],
    );
    const count = expired.rowCount ?? 0;
    // An expired file can no longer be read, so its secondary index entries go with it.
    if (count > 0) await client.query('DELETE FROM offsetlake.index_entry WHERE data_file_id = ANY($1::bigint[])', [expired.rows.map((row) => row.data_file_id)]);
    const start = count === 0
      ? 'indexed_start'
      : `coalesce((SELECT min(start_offset) FROM offsetlake.data_file f WHERE f.table_id = $1 AND f.partition_id = $2 AND ${liveFile('f')}), indexed_end)`;
    const target = 'greatest(backfill_target, $3::bigint)';
    const updated = await client.query<Omit<ExpiredBelow, 'expired' | 'before'>>(
      `UPDATE offsetlake.lake_partition SET
         indexed_start = ${start},
         -- No plan (history none, or not planned yet) stays no plan: greatest() ignores NULLs.
         backfill_target = CASE WHEN backfill_target IS NULL THEN NULL ELSE ${target} END,
         backfill_cursor = CASE WHEN backfill_cursor IS NULL THEN NULL ${count === 0 ? `ELSE least(greatest(backfill_cursor, ${target}), ${start})` : `ELSE ${start}`} END,
         earliest_offset = $3, earliest_checked_at = now()
       WHERE table_id = $1 AND partition_id = $2
       RETURNING partition_id, indexed_start, backfill_target, backfill_cursor`,
      [tableId, partition, earliest],
    );
    return { ...updated.rows[0]!, expired: count, before: before.rows[0]! };
  });
}
