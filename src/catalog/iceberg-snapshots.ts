/**
 * The Iceberg snapshots in the catalog (migration 13: iceberg_table, iceberg_snapshot,
 * iceberg_file): a cut (migration 16's function, which decides when one is due and
 * writes it in one transaction), and the snapshots, their history and the files they
 * name read back.
 */
import type { Catalog, CatalogClient } from './db.js';

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

/**
 * Cuts the table's next snapshot if one is due, in the catalog's function
 * cut_iceberg_snapshot (migration 16), which runs as the catalog's owner: the snapshot's
 * files, summary and id come from data_file alone, so a login that may cut (the reader's)
 * cannot name a file a snapshot does not hold or leave one out. The caller gives how
 * often a cut may only add files and how many snapshots the history keeps. Returns the
 * newest sequence number afterwards (0: none yet).
 */
export async function cutIcebergSnapshot(catalog: Catalog, tableId: bigint, intervalMs: number, maxSnapshots: number): Promise<bigint> {
  const result = await catalog.query<{ sequence: string }>('SELECT offsetlake.cut_iceberg_snapshot($1, $2, $3)::text AS sequence', [tableId, Math.round(intervalMs), maxSnapshots]);
  return BigInt(result.rows[0]!.sequence);
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

/**
 * A file a snapshot named: the snapshots [addedSequence, removedSequence) hold it. A file
 * may have more than one (a merge's source made live again by retention joins snapshots
 * again, migration 19); at most one is open, and no two hold the same snapshot.
 */
export interface Membership {
  dataFileId: bigint;
  addedSequence: bigint;
  removedSequence: bigint | null;
  bucket: Date;
  recordCount: bigint;
}

/** Every membership of a file in snapshots up to `sequence`: which files they named, and when. */
export async function membershipsUpTo(catalog: Catalog | CatalogClient, tableId: bigint, sequence: bigint): Promise<Membership[]> {
  const result = await catalog.query<{ data_file_id: string; added_sequence: string; removed_sequence: string | null; time_bucket: Date; record_count: string }>(
    `SELECT i.data_file_id, i.added_sequence, i.removed_sequence, f.time_bucket, f.record_count
     FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
     WHERE i.table_id = $1 AND i.added_sequence <= $2 ORDER BY i.data_file_id, i.added_sequence`,
    [tableId, sequence],
  );
  return result.rows.map((row) => ({
    dataFileId: BigInt(row.data_file_id), addedSequence: BigInt(row.added_sequence), removedSequence: row.removed_sequence === null ? null : BigInt(row.removed_sequence),
    bucket: row.time_bucket, recordCount: BigInt(row.record_count),
  }));
}
