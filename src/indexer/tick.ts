/**
 * The idle tick: the age trigger must fire even when no new record arrives. In one
 * long-lived process the runner ticks its own indexers; serverless, the open range
 * lives in some Lambda instance that may never run again, so a scheduled tick looks in
 * the catalog for open ranges that are due (each holder reports its open range and when
 * it was first read) and free to take, re-reads them from `indexed_end`, and seals them.
 */
import { indexerFor, type IndexerRuntime, type PartitionOutcome } from './handler.js';
import { tablesOfTopic } from '../catalog/tables.js';
import { partitionsDueForAge } from '../catalog/partitions.js';
import { setWaitingReason } from '../catalog/leases.js';
import type { PartitionIndexer } from './partition.js';


/** A partition the tick could not seal, and why. */
export interface TickFailure {
  table: string;
  topic: string;
  partition: number;
  error: string;
}

/** One partition's failure is its own: recorded on it (status shows it), and the others go on. */
export async function tickIdlePartitions(runtime: IndexerRuntime): Promise<(PartitionOutcome | TickFailure)[]> {
  const due = await partitionsDueForAge(runtime.catalog, runtime.clock());
  const outcomes: (PartitionOutcome | TickFailure)[] = [];
  for (const row of due) {
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
