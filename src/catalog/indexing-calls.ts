/**
 * The catalog calls that indexing makes, behind one interface: a seam where a test puts an
 * in-memory twin that can fail any call (test/helpers/memory-indexing-catalog.ts), as
 * franz-go's kfake lets a test fail any request. `PartitionIndexer` (src/indexer) makes its
 * six calls only through it (the lease: take, renew, release; the waiting reason; a lost
 * interval; a commit of files), and a backfill chunk its commit. `postgresIndexingCatalog`
 * is the catalog itself: each call is the named function of src/catalog it was before.
 */
import type { Catalog } from './db.js';
import { commitBackfillChunk, type BackfillClaim, type BackfillState, type SlotStep } from './backfill.js';
import { commitRanges, recordLostInterval, type CommitResult, type NewRange } from './file-writes.js';
import { acquireLease, releaseLease, renewLease, setWaitingReason, type Lease, type OpenRangeReport } from './leases.js';

export interface IndexingCatalog {
  /** Takes the partition's lease if it is free, expired, released or ours; undefined while another holds it (`acquireLease`). */
  acquireLease(tableId: bigint, partition: number, owner: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends a live lease and reports the open range; LeaseLostError when it is gone (`renewLease`). */
  renewLease(lease: Lease, ttlMs: number, open?: OpenRangeReport): Promise<Lease>;
  /** Lets another take the lease at once (`releaseLease`). */
  releaseLease(lease: Lease): Promise<boolean>;
  /** Why the partition is not indexing, null when it is, as `holder` may say it (`setWaitingReason`). */
  setWaitingReason(tableId: bigint, partition: number, reason: string | null, holder: { owner: string; epoch?: bigint }): Promise<void>;
  /** Offsets Kafka deleted before anyone indexed them, under the lease; returns the new indexed_end (`recordLostInterval`). */
  recordLostInterval(lease: Lease, earliest: bigint): Promise<bigint>;
  /** Consecutive ranges at indexed_end under the lease, those already there skipped (`commitRanges`). */
  commitRanges(lease: Lease, ranges: readonly NewRange[], leaseTtlMs: number): Promise<CommitResult>;
  /** A backfill chunk's ranges at indexed_start under its claim, if the plan is still `expected` (`commitBackfillChunk`). */
  commitBackfillChunk(claim: BackfillClaim, expected: BackfillState, ranges: readonly NewRange[], cursor: bigint, ttlMs: number, step?: SlotStep): Promise<BackfillState>;
}

/** The catalog in Postgres. */
export function postgresIndexingCatalog(catalog: Catalog): IndexingCatalog {
  return {
    acquireLease: (tableId, partition, owner, ttlMs) => acquireLease(catalog, tableId, partition, owner, ttlMs),
    renewLease: (lease, ttlMs, open) => renewLease(catalog, lease, ttlMs, open),
    releaseLease: (lease) => releaseLease(catalog, lease),
    setWaitingReason: (tableId, partition, reason, holder) => setWaitingReason(catalog, tableId, partition, reason, holder),
    recordLostInterval: (lease, earliest) => recordLostInterval(catalog, lease, earliest),
    commitRanges: (lease, ranges, leaseTtlMs) => commitRanges(catalog, lease, ranges, leaseTtlMs),
    commitBackfillChunk: (claim, expected, ranges, cursor, ttlMs, step) => commitBackfillChunk(catalog, claim, expected, ranges, cursor, ttlMs, step),
  };
}
