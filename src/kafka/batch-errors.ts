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

/**
 * A compressed record batch whose records decompress to more than the reader may hold
 * (`BatchSource.maxRecordBytes`, from the memory budget of `run --memory`): decompression
 * stopped at the limit. Not corrupt, and not skipped: the partition waits, saying so,
 * until a process with a larger budget reads it (docs/design.md, "Retention and failures").
 */
export class BatchTooLargeError extends KafkaError {
  override name = 'BatchTooLargeError';
  constructor(readonly topic: string, readonly partition: number, readonly offset: bigint, readonly lastOffset: bigint, readonly codec: string, readonly storedBytes: number, readonly limitBytes: number) {
    super(`the record batch at offsets [${offset}, ${lastOffset}] of ${partitionName(topic, partition)} (${codec}, ${storedBytes} bytes in Kafka) decompresses to more than ${limitBytes} bytes, the most one batch may take under this process's memory budget; it waits for a process with a larger one (\`run --memory\`)`);
  }
}
