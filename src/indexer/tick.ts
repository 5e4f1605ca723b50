/**
 * The idle tick: the age trigger must fire even when no new record arrives. In one
 * long-lived process the runner ticks its own indexers; serverless, the open range
 * lives in some Lambda instance that may never run again, so a scheduled tick looks in
 * the catalog for open ranges that are due (each holder reports its open range and when
 * it was first read) and free to take, re-reads them from `indexed_end`, and seals them.
 */
import { tablesOfTopic, indexerFor, type IndexerRuntime, type PartitionOutcome } from './handler.js';

interface DueRow {
  topic: string;
  table_id: bigint;
  partition_id: number;
}

export async function tickIdlePartitions(runtime: IndexerRuntime): Promise<PartitionOutcome[]> {
  const due = await runtime.catalog.query<DueRow>(
    `SELECT t.topic, t.table_id, p.partition_id
     FROM lake_partition p JOIN lake_table t USING (table_id)
     WHERE t.dropped_at IS NULL AND p.open_range_records > 0
       AND p.open_range_since <= to_timestamp(($1::double precision - (t.settings->>'file_window')::double precision) / 1000)
       AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= now())
     ORDER BY t.table_id, p.partition_id`,
    [runtime.clock()],
  );
  const outcomes: PartitionOutcome[] = [];
  for (const row of due.rows) {
    const table = (await tablesOfTopic(runtime.catalog, row.topic)).find((t) => t.tableId === row.table_id);
    if (!table) continue;
    const indexer = await indexerFor(runtime, table, row.partition_id);
    try {
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
    } finally {
      if (runtime.releaseAfterEvent) await indexer.release().catch(() => {});
    }
  }
  return outcomes;
}
