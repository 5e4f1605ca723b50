/**
 * A CommittedSource that counts what it reads: records, their bytes (key + value +
 * headers, as the sealer counts them), the bytes Kafka's Fetches brought, and the offset
 * ranges asked for. The read path
 * reports these as metrics; tests use them to show that pruning skips Kafka reads.
 */
import type { CommittedSource } from './source.js';
import { recordBytes } from './record.js';

export interface ReadLog {
  records: number;
  bytes: number;
  /** Bytes of the record batches Kafka's Fetches brought, as Kafka stores them (where the source tells: kafkaSource does). */
  fetchedBytes: number;
  /** Every read asked of the source: partition and [from, until). */
  reads: { topic: string; partition: number; from: bigint; until: bigint }[];
}

/** `keepReads: false` keeps only the totals (a long-lived server would otherwise grow the list forever). */
export function countingSource(source: CommittedSource, options: { keepReads?: boolean } = {}): CommittedSource & { log: ReadLog } {
  const log: ReadLog = { records: 0, bytes: 0, fetchedBytes: 0, reads: [] };
  return {
    log,
    lastStableOffset: (topic, partition) => source.lastStableOffset(topic, partition),
    ...(source.cleanupPolicy ? { cleanupPolicy: (topic: string) => source.cleanupPolicy!(topic) } : {}),
    async *read(topic, partition, from, until, readOptions) {
      if (options.keepReads !== false) log.reads.push({ topic, partition, from, until });
      for await (const batch of source.read(topic, partition, from, until, readOptions)) {
        log.records += batch.records.length;
        if (batch.bytes !== undefined) log.bytes += batch.bytes;
        else for (const record of batch.records) log.bytes += recordBytes(record);
        log.fetchedBytes += batch.fetchedBytes ?? 0;
        yield batch;
      }
    },
  };
}
