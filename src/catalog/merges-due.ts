/**
 * Which partitions of a table may have merges due (issue 49, the scheduled compactor):
 * one query over the table's live files, so that a run plans only those partitions. It
 * asks what every merge the plan (src/compaction/plan.ts) can name needs: at least
 * `merge_files` live files in one young bucket, or at least two in one aged bucket. A
 * partition it names may still have nothing to merge (its files not consecutive, of other
 * tiers, too large together); one it leaves out has none.
 */
import type { Catalog } from './db.js';
import { liveFile } from './live-files.js';

export interface MergeDueQuery {
  /** `merge_files` (N ≥ 2). */
  mergeFiles: number;
  /** A bucket that starts at or before this (epoch ms) has aged: it ended `merge_after` ago or more. */
  agedFrom: number;
}

/** The partitions of `tableId` with N live files in a young bucket or two in an aged one, in partition order. */
export async function partitionsWithMergesDue(catalog: Catalog, tableId: bigint, query: MergeDueQuery): Promise<number[]> {
  const result = await catalog.query<{ partition_id: number }>(
    `SELECT DISTINCT f.partition_id
     FROM offsetlake.data_file f
     WHERE f.table_id = $1 AND ${liveFile('f')}
     GROUP BY f.partition_id, f.time_bucket
     HAVING count(*) >= CASE WHEN f.time_bucket <= to_timestamp($3::double precision / 1000) THEN 2 ELSE $2::int END
     ORDER BY f.partition_id`,
    [tableId, query.mergeFiles, query.agedFrom],
  );
  return result.rows.map((row) => Number(row.partition_id));
}
