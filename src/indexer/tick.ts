/**
 * The idle tick: the age trigger must fire even when no new record arrives. In one
 * long-lived process the runner ticks its own indexers; serverless, the open range
 * lives in some Lambda instance that may never run again, so a scheduled tick looks in
 * the catalog for open ranges that are due (each holder reports its open range and when
 * it was first read) and free to take, re-reads them from `indexed_end`, and seals them.
 */
import { advanceTablePartition, isFailure, type IndexerRuntime, type IndexingFailure, type PartitionOutcome } from './handler.js';
import { listTables } from '../catalog/tables.js';
import { unreadableSettings } from '../table/record.js';
import { partitionsDueForAge } from '../catalog/partitions.js';

/** A partition the tick could not seal, and why. */
export type TickFailure = IndexingFailure;

/** One partition's failure is its own: recorded on it (status shows it), and the others go on. */
export async function tickIdlePartitions(runtime: IndexerRuntime): Promise<(PartitionOutcome | TickFailure)[]> {
  // A table whose stored settings cannot be read has no file_age: the runner and the delivery say why it waits.
  const tables = new Map((await listTables(runtime.catalog)).filter((table) => !unreadableSettings(table)).map((table) => [table.tableId, table]));
  const now = runtime.clock();
  const due = await partitionsDueForAge(runtime.catalog, new Map([...tables.values()].map((table) => [table.tableId, now - table.settings.file_age])));
  const outcomes: (PartitionOutcome | TickFailure)[] = [];
  for (const row of due) {
    const table = tables.get(row.table_id)!;
    const outcome = await advanceTablePartition(runtime, table, row.partition_id);
    if (outcome === undefined) continue;
    if (isFailure(outcome)) outcomes.push(outcome);
    else {
      const { recordsRead: _r, bytesRead: _b, ...partition } = outcome;
      outcomes.push(partition);
    }
  }
  return outcomes;
}
