/**
 * The idle tick: the age trigger must fire even when no new record arrives. In one
 * long-lived process the runner ticks its own indexers; serverless, the open range
 * lives in some Lambda instance that may never run again, so a scheduled tick looks in
 * the catalog for open ranges that are due (each holder reports its open range and when
 * it was first read) and free to take, re-reads them from `indexed_end`, and seals them.
 */
import { tablesOfTopic, indexerFor, type IndexerRuntime, type PartitionOutcome } from './handler.js';
import { setWaitingReason } from '../catalog/leases.js';
import type { PartitionIndexer } from './partition.js';

interface DueRow {
  topic: string;
  table_id: bigint;
  partition_id: number;
}

/** A partition the tick could not seal, and why. */
export interface TickFailure {
  table: string;
  topic: string;
  partition: number;
  error: string;
}

/** One partition's failure is its own: recorded on it (status shows it), and the others go on. */
export async function tickIdlePartitions(runtime: IndexerRuntime): Promise<(PartitionOutcome | TickFailure)[]> {
  const due = await runtime.catalog.query<DueRow>(
    `SELECT t.topic, t.table_id, p.partition_id
     FROM offsetlake.lake_partition p JOIN offsetlake.lake_table t USING (table_id)
     WHERE t.dropped_at IS NULL AND p.open_range_records > 0
       AND p.open_range_since <= to_timestamp(($1::double precision - (t.settings->>'file_window')::double precision) / 1000)
       AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= now())
     ORDER BY t.table_id, p.partition_id`,
    [runtime.clock()],
  );
  const outcomes: (PartitionOutcome | TickFailure)[] = [];
  for (const row of due.rows) {
    const table = (await tablesOfTopic(runtime.catalog, row.topic)).find((t) => t.tableId === row.table_id);
    if (!table) continue;
    let indexer: PartitionIndexer | undefined;
    try {
      indexer = await indexerFor(runtime, table, row.partition_id);
      const result = await indexer.advance();
      outcomes.push({
        table: table.name,
        topic: table.topic,
        partition: row.partition_id,
        indexedEnd: result.indexedEnd.toString(),
        position: result.position.toString(),
        rangesCommitted: result.committed.length,
        filesCommitted: result.committed.reduce((sum, range) => sum + range.files.length, 0),
      });
    } catch (error) {
      if (indexer) await indexer.noteFailure(error);
      else await setWaitingReason(runtime.catalog, table.tableId, row.partition_id, `indexing failed, retrying: ${(error as Error).message}`, { owner: runtime.owner }).catch(() => {});
      outcomes.push({ table: table.name, topic: table.topic, partition: row.partition_id, error: (error as Error).message });
    } finally {
      if (runtime.releaseAfterEvent) await indexer?.release().catch(() => {});
    }
  }
  return outcomes;
}
