/** The scheduled idle tick: seals open ranges that are due by age although no new record arrived. */
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import type { PartitionOutcome } from '../../src/indexer/handler.js';
import type { TickFailure } from '../../src/indexer/tick.js';
import { lambdaRuntime } from '../runtime.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export async function handler(): Promise<{ partitions: (PartitionOutcome | TickFailure)[] }> {
  return { partitions: await tickIdlePartitions(await lambdaRuntime()) };
}
