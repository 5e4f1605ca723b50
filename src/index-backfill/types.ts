/**
 * What an index backfill's driver needs and reports. Plain JSON crosses the state
 * machine's boundary (ids as decimal strings), so a step result is JSON as it is.
 */
import type { Catalog } from '../catalog/db.js';
import type { IndexState } from '../indexes/definition.js';
import type { CommittedSource } from '../kafka/source.js';

export interface IndexBackfillDeps {
  catalog: Catalog;
  /** Where files' records are read from to rebuild them (Kafka, read_committed). */
  source: CommittedSource;
  /** The lease's owner: unique per driver (a process, or one state machine chain per index). */
  owner: string;
  /** Every step's result, as it is done. */
  progress?: (step: IndexBackfillStep) => void;
}

export interface IndexBackfillOptions {
  /** A chunk ends after this many files… (default 32) */
  chunkFiles?: number;
  /** …or once it read this many Kafka bytes (default 64 MiB; at least one file). */
  chunkBytes?: number;
  /** How long the lease lives without renewal; default the table's lease_ttl. It is renewed while a chunk runs. */
  leaseTtlMs?: number;
}

export const defaultChunkFiles = 32;
export const defaultChunkBytes = 64 * 1024 * 1024;

export type StepOutcome =
  /** The index moved from one state to the next. */
  | 'moved'
  /** A chunk of files was given entries (or skipped). */
  | 'chunk'
  /** Another live driver holds the lease: nothing done (try again after it lapses). */
  | 'held'
  /** The index is active: nothing left. */
  | 'done'
  /** The index was dropped. */
  | 'dropped';

export interface IndexBackfillStep {
  indexId: string;
  outcome: StepOutcome;
  /** The index's state after the step (null: dropped). */
  state: IndexState | null;
  /** `moved`: the state it left. */
  from?: IndexState;
  /** `held`: who holds the lease, and until when (RFC 3339, Postgres's clock). */
  holder?: string | null;
  heldUntil?: string | null;
  /** Files of this step given entries, and given up on (with why). */
  files: number;
  skipped: { file: string; reason: string }[];
  granules: number;
  /** Kafka bytes read by this step. */
  bytesRead: number;
  /** Nothing left to do: the index is active, or gone. */
  done: boolean;
}
