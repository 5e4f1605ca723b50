/**
 * The errors that decoding record batches can raise, apart from the client's: the parquet
 * layer reads records as columns (record-batch.ts) and must not load the Kafka client
 * with them (a command that only reads the catalog loads pg and nothing heavier).
 */

/** `orders-3`, as Kafka's own tools name a topic-partition. */
export function partitionName(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

export class KafkaError extends Error {
  override name = 'KafkaError';
}

/**
 * A record batch that fails its CRC-32C or does not parse (a length past its end, bytes
 * left over, a codec that does not decompress it). Names the partition, the batch's base
 * offset and what is wrong; never skipped, since its records would be lost unseen.
 */
export class CorruptRecordBatchError extends KafkaError {
  override name = 'CorruptRecordBatchError';
  constructor(readonly topic: string, readonly partition: number, readonly offset: bigint, readonly reason: string, options?: ErrorOptions) {
    super(`the record batch at offset ${offset} of ${partitionName(topic, partition)} is corrupt: ${reason}`, options);
  }
}
