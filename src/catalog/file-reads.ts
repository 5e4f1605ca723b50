/** Reading the catalog's files: for `files`, rebuilds and the read path. */
import type { SealReason } from '../ranges/sealer.js';
import type { Catalog, CatalogClient } from './db.js';
import type { FileGranules } from './file-writes.js';
import { liveFile } from './live-files.js';

/** Who wrote a file: the live indexer, a backfill chunk, or a merge of live files (migration 17). */
export type FileSource = 'live' | 'backfill' | 'merge';

export interface ColumnStatistics {
  columnId: number;
  columnName: string;
  valueCount: bigint;
  nullCount: bigint;
  nanCount: bigint;
  min: string | null;
  max: string | null;
}

export interface CatalogFile {
  dataFileId: bigint;
  tableId: bigint;
  partition: number;
  startOffset: bigint;
  endOffset: bigint;
  bucket: Date;
  recordCount: bigint;
  fileSizeBytes: bigint;
  footer: Buffer;
  sha256: Buffer;
  /** Why its range was sealed; 'merge': a merged file (src/catalog/merges.ts). */
  sealReason: SealReason | 'merge';
  schemaVersion: number;
  encoderVersion: string;
  source: FileSource;
  createdAt: Date;
  expiredAt: Date | null;
  /** The merged file that took this file's records (and when): no longer live, still read by older snapshots. */
  replacedBy: bigint | null;
  replacedAt: Date | null;
  /**
   * Whether the catalog has its granules (migration 7) and the sha256 of its page index and
   * footer (migration 15): then reads rebuild only what they cover.
   */
  hasGranules: boolean;
  /**
   * Live files of its range, this one included (one per time bucket): more than one, and
   * they share its offsets, so a read of its records serves theirs too.
   */
  rangeFiles: number;
  columns: ColumnStatistics[];
}

interface FileRow {
  data_file_id: bigint;
  table_id: bigint;
  partition_id: number;
  start_offset: bigint;
  end_offset: bigint;
  time_bucket: Date;
  record_count: bigint;
  file_size_bytes: bigint;
  footer: Buffer;
  sha256: Buffer;
  seal_reason: SealReason | 'merge';
  schema_version: number;
  encoder_version: string;
  source: FileSource;
  created_at: Date;
  expired_at: Date | null;
  replaced_by: bigint | null;
  replaced_at: Date | null;
  has_granules: boolean;
  range_files: number;
  columns: { column_id: number; column_name: string; value_count: string; null_count: string; nan_count: string; min_value: string | null; max_value: string | null; min_value_utf8: string | null; max_value_utf8: string | null }[] | null;
}

const selectFiles = `
  SELECT f.data_file_id, f.table_id, f.partition_id, f.start_offset, f.end_offset, f.time_bucket, f.record_count,
         f.file_size_bytes, f.footer, f.sha256, f.seal_reason, f.schema_version, f.encoder_version, f.source,
         f.created_at, f.expired_at, f.replaced_by, f.replaced_at, f.tail_sha256 IS NOT NULL AND f.page_index IS NOT NULL AS has_granules,
         (SELECT count(*)::int FROM offsetlake.data_file r
           WHERE r.table_id = f.table_id AND r.partition_id = f.partition_id AND r.start_offset = f.start_offset AND r.end_offset = f.end_offset
             AND r.expired_at IS NULL) AS range_files,
         (SELECT json_agg(json_build_object('column_id', s.column_id, 'column_name', c.column_name,
                   'value_count', s.value_count::text, 'null_count', s.null_count::text, 'nan_count', s.nan_count::text,
                   'min_value', s.min_value, 'max_value', s.max_value,
                   'min_value_utf8', encode(s.min_value_utf8, 'hex'), 'max_value_utf8', encode(s.max_value_utf8, 'hex')) ORDER BY s.column_id)
            FROM offsetlake.file_column_stats s
            LEFT JOIN offsetlake.table_column c ON c.table_id = s.table_id AND c.column_id = s.column_id AND c.end_schema_version IS NULL
           WHERE s.data_file_id = f.data_file_id) AS columns
  FROM offsetlake.data_file f`;

function toCatalogFile(row: FileRow): CatalogFile {
  return {
    dataFileId: row.data_file_id,
    tableId: row.table_id,
    partition: row.partition_id,
    startOffset: row.start_offset,
    endOffset: row.end_offset,
    bucket: row.time_bucket,
    recordCount: row.record_count,
    fileSizeBytes: row.file_size_bytes,
    footer: row.footer,
    sha256: row.sha256,
    sealReason: row.seal_reason,
    schemaVersion: row.schema_version,
    encoderVersion: row.encoder_version,
    source: row.source,
    createdAt: row.created_at,
    expiredAt: row.expired_at,
    replacedBy: row.replaced_by,
    replacedAt: row.replaced_at,
    hasGranules: row.has_granules,
    rangeFiles: row.range_files,
    columns: (row.columns ?? []).map((c) => ({
      columnId: c.column_id,
      columnName: c.column_name,
      valueCount: BigInt(c.value_count),
      nullCount: BigInt(c.null_count),
      nanCount: BigInt(c.nan_count),
      min: c.min_value_utf8 === null ? c.min_value : Buffer.from(c.min_value_utf8, 'hex').toString('utf8'),
      max: c.max_value_utf8 === null ? c.max_value : Buffer.from(c.max_value_utf8, 'hex').toString('utf8'),
    })),
  };
}

/**
 * A table's live files in partition and offset order; expired ones too, and files a merge
 * replaced too, when asked (a replaced file sorts before the merged file that starts where it does).
 */
export async function listFiles(catalog: Catalog | CatalogClient, tableId: bigint, options: { includeExpired?: boolean; includeReplaced?: boolean } = {}): Promise<CatalogFile[]> {
  const result = await catalog.query<FileRow>(
    `${selectFiles} WHERE f.table_id = $1 AND ($2 OR f.expired_at IS NULL) AND ($3 OR f.replaced_by IS NULL)
     ORDER BY f.partition_id, f.start_offset, f.time_bucket, f.replaced_by IS NULL, f.end_offset`,
    [tableId, options.includeExpired ?? false, options.includeReplaced ?? false],
  );
  return result.rows.map(toCatalogFile);
}

/** Files of the table by id (expired ones too), in id order. */
export async function findFiles(catalog: Catalog | CatalogClient, tableId: bigint, dataFileIds: readonly bigint[]): Promise<CatalogFile[]> {
  const result = await catalog.query<FileRow>(`${selectFiles} WHERE f.table_id = $1 AND f.data_file_id = ANY($2::bigint[]) ORDER BY f.data_file_id`, [tableId, dataFileIds]);
  return result.rows.map(toCatalogFile);
}

export async function findFile(catalog: Catalog | CatalogClient, tableId: bigint, dataFileId: bigint): Promise<CatalogFile | undefined> {
  const result = await catalog.query<FileRow>(`${selectFiles} WHERE f.table_id = $1 AND f.data_file_id = $2`, [tableId, dataFileId]);
  return result.rows[0] ? toCatalogFile(result.rows[0]) : undefined;
}

/**
 * The table's files from `fromId` on, in id order, at most `limit` (expired ones included):
 * a reader loads the file asked for with those an engine's scan asks for next.
 */
export async function findFilesFrom(catalog: Catalog | CatalogClient, tableId: bigint, fromId: bigint, limit: number): Promise<CatalogFile[]> {
  const result = await catalog.query<FileRow>(`${selectFiles} WHERE f.table_id = $1 AND f.data_file_id >= $2 ORDER BY f.data_file_id LIMIT $3`, [tableId, fromId, limit]);
  return result.rows.map(toCatalogFile);
}

/** Offsets lost to Kafka's retention before they were indexed, per table and partition (tables not dropped). */
export async function lostOffsets(catalog: Catalog | CatalogClient): Promise<{ table: string; partition: number; intervals: number; offsets: bigint }[]> {
  const result = await catalog.query<{ table_name: string; partition_id: number; intervals: number; offsets: string }>(
    `SELECT t.table_name, l.partition_id, count(*)::int AS intervals, sum(l.end_offset - l.start_offset)::text AS offsets
     FROM offsetlake.lost_interval l JOIN offsetlake.lake_table t USING (table_id) WHERE t.dropped_at IS NULL
     GROUP BY t.table_name, l.partition_id ORDER BY t.table_name, l.partition_id`,
  );
  return result.rows.map((row) => ({ table: row.table_name, partition: row.partition_id, intervals: row.intervals, offsets: BigInt(row.offsets) }));
}

/** A live file as a listing names it: no footer, no statistics. */
export interface LiveFileKey {
  table: string;
  dataFileId: bigint;
  fileSizeBytes: bigint;
  sha256: Buffer;
  createdAt: Date;
}

/** The live files of live tables (of one table, when named), for listings. */
export async function liveFileKeys(catalog: Catalog | CatalogClient, tableName?: string): Promise<LiveFileKey[]> {
  const result = await catalog.query<{ table_name: string; data_file_id: bigint; file_size_bytes: bigint; sha256: Buffer; created_at: Date }>(
    `SELECT t.table_name, f.data_file_id, f.file_size_bytes, f.sha256, f.created_at
     FROM offsetlake.data_file f JOIN offsetlake.lake_table t ON t.table_id = f.table_id
     WHERE t.dropped_at IS NULL AND ${liveFile('f')} AND ($1::text IS NULL OR t.table_name = $1)`,
    [tableName ?? null],
  );
  return result.rows.map((row) => ({ table: row.table_name, dataFileId: row.data_file_id, fileSizeBytes: row.file_size_bytes, sha256: row.sha256, createdAt: row.created_at }));
}

/** A file's granules, page index bytes and their sha256 (migrations 7 and 15), or null while it has none: then it is served whole. */
export async function findGranules(catalog: Catalog | CatalogClient, dataFileId: bigint): Promise<FileGranules | null> {
  return (await findGranulesOf(catalog, [dataFileId])).get(dataFileId) ?? null;
}

/**
 * The granules of several files in one round trip (a query's planning reads them for every
 * candidate file, and a file's first read waits for them): each file's granule columns come
 * as arrays in row-group order.
 */
export async function findGranulesOf(catalog: Catalog | CatalogClient, dataFileIds: readonly bigint[]): Promise<Map<bigint, FileGranules>> {
  const out = new Map<bigint, FileGranules>();
  if (dataFileIds.length === 0) return out;
  const files = await catalog.query<{
    data_file_id: bigint; page_index: Buffer; tail_sha256: Buffer;
    row_groups: number[] | null; start_offsets: string[] | null; end_offsets: string[] | null; row_counts: string[] | null; kafka_bytes: string[] | null; chunk_sha256: Buffer[] | null;
  }>(
    `SELECT f.data_file_id, f.page_index, f.tail_sha256, g.*
     FROM offsetlake.data_file f
     CROSS JOIN LATERAL (
       SELECT array_agg(row_group ORDER BY row_group) AS row_groups, array_agg(start_offset::text ORDER BY row_group) AS start_offsets,
              array_agg(end_offset::text ORDER BY row_group) AS end_offsets, array_agg(row_count::text ORDER BY row_group) AS row_counts,
              array_agg(kafka_bytes::text ORDER BY row_group) AS kafka_bytes, array_agg(chunk_sha256 ORDER BY row_group) AS chunk_sha256
       FROM offsetlake.granule WHERE data_file_id = f.data_file_id) g
     WHERE f.data_file_id = ANY($1::bigint[]) AND f.page_index IS NOT NULL AND f.tail_sha256 IS NOT NULL`,
    [dataFileIds],
  );
  for (const row of files.rows) {
    out.set(BigInt(row.data_file_id), {
      pageIndex: row.page_index,
      tailSha256: row.tail_sha256,
      granules: (row.row_groups ?? []).map((rowGroup, at) => ({
        rowGroup, startOffset: BigInt(row.start_offsets![at]!), endOffset: BigInt(row.end_offsets![at]!), rowCount: Number(row.row_counts![at]!), kafkaBytes: Number(row.kafka_bytes![at]!), chunkSha256: row.chunk_sha256![at]!,
      })),
    });
  }
  return out;
}
