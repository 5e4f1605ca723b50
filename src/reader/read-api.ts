/**
 * The parts of the reader the faces (src/reader/http.ts, s3.ts, the Iceberg catalog, the
 * console, `query`) take, each only those it uses: the catalog's records, a file's verified
 * bytes with the counters and the response budget (`serving`), and what /metrics reports.
 * ReaderService (src/reader/service.ts) puts together the ones that read Postgres and
 * rebuild from Kafka; a test can give the faces tables and bytes held in memory instead,
 * so the HTTP and S3 answers (ranges, preconditions, listings, errors, the budget) are
 * checked without a stack.
 */
import type { CatalogFile, LiveFileKey } from '../catalog/file-reads.js';
import type { TableRecord } from '../table/record.js';
import type { ByteBudget } from '../common/limit.js';
import type { Histogram } from '../common/exposition.js';
import type { ReaderMetrics } from './metrics.js';

/** The catalog's records as the faces look them up. */
export interface CatalogReads {
  tables(): Promise<TableRecord[]>;
  /** The table, or a TableError ("no table named ...") the faces answer with 404. */
  table(name: string): Promise<TableRecord>;
  files(table: TableRecord): Promise<CatalogFile[]>;
  /** Live files as a listing names them (of one table, when named). */
  fileKeys(tableName?: string): Promise<LiveFileKey[]>;
  /** One file of the table, expired ones included (answered with 410). */
  file(table: TableRecord, dataFileId: bigint): Promise<CatalogFile | undefined>;
}

/** Events of the faces that the counters keep. */
export type FaceCounter = 'requests' | 'footerHits' | 'expired' | 'busy' | 'abandoned' | 'writeTimeouts';

export interface ReadMeter {
  count(counter: FaceCounter, by?: number): void;
  /** Bytes of file bodies sent (or produced to be sent). */
  served(bytes: number): void;
}

/** Bytes [start, end) of a file, piece by piece in order, each checked before it is yielded. */
export type RangeProducer = (table: TableRecord, file: CatalogFile, start: number, end: number) => AsyncIterable<Uint8Array>;

/** What responses in flight may hold at once, and how long one waits for its share before a 503. */
export interface ResponseBudget {
  readonly bytes: ByteBudget;
  readonly waitMs: number;
}

/** What a file's response (src/reader/file-response.ts) takes: where the bytes come from, what it counts, what it may hold. */
export interface FileServing {
  readonly range: RangeProducer;
  readonly meter: ReadMeter;
  readonly budget: ResponseBudget;
}

/** What GET /metrics reports. */
export interface ReadStatus {
  readonly metrics: ReaderMetrics;
  /** Rebuilt chunks and files kept for later reads. */
  readonly cache: { readonly size: { entries: number; bytes: number } };
  /** Records held for the reads that share them (a range's other files, a granule's other columns). */
  readonly heldRecords: { readonly size: { entries: number; bytes: number } };
  readonly rebuildDurations: { readonly file: Histogram; readonly granule: Histogram };
  /** Offsets Kafka deleted before they were indexed, per table partition: never hidden. */
  lostOffsets(): Promise<LostOffsets[]>;
  /** Every secondary index: state, backfill progress, size in the catalog, reads that used or skipped it. */
  indexes(): Promise<IndexMetrics[]>;
}

export interface LostOffsets {
  table: string;
  partition: number;
  intervals: number;
  offsets: bigint;
}

export interface IndexMetrics {
  table: string;
  index: string;
  kind: string;
  state: string;
  filesWithEntries: number;
  filesWithout: number;
  backfill: { filesDone: number; filesTotal: number; granulesDone: number; bytesRead: number };
  entryBytes: number;
  readsUsed: number;
  readsSkipped: number;
  lastError: string | null;
}

/** The reader as the HTTP face sees it (the S3 face and the console take fewer of its parts). */
export interface ReaderParts {
  readonly records: CatalogReads;
  readonly serving: FileServing;
  readonly status: ReadStatus;
}
