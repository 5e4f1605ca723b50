/**
 * The indexer's entry for partition deliveries: a Kafka event (MSK or self-managed, as a
 * Lambda event source mapping delivers it: `handleKafkaEvent`), or the local runner's
 * emulated event source (`indexPartitions`, in process, without records). A delivery says
 * which partition has new records and how far they go; the records themselves are read
 * from Kafka with read_committed. An event's own records only size those Fetches: the
 * event cannot tell an aborted record from a committed one, nor vouch for its bytes
 * (docs/measurements.md, "MSK handler: the second read"). Redelivered, overlapping and gapped events
 * all end the same way: each partition is read from its position (`indexed_end`, or the
 * end of what it holds) up to the delivery's end.
 *
 * Throws (so the whole batch is retried) when a partition is leased by another indexer
 * or the catalog cannot be reached: success is only returned for records that are
 * committed or can be read again from `indexed_end`. A table whose topic was deleted and
 * created again is passed over (its partition says why it waits): no retry would help.
 */
import { addPartitions, tablesOfTopic } from '../catalog/tables.js';
import { type TableRecord } from '../table/record.js';
import { parseKafkaEvent } from '../events/msk.js';
import { PartitionIndexer, type PartitionIndexerDeps } from './partition.js';
import { TopicRecreatedError } from '../kafka/errors.js';
import type { KafkaRecord } from '../kafka/record.js';
import type { ReadLimit } from '../kafka/read.js';

export interface IndexerRuntime extends PartitionIndexerDeps {
  /** Warm state: one indexer per table partition, kept across events. */
  indexers: Map<string, PartitionIndexer>;
  /** Lambda: release leases after each event so any instance can take the next batch. */
  releaseAfterEvent: boolean;
}

/** One partition's part of a delivery: it has committed records up to `until`. */
export interface PartitionDelivery {
  topic: string;
  partition: number;
  /** Each table's indexer reads from its position up to here (exclusive), and never past the LSO. */
  until: bigint;
  /** An event's records of the span (its last one is `until - 1`): they only size the Fetches. */
  expected?: readonly KafkaRecord[];
  /** Each indexer stops after the Fetch that brings this many records or bytes (src/kafka/read.ts `stopAfter`). */
  stopAfter?: ReadLimit;
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

export interface DeliveryOutcome extends PartitionOutcome {
  /** Committed records (and their bytes) this delivery read from Kafka for this table. */
  recordsRead: number;
  bytesRead: number;
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

/** A Kafka event, as a Lambda event source mapping delivers it: each partition's span is read again committed, up to its last record. */
export async function handleKafkaEvent(event: unknown, runtime: IndexerRuntime): Promise<PartitionOutcome[]> {
  const deliveries = parseKafkaEvent(event).map((batch): PartitionDelivery => ({ topic: batch.topic, partition: batch.partition, until: batch.lastOffset + 1n, expected: batch.records }));
  return (await indexPartitions(deliveries, runtime)).map(({ recordsRead: _r, bytesRead: _b, ...outcome }) => outcome);
}

/** The handler proper: every table of each delivery's topic advances its partition to the delivery's end. */
export async function indexPartitions(deliveries: readonly PartitionDelivery[], runtime: IndexerRuntime): Promise<DeliveryOutcome[]> {
  const outcomes: DeliveryOutcome[] = [];
  const touched: PartitionIndexer[] = [];
  try {
    for (const batch of deliveries) {
      for (const table of await tablesOfTopic(runtime.catalog, batch.topic)) {
        const indexer = await indexerFor(runtime, table, batch.partition);
        touched.push(indexer);
        let result;
        try {
          result = await indexer.advance(batch.until, { ...(batch.expected ? { expected: batch.expected } : {}), ...(batch.stopAfter ? { stopAfter: batch.stopAfter } : {}) });
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
          recordsRead: result.read.records,
          bytesRead: result.read.bytes,
        });
      }
    }
  } finally {
    if (runtime.releaseAfterEvent) await Promise.allSettled(touched.map((indexer) => indexer.release()));
  }
  return outcomes;
}
