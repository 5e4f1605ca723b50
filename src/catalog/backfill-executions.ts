/**
 * The catalog side of the backfill state machine's executions: how much a table's backfill
 * has left (the plan's counts; no cursor leaves the catalog), the numbers its executions
 * run as, and the tables whose backfill no execution is working on.
 *
 * An execution's number: the first of a backfill takes the table's `backfill_execution`
 * + 1, each continuation the next. The column keeps the highest number that ran (or that
 * the scheduled check started), so the next execution's name, derived from it, is the
 * same for whoever starts it: ContinueAsNew, its retry, or the scheduled check resuming a
 * dead execution.
 */
import type { Catalog, CatalogClient } from './db.js';

export interface BackfillProgress {
  /** Partitions with backfill left (cursor above target). */
  left: number;
  /** Of those, the ones no run holds a live claim on. */
  claimable: number;
  /** Partitions whose backfill is done, or that have none (history `none`). */
  finished: number;
}

export async function backfillProgress(catalog: Catalog | CatalogClient, tableId: bigint): Promise<BackfillProgress> {
  const result = await catalog.query<{ left: bigint; claimable: bigint; finished: bigint }>(
    `SELECT count(*) FILTER (WHERE backfill_cursor > backfill_target) AS left,
            count(*) FILTER (WHERE backfill_cursor > backfill_target AND NOT coalesce(backfill_expires_at > now(), false)) AS claimable,
            count(*) FILTER (WHERE NOT coalesce(backfill_cursor > backfill_target, false)) AS finished
     FROM offsetlake.lake_partition WHERE table_id = $1`,
    [tableId],
  );
  const row = result.rows[0]!;
  return { left: Number(row.left), claimable: Number(row.claimable), finished: Number(row.finished) };
}

/** A number for an execution started without one (by hand): one above every number the table's executions had. */
export async function allocateBackfillExecution(catalog: Catalog | CatalogClient, tableId: bigint): Promise<number> {
  const result = await catalog.query<{ backfill_execution: bigint }>(
    'UPDATE offsetlake.lake_table SET backfill_execution = backfill_execution + 1 WHERE table_id = $1 RETURNING backfill_execution',
    [tableId],
  );
  if (!result.rows[0]) throw new Error(`table ${tableId} is not in the catalog`);
  return Number(result.rows[0].backfill_execution);
}

/** The highest number an execution of the table ran as, or the scheduled check started (0: none yet). */
export async function lastBackfillExecution(catalog: Catalog | CatalogClient, tableId: bigint): Promise<number> {
  const result = await catalog.query<{ backfill_execution: bigint }>('SELECT backfill_execution FROM offsetlake.lake_table WHERE table_id = $1', [tableId]);
  if (!result.rows[0]) throw new Error(`table ${tableId} is not in the catalog`);
  return Number(result.rows[0].backfill_execution);
}

/** Records that execution `execution` of the table ran or was started; the column only rises. */
export async function recordBackfillExecution(catalog: Catalog | CatalogClient, tableId: bigint, execution: number): Promise<void> {
  await catalog.query('UPDATE offsetlake.lake_table SET backfill_execution = greatest(backfill_execution, $2) WHERE table_id = $1', [tableId, execution]);
}

export interface UnattendedBackfill {
  tableId: bigint;
  table: string;
  /** The highest number an execution of the table ran as (0: none yet). */
  lastExecution: number;
}

/**
 * Tables (not dropped) whose backfill has partitions left and no live claim on any of
 * them: no execution is working on them. A slot holds its claim during a chunk (renewed)
 * and between its successful steps (src/backfill/slot.ts); a failed or timed-out
 * execution's claims expire after the table's lease_ttl. An execution that waits out a
 * retry, or that is between its last step and its ContinueAsNew, looks the same: the
 * scheduled check then starts the execution it would continue as, under the same name,
 * so the two end as one chain (src/backfill/resume.ts).
 */
export async function unattendedBackfills(catalog: Catalog | CatalogClient, tableName?: string): Promise<UnattendedBackfill[]> {
  const result = await catalog.query<{ table_id: bigint; table_name: string; backfill_execution: bigint }>(
    `SELECT t.table_id, t.table_name, t.backfill_execution FROM offsetlake.lake_table t
     WHERE t.dropped_at IS NULL AND ($1::text IS NULL OR t.table_name = $1)
       AND EXISTS (SELECT 1 FROM offsetlake.lake_partition p WHERE p.table_id = t.table_id AND p.backfill_cursor > p.backfill_target)
       AND NOT EXISTS (SELECT 1 FROM offsetlake.lake_partition p WHERE p.table_id = t.table_id AND p.backfill_expires_at > now())
     ORDER BY t.table_name`,
    [tableName ?? null],
  );
  return result.rows.map((row) => ({ tableId: row.table_id, table: row.table_name, lastExecution: Number(row.backfill_execution) }));
}
