/**
 * Planning a backfill: each partition's target, from the table's `history`:
 *   all                Kafka's earliest offset
 *   since = <time>     the first offset at or after the time (Kafka's time index), never
 *                      below the earliest offset
 *   none               no plan: nothing is backfilled
 * and its cursor (where the first chunk ends): indexed_start. Planning again is harmless:
 * a set target only rises with Kafka's earliest offset, a set cursor is kept.
 */
import { partitionPlans } from '../catalog/partitions.js';
import { backfillStates, planPartition, type BackfillState } from '../catalog/backfill.js';
import type { Catalog } from '../catalog/db.js';
import { findTable, listTables } from '../catalog/tables.js';
import { type TableRecord } from '../table/record.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { earliestOffsets, offsetsForTimes } from '../kafka/offsets.js';
import type { BackfillPartition, BackfillPlan } from './types.js';

export function toBackfillPartition(table: TableRecord, state: BackfillState): BackfillPartition {
  const cursor = state.cursor ?? state.indexedStart;
  const target = state.target ?? cursor;
  return {
    table: table.name,
    tableId: String(table.tableId),
    partition: state.partition,
    cursor: String(cursor),
    target: String(target),
    indexedStart: String(state.indexedStart),
    done: cursor <= target,
  };
}

/** Plans the given partitions of a table (all of its catalog partitions when absent). */
export async function planTablePartitions(catalog: Catalog, kafka: KafkaConnection, table: TableRecord, partitions?: number[]): Promise<BackfillPartition[]> {
  const states = await backfillStates(catalog, table.tableId, partitions);
  if (table.settings.history.kind === 'none' || states.length === 0) return states.map((state) => toBackfillPartition(table, state));
  const refs = states.map((state) => ({ topic: table.topic, partition: state.partition }));
  const earliest = await earliestOffsets(kafka, refs);
  const history = table.settings.history;
  const initial = history.kind === 'since'
    ? (await offsetsForTimes(kafka, refs.map((ref) => ({ ...ref, timestampMs: Date.parse(history.since) })))).map((found) => found.offset)
    : earliest;
  const planned: BackfillPartition[] = [];
  for (const [i, state] of states.entries()) {
    planned.push(toBackfillPartition(table, await planPartition(catalog, table.tableId, state.partition, initial[i]!, earliest[i]!)));
  }
  return planned;
}

/** Plans the table's partitions that have no plan yet (none when its history is `none`). */
export async function planUnplannedPartitions(catalog: Catalog, kafka: KafkaConnection, table: TableRecord): Promise<BackfillPartition[]> {
  if (table.settings.history.kind === 'none') return [];
  const unplanned = (await partitionPlans(catalog, table.tableId)).filter((p) => !p.planned).map((p) => p.partition);
  if (unplanned.length === 0) return [];
  return planTablePartitions(catalog, kafka, table, unplanned);
}

/**
 * Plans every partition of one table (by name) or of every table. Returns the partitions
 * with work left: the state machine runs chunks for each until `done`.
 */
export async function planBackfill(catalog: Catalog, kafka: KafkaConnection, tableName?: string): Promise<BackfillPlan> {
  const tables = tableName === undefined ? await listTables(catalog) : [await findTable(catalog, tableName)];
  const partitions: BackfillPartition[] = [];
  let finished = 0;
  for (const table of tables) {
    for (const planned of await planTablePartitions(catalog, kafka, table)) {
      if (planned.done) finished += 1;
      else partitions.push(planned);
    }
  }
  return { partitions, finished };
}
