/**
 * Range sealing: committed records in, sealed ranges out. Pure: the clock is passed in.
 *
 * A range is `[startOffset, endOffset)`: consecutive offsets, half-open. The first range
 * starts where the partition's indexed range ends; each next one starts at the end of
 * the one before, so ranges tile the partition with no gap and no overlap.
 *
 * `endOffset` is the reader's next fetch position when the range was sealed: offsets
 * with no committed record (aborted records, transaction markers) after a range's last
 * record belong to that range. When a record seals the range before itself (span,
 * bucket, age), the range ends at that record's offset and the record opens the next.
 *
 * A range ends at the first of:
 *   bytes     key + value + header bytes reach `file_bytes` (the record that reaches it is in)
 *   span      max − min of the timestamps of one of its files (the records of one time
 *             bucket) would reach `file_window` (that record opens the next)
 *   bucket    a record falls in a later time bucket than any before it (it opens the next)
 *   age       its first record was read `file_age` ago (on a push or a tick): how long a
 *             record may wait before engines can see it
 *   flush / capacity / chunk   asked for by the caller
 * Late records (an earlier bucket) do not end a range: they become their bucket's file.
 * Span is a file's, not the range's: a late record a second before a bucket's start widens
 * only its own bucket's file. Taken over the whole range it made every range that began
 * with a late record reach `file_window` a moment before the next bucket did, so each
 * hour boundary of jittered timestamps cut a range of one record and a file of it.
 *
 * An open range with no records is never sealed: there is no file to make of it. Its
 * offsets stay open until a record arrives (they then lead its range).
 */
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import type { Granularity, TableSettings } from '../table/settings.js';
import { bucketOf } from './buckets.js';

export type SealReason = 'bytes' | 'span' | 'age' | 'bucket' | 'flush' | 'capacity' | 'chunk';

export interface SealingRules {
  fileBytes: number;
  /** The span trigger: max − min of one file's timestamps. */
  fileWindowMs: number;
  /** The age trigger: how long after its first record was read a range is sealed. */
  fileAgeMs: number;
  granularity: Granularity;
}

/** A table's sealing rules, from its typed settings: the one place they are taken from. */
export function sealingRules(settings: Pick<TableSettings, 'file_bytes' | 'file_window' | 'file_age' | 'granularity'>): SealingRules {
  return { fileBytes: settings.file_bytes, fileWindowMs: settings.file_window, fileAgeMs: settings.file_age, granularity: settings.granularity };
}

/** The records of one range that fall in one time bucket: one data file. */
export interface BucketFile {
  bucket: number;
  records: KafkaRecord[];
}

export interface SealedRange {
  startOffset: bigint;
  endOffset: bigint;
  reason: SealReason;
  /** One per bucket among the range's records, in bucket order; records in offset order. */
  files: BucketFile[];
  recordCount: number;
  bytes: number;
}

export class RangeOrderError extends Error {
  override name = 'RangeOrderError';
}

/** The least and greatest timestamp among a range's records of one bucket. */
interface BucketSpan {
  min: number;
  max: number;
}

interface OpenRange {
  startOffset: bigint;
  records: KafkaRecord[];
  bytes: number;
  /** Per time bucket among its records (a range holds few: its own and late ones). */
  spans: Map<number, BucketSpan>;
  maxBucket: number;
  firstReadAt: number;
  /** How many of its first records an earlier reader had read already: the age trigger does not split those. */
  earlierRecords: number;
}

export class RangeSealer {
  private open: OpenRange | undefined;
  /** The reader's next fetch position: every offset below it has been pushed. */
  private next: bigint;
  /** Where the next range starts: the end of the last sealed one (or the starting position). */
  private unsealedFrom: bigint;

  /**
   * `position`: where reading starts, the partition's `indexed_end` (or a chunk's start).
   * `earlierReadAt`: when an earlier reader first read the range that starts there (it held
   * it in memory and is gone); the age trigger counts from then, not from this re-read.
   * `earlierRecords`: how many records that reader held in it. They were read before the
   * range aged, so age does not split them off: the range ages after the last of them.
   */
  constructor(readonly rules: SealingRules, position: bigint, private earlierReadAt?: number, private earlierRecords = 0) {
    this.next = position;
    this.unsealedFrom = position;
  }

  get position(): bigint {
    return this.next;
  }

  /** The first offset not yet in a sealed range: the open range's start. */
  get sealedUpTo(): bigint {
    return this.open?.startOffset ?? this.unsealedFrom;
  }

  get openBytes(): number {
    return this.open?.bytes ?? 0;
  }

  get openRecords(): number {
    return this.open?.records.length ?? 0;
  }

  /** When the open range's first record was read. */
  get openSince(): number | undefined {
    return this.open?.firstReadAt;
  }

  /**
   * Records read in order, then the reader's position after them (at least the last
   * offset + 1; beyond it when aborted records or markers follow). `now`: when read.
   */
  push(records: readonly KafkaRecord[], nextPosition: bigint, now: number): SealedRange[] {
    const sealed: SealedRange[] = [];
    for (const record of records) {
      const offset = record.offset; // once: a committed read's record makes it when asked
      if (offset < this.next) {
        throw new RangeOrderError(`record offset ${offset} is below the reader's position ${this.next}: records are pushed once, in order`);
      }
      const reason = this.sealBefore(record, now);
      if (reason) sealed.push(this.seal(reason, offset));
      this.add(record, now);
      this.next = offset + 1n;
    }
    if (nextPosition < this.next) {
      throw new RangeOrderError(`next position ${nextPosition} is below the offset after the last record pushed (${this.next})`);
    }
    this.next = nextPosition;
    if (this.open && this.open.bytes >= this.rules.fileBytes) sealed.push(this.seal('bytes', this.next));
    return sealed;
  }

  /** Seals the open range if its first record was read `file_age` ago. */
  tick(now: number): SealedRange | undefined {
    if (this.open && now - this.open.firstReadAt >= this.rules.fileAgeMs) return this.seal('age', this.next);
    return undefined;
  }

  /** Seals the open range now (manual flush, capacity, end of a backfill chunk). */
  flush(reason: Extract<SealReason, 'flush' | 'capacity' | 'chunk'>): SealedRange | undefined {
    return this.open ? this.seal(reason, this.next) : undefined;
  }

  /** Why `record` must open a new range, if it must. */
  private sealBefore(record: KafkaRecord, now: number): SealReason | undefined {
    const open = this.open;
    if (!open) return undefined;
    if (open.bytes >= this.rules.fileBytes) return 'bytes';
    if (now - open.firstReadAt >= this.rules.fileAgeMs && open.records.length >= open.earlierRecords) return 'age';
    const bucket = bucketOf(record.timestamp, this.rules.granularity);
    if (bucket > open.maxBucket) return 'bucket';
    const known = open.spans.get(bucket);
    if (known && Math.max(known.max, record.timestamp) - Math.min(known.min, record.timestamp) >= this.rules.fileWindowMs) return 'span';
    return undefined;
  }

  private add(record: KafkaRecord, now: number): void {
    const bucket = bucketOf(record.timestamp, this.rules.granularity);
    const open = (this.open ??= {
      startOffset: this.unsealedFrom,
      records: [],
      bytes: 0,
      spans: new Map<number, BucketSpan>(),
      maxBucket: bucket,
      firstReadAt: this.earlierReadAt !== undefined && this.earlierReadAt < now ? this.earlierReadAt : now,
      earlierRecords: this.earlierReadAt !== undefined ? this.earlierRecords : 0,
    });
    this.earlierReadAt = undefined;
    this.earlierRecords = 0;
    open.records.push(record);
    open.bytes += recordBytes(record);
    const span = open.spans.get(bucket);
    if (!span) open.spans.set(bucket, { min: record.timestamp, max: record.timestamp });
    else if (record.timestamp < span.min) span.min = record.timestamp;
    else if (record.timestamp > span.max) span.max = record.timestamp;
    if (bucket > open.maxBucket) open.maxBucket = bucket;
  }

  private seal(reason: SealReason, endOffset: bigint): SealedRange {
    const open = this.open!;
    this.open = undefined;
    this.unsealedFrom = endOffset;
    return sealRange(open.startOffset, endOffset, reason, open.records, this.rules.granularity, open.bytes);
  }
}

/** Splits a range's records into one file per time bucket, in bucket order. */
export function sealRange(
  startOffset: bigint,
  endOffset: bigint,
  reason: SealReason,
  records: KafkaRecord[],
  granularity: Granularity,
  bytes = records.reduce((sum, record) => sum + recordBytes(record), 0),
): SealedRange {
  if (records.length === 0) throw new RangeOrderError(`range [${startOffset}, ${endOffset}) has no records: there is no file to make of it`);
  if (endOffset <= records[records.length - 1]!.offset || startOffset > records[0]!.offset) {
    throw new RangeOrderError(`range [${startOffset}, ${endOffset}) does not hold its records (offsets ${records[0]!.offset}..${records[records.length - 1]!.offset})`);
  }
  const byBucket = new Map<number, KafkaRecord[]>();
  for (const record of records) {
    const bucket = bucketOf(record.timestamp, granularity);
    const list = byBucket.get(bucket);
    if (list) list.push(record);
    else byBucket.set(bucket, [record]);
  }
  const files = [...byBucket.entries()].sort(([a], [b]) => a - b).map(([bucket, list]) => ({ bucket, records: list }));
  return { startOffset, endOffset, reason, files, recordCount: records.length, bytes };
}
