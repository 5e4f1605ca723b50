/**
 * Iceberg snapshots in the catalog (migration 13): when one is cut, which files it names,
 * which are still in the history.
 *
 * A snapshot is cut when a client loads a table (LoadTable) and the table's live files
 * are no longer those of its newest snapshot: at once when retention expired one of
 * them (the newest snapshot names a file that can no longer be read), otherwise at most
 * once per `intervalMs` (between cuts a client sees the newest snapshot, up to one
 * interval behind the catalog). A table no one loads cuts none. Each cut has the next
 * sequence number of its table and a random id; file memberships are written in the cut's
 * transaction: a file is in the snapshots numbered [added_sequence, removed_sequence).
 * Nothing of a snapshot changes afterwards, so its id always names the same files.
 *
 * The history: a snapshot leaves it when retention expires one of its files (it could no
 * longer be read), or when more than `maxSnapshots` are kept (the oldest leaves first).
 */
import { randomBytes } from 'node:crypto';
import { inTransaction, type Catalog, type CatalogClient } from '../catalog/db.js';
import type { SnapshotRecord } from './metadata.js';

export interface CutOptions {
  /** The least time between two cuts that only add files (ms). */
  intervalMs: number;
  /** Snapshots the history keeps at most. */
  maxSnapshots: number;
  now?: () => Date;
}

export const defaultSnapshotIntervalMs = 60_000;
export const defaultMaxSnapshots = 100;

/** A positive id below 2^53 (so that every JSON reader reads it exactly), random as Iceberg's are. */
function newSnapshotId(): bigint {
  const id = randomBytes(8).readBigUInt64BE() % 2n ** 53n;
  return id === 0n ? 1n : id;
}

interface FileRow {
  data_file_id: string;
  added_sequence: string | null;
  record_count: string;
  file_size_bytes: string;
}

const summaryTotals = ['total-data-files', 'total-records', 'total-files-size'] as const;

/**
 * Cuts a snapshot of the table if its live files changed (see the module's opening);
 * returns the newest snapshot's sequence number afterwards (0: none yet).
 */
export async function cutSnapshotIfChanged(catalog: Catalog, tableId: bigint, options: CutOptions): Promise<bigint> {
  return inTransaction(catalog, async (client) => {
    await client.query('INSERT INTO offsetlake.iceberg_table (table_id) VALUES ($1) ON CONFLICT DO NOTHING', [tableId]);
    const locked = await client.query<{ last_sequence: string }>('SELECT last_sequence FROM offsetlake.iceberg_table WHERE table_id = $1 FOR UPDATE', [tableId]);
    const last = BigInt(locked.rows[0]!.last_sequence);
    const newest = last === 0n ? undefined : (await client.query<{ cut_at: Date; summary: Record<string, string>; snapshot_id: string }>(
      'SELECT cut_at, summary, snapshot_id FROM offsetlake.iceberg_snapshot WHERE table_id = $1 AND sequence_number = $2', [tableId, last])).rows[0];
    const added = (await client.query<FileRow>(
      `SELECT f.data_file_id, NULL AS added_sequence, f.record_count, f.file_size_bytes
       FROM offsetlake.data_file f LEFT JOIN offsetlake.iceberg_file i ON i.data_file_id = f.data_file_id
       WHERE f.table_id = $1 AND f.expired_at IS NULL AND i.data_file_id IS NULL ORDER BY f.data_file_id`, [tableId])).rows;
    const removed = (await client.query<FileRow>(
      `SELECT i.data_file_id, i.added_sequence, f.record_count, f.file_size_bytes
       FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
       WHERE i.table_id = $1 AND i.removed_sequence IS NULL AND f.expired_at IS NOT NULL ORDER BY i.data_file_id`, [tableId])).rows;
    const now = options.now?.() ?? new Date();
    const due = removed.length > 0 || (added.length > 0 && (!newest || now.getTime() - newest.cut_at.getTime() >= options.intervalMs));
    if (!due) return last;
    const sequence = last + 1n;
    const sum = (rows: FileRow[], column: 'record_count' | 'file_size_bytes') => rows.reduce((total, row) => total + BigInt(row[column]), 0n);
    const before = (name: (typeof summaryTotals)[number]) => BigInt(newest?.summary[name] ?? '0');
    const summary: Record<string, string> = {
      operation: removed.length === 0 ? 'append' : added.length === 0 ? 'delete' : 'overwrite',
      'added-data-files': String(added.length),
      'deleted-data-files': String(removed.length),
      'added-records': String(sum(added, 'record_count')),
      'deleted-records': String(sum(removed, 'record_count')),
      'added-files-size': String(sum(added, 'file_size_bytes')),
      'removed-files-size': String(sum(removed, 'file_size_bytes')),
      'total-data-files': String(before('total-data-files') + BigInt(added.length) - BigInt(removed.length)),
      'total-records': String(before('total-records') + sum(added, 'record_count') - sum(removed, 'record_count')),
      'total-files-size': String(before('total-files-size') + sum(added, 'file_size_bytes') - sum(removed, 'file_size_bytes')),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    };
    const schema = await client.query<{ schema_version: number }>('SELECT max(schema_version)::int AS schema_version FROM offsetlake.table_schema WHERE table_id = $1', [tableId]);
    await client.query(
      'INSERT INTO offsetlake.iceberg_file (data_file_id, table_id, added_sequence) SELECT unnest($2::bigint[]), $1, $3',
      [tableId, added.map((row) => row.data_file_id), sequence],
    );
    if (removed.length > 0) {
      await client.query('UPDATE offsetlake.iceberg_file SET removed_sequence = $2 WHERE data_file_id = ANY($1::bigint[])', [removed.map((row) => row.data_file_id), sequence]);
      // A snapshot numbered k holds a file added at a ≤ k: every snapshot from the oldest
      // such a among the expired files on named one of them.
      const oldest = removed.reduce((least, row) => (BigInt(row.added_sequence!) < least ? BigInt(row.added_sequence!) : least), sequence);
      await client.query(
        `UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = $3, dropped_reason = $4
         WHERE table_id = $1 AND dropped_sequence IS NULL AND sequence_number >= $2`,
        [tableId, oldest, sequence, `retention expired file ${removed[0]!.data_file_id}${removed.length > 1 ? ` and ${removed.length - 1} more` : ''} of this snapshot`],
      );
    }
    await client.query(
      'INSERT INTO offsetlake.iceberg_snapshot (table_id, sequence_number, snapshot_id, cut_at, schema_version, summary) VALUES ($1, $2, $3, $4, $5, $6)',
      [tableId, sequence, newSnapshotId(), now, schema.rows[0]!.schema_version, summary],
    );
    await client.query(
      `UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = $2, dropped_reason = $4
       WHERE table_id = $1 AND dropped_sequence IS NULL AND sequence_number <= $2::bigint - $3::bigint`,
      [tableId, sequence, options.maxSnapshots, `the history keeps the newest ${options.maxSnapshots} snapshots`],
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

const toSnapshot = (row: SnapshotRow): SnapshotRecord => ({
  sequenceNumber: BigInt(row.sequence_number),
  snapshotId: BigInt(row.snapshot_id),
  parentSnapshotId: row.parent_snapshot_id === null ? null : BigInt(row.parent_snapshot_id),
  cutAt: row.cut_at,
  schemaVersion: row.schema_version,
  summary: row.summary,
});

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
  return result.rows.map(toSnapshot);
}

/** One snapshot by id (dropped ones included, with why), or undefined. */
export async function findSnapshot(catalog: Catalog | CatalogClient, tableId: bigint, snapshotId: bigint): Promise<(SnapshotRecord & { droppedReason: string | null }) | undefined> {
  const result = await catalog.query<SnapshotRow & { dropped_reason: string | null }>(
    `SELECT s.sequence_number, s.snapshot_id, s.cut_at, s.schema_version, s.summary, s.dropped_reason,
            (SELECT p.snapshot_id FROM offsetlake.iceberg_snapshot p WHERE p.table_id = s.table_id AND p.sequence_number = s.sequence_number - 1) AS parent_snapshot_id
     FROM offsetlake.iceberg_snapshot s WHERE s.table_id = $1 AND s.snapshot_id = $2`,
    [tableId, snapshotId],
  );
  const row = result.rows[0];
  return row && { ...toSnapshot(row), droppedReason: row.dropped_reason };
}

/** Snapshot ids by sequence number, of every snapshot the table ever cut (a manifest names the snapshot that added each file). */
export async function snapshotIds(catalog: Catalog | CatalogClient, tableId: bigint): Promise<Map<bigint, bigint>> {
  const result = await catalog.query<{ sequence_number: string; snapshot_id: string }>('SELECT sequence_number, snapshot_id FROM offsetlake.iceberg_snapshot WHERE table_id = $1', [tableId]);
  return new Map(result.rows.map((row) => [BigInt(row.sequence_number), BigInt(row.snapshot_id)]));
}

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

/** The table's uuid (Iceberg's table-uuid). */
export async function tableUuid(catalog: Catalog | CatalogClient, tableId: bigint): Promise<string> {
  const result = await catalog.query<{ table_uuid: string }>('SELECT table_uuid::text FROM offsetlake.lake_table WHERE table_id = $1', [tableId]);
  return result.rows[0]!.table_uuid;
}
