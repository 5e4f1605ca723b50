/**
 * The read path's counters: what the faces count (requests, footer hits, refusals), what
 * the file producer counts (rebuilds, cache hits, mismatches), how long rebuilds took, and
 * what was read from Kafka. Written to the catalog every `publishEveryMs` at most, for
 * `status` (src/catalog/reader-counters.ts); a catalog that refuses never fails a read.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Catalog } from '../catalog/db.js';
import { publishReaderCounters } from '../catalog/reader-counters.js';
import { Histogram } from '../common/exposition.js';
import { log } from '../common/log.js';
import type { ReadLog } from '../kafka/counting-source.js';
import { newMetrics, type ReaderMetrics } from './metrics.js';
import type { FaceCounter, ReadMeter } from './read-api.js';

/** Counters the producer keeps (the faces' own are FaceCounter). */
export type ProducerCounter = Exclude<keyof ReaderMetrics, FaceCounter | 'kafkaRecords' | 'kafkaBytes' | 'granuleRecordHits' | 'bytesServed'>;

export interface ReaderMeterOptions {
  /** How often, at most, the counters are written to the catalog for `status` (ms; 0: never). Default 10 s. */
  publishEveryMs?: number;
  /** Told of each rebuild from Kafka and its seconds (the Lambda reader publishes them as metrics). */
  onRebuild?: (kind: 'file' | 'granule', seconds: number) => void;
}

/** What was read from Kafka, below the sharing of reads (so a shared read counts once), and the reads answered by records held. */
export interface KafkaReads {
  readonly log: ReadLog;
  readonly heldReads: number;
}

export class ReaderMeter implements ReadMeter {
  private readonly counters: Omit<ReaderMetrics, 'kafkaRecords' | 'kafkaBytes' | 'granuleRecordHits'> = newMetrics();
  /** Seconds each rebuild from Kafka took, verification included: whole files, and row groups (for some or all of their columns). */
  readonly rebuildDurations = { file: new Histogram(), granule: new Histogram() };
  /** Names this reader's row of counters in the catalog. */
  readonly readerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly startedAt = new Date();
  private readonly publishEveryMs: number;
  private publishedAt = Date.now();
  private publishing: Promise<void> | undefined;

  constructor(private readonly catalog: Catalog, private readonly kafka: KafkaReads, private readonly options: ReaderMeterOptions = {}) {
    this.publishEveryMs = options.publishEveryMs ?? 10_000;
  }

  /** A snapshot of the counters, with what was read from Kafka. */
  get metrics(): ReaderMetrics {
    return { ...this.counters, granuleRecordHits: this.kafka.heldReads, kafkaRecords: this.kafka.log.records, kafkaBytes: this.kafka.log.bytes };
  }

  /** Counts one event of the HTTP layer (requests, footer hits, expired, refused while busy, abandoned, cut off). */
  count(counter: FaceCounter, by = 1): void {
    this.counters[counter] += by;
    if (this.publishEveryMs > 0 && Date.now() - this.publishedAt >= this.publishEveryMs) void this.publish();
  }

  /** Counts one event of the file producer. */
  produced(counter: ProducerCounter, by = 1): void {
    this.counters[counter] += by;
  }

  served(bytes: number): void {
    this.counters.bytesServed += bytes;
  }

  rebuilt(kind: 'file' | 'granule', seconds: number): void {
    this.rebuildDurations[kind].observe(seconds);
    this.options.onRebuild?.(kind, seconds);
  }

  /**
   * Writes the counters to the catalog (status shows them). Never fails a read: a
   * catalog that refuses is said once per failure and tried again later.
   */
  publish(): Promise<void> {
    this.publishedAt = Date.now();
    this.publishing ??= publishReaderCounters(this.catalog, this.readerId, this.startedAt, { ...this.metrics })
      .catch((error: unknown) => log('warn', `reader counters were not written to the catalog: ${(error as Error).message}`))
      .finally(() => { this.publishing = undefined; });
    return this.publishing;
  }
}
