import { checkTopicName, createTable } from '../catalog/tables.js';
import { checkTableName, TableError, type TableRecord } from '../table/record.js';
import type { Engine } from '../runtime/engine.js';
import { lastStableOffsets } from '../kafka/offsets.js';
import { cleanupPolicy, compactionProblem, describeTopic } from '../kafka/topics.js';
import { initialSchema } from '../schema/table-schema.js';
import type { TableFormat, TableSettings } from '../table/settings.js';
import { checkIndexSpec, createIndexOn } from '../catalog/index-ddl.js';
import type { IndexSpec } from '../indexes/ddl.js';
import type { IndexDefinition } from '../indexes/definition.js';

export interface CreatedTable extends TableRecord {
  /** Each partition with the offset its indexing starts at: the LSO when the table was made. */
  partitions: { partition: number; start: bigint }[];
  /** Its inline indexes, active from the start. */
  indexes: IndexDefinition[];
}

/**
 * Creates a table over an existing topic. Every partition's indexed range starts empty at
 * its last stable offset: live indexing goes on from there, backfill reads what came before.
 */
export async function createTableFromTopic(
  engine: Engine,
  spec: { name: string; topic: string; format: TableFormat; settings: TableSettings; indexes?: readonly IndexSpec[] },
): Promise<CreatedTable> {
  // A bad name or index is refused before anything is asked of Kafka.
  checkTableName(spec.name);
  checkTopicName(spec.topic);
  const schema = initialSchema(spec.format);
  const names = new Set<string>();
  for (const index of spec.indexes ?? []) {
    if (names.has(index.name)) throw new TableError(`cannot create table ${spec.name}: two of its indexes are called ${index.name}`);
    names.add(index.name);
    try {
      checkIndexSpec({ tableId: 0n, name: spec.name, format: spec.format, settings: spec.settings }, schema.columns, index);
    } catch (error) {
      const decoded = spec.format !== 'json' && spec.format !== 'raw' && /has no column/.test((error as Error).message);
      throw new TableError(`cannot create table ${spec.name}: ${(error as Error).message}${decoded ? `; a ${spec.format} table's decoded columns appear with its first records: index them afterwards with \`offsetlake sql "CREATE INDEX …"\`` : ''}`);
    }
  }
  const { topicId, partitions } = await describeTopic(engine.kafka, spec.topic);
  const compacted = compactionProblem(spec.topic, await cleanupPolicy(engine.kafka, spec.topic));
  if (compacted) throw new TableError(`cannot create table ${spec.name}: ${compacted}`);
  const starts = await lastStableOffsets(engine.kafka, partitions.map((partition) => ({ topic: spec.topic, partition })));
  const partitionStarts = new Map(partitions.map((partition, i) => [partition, starts[i]!]));
  const indexes: IndexDefinition[] = [];
  const table = await createTable(engine.catalog, { ...spec, topicId, partitionStarts }, schema, async (client, created) => {
    for (const index of spec.indexes ?? []) indexes.push((await createIndexOn(client, created, index)).index);
  });
  return { ...table, partitions: [...partitionStarts].map(([partition, start]) => ({ partition, start })), indexes };
}
