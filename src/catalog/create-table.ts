import { checkTableName, checkTopicName, createTable, TableError, type TableRecord } from './tables.js';
import type { Engine } from '../runtime/engine.js';
import { lastStableOffsets } from '../kafka/offsets.js';
import { cleanupPolicy, compactionProblem, topicPartitions } from '../kafka/topics.js';
import { initialSchema } from '../schema/table-schema.js';
import type { TableFormat, TableSettings } from './settings.js';

export interface CreatedTable extends TableRecord {
  /** Each partition with the offset its indexing starts at: the LSO when the table was made. */
  partitions: { partition: number; start: bigint }[];
}

/**
 * Creates a table over an existing topic. Every partition's indexed range starts empty at
 * its last stable offset: live indexing goes on from there, backfill reads what came before.
 */
export async function createTableFromTopic(
  engine: Engine,
  spec: { name: string; topic: string; format: TableFormat; settings: TableSettings },
): Promise<CreatedTable> {
  // A bad name is refused before anything is asked of Kafka.
  checkTableName(spec.name);
  checkTopicName(spec.topic);
  const partitions = await topicPartitions(engine.kafka, spec.topic);
  const compacted = compactionProblem(spec.topic, await cleanupPolicy(engine.kafka, spec.topic));
  if (compacted) throw new TableError(`cannot create table ${spec.name}: ${compacted}`);
  const starts = await lastStableOffsets(engine.kafka, partitions.map((partition) => ({ topic: spec.topic, partition })));
  const partitionStarts = new Map(partitions.map((partition, i) => [partition, starts[i]!]));
  const table = await createTable(engine.catalog, { ...spec, partitionStarts }, initialSchema(spec.format));
  return { ...table, partitions: [...partitionStarts].map(([partition, start]) => ({ partition, start })) };
}
