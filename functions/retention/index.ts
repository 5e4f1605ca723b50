/**
 * The scheduled retention check with partition discovery (EventBridge, every
 * `retentionMinutes`): expires the files of partitions whose `retention_check` is due,
 * adds partitions new to their topics at their LSO, and starts a backfill execution for
 * each table whose backfill no execution is working on, and an index backfill execution
 * for each index not active that no driver holds (src/retention/scheduled.ts).
 */
import type { BackfillStarter } from '../../src/backfill/resume.js';
import type { StartOutcome } from '../../src/state-machines/chain.js';
import type { BackfillStart } from '../../src/backfill/executions.js';
import type { IndexBackfillStarter } from '../../src/index-backfill/resume.js';
import type { IndexBackfillStart } from '../../src/index-backfill/tasks.js';
import { scheduledCheck, type ScheduledCheckResult } from '../../src/retention/scheduled.js';
import { lambdaServices } from '../runtime.js';
import { logger, observed } from '../observability.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export interface StartExecutionRequest {
  stateMachineArn: string;
  name: string;
  input: string;
}

/**
 * StartExecution under the name the check chose. The name is derived from the table and
 * the execution's number, so an execution that already has it is this backfill's own
 * (started by the chain's ContinueAsNew or by an earlier check): ExecutionAlreadyExists
 * is an answer, not an error.
 */
export function stepFunctionsStarter<Start extends { name: string; input: unknown } = BackfillStart>(
  startExecution: (request: StartExecutionRequest) => Promise<unknown>, stateMachineArn: string,
): (start: Start) => Promise<StartOutcome> {
  return async ({ name, input }) => {
    try {
      await startExecution({ stateMachineArn, name, input: JSON.stringify(input) });
      return 'started';
    } catch (error) {
      if ((error as { name?: unknown }).name === 'ExecutionAlreadyExists') return 'exists';
      throw error;
    }
  };
}

/** StartExecution of the machine whose ARN is in `arn` (absent: that machine is not started). */
async function starter<Start extends { name: string; input: unknown }>(arn: string | undefined): Promise<((start: Start) => Promise<StartOutcome>) | undefined> {
  if (!arn) return undefined;
  const { SFNClient, StartExecutionCommand } = await import('@aws-sdk/client-sfn');
  const client = new SFNClient({});
  return stepFunctionsStarter<Start>((request) => client.send(new StartExecutionCommand(request)), arn);
}

export const handler = observed('retention', async (): Promise<ScheduledCheckResult> => {
  const { catalog, kafka } = await lambdaServices();
  const startBackfill: BackfillStarter | undefined = await starter<BackfillStart>(process.env.BACKFILL_STATE_MACHINE_ARN);
  const startIndexBackfill: IndexBackfillStarter | undefined = await starter<IndexBackfillStart>(process.env.INDEX_BACKFILL_STATE_MACHINE_ARN);
  const chunksPerExecution = process.env.CHUNKS_PER_EXECUTION ? Number(process.env.CHUNKS_PER_EXECUTION) : undefined;
  const result = await scheduledCheck(catalog, kafka, {
    ...(startBackfill ? { startBackfill } : {}), ...(startIndexBackfill ? { startIndexBackfill } : {}), ...(chunksPerExecution !== undefined ? { chunksPerExecution } : {}),
  });
  // Every other table was done; failing the invocation makes the failed ones count as the
  // function's errors (its alarm), and its log holds the whole result.
  if (result.failedTables.length > 0) {
    logger.error('the scheduled check failed for some tables', { result });
    throw new Error(`scheduled check: ${result.failedTables.map((f) => `table ${f.table} (topic ${f.topic}): ${f.reason}`).join('; ')}`);
  }
  return result;
}, 'retention');
