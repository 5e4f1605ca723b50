/**
 * Adding files: one transaction checks the lease and contiguity, inserts the files and
 * their statistics, and advances `indexed_end`. Without the lease nothing is added, in
 * the same transaction that would have added it: no window between check and write.
 */
import type { SealReason } from '../ranges/sealer.js';
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { lostLease, type Lease } from './leases.js';
import { faultPoint } from '../common/faults.js';
import { checkIndexCoverage, insertIndexEntries } from './indexes.js';
import type { IndexEntryRow } from '../indexes/entries.js';

export interface ColumnStatisticsRow {
  columnId: number;
  valueCount: number;
  nullCount: number;
  nanCount: number;
  min: string | null;
  max: string | null;
}

/** A row group of a file as the catalog keeps it (migration 7). */
export interface Granule {
  rowGroup: number;
  startOffset: bigint;
  endOffset: bigint;
  rowCount: number;
  /** Key + value + header bytes of every committed record in the span, of any bucket: what reading it fetches. */
  kafkaBytes: number;
  /** sha256 of each column chunk, 32 bytes per leaf in the footer's order. */
  chunkSha256: Uint8Array;
}

/** A file's granules and the bytes between its last chunk and its footer; null: it is served whole. */
export interface FileGranules {
  granules: Granule[];
  pageIndex: Uint8Array;
  /**
   * sha256 of the file's bytes from the end of its last column chunk to its end (the page
   * index, then the footer), taken from the file as it was built from Kafka (migration 15):
   * a read checks the catalog's copies of both against it before sending any of their bytes.
   */
  tailSha256: Uint8Array;
}

export interface NewCatalogFile {
  bucket: number;
  recordCount: number;
  fileSizeBytes: number;
  footer: Uint8Array;
  sha256: Uint8Array;
  schemaVersion: number;
  encoderVersion: string;
  columns: ColumnStatisticsRow[];
  granules: FileGranules | null;
  /** The file's secondary index entries (of every index in its range's `indexIds`). */
  indexEntries: IndexEntryRow[];
}

/** A sealed range as the catalog stores it: its offsets, why it sealed, one file per bucket. */
export interface NewRange {
  startOffset: bigint;
  endOffset: bigint;
  reason: SealReason;
  files: NewCatalogFile[];
  /** The secondary indexes its files carry entries for (src/catalog/indexes.ts). */
  indexIds: bigint[];
}

export class ContiguityError extends Error {
  override name = 'ContiguityError';
  constructor(readonly tableId: bigint, readonly partition: number, readonly expected: bigint, readonly actual: bigint) {
    super(`range of partition ${partition} of table ${tableId} starts at offset ${actual}, but the indexed range ends at ${expected}`);
  }
}

export interface CommitResult {
  indexedEnd: bigint;
  /** Ranges added now; ranges already in the catalog (a redelivered batch) are skipped. */
  added: number;
  skipped: number;
}

/**
 * The fence of every live write: locks the partition row and returns its `indexed_end`
 * if `lease` is still the partition's (owner, epoch, unexpired by Postgres's clock at the
 * transaction's start); otherwise throws LeaseLostError. NO KEY UPDATE, not UPDATE: a
 * backfill chunk inserting files of this partition holds KEY SHARE on the row (its
 * foreign key) while it inserts; live commits must not wait for it.
 */
export async function fencedIndexedEnd(client: CatalogClient, lease: Lease): Promise<bigint> {
  const current = await client.query<{ indexed_end: bigint; lease_owner: string | null; lease_epoch: bigint; live: boolean }>(
    `SELECT indexed_end, lease_owner, lease_epoch, coalesce(lease_expires_at > now(), false) AS live
     FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2 FOR NO KEY UPDATE`,
    [lease.tableId, lease.partition],
  );
  const row = current.rows[0];
  if (!row || row.lease_owner !== lease.owner || row.lease_epoch !== lease.epoch || !row.live) throw await lostLease(client, lease);
  return row.indexed_end;
}

/**
 * Commits consecutive ranges of one partition under `lease`. A range that ends at or
 * below `indexed_end` is already committed and skipped, so committing again is harmless.
 */
export async function commitRanges(catalog: Catalog, lease: Lease, ranges: readonly NewRange[], leaseTtlMs: number): Promise<CommitResult> {
  return inTransaction(catalog, async (client) => {
    let indexedEnd = await fencedIndexedEnd(client, lease);
    let added = 0;
    let skipped = 0;
    for (const range of ranges) {
      if (range.endOffset <= indexedEnd) {
        skipped += 1;
        continue;
      }
      if (range.startOffset !== indexedEnd) throw new ContiguityError(lease.tableId, lease.partition, indexedEnd, range.startOffset);
      await insertRange(client, lease, range, 'live');
      indexedEnd = range.endOffset;
      added += 1;
    }
    // A commit is proof of life: it renews the lease in the same statement that moves the end.
    await client.query(
      `UPDATE offsetlake.lake_partition SET indexed_end = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
         open_range_bytes = 0, open_range_records = 0, open_range_since = NULL
       WHERE table_id = $1 AND partition_id = $2`,
      [lease.tableId, lease.partition, indexedEnd, leaseTtlMs],
    );
    if (added > 0) faultPoint('before-commit');
    return { indexedEnd, added, skipped };
  });
}

/** A bound as Postgres text, or null when text cannot hold it (U+0000): then it goes to the `_utf8` column. */
function asText(bound: string | null): string | null {
  return bound === null || bound.includes('\u0000') ? null : bound;
}

function asUtf8(bound: string | null): Buffer | null {
  return bound === null || !bound.includes('\u0000') ? null : Buffer.from(bound, 'utf8');
}

/**
 * Kafka's earliest offset has passed `indexed_end`: the offsets in between can never be
 * read. Under the lease, in one transaction, they are recorded as a lost interval and
 * `indexed_end` moves to `earliest`, so indexing goes on from what Kafka still holds.
 * Returns the new `indexed_end` (unchanged if it is already at or past `earliest`).
 */
export async function recordLostInterval(catalog: Catalog, lease: Lease, earliest: bigint): Promise<bigint> {
  return inTransaction(catalog, async (client) => {
    const indexedEnd = await fencedIndexedEnd(client, lease);
    if (indexedEnd >= earliest) return indexedEnd;
    await client.query(
      'INSERT INTO offsetlake.lost_interval (table_id, partition_id, start_offset, end_offset, lease_epoch) VALUES ($1, $2, $3, $4, $5)',
      [lease.tableId, lease.partition, indexedEnd, earliest, lease.epoch],
    );
    await client.query(
      `UPDATE offsetlake.lake_partition SET indexed_end = $3, open_range_bytes = 0, open_range_records = 0, open_range_since = NULL
       WHERE table_id = $1 AND partition_id = $2`,
      [lease.tableId, lease.partition, earliest],
    );
    return earliest;
  });
}

export async function insertRange(client: CatalogClient, lease: Pick<Lease, 'tableId' | 'partition' | 'epoch'>, range: NewRange, source: 'live' | 'backfill'): Promise<void> {
  // The partition row is locked before the indexes are read: a state change that starts
  // requiring an index's entries locks the rows too, so it waits for this commit, and a
  // commit after it sees it (src/catalog/indexes.ts).
  await client.query('SELECT 1 FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2 FOR KEY SHARE', [lease.tableId, lease.partition]);
  const indexes = await checkIndexCoverage(client, lease.tableId, range.indexIds);
  for (const file of range.files) await insertFile(client, lease, range, file, source, indexes);
}

/**
 * One file of a range: its row, column statistics, granules and page index in one
 * statement, then its index entries (of the indexes in `indexes`). `replacedBySelf`: the
 * row is inserted as replaced by itself, so the unique index over live files does not see
 * it until the caller has marked the files it replaces (a merge, src/catalog/merges.ts).
 */
export async function insertFile(
  client: CatalogClient, lease: Pick<Lease, 'tableId' | 'partition' | 'epoch'>, range: { startOffset: bigint; endOffset: bigint; reason: SealReason | 'merge' },
  file: NewCatalogFile, source: 'live' | 'backfill' | 'merge', indexes: ReadonlySet<string>, options: { replacedBySelf?: boolean } = {},
): Promise<bigint> {
  // One statement a file (its row, its column statistics, its granules and page index):
  // each statement is a round trip, through RDS Proxy on Lambda. The rows the CTEs insert
  // reference the file's row, which the foreign keys see at the statement's end.
  const c = file.columns;
  const inserted = await client.query<{ data_file_id: bigint }>(
    `WITH file AS (
       INSERT INTO offsetlake.data_file (data_file_id, table_id, partition_id, start_offset, end_offset, time_bucket, record_count, file_size_bytes,
         footer_size, footer, sha256, seal_reason, schema_version, encoder_version, source, lease_epoch, page_index, tail_sha256, replaced_by, replaced_at)
       SELECT id, $1, $2, $3, $4, to_timestamp($5::double precision / 1000), $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $31,
              ${options.replacedBySelf ? 'id, now()' : 'NULL, NULL'}
       FROM (SELECT nextval(pg_get_serial_sequence('offsetlake.data_file', 'data_file_id')) AS id) AS next
       RETURNING data_file_id),
     stats AS (
       INSERT INTO offsetlake.file_column_stats (data_file_id, table_id, column_id, value_count, null_count, nan_count, min_value, max_value, min_value_utf8, max_value_utf8)
       SELECT file.data_file_id, $1, s.* FROM file, unnest($17::int[], $18::bigint[], $19::bigint[], $20::bigint[], $21::text[], $22::text[], $23::bytea[], $24::bytea[]) AS s),
     granules AS (
       INSERT INTO offsetlake.granule (data_file_id, row_group, start_offset, end_offset, row_count, kafka_bytes, chunk_sha256)
       SELECT file.data_file_id, r.* FROM file, unnest($25::int[], $26::bigint[], $27::bigint[], $28::bigint[], $29::bigint[], $30::bytea[]) AS r)
     SELECT data_file_id FROM file`,
    [
      lease.tableId, lease.partition, range.startOffset, range.endOffset, file.bucket, file.recordCount, file.fileSizeBytes,
      file.footer.byteLength, file.footer, file.sha256, range.reason, file.schemaVersion, file.encoderVersion, source, lease.epoch,
      file.granules ? Buffer.from(file.granules.pageIndex) : null,
      c.map((x) => x.columnId), c.map((x) => x.valueCount), c.map((x) => x.nullCount),
      c.map((x) => x.nanCount), c.map((x) => asText(x.min)), c.map((x) => asText(x.max)), c.map((x) => asUtf8(x.min)), c.map((x) => asUtf8(x.max)),
      ...granuleColumns(file.granules?.granules ?? []),
      file.granules ? Buffer.from(file.granules.tailSha256) : null,
    ],
  );
  const fileId = inserted.rows[0]!.data_file_id;
  await insertIndexEntries(client, fileId, file.indexEntries.filter((entry) => indexes.has(String(entry.indexId))));
  return fileId;
}

/**
 * A file's granules, page index bytes and their sha256, from a whole rebuild that matched
 * the catalog. Idempotent: a file indexed before granules existed (or before their sha256,
 * migration 15) gets them at its first whole rebuild, and two rebuilds may both try (they
 * write the same values). Granule rows already there are replaced, and rows past the file's
 * last row group removed: whatever wrote them, the values from verified bytes are the
 * file's. A reader role may not write tail_sha256, so its attempt is refused as a whole
 * (the file stays served whole).
 */
export async function insertGranules(client: Catalog | CatalogClient, dataFileId: bigint, file: FileGranules): Promise<void> {
  await client.query(
    `WITH added AS (
       INSERT INTO offsetlake.granule (data_file_id, row_group, start_offset, end_offset, row_count, kafka_bytes, chunk_sha256)
       SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[])
       ON CONFLICT (data_file_id, row_group) DO UPDATE SET start_offset = excluded.start_offset, end_offset = excluded.end_offset,
         row_count = excluded.row_count, kafka_bytes = excluded.kafka_bytes, chunk_sha256 = excluded.chunk_sha256),
     extra AS (DELETE FROM offsetlake.granule WHERE data_file_id = $1 AND row_group >= cardinality($2::int[]))
     UPDATE offsetlake.data_file SET page_index = $8, tail_sha256 = $9 WHERE data_file_id = $1 AND (page_index IS NULL OR tail_sha256 IS NULL)`,
    [dataFileId, ...granuleColumns(file.granules), Buffer.from(file.pageIndex), Buffer.from(file.tailSha256)],
  );
}

/** Granules as the arrays the granule table's unnest takes: row group, offsets, rows, Kafka bytes, chunk checksums. */
function granuleColumns(g: FileGranules['granules']): unknown[] {
  return [
    g.map((x) => x.rowGroup), g.map((x) => x.startOffset), g.map((x) => x.endOffset), g.map((x) => x.rowCount), g.map((x) => x.kafkaBytes),
    g.map((x) => Buffer.from(x.chunkSha256.buffer, x.chunkSha256.byteOffset, x.chunkSha256.byteLength)),
  ];
}
