/**
 * The backfill state machine's task contract (infra/backfill.ts), shared by the Lambda
 * entry (functions/backfill) and the local execution (infra/local-execution.ts), so
 * both run the same code behind the same state names:
 *
 *   plan  {action: 'plan', table, input}  → BackfillPlanState
 *         `input` is the execution's input (or, for Replan, the current state): its
 *         `chunksPerExecution` (default 1,500) and `execution` (default 1) are kept.
 *   chunk {action: 'chunk', table, cursor: BackfillPartition} → ChunkResult (a cursor with `done`)
 *
 * One execution gets at most `chunksPerExecution` chunks: the plan hands it at most that
 * many partitions, each with ⌊chunksPerExecution / partitions⌋ ≥ 1 chunks. The rest (and
 * what a partition's budget left) goes to the next execution, which plans again from the
 * catalog, where every cursor lives.
 */
import type { Catalog } from '../catalog/db.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { backfillChunk, planBackfill, type BackfillPartition, type BackfillPlan, type ChunkOptions, type ChunkResult } from './index.js';

import { defaultChunksPerExecution, maxChunksPerExecution } from './limits.js';

export { defaultChunksPerExecution, maxChunksPerExecution };

export interface BackfillTaskDeps {
  catalog: Catalog;
  kafka: KafkaConnection;
  chunk?: ChunkOptions;
}

export interface BackfillPlanState {
  table: string;
  chunksPerExecution: number;
  /** 1 for the first execution of a backfill, +1 for each continuation. */
  execution: number;
  chunksPerPartition: number;
  /** This execution's partitions (at most chunksPerExecution), with work left. */
  partitions: BackfillPartition[];
  /** Partitions with work left that this execution does not take. */
  deferred: number;
  /** Partitions already done. */
  finished: number;
}

export class BackfillTaskError extends Error {
  override name = 'BackfillTaskError';
}

function field(object: unknown, name: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[name] : undefined;
}

function wholeNumber(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null) return fallback;
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

export async function planTask(deps: BackfillTaskDeps, event: unknown): Promise<BackfillPlanState> {
  const table = tableName(event);
  return planState(event, await planBackfill(deps.catalog, deps.kafka, table));
}

/** This execution's share of a plan (pure): at most chunksPerExecution partitions, and each one's chunk budget. */
export function planState(event: unknown, plan: BackfillPlan): BackfillPlanState {
  const table = tableName(event);
  const input = field(event, 'input');
  const chunksPerExecution = wholeNumber(field(input, 'chunksPerExecution'), 'chunksPerExecution', defaultChunksPerExecution, 1, maxChunksPerExecution);
  const execution = wholeNumber(field(input, 'execution'), 'execution', 1, 1, Number.MAX_SAFE_INTEGER);
  const partitions = plan.partitions.slice(0, chunksPerExecution);
  return {
    table,
    chunksPerExecution,
    execution,
    chunksPerPartition: Math.max(1, Math.floor(chunksPerExecution / Math.max(1, partitions.length))),
    partitions,
    deferred: plan.partitions.length - partitions.length,
    finished: plan.finished,
  };
}

export async function chunkTask(deps: BackfillTaskDeps, event: unknown): Promise<ChunkResult> {
  tableName(event);
  const cursor = field(event, 'cursor');
  return backfillChunk(deps.catalog, deps.kafka, { tableId: field(cursor, 'tableId') as string, partition: field(cursor, 'partition') as number, end: field(cursor, 'cursor') as string }, deps.chunk);
}

/** The Lambda's dispatch: one function serves Plan, Replan and Chunk. */
export async function backfillTask(deps: BackfillTaskDeps, event: unknown): Promise<BackfillPlanState | ChunkResult> {
  const action = field(event, 'action');
  if (action === 'plan') return planTask(deps, event);
  if (action === 'chunk') return chunkTask(deps, event);
  throw new BackfillTaskError(`backfill: "action" must be "plan" or "chunk", got ${JSON.stringify(action)}`);
}
