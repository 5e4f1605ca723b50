/**
 * The scheduled check's part in index backfills (as src/backfill/resume.ts for tables):
 * an index that is not active and that no driver holds a live lease on (a new one, or
 * one whose execution failed or timed out) gets the next execution of its chain
 * (src/state-machines/chain.ts).
 */
import type { Catalog } from '../catalog/db.js';
import { recordIndexExecution, unattendedIndexes } from '../catalog/index-backfill.js';
import { resumeChains, type ExecutionStarter, type StartOutcome } from '../state-machines/chain.js';
import { indexBackfillStart, type IndexBackfillExecutionInput } from './tasks.js';

/** StartExecution of the index backfill state machine. */
export type IndexBackfillStarter = ExecutionStarter<IndexBackfillExecutionInput>;

export interface ResumedIndexBackfill {
  indexId: string;
  execution: string;
  outcome: StartOutcome;
}

export async function resumeIndexBackfills(catalog: Catalog, start: IndexBackfillStarter, options: { stepsPerExecution?: number } = {}): Promise<ResumedIndexBackfill[]> {
  const resumed = await resumeChains(
    await unattendedIndexes(catalog),
    (index, execution) => indexBackfillStart(index.indexId, execution, options.stepsPerExecution),
    start,
    (index, execution) => recordIndexExecution(catalog, index.indexId, execution),
  );
  return resumed.map(({ chain, execution, outcome }) => ({ indexId: String(chain.indexId), execution, outcome }));
}
