/**
 * The reader as one process (`serve`, `query`, the Lambda reader) puts it together from
 * its parts, each face taking only the parts it uses (src/reader/read-api.ts):
 *
 *   records   the catalog's table and file records (CatalogRecords: a port over Postgres,
 *             remembered briefly, loaded many files at a time)
 *   producer  the bytes: ranges of files, whole files, granules (FileProducer, which
 *             rebuilds from Kafka and verifies)
 *   meter     the counters and rebuild durations (ReaderMeter), published for `status`
 *   serving   what a file's response takes: the producer's ranges, the meter, the budget
 *   status    what GET /metrics and the console report
 *
 * One byte budget holds rebuilt chunks and files (and the Iceberg face's manifests) and,
 * in a share of its own, the records held between the reads that share them.
 */
import type { Catalog } from '../catalog/db.js';
import { lostOffsets } from '../catalog/file-reads.js';
import { indexReports } from '../catalog/indexes.js';
import type { CommittedSource } from '../kafka/source.js';
import { countingSource } from '../kafka/counting-source.js';
import { ByteBudget } from '../common/limit.js';
import { ByteBoundedCache } from './cache.js';
import { CatalogRecords, type CatalogRecordOptions } from './catalog-records.js';
import { FileProducer, type FileProducerOptions } from './producer.js';
import { ReaderMeter, type ReaderMeterOptions } from './meter.js';
import type { ReaderMetrics } from './metrics.js';
import { HeldSpan, sharedReads } from './shared-reads.js';
import type { FileServing, IndexMetrics, ReadStatus } from './read-api.js';

export interface ReaderServiceOptions extends FileProducerOptions, ReaderMeterOptions {
  /** Budget of the cache of rebuilt chunks (and whole files without granules). Default 512 MiB. */
  cacheBytes?: number;
  /**
   * Bytes that responses in flight may hold at once (default: half the cache, at least
   * 16 MiB so that any buffered range can go): more waits its turn.
   */
  responseBytes?: number;
  /**
   * How long a response waits for its share of `responseBytes` before it is refused with a
   * 503 and Retry-After (ms; default 10 s): clients that stop reading hold their share until
   * the write deadline cuts them off, and no one should wait behind them unboundedly.
   */
  responseWaitMs?: number;
  /** How the service remembers table and file records between requests (src/reader/catalog-records.ts). */
  records?: CatalogRecordOptions;
}

export const defaultCacheBytes = 512 * 1024 * 1024;

/**
 * The share of the cache budget that holds records between reads (src/reader/shared-reads.ts);
 * the rest holds rebuilt chunks and files. Held records serve reads that come moments
 * later (a granule's next column chunk, the sibling file of a range), rebuilt chunks the
 * next query: in one budget, a scan's records pushed out the chunks a repeated query
 * would have found (a 128 MiB cache held none of a 70 MiB scan's chunks the second time).
 * A quarter of the default budget holds the records of about twenty row groups of
 * 10,000 records of 600 bytes, more than an engine has in flight.
 */
export const heldRecordsShare = 0.25;
export const defaultResponseWaitMs = 10_000;

export class ReaderService {
  /** Rebuilt chunks and files (and the Iceberg face's manifests). */
  readonly cache: ByteBoundedCache<Uint8Array>;
  /** Records held between the reads that share them, in a budget of their own (`heldRecordsShare`). */
  readonly heldRecords: ByteBoundedCache<HeldSpan>;
  readonly records: CatalogRecords;
  readonly meter: ReaderMeter;
  readonly producer: FileProducer;
  readonly serving: FileServing;
  readonly status: ReadStatus;

  constructor(readonly catalog: Catalog, source: CommittedSource, options: ReaderServiceOptions = {}) {
    const cacheBytes = options.cacheBytes ?? defaultCacheBytes;
    const heldBytes = Math.floor(cacheBytes * heldRecordsShare);
    this.cache = new ByteBoundedCache<Uint8Array>(cacheBytes - heldBytes);
    this.heldRecords = new ByteBoundedCache<HeldSpan>(heldBytes);
    // counted below the sharing, so a shared read counts once
    const counted = countingSource(source, { keepReads: false });
    const shared = sharedReads(counted, this.heldRecords);
    this.meter = new ReaderMeter(catalog, { log: counted.log, get heldReads() { return shared.heldReads; } }, options);
    this.records = new CatalogRecords(catalog, options.records);
    this.producer = new FileProducer(catalog, shared, this.records, this.cache, this.meter, options);
    const responseBytes = new ByteBudget(options.responseBytes ?? Math.max(16 * 1024 * 1024, Math.floor(cacheBytes / 2)));
    this.serving = {
      range: (table, file, start, end) => this.producer.range(table, file, start, end),
      meter: this.meter,
      budget: { bytes: responseBytes, waitMs: options.responseWaitMs ?? defaultResponseWaitMs },
    };
    const { meter, cache, heldRecords } = this;
    this.status = {
      get metrics() { return meter.metrics; },
      cache,
      heldRecords,
      rebuildDurations: meter.rebuildDurations,
      lostOffsets: () => lostOffsets(catalog),
      indexes: () => indexMetrics(catalog),
    };
  }

  /** A snapshot of the counters, with what was read from Kafka. */
  get metrics(): ReaderMetrics {
    return this.meter.metrics;
  }

  /** Writes the counters to the catalog now (`serve` does at exit). */
  publish(): Promise<void> {
    return this.meter.publish();
  }

  /** Stops the build workers (they also let the process end by themselves when idle). */
  close(): Promise<void> {
    return this.producer.close();
  }
}

/** Every secondary index: state, backfill progress, size in the catalog, reads that used or skipped it. */
async function indexMetrics(catalog: Catalog): Promise<IndexMetrics[]> {
  return (await indexReports(catalog)).map((r) => ({
    table: r.table, index: r.name, kind: r.kind, state: r.state, filesWithEntries: r.filesWithEntries, filesWithout: r.filesWithout,
    backfill: { filesDone: r.filesDone, filesTotal: r.filesTotal, granulesDone: r.granulesDone, bytesRead: r.bytesRead },
    entryBytes: r.entryBytes, readsUsed: r.readsUsed, readsSkipped: r.readsSkipped, lastError: r.lastError,
  }));
}
