import type { KafkaConnection } from './connect.js';
import { lastStableOffset } from './offsets.js';
import { readCommitted } from './read.js';
import { cleanupPolicy } from './topics.js';
import type { KafkaRecord } from './record.js';

/** Committed records of a partition, as the indexer needs them. */
export interface CommittedSource {
  lastStableOffset(topic: string, partition: number): Promise<bigint>;
  /** Batches of committed records of [from, until), each with the next fetch position after it. */
  read(topic: string, partition: number, from: bigint, until: bigint): AsyncIterable<{ records: KafkaRecord[]; nextOffset: bigint }>;
  /** The topic's cleanup.policy, where the source can tell (a rebuild that does not match says whether compaction is why). */
  cleanupPolicy?(topic: string): Promise<string>;
}

/** The indexer's committed reads, from a real Kafka cluster. */
export function kafkaSource(kafka: KafkaConnection): CommittedSource {
  return {
    lastStableOffset: (topic, partition) => lastStableOffset(kafka, topic, partition),
    cleanupPolicy: (topic) => cleanupPolicy(kafka, topic),
    async *read(topic, partition, from, until) {
      for await (const batch of readCommitted(kafka, topic, partition, from, until)) {
        yield { records: batch.records, nextOffset: batch.nextOffset };
      }
    },
  };
}
