/**
 * The index backfill state machine's Lambda (its Step state; src/index-backfill/definition.ts):
 * one state move or one chunk of a standalone index's backfill per invocation. A thrown
 * error is retried by the state's Retry; nothing of a failed step was committed.
 */
import { indexBackfillTask, type IndexBackfillTaskResult } from '../../src/index-backfill/tasks.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { lambdaServices } from '../runtime.js';
import { observed } from '../observability.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export const handler = observed('index-backfill', async (event: unknown): Promise<IndexBackfillTaskResult> => {
  const { catalog, kafka } = await lambdaServices();
  return indexBackfillTask({ catalog, source: kafkaSource(kafka) }, event);
});
