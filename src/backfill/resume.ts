/**
 * The scheduled check's part in backfill: a table whose backfill has partitions left and
 * no live claim on any of them (no execution is working on it: the last one failed or
 * timed out, or none was started since discovery planned new partitions) gets the next
 * execution of its chain (src/state-machines/chain.ts says why that never forks a live one).
 */
import { recordBackfillExecution, unattendedBackfills } from '../catalog/backfill-executions.js';
import type { Catalog } from '../catalog/db.js';
import { resumeChains, type ExecutionStarter, type StartOutcome } from '../state-machines/chain.js';
import { backfillStart, type BackfillExecutionInput } from './executions.js';

/** StartExecution of the backfill state machine. */
export type BackfillStarter = ExecutionStarter<BackfillExecutionInput>;

export interface ResumedBackfill {
  table: string;
  /** The execution's name. */
  execution: string;
  outcome: StartOutcome;
}

/** Starts an execution for every table whose backfill no execution is working on. */
export async function resumeBackfills(catalog: Catalog, start: BackfillStarter, options: { table?: string; chunksPerExecution?: number } = {}): Promise<ResumedBackfill[]> {
  const resumed = await resumeChains(
    await unattendedBackfills(catalog, options.table),
    (table, execution) => backfillStart(table.table, table.tableId, execution, options.chunksPerExecution),
    start,
    (table, execution) => recordBackfillExecution(catalog, table.tableId, execution),
  );
  return resumed.map(({ chain, execution, outcome }) => ({ table: chain.table, execution, outcome }));
}
