/**
 * Partition discovery: partitions added to a topic after its table was made get a
 * catalog row whose indexed range starts, empty, at their last stable offset (as every
 * partition of a new table does; live indexing goes on from there), and a backfill plan
 * as the table's `history` says. The live indexer adds such a partition the same way
 * when an event names it first (`indexerFor`); either way the row is added once, and
 * discovery plans the backfill of every partition that has no plan yet (also those of a
 * table just created), so that a scheduler knows which tables need a backfill run.
 */
import { partitionPlans } from '../catalog/partitions.js';
import { planTablePartitions } from '../backfill/plan.js';
import type { Catalog } from '../catalog/db.js';
import { addPartitions, findTable, listTables } from '../catalog/tables.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { lastStableOffsets } from '../kafka/offsets.js';
import { checkedTopic } from '../table-topic/topic-identity.js';
import { eachTable, type TableFailure } from './check.js';

export interface DiscoveredPartition {
  table: string;
  topic: string;
  partition: number;
  /** Where its indexed range starts: the LSO when it was added. */
  start: string;
  /**
   * `topic`: new in the topic, added now. `catalog`: already in the catalog (added by the
   * live indexer when an event named it first, or with its table) but never planned.
   */
  found: 'topic' | 'catalog';
  /** History is left to backfill below `start`: a backfill run is due. */
  backfill: boolean;
}

/**
 * Finds partitions the catalog does not know yet, for one table or every table, adds
 * them at their LSO, and plans the backfill of every partition never planned. Returns
 * both kinds, so a scheduler can start a backfill for the tables that need one. A table
 * that fails (its topic gone) does not stop the others: it goes into `failed`, or,
 * without it, into the error thrown once the others are done.
 */
export async function discoverPartitions(catalog: Catalog, kafka: KafkaConnection, options: { table?: string; failed?: TableFailure[] } = {}): Promise<DiscoveredPartition[]> {
  const tables = options.table === undefined ? await listTables(catalog) : [await findTable(catalog, options.table)];
  const found: DiscoveredPartition[] = [];
  const failed = options.failed ?? [];
  await eachTable(tables, failed, 'discovery', async (table) => {
    const known = await partitionPlans(catalog, table.tableId);
    const knownIds = new Set(known.map((row) => row.partition));
    const missing = (await checkedTopic(catalog, kafka, table)).partitions.filter((partition) => !knownIds.has(partition));
    const starts = missing.length === 0 ? [] : await lastStableOffsets(kafka, missing.map((partition) => ({ topic: table.topic, partition })));
    const added = new Set(await addPartitions(catalog, table.tableId, new Map(missing.map((partition, i) => [partition, starts[i]!]))));
    // History none plans nothing: its partitions stay unplanned and are reported only when new.
    const unplanned = table.settings.history.kind === 'none' ? [] : known.filter((row) => !row.planned).map((row) => row.partition);
    const toPlan = [...new Set([...added, ...unplanned])].sort((a, b) => a - b);
    if (toPlan.length === 0) return;
    for (const planned of await planTablePartitions(catalog, kafka, table, toPlan)) {
      found.push({
        table: table.name,
        topic: table.topic,
        partition: planned.partition,
        start: planned.indexedStart,
        found: added.has(planned.partition) ? 'topic' : 'catalog',
        backfill: table.settings.history.kind !== 'none' && !planned.done,
      });
    }
  });
  if (!options.failed && failed.length > 0) throw new Error(`partition discovery failed for ${failed.map((f) => `table ${f.table} (topic ${f.topic}): ${f.reason}`).join('; ')}`);
  return found;
}
