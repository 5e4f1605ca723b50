/**
 * One partition of one table, indexed under a lease: committed records are read from
 * `indexed_end` onwards, sealed into ranges, built into files, and committed with the
 * lease. What is held in memory (the open range) is only kept while the lease it was
 * read under is still ours and the catalog's `indexed_end` is still where it starts;
 * otherwise it is dropped and read again from Kafka.
 */
import type { CommitResult, NewRange } from '../catalog/file-writes.js';
import { IndexesChangedError } from '../catalog/indexes.js';
import type { IndexingCatalog } from '../catalog/indexing-calls.js';
import { LeaseLostError, type Lease } from '../catalog/leases.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import type { RangeBuilder } from '../files/files.js';
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import type { ReadLimit } from '../kafka/read.js';
import { BatchTooLargeError, OffsetOutOfRangeError, TopicRecreatedError } from '../kafka/errors.js';
import { recreatedTopicProblem } from '../table-topic/topic-identity.js';
import { RangeSealer, sealingRules, type SealedRange, type SealReason } from '../ranges/sealer.js';
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import { fetchBytesFor } from '../kafka/fetch-size.js';
import { RegistryUnavailableError } from '../schema/registry.js';
import { faultPoint } from '../common/faults.js';

export interface PartitionIndexerDeps {
  /** Every catalog call the indexer makes: Postgres's (`postgresIndexingCatalog`), or a test's twin. */
  indexingCatalog: IndexingCatalog;
  source: CommittedSource;
  build: RangeBuilder;
  /** Unique per process: the lease owner. */
  owner: string;
  clock: () => number;
  /** Told of every commit of files: the ranges it added and how long its transaction took (s). */
  onCommit?: (table: TableRecord, partition: number, ranges: readonly SealedRange[], seconds: number) => void;
  /** The most bytes one record batch may decompress to (`run --memory` sets it from its budget; read when each read starts). */
  maxBatchBytes?: number;
}

export class LeaseHeldError extends Error {
  override name = 'LeaseHeldError';
  constructor(readonly table: string, readonly partition: number) {
    super(`partition ${partition} of table ${table} is leased by another indexer; retry after its lease_ttl`);
  }
}

/** How far one `advance` reads, besides its end. */
export interface AdvanceOptions {
  /** An event's records of the span: they only size the Fetches (src/kafka/fetch-size.ts); what is indexed always comes from the committed read. */
  expected?: readonly KafkaRecord[];
  /** Stop after the Fetch that brings this many records or bytes (the local runner's deliveries: one event's worth). */
  stopAfter?: ReadLimit;
}

export interface AdvanceResult {
  committed: SealedRange[];
  /** Committed records this call read from Kafka (and their key + value + header bytes). */
  read: { records: number; bytes: number };
  /** Where the partition's indexed range now ends. */
  indexedEnd: bigint;
  /** The reader's position: everything below it is committed or held in the open range. */
  position: bigint;
}

/** Errors whose reason this partition already wrote, in its own words: not overwritten by a generic one. */
const reasonWritten = new WeakSet<object>();

/** `[first, end)` of consecutive ranges, as status shows it. */
function offsetsText(ranges: readonly SealedRange[]): string {
  return `[${ranges[0]!.startOffset}, ${ranges.at(-1)!.endOffset})`;
}

export class PartitionIndexer {
  private lease: Lease | undefined;
  private sealer: RangeSealer | undefined;
  /** Set while `lake_partition.waiting_reason` may hold a reason this indexer wrote (or one left by a predecessor). */
  private waiting = true;
  /**
   * Sealed ranges whose files could not be built because the Schema Registry could not
   * be reached: kept in memory and built first on the next call, before anything new
   * is read, so that a waiting partition resumes by itself and reads nothing more.
   */
  private pending: SealedRange[] = [];
  private pendingBytes = 0;
  /** Why the last read stopped short of its end and must wait (a batch too large for the budget): kept as the waiting reason past commits of what came before it. */
  private readBlocked: string | undefined;
  private sealedBytesCommitting = 0;
  /** Calls run one at a time: a flush for capacity must not commit between a read's seal and its commit. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(readonly table: TableRecord, readonly partition: number, private readonly deps: PartitionIndexerDeps) {}

  get key(): string {
    return `${this.table.tableId}/${this.partition}`;
  }

  /** Bytes held in memory: the open range and any sealed ranges waiting for the registry. */
  get openBytes(): number {
    return (this.sealer?.openBytes ?? 0) + this.pendingBytes;
  }

  /** When the open range comes due for its age trigger (its first read + `file_age`, ms); undefined: no open range. */
  get agesAt(): number | undefined {
    const since = this.sealer?.openSince;
    return since === undefined ? undefined : since + this.sealer!.rules.fileAgeMs;
  }

  /**
   * Bytes of sealed ranges being built and committed: out of the open range, still in
   * memory until their commit returns (the runner's memory budget counts them).
   */
  get committingBytes(): number {
    return this.sealedBytesCommitting;
  }

  /** Resolves when the call in progress (and those queued before now) have finished, however they ended. */
  whenIdle(): Promise<unknown> {
    return this.turn;
  }

  get heldLease(): Lease | undefined {
    return this.lease;
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.turn.then(work, work);
    this.turn = result.catch(() => {});
    return result;
  }

  /**
   * Reads the partition's committed records from its position up to `until` (capped at
   * the LSO; under `stopAfter`, to the end of the Fetch that reaches it), seals and
   * commits what is due.
   */
  advance(until?: bigint, options: AdvanceOptions = {}): Promise<AdvanceResult> {
    return this.exclusive(() => this.advanceNow(until, options, { records: 0, bytes: 0 }));
  }

  private async advanceNow(until: bigint | undefined, options: AdvanceOptions, read: AdvanceResult['read']): Promise<AdvanceResult> {
    const { expected, stopAfter } = options;
    let sealer = await this.takeLease();
    // Given an end, the read needs no LSO look-up first (a Metadata and a ListOffsets
    // request): each Fetch reports the LSO, and the committed read stops there.
    const target = until ?? (await this.deps.source.lastStableOffset(this.table.topic, this.partition));
    const committed: SealedRange[] = [];
    try {
      if (this.pending.length > 0) committed.push(...(await this.commit([])));
      if (sealer.position < target) {
        const readOptions: SourceReadOptions = {
          ...(expected ? { fetchBytes: fetchBytesFor(expected, sealer.position, target) } : {}),
          ...(stopAfter ? { stopAfter } : {}),
          ...(this.deps.maxBatchBytes ? { maxBatchBytes: this.deps.maxBatchBytes } : {}),
          ...tableTopic(this.table),
        };
        for await (const batch of this.deps.source.read(this.table.topic, this.partition, sealer.position, target, readOptions)) {
          read.records += batch.records.length;
          if (batch.bytes !== undefined) read.bytes += batch.bytes;
          else for (const record of batch.records) read.bytes += recordBytes(record);
          const sealed = sealer.push(batch.records, batch.nextOffset, this.deps.clock());
          if (sealed.length > 0) committed.push(...(await this.commit(sealed)));
        }
        this.readBlocked = undefined;
      }
    } catch (error) {
      if (error instanceof TopicRecreatedError) {
        // Another topic under the table's name: nothing of it is the table's. What memory
        // holds is dropped, and the partition says why it waits until its owner decides.
        const lease = this.lease!;
        this.drop();
        await this.setWaiting(lease, recreatedTopicProblem(error, this.table)).catch(() => {});
        reasonWritten.add(error);
        throw error;
      }
      if (error instanceof BatchTooLargeError) {
        // Not corrupt and never skipped: what memory holds stays (it lies below the batch),
        // and the partition says why it waits until a process with a larger budget reads it.
        this.readBlocked = error.message;
        await this.setWaiting(this.lease!, error.message).catch(() => {});
        reasonWritten.add(error);
        throw error;
      }
      if (!(error instanceof OffsetOutOfRangeError)) throw error;
      if (error.bound === 'below-earliest') {
        // Kafka deleted offsets nobody indexed: record them as lost and go on from its
        // earliest offset. What memory held below it can no longer be rebuilt: dropped.
        sealer = await this.skipLostOffsets(error.earliest);
        return this.advanceNow(until, options, read);
      }
      // Beyond the end: the log ends below this partition's position (truncated, or the
      // event is of an older incarnation of the topic). Nothing to read, as when the LSO
      // is below the position.
    }
    const due = sealer.tick(this.deps.clock());
    if (due) committed.push(...(await this.commit([due])));
    return { committed, read, indexedEnd: this.lease!.indexedEnd, position: sealer.position };
  }

  private async skipLostOffsets(earliest: bigint): Promise<RangeSealer> {
    const lease = this.lease!;
    this.drop();
    await this.deps.indexingCatalog.recordLostInterval(lease, earliest);
    return this.takeLease();
  }

  /** Seals and commits the open range now (manual flush, capacity). */
  flush(reason: Extract<SealReason, 'flush' | 'capacity'> = 'flush'): Promise<SealedRange | undefined> {
    return this.exclusive(async () => {
      const sealer = await this.takeLease();
      const range = sealer.flush(reason);
      if (range || this.pending.length > 0) await this.commit(range ? [range] : []);
      return range;
    });
  }

  /**
   * Lets another indexer take the partition without waiting for `lease_ttl`; this one
   * keeps its open range and re-checks on the next call whether it is still valid.
   */
  release(): Promise<void> {
    return this.exclusive(async () => {
      if (!this.lease) return;
      await this.renewNow();
      if (this.lease) await this.deps.indexingCatalog.releaseLease(this.lease);
    });
  }

  /** Drops everything held in memory: the open range is read again from `indexed_end`. */
  drop(): void {
    this.lease = undefined;
    this.sealer = undefined;
    this.pending = [];
    this.pendingBytes = 0;
  }

  private async takeLease(): Promise<RangeSealer> {
    const ttl = this.table.settings.lease_ttl;
    const lease = await this.deps.indexingCatalog.acquireLease(this.table.tableId, this.partition, this.deps.owner, ttl);
    if (!lease) {
      this.drop();
      throw new LeaseHeldError(this.table.name, this.partition);
    }
    // Same epoch: nobody else committed since; the open range (if any) still starts at indexed_end.
    // (Ranges waiting for the registry come first: then what we hold starts with them.)
    const heldFrom = this.pending[0]?.startOffset ?? this.sealer?.sealedUpTo;
    const keep = this.lease?.epoch === lease.epoch && heldFrom === lease.indexedEnd;
    if (!keep) {
      this.pending = [];
      this.pendingBytes = 0;
      this.sealer = new RangeSealer(
        sealingRules(this.table.settings),
        lease.indexedEnd,
        lease.openRangeSince?.getTime(),
        lease.openRangeRecords,
      );
    }
    this.lease = lease;
    return this.sealer!;
  }

  /** Builds and commits the waiting ranges, then `ranges`; returns all of them once committed. */
  private async commit(ranges: SealedRange[]): Promise<SealedRange[]> {
    const lease = this.lease!;
    const all = [...this.pending, ...ranges];
    if (all.length === 0) return [];
    // Pending ranges are in pendingBytes already; the new ones leave the sealer now.
    const sealedBytes = ranges.reduce((sum, range) => sum + range.bytes, 0);
    this.sealedBytesCommitting += sealedBytes;
    try {
      return await this.buildAndCommit(lease, all);
    } finally {
      this.sealedBytesCommitting -= sealedBytes;
    }
  }

  private async buildAndCommit(lease: Lease, all: SealedRange[]): Promise<SealedRange[]> {
    const built: NewRange[] = [];
    try {
      for (const range of all) built.push(await this.deps.build(this.table, this.partition, range));
    } catch (error) {
      if (error instanceof RegistryUnavailableError) {
        // Nothing is written. The ranges wait in memory; the caller (the event source, the
        // runner's tick) calls again after its backoff, and status says why meanwhile.
        this.pending = all;
        this.pendingBytes = all.reduce((sum, range) => sum + range.files.reduce((n, file) => n + file.records.reduce((b, r) => b + recordBytes(r), 0), 0), 0);
        await this.setWaiting(lease, error.message).catch(() => {});
        reasonWritten.add(error);
      } else {
        // Records cannot cause this (they become error rows); status names the cause.
        await this.setWaiting(lease, `building the files of offsets ${offsetsText(all)} failed: ${(error as Error).message}`).catch(() => {});
        if (error instanceof Object) reasonWritten.add(error);
        this.drop();
      }
      throw error;
    }
    faultPoint('after-build');
    try {
      const started = performance.now();
      const result = await this.commitBuilt(lease, all, built);
      this.deps.onCommit?.(this.table, this.partition, all, (performance.now() - started) / 1000);
      faultPoint('after-commit');
      this.lease = { ...lease, indexedEnd: result.indexedEnd };
      this.pending = [];
      this.pendingBytes = 0;
    } catch (error) {
      // A lost lease (or any failed commit) leaves memory that may no longer match the catalog.
      if (!(error instanceof LeaseLostError)) {
        await this.setWaiting(lease, `the catalog refused the files of offsets ${offsetsText(all)}: ${(error as Error).message}`).catch(() => {});
        if (error instanceof Object) reasonWritten.add(error);
      }
      this.drop();
      throw error;
    }
    if (this.waiting) await this.setWaiting(lease, this.readBlocked ?? null).catch(() => {});
    return all;
  }

  /**
   * Commits built ranges; when an index started needing entries after they were built (a
   * CREATE INDEX meanwhile), builds them again with it, a bounded number of times.
   */
  private async commitBuilt(lease: Lease, ranges: readonly SealedRange[], built: NewRange[]): Promise<CommitResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.deps.indexingCatalog.commitRanges(lease, built, this.table.settings.lease_ttl);
      } catch (error) {
        if (!(error instanceof IndexesChangedError) || attempt >= 5) throw error;
        built = [];
        for (const range of ranges) built.push(await this.deps.build(this.table, this.partition, range));
      }
    }
  }

  /** Why this partition is not indexing (null: it is), for `status`; only while we hold the lease. */
  private async setWaiting(lease: Lease, reason: string | null): Promise<void> {
    await this.deps.indexingCatalog.setWaitingReason(this.table.tableId, this.partition, reason, lease);
    this.waiting = reason !== null;
  }

  /** A failure outside a build or commit (a Kafka read, the catalog), said on this partition only. */
  async noteFailure(error: unknown): Promise<void> {
    if (error instanceof LeaseHeldError || error instanceof LeaseLostError || reasonWritten.has(error as object)) return;
    this.waiting = true;
    await this.deps.indexingCatalog.setWaitingReason(this.table.tableId, this.partition, `indexing failed, retrying: ${(error as Error).message}`, { owner: this.deps.owner }).catch(() => {});
  }

  /** Renews the lease in the background of a long-lived process; a lost lease drops memory at once. */
  renew(): Promise<void> {
    return this.exclusive(() => this.renewNow());
  }

  private async renewNow(): Promise<void> {
    if (!this.lease) return;
    try {
      this.lease = await this.deps.indexingCatalog.renewLease(this.lease, this.table.settings.lease_ttl, {
        bytes: this.sealer?.openBytes ?? 0,
        records: this.sealer?.openRecords ?? 0,
        since: this.sealer?.openSince,
        waitingReason: this.readBlocked,
      });
    } catch (error) {
      if (error instanceof LeaseLostError) this.drop();
      throw error;
    }
  }
}
