import type { KafkaConnection } from '../kafka/connect.js';
import { lastStableOffset } from '../kafka/offsets.js';
import { readCommitted } from '../kafka/read.js';
import { cleanupPolicy } from '../kafka/topics.js';
import type { CommittedSource } from './partition.js';

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
