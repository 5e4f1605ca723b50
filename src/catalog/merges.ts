/**
 * Merges (issue 49): one file built from the records of consecutive live files of a
 * partition, all of one time bucket, replaces them in one transaction. The sources keep
 * their rows (older snapshots name them, and they are served while Kafka holds their
 * offsets) but are no longer live; live files and lost intervals still tile the indexed
 * range (invariant 1), because a merge commits only where its sources are exactly the live
 * files of its offsets.
 */
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { fencedIndexedEnd, insertFile, type NewCatalogFile } from './file-writes.js';
import { liveFile } from './live-files.js';
import { checkIndexCoverage } from './indexes.js';
import type { Lease } from './leases.js';
import { faultPoint } from '../common/faults.js';

/** A live file as the merge plan sees it (src/compaction/plan.ts). */
export interface MergeCandidate {
  dataFileId: bigint;
  startOffset: bigint;
  endOffset: bigint;
  /** Start of its time bucket, epoch ms. */
  bucket: number;
  /** Key + value + header bytes of its records: what the sealer's `file_bytes` counts (the file's size when it has no granules). */
  kafkaBytes: number;
  fileSizeBytes: number;
  records: number;
  schemaVersion: number;
  encoderVersion: string;
  /** When it was committed, epoch ms. */
  createdAt: number;
}

/**
 * A partition's live files in offset order (siblings of one range by bucket), with the
 * Kafka bytes of their records: the plan's input.
 */
export async function mergeCandidates(catalog: Catalog | CatalogClient, tableId: bigint, partition: number): Promise<MergeCandidate[]> {
  const result = await catalog.query<{
    data_file_id: bigint; start_offset: bigint; end_offset: bigint; bucket: string; kafka_bytes: string; file_size_bytes: bigint; record_count: bigint;
    schema_version: number; encoder_version: string; created: string;
  }>(
    `SELECT f.data_file_id, f.start_offset, f.end_offset, (extract(epoch FROM f.time_bucket) * 1000)::bigint::text AS bucket,
            coalesce((SELECT sum(g.kafka_bytes) FROM offsetlake.granule g WHERE g.data_file_id = f.data_file_id), f.file_size_bytes)::text AS kafka_bytes,
            f.file_size_bytes, f.record_count, f.schema_version, f.encoder_version, (extract(epoch FROM f.created_at) * 1000)::bigint::text AS created
     FROM offsetlake.data_file f
     WHERE f.table_id = $1 AND f.partition_id = $2 AND ${liveFile('f')}
     ORDER BY f.start_offset, f.time_bucket`,
    [tableId, partition],
  );
  return result.rows.map((row) => ({
    dataFileId: BigInt(row.data_file_id),
    startOffset: BigInt(row.start_offset),
    endOffset: BigInt(row.end_offset),
    bucket: Number(row.bucket),
    kafkaBytes: Number(row.kafka_bytes),
    fileSizeBytes: Number(row.file_size_bytes),
    records: Number(row.record_count),
    schemaVersion: row.schema_version,
    encoderVersion: row.encoder_version,
    createdAt: Number(row.created),
  }));
}

/** A merged file to commit: its offsets, the live files it replaces, and the file built from their records. */
export interface NewMerge {
  startOffset: bigint;
  endOffset: bigint;
  /** The live files of [startOffset, endOffset), exactly: one per range, all in the merged file's bucket. */
  sources: readonly bigint[];
  file: NewCatalogFile;
  /** The secondary indexes the merged file carries entries for. */
  indexIds: bigint[];
}

/**
 * The merge cannot commit as planned: its sources are no longer exactly the live files of
 * its offsets (another merge took them, retention expired one), or they do not tile its
 * offsets in its bucket. Nothing was changed; plan again from the catalog.
 */
export class MergeRefusedError extends Error {
  override name = 'MergeRefusedError';
  constructor(readonly tableId: bigint, readonly partition: number, readonly offsets: string, reason: string) {
    super(`merge of offsets ${offsets} of partition ${partition} of table ${tableId} refused: ${reason}; nothing was changed (plan the merge again from the catalog)`);
  }
}

/**
 * Commits a merge under the partition's lease, in one transaction: the lease fence (the
 * partition row locked as every commit does, so a commit of new ranges and a merge never
 * interleave), the live files overlapping the merged offsets locked (FOR UPDATE: a
 * retention expiry or another merge of them waits, then sees them gone), the check that
 * they are exactly `sources` and tile the offsets in the merged file's bucket, the merged
 * file inserted, and the sources marked replaced by it. Returns the merged file's id.
 * Throws LeaseLostError without the lease, MergeRefusedError when the sources changed;
 * either way nothing is written.
 */
export async function commitMerge(catalog: Catalog, lease: Lease, merge: NewMerge): Promise<bigint> {
  return inTransaction(catalog, async (client) => {
    const indexedEnd = await fencedIndexedEnd(client, lease);
    const offsets = `[${merge.startOffset}, ${merge.endOffset})`;
    const refuse = (reason: string): MergeRefusedError => new MergeRefusedError(lease.tableId, lease.partition, offsets, reason);
    if (merge.endOffset > indexedEnd) throw refuse(`the partition is indexed only to offset ${indexedEnd}`);
    const live = await client.query<{ data_file_id: bigint; start_offset: bigint; end_offset: bigint; bucket: string }>(
      `SELECT f.data_file_id, f.start_offset, f.end_offset, (extract(epoch FROM f.time_bucket) * 1000)::bigint::text AS bucket
       FROM offsetlake.data_file f
       WHERE f.table_id = $1 AND f.partition_id = $2 AND ${liveFile('f')} AND f.start_offset < $4 AND f.end_offset > $3
       ORDER BY f.start_offset, f.time_bucket FOR UPDATE`,
      [lease.tableId, lease.partition, merge.startOffset, merge.endOffset],
    );
    const found = live.rows.map((row) => ({ id: BigInt(row.data_file_id), start: BigInt(row.start_offset), end: BigInt(row.end_offset), bucket: Number(row.bucket) }));
    const wanted = new Set(merge.sources.map(String));
    const gone = merge.sources.filter((id) => !found.some((file) => file.id === id));
    if (gone.length > 0) throw refuse(`file(s) ${gone.join(', ')} are no longer live (merged or expired meanwhile)`);
    const others = found.filter((file) => !wanted.has(String(file.id)));
    if (others.length > 0) throw refuse(`live file(s) ${others.map((file) => `${file.id} [${file.start}, ${file.end})`).join(', ')} lie over its offsets but are not among its sources`);
    let at = merge.startOffset;
    for (const file of found) {
      if (file.start !== at) throw refuse(`its sources do not tile its offsets: file ${file.id} starts at ${file.start}, where ${at} was expected`);
      if (file.bucket !== merge.file.bucket) throw refuse(`file ${file.id} lies in bucket ${new Date(file.bucket).toISOString()}, not the merged file's ${new Date(merge.file.bucket).toISOString()}`);
      at = file.end;
    }
    if (at !== merge.endOffset) throw refuse(`its sources end at offset ${at}, not at ${merge.endOffset}`);
    // As insertRange does: the indexes are read after the partition row is locked.
    const indexes = await checkIndexCoverage(client, lease.tableId, merge.indexIds);
    // The merged file starts where its first source does, in its bucket: it is inserted as
    // replaced by itself so that the unique index over live files does not see it until
    // its sources have left (the foreign keys are checked at each statement's end).
    const merged = await insertFile(client, lease, { startOffset: merge.startOffset, endOffset: merge.endOffset, reason: 'merge' }, merge.file, 'merge', indexes, { replacedBySelf: true });
    await client.query(
      'UPDATE offsetlake.data_file SET replaced_by = $2, replaced_at = now() WHERE data_file_id = ANY($1::bigint[])',
      [merge.sources, merged],
    );
    await client.query('UPDATE offsetlake.data_file SET replaced_by = NULL, replaced_at = NULL WHERE data_file_id = $1', [merged]);
    faultPoint('before-merge-commit');
    return merged;
  });
}

/** The files a merged file replaced, in offset order. */
export async function replacedFiles(catalog: Catalog | CatalogClient, mergedFileId: bigint): Promise<bigint[]> {
  const result = await catalog.query<{ data_file_id: bigint }>(
    'SELECT data_file_id FROM offsetlake.data_file WHERE replaced_by = $1 ORDER BY start_offset',
    [mergedFileId],
  );
  return result.rows.map((row) => BigInt(row.data_file_id));
}

/** For each merged file of the table, how many files it replaced (`files`). */
export async function replacedCounts(catalog: Catalog | CatalogClient, tableId: bigint): Promise<Map<bigint, number>> {
  const result = await catalog.query<{ replaced_by: bigint; n: number }>(
    'SELECT replaced_by, count(*)::int AS n FROM offsetlake.data_file WHERE table_id = $1 AND replaced_by IS NOT NULL GROUP BY replaced_by',
    [tableId],
  );
  return new Map(result.rows.map((row) => [BigInt(row.replaced_by), row.n]));
}
