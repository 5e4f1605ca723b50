/**
 * The MSK-triggered Lambda: parses its event, calls the engine, returns. A thrown error
 * makes the event source mapping retry the whole batch: that is what happens when
 * another instance holds a partition's lease or the catalog cannot be reached.
 */
import { handleKafkaEvent, type PartitionOutcome } from '../../src/indexer/handler.js';
import { lambdaRuntime } from '../runtime.js';
import { observed } from '../observability.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export const handler = observed('indexer', async (event: { bootstrapServers?: string }): Promise<{ partitions: PartitionOutcome[] }> => {
  return { partitions: await handleKafkaEvent(event, await lambdaRuntime(event?.bootstrapServers)) };
});
