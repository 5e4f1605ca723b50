/**
 * The scheduled idle tick: seals open ranges that are due by age although no new record
 * arrived, and holds the DuckLake reader logins to their bounds (src/catalog/reader-login.ts:
 * a login can lift its own timeouts; the watch cannot be lifted by it).
 */
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import type { PartitionOutcome } from '../../src/indexer/handler.js';
import type { TickFailure } from '../../src/indexer/tick.js';
import { lambdaRuntime, lambdaServices } from '../runtime.js';
import { logger, observed, recordJobFailures, recordLag } from '../observability.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { endOverdueDuckLakeSessions, overdueSessionText } from '../../src/catalog/reader-login.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

/** Every run also publishes each table's lag, which the lag alarms watch. */
export const handler = observed('tick', async (): Promise<{ partitions: (PartitionOutcome | TickFailure)[] }> => {
  const partitions = await tickIdlePartitions(await lambdaRuntime());
  const failures = partitions.filter((outcome): outcome is TickFailure => 'error' in outcome);
  for (const failure of failures) logger.warn(`the tick could not seal an open range: ${failure.error}`, { table: failure.table, partition: failure.partition });
  if (failures.length > 0) recordJobFailures('tick', failures.length);
  const { catalog, kafka } = await lambdaServices();
  try {
    for (const session of await endOverdueDuckLakeSessions(catalog)) logger.warn(overdueSessionText(session));
  } catch (error) {
    logger.warn(`the DuckLake reader logins' watch failed: ${(error as Error).message}`);
  }
  const status = await partitionStatus({ catalog, kafka, config: { kafkaBrokers: (process.env.KAFKA_BROKERS ?? '').split(',') } });
  recordLag(status.flatMap((s) => (s.lag === null ? [] : [{ table: s.table, records: s.lag }])));
  return { partitions };
}, 'tick');
