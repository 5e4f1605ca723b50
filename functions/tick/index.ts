/** The scheduled idle tick: seals open ranges that are due by age although no new record arrived. */
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import type { PartitionOutcome } from '../../src/indexer/handler.js';
import type { TickFailure } from '../../src/indexer/tick.js';
import { lambdaRuntime } from '../runtime.js';

export async function handler(): Promise<{ partitions: (PartitionOutcome | TickFailure)[] }> {
  return { partitions: await tickIdlePartitions(await lambdaRuntime()) };
}
