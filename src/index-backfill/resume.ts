/**
 * The scheduled check's part in index backfills (as src/backfill/resume.ts for tables):
 * an index that is not active and that no driver holds a live lease on (a new one, or
 * one whose execution failed or timed out) gets the execution numbered one above the
 * last started, under the very name the last would have continued as. So the check never
 * forks a live chain: that name taken means the chain went on (ExecutionAlreadyExists,
 * `exists`), and a ContinueAsNew that finds its name taken by the check's execution ends.
 */
import type { Catalog } from '../catalog/db.js';
import { recordIndexExecution, unattendedIndexes } from '../catalog/index-backfill.js';
import type { StartOutcome } from '../backfill/resume.js';
import { indexBackfillStart, type IndexBackfillStart } from './tasks.js';

/** StartExecution of the index backfill state machine (on AWS: the SDK; locally: a local execution). */
export type IndexBackfillStarter = (start: IndexBackfillStart) => Promise<StartOutcome>;

export interface ResumedIndexBackfill {
  indexId: string;
  execution: string;
  outcome: StartOutcome;
}

export async function resumeIndexBackfills(catalog: Catalog, start: IndexBackfillStarter, options: { stepsPerExecution?: number } = {}): Promise<ResumedIndexBackfill[]> {
  const resumed: ResumedIndexBackfill[] = [];
  for (const index of await unattendedIndexes(catalog)) {
    const next = indexBackfillStart(index.indexId, index.lastExecution + 1, options.stepsPerExecution);
    const outcome = await start(next);
    // After the start: a check that fails in between names the same execution next time (and finds it).
    await recordIndexExecution(catalog, index.indexId, index.lastExecution + 1);
    resumed.push({ indexId: String(index.indexId), execution: next.name, outcome });
  }
  return resumed;
}
