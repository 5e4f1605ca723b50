/**
 * An in-memory twin of the catalog calls of indexing (src/catalog/indexing-calls.ts), written
 * from docs/design.md (Leases, the lease as the fence of every write, contiguity at
 * indexed_end, backfill at indexed_start under its claim) and not from the SQL, for unit
 * tests of the indexer without Postgres. Like franz-go's kfake it can fail any call: before
 * it acts (the catalog could not be reached) or after (it acted and the answer was lost).
 * Its clock is the test's: a lease expires when the test moves `now` past it.
 */
import { ContiguityError, type CommitResult, type NewRange } from '../../src/catalog/file-writes.js';
import { BackfillClaimLostError, BackfillStaleError, type BackfillClaim, type BackfillState, type SlotStep } from '../../src/catalog/backfill.js';
import type { IndexingCatalog } from '../../src/catalog/indexing-calls.js';
import { LeaseLostError, type Lease, type OpenRangeReport } from '../../src/catalog/leases.js';

export type IndexingCall = keyof IndexingCatalog;

/** A range as committed: its offsets, files, and who committed it. */
export interface CommittedRange {
  range: NewRange;
  source: 'live' | 'backfill';
  epoch: bigint;
}

export interface PartitionRow {
  indexedStart: bigint;
  indexedEnd: bigint;
  leaseOwner: string | null;
  leaseEpoch: bigint;
  leaseExpiresAt: number | null;
  openRangeSince: number | null;
  openRangeRecords: number;
  openRangeBytes: number;
  waitingReason: string | null;
  ranges: CommittedRange[];
  lost: { start: bigint; end: bigint; epoch: bigint }[];
  backfill: { owner: string | null; epoch: bigint; expiresAt: number | null; cursor: bigint | null; target: bigint | null };
}

/** A fault for the next matching call: thrown before the call acts, or after it acted (its answer lost). */
export interface Fault {
  call: IndexingCall;
  when: 'before' | 'after';
  error?: Error;
}

export class CatalogUnreachableError extends Error {
  override name = 'CatalogUnreachableError';
}

export class MemoryIndexingCatalog implements IndexingCatalog {
  /** The catalog's clock (ms): Postgres's now(). */
  now = 1_000_000;
  readonly partitions = new Map<string, PartitionRow>();
  /** Every call made, in order, with whether it was failed. */
  readonly calls: { call: IndexingCall; failed?: 'before' | 'after' }[] = [];
  private faults: Fault[] = [];
  /** Asked at every call that has no queued fault: return a fault's `when` to fail it. */
  chaos: ((call: IndexingCall) => 'before' | 'after' | undefined) | undefined;

  /** A partition as `addPartitions` makes it: indexed range empty at `start`. */
  addPartition(tableId: bigint, partition: number, start: bigint): PartitionRow {
    const row: PartitionRow = {
      indexedStart: start, indexedEnd: start, leaseOwner: null, leaseEpoch: 0n, leaseExpiresAt: null,
      openRangeSince: null, openRangeRecords: 0, openRangeBytes: 0, waitingReason: null, ranges: [], lost: [],
      backfill: { owner: null, epoch: 0n, expiresAt: null, cursor: null, target: null },
    };
    this.partitions.set(`${tableId}/${partition}`, row);
    return row;
  }

  row(tableId: bigint, partition: number): PartitionRow {
    const row = this.partitions.get(`${tableId}/${partition}`);
    if (!row) throw new Error(`no partition ${partition} of table ${tableId} in the twin`);
    return row;
  }

  /** Fails the next call named `call`. */
  fail(fault: Fault): void {
    this.faults.push(fault);
  }

  private live(row: PartitionRow): boolean {
    return row.leaseExpiresAt !== null && row.leaseExpiresAt > this.now;
  }

  /** Runs `act`, failing it as a queued fault or `chaos` says. */
  private async call<T>(call: IndexingCall, act: () => T): Promise<T> {
    await Promise.resolve(); // a catalog call is asynchronous: other work may run between calls
    const queued = this.faults.findIndex((fault) => fault.call === call);
    const fault = queued >= 0 ? this.faults.splice(queued, 1)[0]! : undefined;
    const when = fault?.when ?? this.chaos?.(call);
    const error = fault?.error ?? new CatalogUnreachableError(`the catalog did not answer ${call} (${when}: a fault of the test)`);
    this.calls.push({ call, ...(when ? { failed: when } : {}) });
    if (when === 'before') throw error;
    const result = act();
    if (when === 'after') throw error;
    return result;
  }

  private lease(tableId: bigint, partition: number, row: PartitionRow): Lease {
    return {
      tableId, partition, owner: row.leaseOwner!, epoch: row.leaseEpoch, expiresAt: new Date(row.leaseExpiresAt!),
      indexedEnd: row.indexedEnd, openRangeSince: row.openRangeSince === null ? null : new Date(row.openRangeSince), openRangeRecords: row.openRangeRecords,
    };
  }

  /** The fence: the lease is the partition's (owner, epoch, unexpired), or LeaseLostError. */
  private fenced(lease: Lease): PartitionRow {
    const row = this.row(lease.tableId, lease.partition);
    if (row.leaseOwner !== lease.owner || row.leaseEpoch !== lease.epoch || !this.live(row)) {
      throw new LeaseLostError(lease.tableId, lease.partition, { owner: lease.owner, epoch: lease.epoch }, { owner: row.leaseOwner, epoch: row.leaseEpoch, expired: !this.live(row) });
    }
    return row;
  }

  acquireLease(tableId: bigint, partition: number, owner: string, ttlMs: number): Promise<Lease | undefined> {
    return this.call('acquireLease', () => {
      const row = this.row(tableId, partition);
      if (row.leaseOwner !== null && row.leaseOwner !== owner && this.live(row)) return undefined;
      // the epoch grows when a different owner takes it; an owner taking back its own keeps it
      if (row.leaseOwner !== owner) row.leaseEpoch += 1n;
      row.leaseOwner = owner;
      row.leaseExpiresAt = this.now + ttlMs;
      return this.lease(tableId, partition, row);
    });
  }

  renewLease(lease: Lease, ttlMs: number, open?: OpenRangeReport): Promise<Lease> {
    return this.call('renewLease', () => {
      const row = this.fenced(lease);
      row.leaseExpiresAt = this.now + ttlMs;
      if (open) {
        row.openRangeBytes = open.bytes;
        row.openRangeRecords = open.records;
        row.openRangeSince = open.since ?? null;
        row.waitingReason = open.waitingReason ?? null;
      }
      return this.lease(lease.tableId, lease.partition, row);
    });
  }

  releaseLease(lease: Lease): Promise<boolean> {
    return this.call('releaseLease', () => {
      const row = this.row(lease.tableId, lease.partition);
      if (row.leaseOwner !== lease.owner || row.leaseEpoch !== lease.epoch || !this.live(row)) return false;
      row.leaseExpiresAt = this.now;
      return true;
    });
  }

  setWaitingReason(tableId: bigint, partition: number, reason: string | null, holder: { owner: string; epoch?: bigint }): Promise<void> {
    return this.call('setWaitingReason', () => {
      const row = this.row(tableId, partition);
      const may = holder.epoch !== undefined
        ? row.leaseOwner === holder.owner && row.leaseEpoch === holder.epoch
        : row.leaseOwner === null || row.leaseOwner === holder.owner || !this.live(row);
      if (may) row.waitingReason = reason;
    });
  }

  recordLostInterval(lease: Lease, earliest: bigint): Promise<bigint> {
    return this.call('recordLostInterval', () => {
      const row = this.fenced(lease);
      if (row.indexedEnd >= earliest) return row.indexedEnd;
      row.lost.push({ start: row.indexedEnd, end: earliest, epoch: lease.epoch });
      row.indexedEnd = earliest;
      row.openRangeBytes = 0;
      row.openRangeRecords = 0;
      row.openRangeSince = null;
      return earliest;
    });
  }

  commitRanges(lease: Lease, ranges: readonly NewRange[], leaseTtlMs: number): Promise<CommitResult> {
    return this.call('commitRanges', () => {
      const row = this.fenced(lease);
      // one transaction: check everything before changing anything
      let indexedEnd = row.indexedEnd;
      const added: NewRange[] = [];
      let skipped = 0;
      for (const range of ranges) {
        if (range.endOffset <= indexedEnd) {
          skipped += 1;
          continue;
        }
        if (range.startOffset !== indexedEnd) throw new ContiguityError(lease.tableId, lease.partition, indexedEnd, range.startOffset);
        added.push(range);
        indexedEnd = range.endOffset;
      }
      for (const range of added) row.ranges.push({ range, source: 'live', epoch: lease.epoch });
      row.indexedEnd = indexedEnd;
      row.leaseExpiresAt = this.now + leaseTtlMs; // a commit is proof of life
      row.openRangeBytes = 0;
      row.openRangeRecords = 0;
      row.openRangeSince = null;
      return { indexedEnd, added: added.length, skipped };
    });
  }

  /** Takes a partition's backfill claim (the twin of `claimBackfill`, for tests of the chunk commit). */
  claimBackfill(tableId: bigint, partition: number, owner: string, ttlMs: number): { claim: BackfillClaim; state: BackfillState } {
    const row = this.row(tableId, partition);
    const backfill = row.backfill;
    if (backfill.owner !== null && backfill.owner !== owner && backfill.expiresAt !== null && backfill.expiresAt > this.now) throw new Error(`claimed by ${backfill.owner}`);
    if (backfill.owner !== owner) backfill.epoch += 1n;
    backfill.owner = owner;
    backfill.expiresAt = this.now + ttlMs;
    return { claim: { tableId, partition, owner, epoch: backfill.epoch }, state: this.backfillState(tableId, partition) };
  }

  backfillState(tableId: bigint, partition: number): BackfillState {
    const row = this.row(tableId, partition);
    return { tableId, partition, indexedStart: row.indexedStart, indexedEnd: row.indexedEnd, cursor: row.backfill.cursor, target: row.backfill.target };
  }

  commitBackfillChunk(claim: BackfillClaim, expected: BackfillState, ranges: readonly NewRange[], cursor: bigint, ttlMs: number, _step?: SlotStep): Promise<BackfillState> {
    return this.call('commitBackfillChunk', () => {
      for (let i = 0; i < ranges.length; i += 1) {
        const next = ranges[i + 1]?.startOffset ?? expected.indexedStart;
        if (ranges[i]!.endOffset !== next) throw new Error(`backfill ranges of partition ${claim.partition} do not tile: a range ends at ${ranges[i]!.endOffset}, the next starts at ${next}`);
      }
      const row = this.row(claim.tableId, claim.partition);
      const backfill = row.backfill;
      const live = backfill.expiresAt !== null && backfill.expiresAt > this.now;
      if (backfill.owner !== claim.owner || backfill.epoch !== claim.epoch || !live) throw new BackfillClaimLostError(claim, { owner: backfill.owner, epoch: backfill.epoch, live });
      const actual = this.backfillState(claim.tableId, claim.partition);
      if (actual.indexedStart !== expected.indexedStart || actual.cursor !== expected.cursor || actual.target !== expected.target) throw new BackfillStaleError(expected, actual);
      for (const range of ranges) row.ranges.push({ range, source: 'backfill', epoch: claim.epoch });
      row.indexedStart = ranges[0]?.startOffset ?? expected.indexedStart;
      backfill.cursor = cursor;
      backfill.expiresAt = this.now + ttlMs;
      return this.backfillState(claim.tableId, claim.partition);
    });
  }
}
