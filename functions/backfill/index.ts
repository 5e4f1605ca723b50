/**
 * The backfill state machine's Lambda (Plan, Replan and Chunk states; src/backfill/definition.ts):
 * parses the task's event, runs the engine's step, returns its JSON. A thrown error is
 * retried by the state's Retry; a slot's step run twice changes nothing. A step's claims
 * are owned by its slot (named after the execution), not by this instance.
 */
import { backfillTask, type BackfillPlanState } from '../../src/backfill/tasks.js';
import type { SlotStepResult } from '../../src/backfill/slot.js';
import { lambdaServices } from '../runtime.js';
import { observed } from '../observability.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export const handler = observed('backfill', async (event: unknown): Promise<BackfillPlanState | SlotStepResult> => {
  const { catalog, kafka } = await lambdaServices();
  return backfillTask({ catalog, kafka }, event);
});
