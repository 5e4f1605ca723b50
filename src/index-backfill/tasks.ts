/**
 * The index backfill state machine's task contract (definition.ts), shared by
 * the Lambda entry (functions/index-backfill) and the local execution
 * (local-execution.ts):
 *
 *   step {action: 'step', indexId, execution, step} → IndexBackfillTaskResult
 *
 * One step is one state move or one chunk (step.ts). Every execution of one index's chain
 * drives under the same lease owner (`stepfunctions:index-<id>`), so a continuation goes
 * on at once instead of waiting for its predecessor's lease to lapse. A step run twice (a
 * retry after a lost answer) does the next chunk, or nothing: progress is in the catalog.
 * The chain's n-th execution is named `index-<id>-<n>`, so starting n + 1 twice starts it once.
 */
import type { Catalog } from '../catalog/db.js';
import type { CommittedSource } from '../kafka/source.js';
import { chainExecutionName, type ExecutionStart } from '../state-machines/chain.js';
import { recordIndexExecution } from '../catalog/index-backfill.js';
import { indexBackfillStep } from './step.js';
import type { IndexBackfillOptions, IndexBackfillStep } from './types.js';

/** Steps one execution runs before it continues as a new one (each costs 9 history events, 11 when it waits: definition.ts). */
export const defaultStepsPerExecution = 1_500;
export const maxStepsPerExecution = 2_000;

export interface IndexBackfillTaskDeps {
  catalog: Catalog;
  source: CommittedSource;
  options?: IndexBackfillOptions;
}

/** What an execution is started with (ContinueAsNew adds AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID). */
export interface IndexBackfillExecutionInput {
  indexId: string;
  execution: number;
  stepsPerExecution: number;
}

export interface IndexBackfillTaskResult {
  /** Nothing left: the index is active, or dropped. */
  done: boolean;
  /** Another driver (a local runner, another chain) holds the lease: wait, then step again. */
  held: boolean;
  state: IndexBackfillStep['state'];
  outcome: IndexBackfillStep['outcome'];
  files: number;
  skipped: number;
  /** The execution that continues this one, if one must. */
  continuation: { execution: number; name: string };
}

export class IndexBackfillTaskError extends Error {
  override name = 'IndexBackfillTaskError';
}

/** `index-<id>-<execution>`: an index's backfill as a chain of executions (src/state-machines/chain.ts). */
export function indexBackfillExecutionName(indexId: bigint | string, execution: number): string {
  return chainExecutionName('index', indexId, execution);
}

export type IndexBackfillStart = ExecutionStart<IndexBackfillExecutionInput>;

/** Execution n of an index's backfill (the first: what CREATE INDEX may start; the scheduled check starts the others). */
export function indexBackfillStart(indexId: bigint, execution = 1, stepsPerExecution = defaultStepsPerExecution): IndexBackfillStart {
  if (!Number.isInteger(stepsPerExecution) || stepsPerExecution < 1 || stepsPerExecution > maxStepsPerExecution) {
    throw new IndexBackfillTaskError(`index backfill: stepsPerExecution must be a whole number from 1 to ${maxStepsPerExecution} (an execution holds at most 25,000 history events), got ${stepsPerExecution}`);
  }
  return { name: indexBackfillExecutionName(indexId, execution), input: { indexId: String(indexId), execution, stepsPerExecution } };
}

function field(object: unknown, name: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[name] : undefined;
}

function wholeNumber(value: unknown, name: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) throw new IndexBackfillTaskError(`index backfill: ${name} must be a whole number ≥ ${min}, got ${JSON.stringify(value)}`);
  return value;
}

export function parseStepRequest(event: unknown): { indexId: bigint; execution: number; step: number } {
  if (field(event, 'action') !== 'step') throw new IndexBackfillTaskError(`index backfill: "action" must be "step", got ${JSON.stringify(field(event, 'action'))}`);
  const indexId = field(event, 'indexId');
  if (typeof indexId !== 'string' || !/^\d{1,19}$/.test(indexId)) throw new IndexBackfillTaskError(`index backfill: indexId must be a decimal string such as "42", got ${JSON.stringify(indexId)}`);
  return { indexId: BigInt(indexId), execution: wholeNumber(field(event, 'execution'), 'execution', 1), step: wholeNumber(field(event, 'step'), 'step', 0) };
}

export async function indexBackfillTask(deps: IndexBackfillTaskDeps, event: unknown): Promise<IndexBackfillTaskResult> {
  const { indexId, execution, step: stepNumber } = parseStepRequest(event);
  // The chain's number, so that the scheduled check names the execution this one would continue as (resume.ts).
  if (stepNumber === 0) await recordIndexExecution(deps.catalog, indexId, execution);
  const step = await indexBackfillStep({ catalog: deps.catalog, source: deps.source, owner: `stepfunctions:index-${indexId}` }, indexId, deps.options);
  return {
    done: step.done, held: step.outcome === 'held', state: step.state, outcome: step.outcome, files: step.files, skipped: step.skipped.length,
    continuation: { execution: execution + 1, name: indexBackfillExecutionName(indexId, execution + 1) },
  };
}
