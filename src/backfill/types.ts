/**
 * What crosses the state machine's boundary: plain JSON. Offsets are decimal strings
 * (JSON has no 64-bit integers); partitions are numbers.
 */

/** One partition's backfill as a plan or a chunk reports it. */
export interface BackfillPartition {
  table: string;
  /** lake_table.table_id, as a decimal string. */
  tableId: string;
  partition: number;
  /** Where the next chunk ends (exclusive): pass it back as the next chunk's `end`. */
  cursor: string;
  /** The lowest offset backfill goes down to (Kafka's earliest, or the `since` offset). */
  target: string;
  /** The partition's indexed range starts here now. */
  indexedStart: string;
  /** Nothing left to backfill: cursor ≤ target. */
  done: boolean;
}

export interface BackfillPlan {
  /** Partitions with backfill left to do, in table and partition order. */
  partitions: BackfillPartition[];
  /** Partitions already done (or with history `none`): for progress only. */
  finished: number;
}

/** The input of one chunk step: which partition, and which chunk the caller means. */
export interface ChunkRequest {
  tableId: string;
  partition: number;
  /**
   * The cursor the caller saw (the plan's or the last chunk's `cursor`): the chunk that
   * ends there is run. When the catalog's cursor is no longer there (the chunk already
   * ran: a retried step), nothing is done and the current state is returned.
   * Absent: run whatever chunk is next.
   */
  end?: string;
}

export type ChunkOutcome =
  /** The chunk's files are committed; indexed_start moved down. */
  | 'committed'
  /** The chunk held no committed record: only the cursor moved. */
  | 'empty'
  /** The requested chunk is no longer next (already done, or the plan moved): nothing done. */
  | 'skipped'
  /** Nothing left to backfill. */
  | 'done'
  /** Kafka's earliest passed the chunk while it ran: the target rose, nothing committed. */
  | 'target-raised'
  /** The plan moved under the chunk (retention, another run): nothing committed. */
  | 'stale';

export interface ChunkResult extends BackfillPartition {
  outcome: ChunkOutcome;
  /** The chunk's offsets [start, end), when one was read. */
  chunk: { start: string; end: string } | null;
  ranges: number;
  files: number;
  records: number;
  /** Key + value + header bytes of the chunk's records. */
  bytes: number;
  elapsedMs: number;
}
