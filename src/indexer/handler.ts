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
 * Each table partition of a delivery is advanced on its own. When one fails (leased by
 * another indexer, the catalog or Kafka failing, a broken table), the others are still
 * indexed and committed, and then DeliveryFailedError, naming every failure, is thrown so
 * the whole batch is retried: success is only returned for records that are committed or
 * can be read again from `indexed_end`, and on the retry the committed ones read nothing
 * new. A table whose topic was deleted and created again is passed over (its partition
 * says why it waits): no retry would help.
 */
import { addPartitions, tablesOfTopic } from '../catalog/tables.js';
import type { Catalog } from '../catalog/db.js';
import { postgresIndexingCatalog, type IndexingCatalog } from '../catalog/indexing-calls.js';
import { unreadableSettings, type TableRecord } from '../table/record.js';
import { parseKafkaEvent } from './kafka-event.js';
import { PartitionIndexer, type AdvanceOptions, type PartitionIndexerDeps } from './partition.js';
import { TopicRecreatedError } from '../kafka/errors.js';
import type { KafkaRecord } from '../kafka/record.js';
import type { ReadLimit } from '../kafka/read.js';

export interface IndexerRuntime extends Omit<PartitionIndexerDeps, 'indexingCatalog'> {
  catalog: Catalog;
  /** The indexers' catalog calls; unset: Postgres's on `catalog` (set on first use). */
  indexingCatalog?: IndexingCatalog;
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
    indexer = new PartitionIndexer(table, partition, withIndexingCatalog(runtime));
    runtime.indexers.set(key, indexer);
  }
  return indexer;
}

/** The runtime itself (its fields are read at each call), its indexing catalog set. */
function withIndexingCatalog(runtime: IndexerRuntime): IndexerRuntime & PartitionIndexerDeps {
  runtime.indexingCatalog ??= postgresIndexingCatalog(runtime.catalog);
  return runtime as IndexerRuntime & PartitionIndexerDeps;
}

/** A Kafka event, as a Lambda event source mapping delivers it: each partition's span is read again committed, up to its last record. */
export async function handleKafkaEvent(event: unknown, runtime: IndexerRuntime): Promise<PartitionOutcome[]> {
  const deliveries = parseKafkaEvent(event).map((batch): PartitionDelivery => ({ topic: batch.topic, partition: batch.partition, until: batch.lastOffset + 1n, expected: batch.records }));
  return (await indexPartitions(deliveries, runtime)).map(({ recordsRead: _r, bytesRead: _b, ...outcome }) => outcome);
}

/** A table partition that could not be advanced, and why (also its `waiting_reason`, which `status` shows). */
export interface IndexingFailure {
  table: string;
  topic: string;
  partition: number;
  error: string;
  /** The error itself, with its causes; not enumerable, so an outcome's JSON leaves it out. */
  readonly cause?: unknown;
}

function failure(table: string, topic: string, partition: number, error: unknown): IndexingFailure {
  const failed: IndexingFailure = { table, topic, partition, error: (error as Error).message };
  return Object.defineProperty(failed, 'cause', { value: error, enumerable: false });
}

/**
 * Some table partitions of a delivery failed; every other one was advanced and committed
 * (`outcomes`) before this was thrown. Thrown so the batch is delivered again: what was
 * committed is then read from `indexed_end` and is nothing new, the failed ones are retried.
 */
export class DeliveryFailedError extends AggregateError {
  override name = 'DeliveryFailedError';
  constructor(readonly failures: readonly IndexingFailure[], readonly outcomes: readonly DeliveryOutcome[]) {
    // `errors`: each failure's own error, with its causes (a Kafka client's, say), for logs.
    super(failures.map((f) => f.cause ?? new Error(f.error)), `indexing failed for ${failures.length} table partition${failures.length === 1 ? '' : 's'} (${outcomes.length} other${outcomes.length === 1 ? '' : 's'} committed; the batch will be delivered again): ${failures.map((f) => `table ${f.table} (topic ${f.topic} partition ${f.partition}): ${f.error}`).join('; ')}`);
  }
}

/**
 * One table partition advanced on its own: its failure is written on it (`status` says
 * why it waits) and returned, never thrown, so the others go on. `undefined`: a table made
 * on an earlier topic of this name, which waits (its partition says why) and no retry helps.
 */
export async function advanceTablePartition(runtime: IndexerRuntime, table: TableRecord, partition: number, until?: bigint, options: AdvanceOptions = {}): Promise<DeliveryOutcome | IndexingFailure | undefined> {
  let indexer: PartitionIndexer | undefined;
  try {
    // A table whose stored settings cannot be read gets no indexer: it fails here, in our words.
    const unreadable = unreadableSettings(table);
    if (unreadable) throw unreadable;
    indexer = await indexerFor(runtime, table, partition);
    const result = await indexer.advance(until, options);
    return {
      table: table.name,
      topic: table.topic,
      partition,
      indexedEnd: result.indexedEnd.toString(),
      position: result.position.toString(),
      rangesCommitted: result.committed.length,
      filesCommitted: result.committed.reduce((sum, range) => sum + range.files.length, 0),
      recordsRead: result.read.records,
      bytesRead: result.read.bytes,
    };
  } catch (error) {
    if (error instanceof TopicRecreatedError && error.since) return undefined;
    if (indexer) await indexer.noteFailure(error);
    else await withIndexingCatalog(runtime).indexingCatalog.setWaitingReason(table.tableId, partition, `indexing failed, retrying: ${(error as Error).message}`, { owner: runtime.owner }).catch(() => {});
    // A Lambda instance hands its leases back after each event: what it kept of a failed
    // partition is worth nothing, and the retry must start from the catalog, the table's
    // row read again (a repaired table is then indexed by a warm instance too).
    if (indexer && runtime.releaseAfterEvent) runtime.indexers.delete(indexer.key);
    return failure(table.name, table.topic, partition, error);
  } finally {
    if (runtime.releaseAfterEvent) await indexer?.release().catch(() => {});
  }
}

export function isFailure(outcome: DeliveryOutcome | IndexingFailure): outcome is IndexingFailure {
  return 'error' in outcome;
}

/**
 * The handler proper: every table of each delivery's topic advances its partition to the
 * delivery's end, each on its own: a table partition that fails (its lease held, a broken
 * table, Kafka or the catalog failing for it) stops no other. When one failed, the others'
 * work is committed and then DeliveryFailedError is thrown, so the batch comes again.
 */
export async function indexPartitions(deliveries: readonly PartitionDelivery[], runtime: IndexerRuntime): Promise<DeliveryOutcome[]> {
  const outcomes: DeliveryOutcome[] = [];
  const failures: IndexingFailure[] = [];
  for (const batch of deliveries) {
    let tables: TableRecord[];
    try {
      tables = await tablesOfTopic(runtime.catalog, batch.topic);
    } catch (error) {
      failures.push(failure('(every table of the topic)', batch.topic, batch.partition, error));
      continue;
    }
    const options = { ...(batch.expected ? { expected: batch.expected } : {}), ...(batch.stopAfter ? { stopAfter: batch.stopAfter } : {}) };
    for (const table of tables) {
      const outcome = await advanceTablePartition(runtime, table, batch.partition, batch.until, options);
      if (outcome === undefined) continue;
      if (isFailure(outcome)) failures.push(outcome);
      else outcomes.push(outcome);
    }
  }
  if (failures.length > 0) throw new DeliveryFailedError(failures, outcomes);
  return outcomes;
}
