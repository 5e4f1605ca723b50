/**
 * Rebuilding a file from Kafka: its committed records of [start_offset, end_offset) that
 * fall in its bucket, built with its table-schema and encoder versions, give the same
 * bytes. Size, footer and sha256 are checked before the bytes are handed out; a
 * mismatch is an error, never silently served. Pure of the catalog: the caller reads the
 * file's schema version and stores what the rebuild derives (a file's first granules).
 */
import type { CatalogFile } from '../catalog/file-reads.js';
import type { FileGranules } from '../catalog/file-writes.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import { encodeRows, fileRows, granulesOf } from './files.js';
import type { EncodedFile, PreparedData } from '../parquet/index.js';
import type { TableSchema } from '../schema/table-schema.js';
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import { bucketOf } from '../ranges/buckets.js';
import { sealRange, type SealedRange, type SealReason } from '../ranges/sealer.js';
import { compactionProblem } from '../kafka/topics.js';
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import { recordColumns } from '../kafka/record-batch.js';

export class RebuildMismatchError extends Error {
  override name = 'RebuildMismatchError';
  constructor(readonly dataFileId: bigint, readonly differences: string[]) {
    super(`file ${dataFileId} rebuilt from Kafka does not match the catalog: ${differences.join('; ')}`);
  }
}

export class FileExpiredError extends Error {
  override name = 'FileExpiredError';
  constructor(readonly dataFileId: bigint, expiredAt: Date) {
    super(`file ${dataFileId} expired at ${expiredAt.toISOString()}: Kafka no longer holds its offsets`);
  }
}

export interface RebuiltFile {
  bytes: Uint8Array;
  sha256: Uint8Array;
  records: number;
  /** The granules of a file indexed before granules existed (`VerifiedFile.derivedGranules`), for the caller to store. */
  derivedGranules: FileGranules | null;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/**
 * The file's records as indexing saw them: committed, in its offsets (or the span of one
 * of its granules), in its bucket.
 */
export async function fileRecords(
  source: CommittedSource, table: TableRecord, file: CatalogFile, span: { startOffset: bigint; endOffset: bigint } = file, everyRecord?: (record: KafkaRecord) => void,
  options?: SourceReadOptions,
): Promise<KafkaRecord[]> {
  const bucket = file.bucket.getTime();
  const records: KafkaRecord[] = [];
  for await (const batch of source.read(table.topic, file.partition, span.startOffset, span.endOffset, { ...options, ...tableTopic(table) })) {
    if (everyRecord) for (const record of batch.records) everyRecord(record);
    for (const record of batch.records) if (bucketOf(record.timestamp, table.settings.granularity) === bucket) records.push(record);
  }
  return records;
}

/**
 * The files of a partition's offsets [startOffset, endOffset) built from Kafka, as a sealed
 * range to build: its committed records, one file per time bucket (`sealRange`), for
 * `buildRangeFiles` (with the schema, indexes and encoder the caller read). Indexing builds
 * the ranges it seals from the records it reads; this is the same build over records read
 * again, which a merge of consecutive ranges into one (issue 49) makes. A read that ends
 * before `endOffset` (Kafka no longer or not yet holds the offsets) is an error, never a
 * range of fewer records.
 */
export async function rangeFromKafka(
  source: CommittedSource, table: TableRecord, partition: number, startOffset: bigint, endOffset: bigint, reason: SealReason, options?: SourceReadOptions,
): Promise<SealedRange> {
  const records: KafkaRecord[] = [];
  let position = startOffset;
  for await (const batch of source.read(table.topic, partition, startOffset, endOffset, { ...options, ...tableTopic(table) })) {
    for (const record of batch.records) records.push(record);
    position = batch.nextOffset;
  }
  if (position < endOffset) {
    throw new Error(`the read of ${table.topic}-${partition} [${startOffset}, ${endOffset}) stopped at ${position}: Kafka holds committed records only below it; build the range once they are committed`);
  }
  return sealRange(startOffset, endOffset, reason, records, table.settings.granularity);
}

/** A file rebuilt and checked against the catalog, with what it was built from. */
export interface VerifiedFile {
  built: EncodedFile;
  /** The file's records, and its rows as built (the same rows indexing built it from). */
  records: KafkaRecord[];
  rows: PreparedData;
  schema: TableSchema;
  /** Key + value + header bytes of every record read for it (its span, every bucket). */
  bytesRead: number;
  /**
   * A file indexed before granules existed gets them from its first whole rebuild: they
   * are derived from bytes just checked against the catalog, for the caller to store
   * (`storeDerivedGranules`). Null for a file that has them, or whose chunks do not tile its bytes.
   */
  derivedGranules: FileGranules | null;
}

/** The file's bytes rebuilt and verified (`verifiedFile`), as a read serves them. */
export async function rebuildFile(source: CommittedSource, table: TableRecord, file: CatalogFile, schema: TableSchema): Promise<RebuiltFile> {
  const { built, records, derivedGranules } = await verifiedFile(source, table, file, schema);
  return { bytes: built.bytes, sha256: built.sha256, records: records.length, derivedGranules };
}

/**
 * Rebuilds the file and checks records, size, footer and sha256 against the catalog:
 * only then are its records known to be the file's (what a rebuild serves, and what an
 * index backfill takes entries from). A difference throws RebuildMismatchError. `schema`:
 * the file's table-schema version (`file.schemaVersion`), as the catalog holds it.
 */
export async function verifiedFile(source: CommittedSource, table: TableRecord, file: CatalogFile, schema: TableSchema): Promise<VerifiedFile> {
  if (file.expiredAt) throw new FileExpiredError(file.dataFileId, file.expiredAt);
  // A file without granules gets them from this rebuild: their Kafka bytes count every record of the span.
  const spanRecords: KafkaRecord[] = [];
  let bytesRead = 0;
  const records = await fileRecords(source, table, file, file, (record) => {
    bytesRead += recordBytes(record);
    if (!file.hasGranules) spanRecords.push(record);
  });
  const columns = recordColumns(records);
  const rows = fileRows(table, schema, file.partition, records, file.encoderVersion, { columns });
  const built = encodeRows(table, schema, rows, file.encoderVersion);
  const differences: string[] = [];
  if (BigInt(records.length) !== file.recordCount) differences.push(`${records.length} records, the catalog has ${file.recordCount}`);
  if (BigInt(built.byteLength) !== file.fileSizeBytes) differences.push(`${built.byteLength} bytes, the catalog has ${file.fileSizeBytes}`);
  if (!Buffer.from(built.footer).equals(file.footer)) differences.push(`footer differs (${built.footer.byteLength} bytes, the catalog has ${file.footer.byteLength})`);
  if (!Buffer.from(built.sha256).equals(file.sha256)) differences.push(`sha256 ${hex(built.sha256)}, the catalog has ${hex(file.sha256)}`);
  if (differences.length > 0) {
    const compacted = await compactionCause(source, table.topic);
    throw new RebuildMismatchError(file.dataFileId, compacted ? [compacted, ...differences] : differences);
  }
  const derivedGranules = file.hasGranules ? null : granulesOf(built, { records, columns }, file.startOffset, file.endOffset, [{ records: spanRecords, columns: recordColumns(spanRecords) }]);
  return { built, records, rows, schema, bytesRead, derivedGranules };
}

/** Why a rebuild may differ, when there is a cause to name: the topic was made compacted after indexing. */
export async function compactionCause(source: CommittedSource, topic: string): Promise<string | undefined> {
  return compactionProblem(topic, (await source.cleanupPolicy?.(topic).catch(() => undefined)) ?? 'delete');
}
