/**
 * The backfill state machine's task contract (src/backfill/definition.ts), shared by the Lambda
 * entry (functions/backfill) and the local execution (src/backfill/local-execution.ts), so
 * both run the same code behind the same state names:
 *
 *   plan  {action: 'plan', table, input, slots} → BackfillPlanState
 *         `input` is the execution's input (or, for Replan, the current state): its
 *         `chunksPerExecution` (default 1,500) and `execution` (absent: the next number
 *         of the table's executions) are kept; `slots` is the machine's Map concurrency.
 *   chunk {action: 'chunk', table, tableId, executionName, slot, step, budget} → SlotStepResult
 *
 * Nothing in the state grows with the table's partitions: cursors live in the catalog,
 * the plan hands over counts and at most `slots` slot numbers, and each slot step claims
 * its partition there (src/backfill/slot.ts). One execution runs at most
 * `chunksPerExecution` steps: `slots` = min(slots, chunksPerExecution, claimable
 * partitions) slots of ⌊chunksPerExecution / slots⌋ steps each. What is left goes to the
 * next execution, named `continuation.name`.
 */
import { allocateBackfillExecution, backfillProgress, recordBackfillExecution, type BackfillProgress } from '../catalog/backfill-executions.js';
import { forgetOldBackfillSteps } from '../catalog/backfill.js';
import type { Catalog } from '../catalog/db.js';
import { findTable } from '../catalog/tables.js';
import type { KafkaConnection } from '../kafka/connect.js';
import type { ChunkOptions } from './chunk.js';
import { backfillExecutionName } from './executions.js';
import { defaultChunksPerExecution, defaultSlots, maxChunksPerExecution, maxSlots } from './limits.js';
import { planUnplannedPartitions } from './plan.js';
import { backfillSlotStep, type SlotStepRequest, type SlotStepResult } from './slot.js';

export { defaultChunksPerExecution, maxChunksPerExecution };

export interface BackfillTaskDeps {
  catalog: Catalog;
  kafka: KafkaConnection;
  chunk?: ChunkOptions;
}

export interface BackfillPlanState {
  table: string;
  /** lake_table.table_id, as a decimal string: slots name the table by id, so a table made again under the name is not taken for it. */
  tableId: string;
  chunksPerExecution: number;
  /** This execution's number among the table's backfill executions. */
  execution: number;
  /** The execution that continues this one, if one must: its number and its name. */
  continuation: { execution: number; name: string };
  /** The Map's items: one slot number per slot this execution runs (none: nothing claimable). */
  slots: number[];
  /** Steps per slot. */
  chunksPerSlot: number;
  /** Partitions with backfill left. */
  left: number;
  /** Of those, the ones no run holds a live claim on. */
  claimable: number;
  /** Partitions already done (or with history `none`). */
  finished: number;
}

export class BackfillTaskError extends Error {
  override name = 'BackfillTaskError';
}

function field(object: unknown, name: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[name] : undefined;
}

function wholeNumber(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new BackfillTaskError(`backfill: ${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function tableName(event: unknown): string {
  const table = field(event, 'table');
  if (typeof table !== 'string' || table === '') throw new BackfillTaskError(`backfill: "table" must name a table, got ${JSON.stringify(table)}`);
  return table;
}

export interface PlanRequest {
  table: string;
  chunksPerExecution: number;
  /** Absent: an execution started by hand; the plan gives it the table's next number. */
  execution: number | undefined;
  slots: number;
}

export function parsePlanRequest(event: unknown): PlanRequest {
  const input = field(event, 'input');
  return {
    table: tableName(event),
    chunksPerExecution: wholeNumber(field(input, 'chunksPerExecution'), 'chunksPerExecution', 1, maxChunksPerExecution) ?? defaultChunksPerExecution,
    execution: wholeNumber(field(input, 'execution'), 'execution', 1, Number.MAX_SAFE_INTEGER),
    slots: wholeNumber(field(event, 'slots'), 'slots', 1, maxSlots) ?? defaultSlots,
  };
}

/** This execution's share of the work (pure): how many slots, and each one's step budget. */
export function planState(request: PlanRequest, tableId: string, execution: number, progress: BackfillProgress): BackfillPlanState {
  const slots = Math.min(request.slots, request.chunksPerExecution, progress.claimable);
  return {
    table: request.table,
    tableId,
    chunksPerExecution: request.chunksPerExecution,
    execution,
    continuation: { execution: execution + 1, name: backfillExecutionName(request.table, tableId, execution + 1) },
    slots: Array.from({ length: slots }, (_, slot) => slot),
    chunksPerSlot: Math.max(1, Math.floor(request.chunksPerExecution / Math.max(1, slots))),
    left: progress.left,
    claimable: progress.claimable,
    finished: progress.finished,
  };
}

/**
 * Plans the partitions never planned (new ones; history below each one's start), numbers
 * the execution, and counts what is left. Partitions planned before keep their plan: a
 * chunk raises its target itself when Kafka's earliest offset passed it.
 */
export async function planTask(deps: BackfillTaskDeps, event: unknown): Promise<BackfillPlanState> {
  const request = parsePlanRequest(event);
  const table = await findTable(deps.catalog, request.table);
  await planUnplannedPartitions(deps.catalog, deps.kafka, table);
  let execution = request.execution;
  if (execution === undefined) execution = await allocateBackfillExecution(deps.catalog, table.tableId);
  else await recordBackfillExecution(deps.catalog, table.tableId, execution);
  await forgetOldBackfillSteps(deps.catalog, table.tableId);
  return planState(request, String(table.tableId), execution, await backfillProgress(deps.catalog, table.tableId));
}

export async function chunkTask(deps: BackfillTaskDeps, event: unknown): Promise<SlotStepResult> {
  tableName(event);
  return backfillSlotStep(deps.catalog, deps.kafka, event as SlotStepRequest, deps.chunk);
}

/** The Lambda's dispatch: one function serves Plan, Replan and Chunk. */
export async function backfillTask(deps: BackfillTaskDeps, event: unknown): Promise<BackfillPlanState | SlotStepResult> {
  const action = field(event, 'action');
  if (action === 'plan') return planTask(deps, event);
  if (action === 'chunk') return chunkTask(deps, event);
  throw new BackfillTaskError(`backfill: "action" must be "plan" or "chunk", got ${JSON.stringify(action)}`);
}
