/**
 * The indexer's entry for a Kafka event (MSK or self-managed, as a Lambda event source
 * mapping delivers it, or as the local emulator does). The event says which partitions
 * have new records, how far they go and about how many bytes they are; the records
 * themselves are read again from Kafka with read_committed, because the event cannot tell
 * an aborted record from a committed one, nor vouch for its bytes (README, "MSK handler:
 * the second read"). Redelivered, overlapping and gapped events all end the same way:
 * each partition is read from its `indexed_end` up to the event's last offset.
 *
 * Throws (so the whole batch is retried) when a partition is leased by another indexer
 * or the catalog cannot be reached: success is only returned for records that are
 * committed or can be read again from `indexed_end`. A table whose topic was deleted and
 * created again is passed over (its partition says why it waits): no retry would help.
 */
import type { Catalog } from '../catalog/db.js';
import { addPartitions, tableColumns, toRecord, type TableRecord } from '../catalog/tables.js';
import { parseKafkaEvent } from '../events/msk.js';
import { PartitionIndexer, type PartitionIndexerDeps } from './partition.js';
import { TopicRecreatedError } from '../kafka/errors.js';

export interface IndexerRuntime extends PartitionIndexerDeps {
  /** Warm state: one indexer per table partition, kept across events. */
  indexers: Map<string, PartitionIndexer>;
  /** Lambda: release leases after each event so any instance can take the next batch. */
  releaseAfterEvent: boolean;
}

export interface PartitionOutcome {
  table: string;
  topic: string;
  partition: number;
  indexedEnd: string;
  position: string;
  filesCommitted: number;
  rangesCommitted: number;
}

export async function tablesOfTopic(catalog: Catalog, topic: string): Promise<TableRecord[]> {
  const result = await catalog.query<Parameters<typeof toRecord>[0]>(`SELECT ${tableColumns} FROM offsetlake.lake_table WHERE topic = $1 AND dropped_at IS NULL ORDER BY table_id`, [topic]);
  return result.rows.map(toRecord);
}

/**
 * The warm indexer of a table partition, made on first use. A partition the catalog has
 * not seen yet (added to the topic later) is added with its indexed range at its LSO.
 */
export async function indexerFor(runtime: IndexerRuntime, table: TableRecord, partition: number): Promise<PartitionIndexer> {
  const key = `${table.tableId}/${partition}`;
  let indexer = runtime.indexers.get(key);
  if (!indexer) {
    const lso = await runtime.source.lastStableOffset(table.topic, partition);
    await addPartitions(runtime.catalog, table.tableId, new Map([[partition, lso]]));
    indexer = new PartitionIndexer(table, partition, runtime);
    runtime.indexers.set(key, indexer);
  }
  return indexer;
}

export async function handleKafkaEvent(event: unknown, runtime: IndexerRuntime): Promise<PartitionOutcome[]> {
  const batches = parseKafkaEvent(event);
  const outcomes: PartitionOutcome[] = [];
  const touched: PartitionIndexer[] = [];
  try {
    for (const batch of batches) {
      for (const table of await tablesOfTopic(runtime.catalog, batch.topic)) {
        const indexer = await indexerFor(runtime, table, batch.partition);
        touched.push(indexer);
        let result;
        try {
          result = await indexer.advance(batch.lastOffset + 1n, batch.records);
        } catch (error) {
          // A table made on an earlier topic of this name waits (its partition says why) and
          // no retry would change that; the event goes on for the tables of this topic.
          if (error instanceof TopicRecreatedError && error.since) continue;
          throw error;
        }
        outcomes.push({
          table: table.name,
          topic: batch.topic,
          partition: batch.partition,
          indexedEnd: result.indexedEnd.toString(),
          position: result.position.toString(),
          rangesCommitted: result.committed.length,
          filesCommitted: result.committed.reduce((sum, range) => sum + range.files.length, 0),
        });
      }
    }
  } finally {
    if (runtime.releaseAfterEvent) await Promise.allSettled(touched.map((indexer) => indexer.release()));
  }
  return outcomes;
}
