/**
 * The scheduled check's part in backfill: a table whose backfill has partitions left and
 * no live claim on any of them (no execution is working on it: the last one failed or
 * timed out, or none was started since discovery planned new partitions) gets an
 * execution, numbered one above the last that ran and named after that number: the very
 * name the last execution would have continued as. So a dead execution is picked up by
 * the next check, and the check never forks a live chain: if the execution it names
 * exists (the chain continued after all, or another check started it), Step Functions
 * answers ExecutionAlreadyExists (or, while it runs with the same input, returns it), and
 * the starter reports `exists`; a ContinueAsNew that finds the name taken by the check's
 * execution ends its chain there in turn (infra/backfill.ts).
 */
import { recordBackfillExecution, unattendedBackfills } from '../catalog/backfill-executions.js';
import type { Catalog } from '../catalog/db.js';
import { backfillStart, type BackfillStart } from './executions.js';

/**
 * `started`: StartExecution succeeded (a new execution, or the running one of that name and
 * input). `exists`: ExecutionAlreadyExists, an execution of that name was started before.
 */
export type StartOutcome = 'started' | 'exists';

/** StartExecution of the backfill state machine (on AWS: the SDK; locally: a local execution). */
export type BackfillStarter = (start: BackfillStart) => Promise<StartOutcome>;

export interface ResumedBackfill {
  table: string;
  /** The execution's name. */
  execution: string;
  outcome: StartOutcome;
}

/** Starts an execution for every table whose backfill no execution is working on (see the module comment). */
export async function resumeBackfills(catalog: Catalog, start: BackfillStarter, options: { table?: string; chunksPerExecution?: number } = {}): Promise<ResumedBackfill[]> {
  const resumed: ResumedBackfill[] = [];
  for (const table of await unattendedBackfills(catalog, options.table)) {
    const execution = table.lastExecution + 1;
    const next = backfillStart(table.table, table.tableId, execution, options.chunksPerExecution);
    const outcome = await start(next);
    // Recorded after the start: a check that fails in between names the same execution next
    // time (and finds it); an execution that died before its plan ran is not named again.
    await recordBackfillExecution(catalog, table.tableId, execution);
    resumed.push({ table: table.table, execution: next.name, outcome });
  }
  return resumed;
}
