/**
 * A table's backfill as a chain of executions (src/state-machines/chain.ts): execution n
 * is named `<table>-<table id>-<n>`. The table id makes a name unique across a table
 * dropped and made again under the same name.
 */
import { lastBackfillExecution } from '../catalog/backfill-executions.js';
import type { Catalog } from '../catalog/db.js';
import { findTable } from '../catalog/tables.js';
import { chainExecutionName, type ExecutionStart } from '../state-machines/chain.js';

/** `<table>-<table id>-<execution>`; the table's name is cut to fit 80 characters. */
export function backfillExecutionName(table: string, tableId: bigint | string, execution: number): string {
  return chainExecutionName(table, tableId, execution);
}

/** What a backfill execution is started with (ContinueAsNew adds AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID). */
export interface BackfillExecutionInput {
  table: string;
  /** The execution's number; absent (a start by hand): the plan takes the next one. */
  execution?: number;
  chunksPerExecution?: number;
}

export type BackfillStart = ExecutionStart<BackfillExecutionInput>;

/**
 * The execution that comes next for a table's backfill: one above the last that ran or was
 * started. Whoever starts it records its number once StartExecution answered
 * (recordBackfillExecution).
 */
export async function nextBackfillExecution(catalog: Catalog, tableName: string, chunksPerExecution?: number): Promise<BackfillStart & { tableId: bigint; execution: number }> {
  const table = await findTable(catalog, tableName);
  const execution = (await lastBackfillExecution(catalog, table.tableId)) + 1;
  return { tableId: table.tableId, execution, ...backfillStart(table.name, table.tableId, execution, chunksPerExecution) };
}

/** Execution number `execution` of a table's backfill: its name and its input. */
export function backfillStart(table: string, tableId: bigint, execution: number, chunksPerExecution?: number): BackfillStart {
  return {
    name: backfillExecutionName(table, tableId, execution),
    input: { table, execution, ...(chunksPerExecution !== undefined ? { chunksPerExecution } : {}) },
  };
}
