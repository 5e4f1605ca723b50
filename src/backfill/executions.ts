/**
 * Names of backfill executions. Step Functions uses an execution name once (a Standard
 * workflow's name for 90 days): StartExecution with a name already used succeeds while
 * that execution runs with the same input, and fails with ExecutionAlreadyExists
 * otherwise. Naming each execution of a table's backfill after the table and its number
 * makes starting execution n + 1 idempotent, whoever starts it: ContinueAsNew and its
 * retries, two scheduled checks, or a scheduled check and a ContinueAsNew at once start
 * one execution between them. The table id makes a name unique across a table dropped
 * and made again under the same name.
 */
import { lastBackfillExecution } from '../catalog/backfill-executions.js';
import type { Catalog } from '../catalog/db.js';
import { findTable } from '../catalog/tables.js';

/** Step Functions' rule for execution names (the subset we use): 1–80 letters, digits, - and _. */
export const executionNamePattern = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * `<table>-<table id>-<execution>`; the table's name is cut to fit 80 characters (the id
 * and the number never are, so names stay distinct). Table names hold no '-'.
 */
export function backfillExecutionName(table: string, tableId: bigint | string, execution: number): string {
  const suffix = `-${tableId}-${execution}`;
  return `${table.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 80 - suffix.length)}${suffix}`;
}

/** What a backfill execution is started with (ContinueAsNew adds AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID). */
export interface BackfillExecutionInput {
  table: string;
  /** The execution's number; absent (a start by hand): the plan takes the next one. */
  execution?: number;
  chunksPerExecution?: number;
}

export interface BackfillStart {
  name: string;
  input: BackfillExecutionInput;
}

/**
 * The execution that comes next for a table's backfill: one above the last that ran or was
 * started. Whoever starts it records its number once StartExecution answered
 * (recordBackfillExecution), so that an execution that dies before its plan ran is not
 * named again.
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
