/**
 * Backfill: indexing the history below a partition's indexed_start, backwards, one chunk
 * of `backfill_offsets` offsets at a time, down to the target the table's `history` sets.
 *
 * The steps (all JSON in, JSON out):
 *   planBackfill(catalog, kafka, table?)            → BackfillPlan {partitions, finished}
 *   backfillChunk(catalog, kafka, {tableId, partition, end: cursor}) → ChunkResult
 *     … loop while !done, passing the result's `cursor` as the next `end`.
 * Everything lives in the catalog (target, cursor, indexed_start), so a new run (after a
 * failure or a restart) picks up where the last stopped: plan again and go on.
 * `runBackfill` runs these steps in this process. The state machine names no partition:
 * its slots claim the next partition with work (slot.ts, tasks.ts).
 *
 * Errors a chunk throws: BackfillClaimedError (another run holds the partition's claim;
 * retry after its lease_ttl), BackfillClaimLostError and Kafka/Postgres errors (retry:
 * nothing was committed), ChunkRequestError and TableError (a bad request or a dropped
 * table; do not retry). Outcomes that are not errors (skipped, stale, target-raised)
 * come back in the ChunkResult with the current cursor: loop on.
 */
import type { Catalog } from '../catalog/db.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { ownerName } from '../runtime/engine.js';
import { backfillChunk, type ChunkOptions } from './chunk.js';
import { planBackfill } from './plan.js';
import type { BackfillPartition, ChunkResult } from './types.js';

export * from './types.js';
export { backfillChunk, parseChunkRequest, ChunkRequestError, type ChunkOptions } from './chunk.js';
export { planBackfill, planTablePartitions } from './plan.js';
export { BackfillClaimedError, BackfillClaimLostError } from '../catalog/backfill.js';

export interface BackfillSummary {
  table: string;
  partitions: BackfillPartition[];
  chunks: number;
  records: number;
  bytes: number;
  files: number;
  elapsedMs: number;
}

export interface BackfillRunner {
  catalog: Catalog;
  kafka: KafkaConnection;
}

/**
 * Backfills one table to its targets in this process: plan, then each partition's chunks
 * in turn until done. `progress` gets every chunk's result. This is the seam a local
 * execution of the state machine (local-execution.ts) replaces.
 */
export async function runBackfill(
  engine: BackfillRunner,
  tableName: string,
  progress: (chunk: ChunkResult) => void = () => {},
  options: ChunkOptions & { maxChunks?: number } = {},
): Promise<BackfillSummary> {
  const started = performance.now();
  const owner = options.owner ?? ownerName('backfill');
  const plan = await planBackfill(engine.catalog, engine.kafka, tableName);
  const summary: BackfillSummary = { table: tableName, partitions: [], chunks: 0, records: 0, bytes: 0, files: 0, elapsedMs: 0 };
  for (const planned of plan.partitions) {
    let current: BackfillPartition = planned;
    while (!current.done && (options.maxChunks === undefined || summary.chunks < options.maxChunks)) {
      const result = await backfillChunk(engine.catalog, engine.kafka, { tableId: current.tableId, partition: current.partition, end: current.cursor }, { ...options, owner });
      summary.chunks += 1;
      summary.records += result.records;
      summary.bytes += result.bytes;
      summary.files += result.files;
      progress(result);
      current = result;
    }
    summary.partitions.push(current);
  }
  summary.elapsedMs = Math.round(performance.now() - started);
  return summary;
}
