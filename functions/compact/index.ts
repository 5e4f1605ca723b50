/**
 * The scheduled compactor (EventBridge, every `compactMinutes`): merges the small files of
 * every table partition with merges due, one merge per lease, partition after partition,
 * until none is left or the invocation nears its timeout (src/compaction/scheduled.ts).
 * What it leaves is planned again by the next run. One partition's failure is its own: it
 * is logged with its table and partition and counted as a JobFailures datum of `compact`,
 * and the others go on.
 */
import { compactDuePartitions, type ScheduledCompactionResult } from '../../src/compaction/scheduled.js';
import { compactorOwner } from '../../src/catalog/leases.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { lambdaServices } from '../runtime.js';
import { logger, observed, recordJobFailures, type LambdaContext } from '../observability.js';
import { randomUUID } from 'node:crypto';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

/**
 * No merge starts when less than this is left of the invocation: a merge in progress
 * (at most `file_bytes` of Kafka read and encoded, seconds at the default 128 MiB) ends
 * before the timeout, so none is cut off and its lease left to expire.
 */
export const stopBeforeTimeoutMs = 90_000;
/** Without a Lambda context (run by hand): the function's timeout, as infra/stack.ts sets it. */
const defaultTimeoutMs = 5 * 60_000;

export const handler = observed('compact', async (_event: unknown, context?: LambdaContext): Promise<ScheduledCompactionResult> => {
  const invocation = context as { awsRequestId?: string; getRemainingTimeInMillis?: () => number } | undefined;
  const remaining = invocation?.getRemainingTimeInMillis?.() ?? defaultTimeoutMs;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), Math.max(0, remaining - stopBeforeTimeoutMs));
  try {
    const { catalog, kafka } = await lambdaServices();
    const result = await compactDuePartitions({ catalog, source: kafkaSource(kafka) }, { owner: compactorOwner(invocation?.awsRequestId ?? randomUUID()), signal: stop.signal });
    for (const failure of result.failures) logger.warn(`compaction failed for this ${failure.partition === undefined ? 'table' : 'partition'}; the next run tries again: ${failure.error}`, { table: failure.table, ...(failure.partition === undefined ? {} : { partition: failure.partition }) });
    if (result.failures.length > 0) recordJobFailures('compact', result.failures.length);
    logger.info('compaction run', { merges: result.merges, partitions: result.partitions.length, stoppedEarly: result.stoppedEarly });
    return result;
  } finally {
    clearTimeout(timer);
  }
}, 'compact');
