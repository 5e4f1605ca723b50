/**
 * A table is made on one topic, and Kafka names a topic by its id as well as its name: a
 * topic deleted and created again under the same name gets a new id and starts its
 * offsets over. The catalog keeps the id (lake_table.topic_id); whatever would read or
 * expire a table's offsets compares it with the topic's id now, and a table whose topic
 * is another one indexes nothing more and expires nothing until its owner decides.
 */
import type { Catalog } from '../catalog/db.js';
import { adoptTopicId } from '../catalog/tables.js';
import type { TableRecord } from '../table/record.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { TopicRecreatedError } from '../kafka/errors.js';
import { describeTopic } from '../kafka/topics.js';

/** What a table whose topic was created again does, and what its owner can do: the sentence status and errors show. */
export function recreatedTopicProblem(error: TopicRecreatedError, table: Pick<TableRecord, 'name' | 'topic'>): string {
  return `${error.message}. Table ${table.name} reads nothing more from it and retention expires none of its files; `
    + `to index the new topic, drop the table and create it again (\`offsetlake table drop ${table.name}\`, then \`offsetlake table create ${table.name} --topic ${table.topic}\` with its settings); `
    + 'the old topic\'s records are gone from Kafka, so its files could not be rebuilt anyway';
}

/** The sentence when the topic's id now is not the table's; undefined while it is (or the table has none yet). */
export function topicIdentityProblem(table: Pick<TableRecord, 'name' | 'topic' | 'topicId'>, topicIdNow: string): string | undefined {
  if (table.topicId === null || table.topicId === topicIdNow) return undefined;
  return recreatedTopicProblem(new TopicRecreatedError(table.topic, table.topicId, topicIdNow, { table: table.name }), table);
}

/**
 * The table's topic as Kafka has it now: its partitions, or a TableTopicError when it is
 * another topic under the same name. A table made before catalog version 9 takes the id
 * its topic has now, once. An UnknownTopicError when the topic is gone.
 */
export async function checkedTopic(catalog: Catalog, kafka: KafkaConnection, table: TableRecord): Promise<{ partitions: number[] }> {
  const { topicId, partitions } = await describeTopic(kafka, table.topic);
  if (table.topicId === null) {
    await adoptTopicId(catalog, table.tableId, topicId);
    table.topicId = topicId;
  }
  const problem = topicIdentityProblem(table, topicId);
  if (problem) throw new TableTopicError(table.name, problem);
  return { partitions };
}

/** The table's topic is not the one it was made on. */
export class TableTopicError extends Error {
  override name = 'TableTopicError';
  constructor(readonly table: string, message: string) {
    super(message);
  }
}
