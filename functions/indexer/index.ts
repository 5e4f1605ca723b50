/**
 * The MSK-triggered Lambda: parses its event, calls the engine, returns. A thrown error
 * makes the event source mapping retry the whole batch: that is what happens when a table
 * partition of the batch failed (another instance holds its lease, the catalog or Kafka
 * failed for it, its table is broken). Every other table partition of the batch was
 * committed first, each failure is logged with its table, partition and reason, and the
 * error names them all; the retry reads the committed ones from `indexed_end` (nothing
 * new) and tries the failed ones again (docs/aws.md, "One table's failure").
 */
import { DeliveryFailedError, handleKafkaEvent, type PartitionOutcome } from '../../src/indexer/handler.js';
import { lambdaRuntime } from '../runtime.js';
import { logger, observed } from '../observability.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export const handler = observed('indexer', async (event: { bootstrapServers?: string }): Promise<{ partitions: PartitionOutcome[] }> => {
  try {
    return { partitions: await handleKafkaEvent(event, await lambdaRuntime(event?.bootstrapServers)) };
  } catch (error) {
    if (error instanceof DeliveryFailedError) {
      for (const failure of error.failures) logger.error(`indexing failed, the batch will be delivered again: ${failure.error}`, { table: failure.table, topic: failure.topic, partition: failure.partition, error: failure.cause as Error });
      for (const outcome of error.outcomes) logger.info('indexed despite another table\'s failure', { ...outcome });
    }
    throw error;
  }
});
