/**
 * The Iceberg snapshots in the catalog (migration 13: iceberg_table, iceberg_snapshot,
 * iceberg_file): a cut written in one transaction, and the snapshots, their history and
 * the files they name read back. When a cut is due and what its summary says is
 * src/iceberg/snapshots.ts's to decide; this module only reads and writes the rows.
 */
import { inTransaction, type Catalog, type CatalogClient } from './db.js';

/** One snapshot as the catalog keeps it, and as Iceberg's table metadata lists it. */
export interface SnapshotRecord {
  sequenceNumber: bigint;
  snapshotId: bigint;
  parentSnapshotId: bigint | null;
  cutAt: Date;
  schemaVersion: number;
  /** Iceberg's summary: operation and counts, as strings. */
  summary: Record<string, string>;
}

/** A live file's counts, as a cut's summary adds them up. */
export interface SnapshotFile {
  dataFileId: bigint;
  recordCount: bigint;
  fileSizeBytes: bigint;
}

/** What changed since the table's newest snapshot: what deciding whether to cut one needs. */
export interface ChangesSinceNewest {
  newest: Pick<SnapshotRecord, 'cutAt' | 'summary'> | undefined;
  /** Live files no snapshot names yet. */
  added: SnapshotFile[];
  /** Files of the newest snapshot that retention expired since, with the cut that added each. */
  removed: (SnapshotFile & { addedSequence: bigint })[];
}

/** The snapshot to cut: its id, time and summary, and how many snapshots the history keeps at most. */
export interface NewSnapshot {
  snapshotId: bigint;
  cutAt: Date;
  summary: Record<string, string>;
  maxSnapshots: number;
}

interface FileRow {
  data_file_id: bigint;
  record_count: bigint;
  file_size_bytes: bigint;
}

const toFile = (row: FileRow): SnapshotFile => ({ dataFileId: BigInt(row.data_file_id), recordCount: BigInt(row.record_count), fileSizeBytes: BigInt(row.file_size_bytes) });

/**
 * Cuts the table's next snapshot if `plan`, given the changes since its newest, returns
 * one: in one transaction that holds the table's iceberg_table row, so that two loads
 * never cut the same sequence number. The files' memberships, the snapshots that leave
 * the history (those naming an expired file, and the oldest beyond `maxSnapshots`) and the
 * snapshot itself are written together. Returns the newest sequence number afterwards
 * (0: none yet).
 */
export async function cutIcebergSnapshot(catalog: Catalog, tableId: bigint, plan: (changes: ChangesSinceNewest) => NewSnapshot | undefined): Promise<bigint> {
  return inTransaction(catalog, async (client) => {
    await client.query('INSERT INTO offsetlake.iceberg_table (table_id) VALUES ($1) ON CONFLICT DO NOTHING', [tableId]);
    const locked = await client.query<{ last_sequence: string }>('SELECT last_sequence FROM offsetlake.iceberg_table WHERE table_id = $1 FOR UPDATE', [tableId]);
    const last = BigInt(locked.rows[0]!.last_sequence);
    const newest = last === 0n ? undefined : (await client.query<{ cut_at: Date; summary: Record<string, string> }>(
      'SELECT cut_at, summary FROM offsetlake.iceberg_snapshot WHERE table_id = $1 AND sequence_number = $2', [tableId, last])).rows[0];
    const added = (await client.query<FileRow>(
      `SELECT f.data_file_id, f.record_count, f.file_size_bytes
       FROM offsetlake.data_file f LEFT JOIN offsetlake.iceberg_file i ON i.data_file_id = f.data_file_id
       WHERE f.table_id = $1 AND f.expired_at IS NULL AND i.data_file_id IS NULL ORDER BY f.data_file_id`, [tableId])).rows.map(toFile);
    const removed = (await client.query<FileRow & { added_sequence: bigint }>(
      `SELECT i.data_file_id, i.added_sequence, f.record_count, f.file_size_bytes
       FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
       WHERE i.table_id = $1 AND i.removed_sequence IS NULL AND f.expired_at IS NOT NULL ORDER BY i.data_file_id`, [tableId])).rows.map((row) => ({ ...toFile(row), addedSequence: BigInt(row.added_sequence) }));
    const cut = plan({ newest: newest && { cutAt: newest.cut_at, summary: newest.summary }, added, removed });
    if (!cut) return last;
    const sequence = last + 1n;
    const schema = await client.query<{ schema_version: number }>('SELECT max(schema_version)::int AS schema_version FROM offsetlake.table_schema WHERE table_id = $1', [tableId]);
    await client.query(
      'INSERT INTO offsetlake.iceberg_file (data_file_id, table_id, added_sequence) SELECT unnest($2::bigint[]), $1, $3',
      [tableId, added.map((file) => file.dataFileId), sequence],
    );
    if (removed.length > 0) {
      await client.query('UPDATE offsetlake.iceberg_file SET removed_sequence = $2 WHERE data_file_id = ANY($1::bigint[])', [removed.map((file) => file.dataFileId), sequence]);
      // A snapshot numbered k holds a file added at a ≤ k: every snapshot from the oldest
      // such a among the expired files on named one of them.
      const oldest = removed.reduce((least, file) => (file.addedSequence < least ? file.addedSequence : least), sequence);
      await client.query(
        `UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = $3, dropped_reason = $4
         WHERE table_id = $1 AND dropped_sequence IS NULL AND sequence_number >= $2`,
        [tableId, oldest, sequence, `retention expired file ${removed[0]!.dataFileId}${removed.length > 1 ? ` and ${removed.length - 1} more` : ''} of this snapshot`],
      );
    }
    await client.query(
      'INSERT INTO offsetlake.iceberg_snapshot (table_id, sequence_number, snapshot_id, cut_at, schema_version, summary) VALUES ($1, $2, $3, $4, $5, $6)',
      [tableId, sequence, cut.snapshotId, cut.cutAt, schema.rows[0]!.schema_version, cut.summary],
    );
    await client.query(
      `UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = $2, dropped_reason = $4
       WHERE table_id = $1 AND dropped_sequence IS NULL AND sequence_number <= $2::bigint - $3::bigint`,
      [tableId, sequence, cut.maxSnapshots, `the history keeps the newest ${cut.maxSnapshots} snapshots`],
    );
    await client.query('UPDATE offsetlake.iceberg_table SET last_sequence = $2 WHERE table_id = $1', [tableId, sequence]);
    return sequence;
  });
}

interface SnapshotRow {
  sequence_number: string;
  snapshot_id: string;
  parent_snapshot_id: string | null;
  cut_at: Date;
  schema_version: number;
  summary: Record<string, string>;
}

/** The snapshots in the history as it was when snapshot `sequence` was cut, oldest first (the last is that one). */
export async function historyAsOf(catalog: Catalog | CatalogClient, tableId: bigint, sequence: bigint): Promise<SnapshotRecord[]> {
  const result = await catalog.query<SnapshotRow>(
    `SELECT s.sequence_number, s.snapshot_id, s.cut_at, s.schema_version, s.summary,
            (SELECT p.snapshot_id FROM offsetlake.iceberg_snapshot p WHERE p.table_id = s.table_id AND p.sequence_number = s.sequence_number - 1) AS parent_snapshot_id
     FROM offsetlake.iceberg_snapshot s
     WHERE s.table_id = $1 AND s.sequence_number <= $2 AND (s.dropped_sequence IS NULL OR s.dropped_sequence > $2)
     ORDER BY s.sequence_number`,
    [tableId, sequence],
  );
  return result.rows.map((row) => ({
    sequenceNumber: BigInt(row.sequence_number),
    snapshotId: BigInt(row.snapshot_id),
    parentSnapshotId: row.parent_snapshot_id === null ? null : BigInt(row.parent_snapshot_id),
    cutAt: row.cut_at,
    schemaVersion: row.schema_version,
    summary: row.summary,
  }));
}

/** What a manifest needs of a snapshot: its id, when it was cut, the schema version it was cut with. */
export type SnapshotHead = Pick<SnapshotRecord, 'snapshotId' | 'cutAt' | 'schemaVersion'>;

/** Every snapshot the table ever cut (dropped ones included: a manifest names the snapshot that added each file), by sequence number. */
export async function snapshotsBySequence(catalog: Catalog | CatalogClient, tableId: bigint): Promise<Map<bigint, SnapshotHead>> {
  const result = await catalog.query<{ sequence_number: string; snapshot_id: string; cut_at: Date; schema_version: number }>(
    'SELECT sequence_number, snapshot_id, cut_at, schema_version FROM offsetlake.iceberg_snapshot WHERE table_id = $1', [tableId]);
  return new Map(result.rows.map((row) => [BigInt(row.sequence_number), { snapshotId: BigInt(row.snapshot_id), cutAt: row.cut_at, schemaVersion: row.schema_version }]));
}

/** A file a snapshot named: the snapshots [addedSequence, removedSequence) hold it. */
export interface Membership {
  dataFileId: bigint;
  addedSequence: bigint;
  removedSequence: bigint | null;
  bucket: Date;
  recordCount: bigint;
}

/** Every file a snapshot up to `sequence` ever named, with the snapshots it is in. */
export async function membershipsUpTo(catalog: Catalog | CatalogClient, tableId: bigint, sequence: bigint): Promise<Membership[]> {
  const result = await catalog.query<{ data_file_id: string; added_sequence: string; removed_sequence: string | null; time_bucket: Date; record_count: string }>(
    `SELECT i.data_file_id, i.added_sequence, i.removed_sequence, f.time_bucket, f.record_count
     FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
     WHERE i.table_id = $1 AND i.added_sequence <= $2 ORDER BY i.data_file_id`,
    [tableId, sequence],
  );
  return result.rows.map((row) => ({
    dataFileId: BigInt(row.data_file_id), addedSequence: BigInt(row.added_sequence), removedSequence: row.removed_sequence === null ? null : BigInt(row.removed_sequence),
    bucket: row.time_bucket, recordCount: BigInt(row.record_count),
  }));
}
