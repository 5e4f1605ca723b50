/**
 * Status rows (src/table-topic/status.ts, or a runner's own figures in their shape) as the
 * per-partition lag that `serve`'s /metrics and `run --metrics-port` both publish
 * (src/common/lag-metrics.ts): records are LSO − indexed_end; seconds are since the
 * partition was last seen caught up (indexed_end at its LSO), 0 while it is. Pure: the
 * caller says when each set of rows was seen.
 */
import type { PartitionLag } from '../common/lag-metrics.js';

/** What the lag needs of a row: a `PartitionStatus` has it (status.ts computes its `lag` with recordsBehind below). */
export interface LagRow {
  table: string;
  partition: number;
  indexedEnd: bigint;
  lastStableOffset: bigint | null;
}

/** Committed offsets of a partition not yet in files: LSO − indexed_end, 0 at or past it; null while the LSO is unknown. */
export function recordsBehind(indexedEnd: bigint, lastStableOffset: bigint | null): bigint | null {
  if (lastStableOffset === null) return null;
  return lastStableOffset > indexedEnd ? lastStableOffset - indexedEnd : 0n;
}

/** One process's memory of when each partition was last seen caught up, from the rows it saw one set after another. */
export class PartitionLags {
  /** Per partition (table NUL partition), the last time a row of it was seen caught up. */
  private readonly caughtUpAt = new Map<string, number>();

  /**
   * `behindSince`: where a partition has not been seen caught up, the time it is known to
   * have been behind since (run: its start, as its indexers began at indexed_end then).
   * Without it the process cannot date such a partition, and its seconds are absent.
   */
  constructor(private readonly behindSince?: number) {}

  /**
   * The lag of each row whose LSO is known, as seen at `at` (epoch ms, not before the
   * last call's): a caught-up row dates its partition's last catch-up at `at`; a row
   * without an LSO is left out (its lag is unknown) and changes nothing.
   */
  lags(rows: readonly LagRow[], at: number): PartitionLag[] {
    return rows.flatMap((row) => {
      const records = recordsBehind(row.indexedEnd, row.lastStableOffset);
      if (records === null) return [];
      const key = `${row.table}\u0000${row.partition}`;
      if (records === 0n) this.caughtUpAt.set(key, at);
      const since = this.caughtUpAt.get(key) ?? this.behindSince;
      return [{ table: row.table, partition: row.partition, records, ...(since === undefined ? {} : { seconds: Math.max(0, (at - since) / 1000) }) }];
    });
  }
}
