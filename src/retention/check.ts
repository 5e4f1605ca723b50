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
import { expireFilesBelow, partitionsDueForRetention } from '../catalog/retention.js';
import { findTable, listTables } from '../catalog/tables.js';
import { type TableRecord } from '../table/record.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { earliestOffsets } from '../kafka/offsets.js';
import { checkedTopic } from '../table-topic/topic-identity.js';

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
  const partitions = await partitionsDueForRetention(catalog, table, dueOnly);
  if (partitions.length === 0) return [];
  const earliest = await earliestOffsets(kafka, partitions.map((partition) => ({ topic: table.topic, partition })));
  const checked: PartitionRetention[] = [];
  for (const [i, partition] of partitions.entries()) {
    const row = await expireFilesBelow(catalog, table.tableId, partition, earliest[i]!);
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
