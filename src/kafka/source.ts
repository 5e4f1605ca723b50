import type { KafkaConnection } from './connect.js';
import { lastStableOffset } from './offsets.js';
import { readCommitted, type ReadLimit } from './read.js';
import { cleanupPolicy } from './topics.js';
import type { KafkaRecord } from './record.js';

export interface SourceReadOptions {
  /** Bytes per Fetch (src/kafka/fetch-size.ts): how many Fetches a read takes, never what it returns. Default: read.ts's. */
  fetchBytes?: number;
  /** The table's topic id (`TableRecord.topicId`): a topic created again under its name is refused, never read as the table's. */
  topicId?: { id: string; table: string };
  /**
   * Other reads will want these records soon (the other files of the range, the other
   * columns of a granule): a source that holds records (src/reader/shared-reads.ts) keeps them.
   */
  keep?: boolean;
  /** End the read after the Fetch that reaches this many records or bytes (read.ts `stopAfter`): a delivery of the local runner, one event's worth. */
  stopAfter?: ReadLimit;
  /** The most bytes one batch's records may decompress to (read.ts `maxBatchBytes`): the indexer of `run --memory`. */
  maxBatchBytes?: number;
}

/** One Fetch's worth of a read. */
export interface SourceBatch {
  records: KafkaRecord[];
  nextOffset: bigint;
  /** Key + value + header bytes of `records`, where the source counts them. */
  bytes?: number;
  /** Bytes of the record batches the Fetch brought (read.ts `fetchedBytes`), where the source can tell. */
  fetchedBytes?: number;
}

/** Committed records of a partition, as the indexer needs them. */
export interface CommittedSource {
  lastStableOffset(topic: string, partition: number): Promise<bigint>;
  /**
   * Batches of committed records of [from, until), each with the next fetch position
   * after it; the read ends early at the partition's last stable offset.
   */
  read(topic: string, partition: number, from: bigint, until: bigint, options?: SourceReadOptions): AsyncIterable<SourceBatch>;
  /** The topic's cleanup.policy, where the source can tell (a rebuild that does not match says whether compaction is why). */
  cleanupPolicy?(topic: string): Promise<string>;
}

/** The indexer's committed reads, from a real Kafka cluster. */
export function kafkaSource(kafka: KafkaConnection): CommittedSource {
  return {
    lastStableOffset: (topic, partition) => lastStableOffset(kafka, topic, partition),
    cleanupPolicy: (topic) => cleanupPolicy(kafka, topic),
    async *read(topic, partition, from, until, options) {
      const readOptions = {
        ...(options?.fetchBytes ? { maxBytes: options.fetchBytes } : {}),
        ...(options?.topicId ? { topicId: options.topicId } : {}),
        ...(options?.stopAfter ? { stopAfter: options.stopAfter } : {}),
        ...(options?.maxBatchBytes ? { maxBatchBytes: options.maxBatchBytes } : {}),
      };
      for await (const batch of readCommitted(kafka, topic, partition, from, until, readOptions)) {
        yield { records: batch.records, nextOffset: batch.nextOffset, bytes: batch.bytes, fetchedBytes: batch.fetchedBytes };
      }
    },
  };
}
