/**
 * The backfill state machine's Lambda (Plan, Replan and Chunk states; infra/backfill.ts):
 * parses the task's event, runs the engine's step, returns its JSON. A thrown error is
 * retried by the state's Retry; a chunk run twice changes nothing.
 */
import { ownerName } from '../../src/runtime/engine.js';
import { backfillTask, type BackfillPlanState } from '../../src/backfill/tasks.js';
import type { ChunkResult } from '../../src/backfill/index.js';
import { lambdaServices } from '../runtime.js';

const owner = ownerName('backfill');

export async function handler(event: unknown): Promise<BackfillPlanState | ChunkResult> {
  const { catalog, kafka } = await lambdaServices();
  return backfillTask({ catalog, kafka, chunk: { owner } }, event);
}
