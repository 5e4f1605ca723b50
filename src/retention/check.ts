/**
 * Retention: Kafka deletes old offsets (retention.ms, retention.bytes, DeleteRecords);
 * a file whose range starts below the partition's earliest offset can no longer be
 * rebuilt. Each check reads every partition's earliest offset and, per partition in one
 * transaction:
 *   - marks those files expired (expired_at): they stay in the catalog as history and
 *     are counted in `status`, but leave listings, reads and rebuilds;
 *   - moves indexed_start up to the first file still live (indexed_end when none is):
 *     the live files keep tiling [indexed_start, indexed_end);
 *   - raises the backfill target to the earliest offset, so backfill never reads below
 *     it; when files expired, the cursor goes to the new indexed_start, so that a later
 *     backfill indexes again what Kafka still holds of the expired files (the tail of
 *     the one that straddled the earliest offset), and the indexed range can start at
 *     Kafka's earliest offset again;
 *   - records earliest_offset and earliest_checked_at.
 * A file that straddles the earliest offset expires whole (it cannot be rebuilt).
 */
import type { Catalog } from '../catalog/db.js';
import { inTransaction } from '../catalog/db.js';
import { findTable, listTables } from '../catalog/tables.js';
import { type TableRecord } from '../table/record.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { earliestOffsets } from '../kafka/offsets.js';
import { checkedTopic } from '../tables/topic-identity.js';

export interface PartitionRetention {
  table: string;
  partition: number;
  /** Kafka's earliest offset, as read now. */
  earliest: string;
  /** Files expired by this check. */
  expiredFiles: number;
  indexedStart: string;
  backfillTarget: string | null;
  backfillCursor: string | null;
  /** History is left to backfill (cursor above target), e.g. the tail of an expired file: a backfill run is due. */
  backfillDue: boolean;
  /** The plan as it was before this check, so that a caller can say what changed. */
  before: { indexedStart: string; backfillTarget: string | null; backfillCursor: string | null };
}

export interface RetentionResult {
  partitions: PartitionRetention[];
  /** Files expired by this check, over all partitions. */
  expiredFiles: number;
  /** Tables this check could not do (their topic gone, say): the others were done all the same. */
  failedTables: TableFailure[];
}

/** A table a job over all tables could not do, and why: one table never stops the others. */
export interface TableFailure {
  table: string;
  topic: string;
  step: 'retention' | 'discovery';
  reason: string;
}

/** `work` for each table in turn; a table that fails is recorded in `failed` and the next one goes on. */
export async function eachTable(tables: readonly TableRecord[], failed: TableFailure[], step: TableFailure['step'], work: (table: TableRecord) => Promise<void>): Promise<void> {
  for (const table of tables) {
    try {
      await work(table);
    } catch (error) {
      failed.push({ table: table.name, topic: table.topic, step, reason: (error as Error).message });
    }
  }
}

export interface RetentionOptions {
  /** One table; all tables when absent. */
  table?: string;
  /** Only partitions whose last check is at least the table's `retention_check` old (the schedule's mode). Default false: check all. */
  dueOnly?: boolean;
}

interface Plan {
  indexed_start: bigint;
  backfill_target: bigint | null;
  backfill_cursor: bigint | null;
}

interface Row extends Plan {
  partition_id: number;
  expired: number;
  before: Plan;
}

const text = (offset: bigint | null): string | null => (offset === null ? null : String(offset));

/** One check of every partition of one table or of all (see the module comment). */
export async function checkRetention(catalog: Catalog, kafka: KafkaConnection, options: RetentionOptions = {}): Promise<RetentionResult> {
  const tables = options.table === undefined ? await listTables(catalog) : [await findTable(catalog, options.table)];
  const result: RetentionResult = { partitions: [], expiredFiles: 0, failedTables: [] };
  await eachTable(tables, result.failedTables, 'retention', async (table) => {
    for (const partition of await checkTable(catalog, kafka, table, options.dueOnly ?? false)) {
      result.partitions.push(partition);
      result.expiredFiles += partition.expiredFiles;
    }
  });
  return result;
}

async function checkTable(catalog: Catalog, kafka: KafkaConnection, table: TableRecord, dueOnly: boolean): Promise<PartitionRetention[]> {
  // Another topic under the table's name: its earliest offsets say nothing of the table's files.
  await checkedTopic(catalog, kafka, table);
  const due = await catalog.query<{ partition_id: number }>(
    `SELECT partition_id FROM offsetlake.lake_partition WHERE table_id = $1
       AND (NOT $2 OR earliest_checked_at IS NULL OR earliest_checked_at <= now() - make_interval(secs => $3::double precision / 1000))
     ORDER BY partition_id`,
    [table.tableId, dueOnly, table.settings.retention_check],
  );
  const partitions = due.rows.map((row) => row.partition_id);
  if (partitions.length === 0) return [];
  const earliest = await earliestOffsets(kafka, partitions.map((partition) => ({ topic: table.topic, partition })));
  const checked: PartitionRetention[] = [];
  for (const [i, partition] of partitions.entries()) {
    const row = await expireBelow(catalog, table.tableId, partition, earliest[i]!);
    checked.push({
      table: table.name,
      partition,
      earliest: String(earliest[i]!),
      expiredFiles: row.expired,
      indexedStart: String(row.indexed_start),
      backfillTarget: text(row.backfill_target),
      backfillCursor: text(row.backfill_cursor),
      backfillDue: row.backfill_cursor !== null && row.backfill_target !== null && row.backfill_cursor > row.backfill_target,
      before: { indexedStart: String(row.before.indexed_start), backfillTarget: text(row.before.backfill_target), backfillCursor: text(row.before.backfill_cursor) },
    });
  }
  return checked;
}

/**
 * Expires the partition's files that start below `earliest` and moves its indexed_start
 * and backfill plan up, in one short transaction. The partition row is locked first
 * (FOR NO KEY UPDATE, as every commit does) so that no commit interleaves.
 */
async function expireBelow(catalog: Catalog, tableId: bigint, partition: number, earliest: bigint): Promise<Row> {
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
      : `coalesce((SELECT min(start_offset) FROM offsetlake.data_file f WHERE f.table_id = $1 AND f.partition_id = $2 AND f.expired_at IS NULL), indexed_end)`;
    const target = 'greatest(backfill_target, $3::bigint)';
    const updated = await client.query<Omit<Row, 'expired' | 'before'>>(
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
