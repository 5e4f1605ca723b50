/**
 * The scheduled retention check with partition discovery (EventBridge, every
 * `retentionMinutes`): expires the files of partitions whose `retention_check` is due,
 * adds partitions new to their topics at their LSO, and starts a backfill execution for
 * each table whose new partitions have history to backfill.
 */
import { discoverPartitions, type DiscoveredPartition } from '../../src/retention/discovery.js';
import { checkRetention, type RetentionResult } from '../../src/retention/check.js';
import { lambdaServices } from '../runtime.js';

export interface RetentionOutcome extends RetentionResult {
  discovered: DiscoveredPartition[];
  /** Backfill executions started for tables with discovered partitions. */
  backfills: string[];
}

async function startBackfills(tables: string[], env: NodeJS.ProcessEnv): Promise<string[]> {
  const stateMachineArn = env.BACKFILL_STATE_MACHINE_ARN;
  if (tables.length === 0 || !stateMachineArn) return [];
  const { SFNClient, StartExecutionCommand } = await import('@aws-sdk/client-sfn');
  const client = new SFNClient({});
  const chunksPerExecution = env.CHUNKS_PER_EXECUTION ? Number(env.CHUNKS_PER_EXECUTION) : undefined;
  const started: string[] = [];
  for (const table of tables) {
    const result = await client.send(new StartExecutionCommand({ stateMachineArn, input: JSON.stringify({ table, ...(chunksPerExecution ? { chunksPerExecution } : {}) }) }));
    if (result.executionArn) started.push(result.executionArn);
  }
  return started;
}

export async function handler(): Promise<RetentionOutcome> {
  const { catalog, kafka } = await lambdaServices();
  const retention = await checkRetention(catalog, kafka, { dueOnly: true });
  const discovered = await discoverPartitions(catalog, kafka);
  const tables = [...new Set(discovered.filter((partition) => partition.backfill).map((partition) => partition.table))];
  return { ...retention, discovered, backfills: await startBackfills(tables, process.env) };
}
