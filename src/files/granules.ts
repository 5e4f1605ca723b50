/**
 * A read that rebuilds only what it covers: the column chunks of one granule (row group),
 * from the Kafka offsets of that granule alone, encoded for only the columns they belong
 * to, and each checked against the sha256 the catalog took at indexing before it is
 * handed out. The bytes are those of a whole-file rebuild, always: a chunk depends only on
 * its leaf's values in its row group (src/files/granule-chunks.ts).
 */
import type { CatalogFile } from '../catalog/file-reads.js';
import type { Granule } from '../catalog/file-writes.js';
import type { TableRecord } from '../table/record.js';
import { checkedChunks, leafColumns, type ChunkJob, type ChunkResult, type ExpectedChunk } from './granule-chunks.js';
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import { fetchBytesForPart, fetchBytesForSpan } from '../kafka/fetch-size.js';
import { SHA256_BYTES, type FileLayout } from '../parquet/index.js';
import type { TableSchema } from '../schema/table-schema.js';
import type { KafkaRecord } from '../kafka/record.js';
import { compactionCause, fileRecords } from './rebuild.js';

export class GranuleMismatchError extends Error {
  override name = 'GranuleMismatchError';
  constructor(readonly dataFileId: bigint, readonly rowGroup: number, readonly column: string | null, readonly detail: string) {
    super(`file ${dataFileId}, row group ${rowGroup}${column === null ? '' : `, column ${column}`}: rebuilt from Kafka, it does not match the catalog (${detail}); the bytes were not served`);
  }
}

/** The likeliest cause, when there is one to name: a topic made compacted after indexing. */
async function withCause(error: unknown, source: CommittedSource, topic: string): Promise<unknown> {
  if (!(error instanceof GranuleMismatchError)) return error;
  const compacted = await compactionCause(source, topic);
  return compacted ? new GranuleMismatchError(error.dataFileId, error.rowGroup, error.column, `${compacted}; ${error.detail}`) : error;
}

/** A granule rebuilt for some top-level columns: its chunks, each verified, and the one-row-group file when asked. */
export interface VerifiedGranule {
  /** The chosen columns of the granule's rows as a file of one row group (readable by any engine), when asked for. */
  fileBytes?: Uint8Array;
  /** Each wanted leaf's chunk (leaf index in the data file's footer order), checked against the catalog. */
  chunks: Map<number, Uint8Array>;
}

/** The leaves (footer order) of some top-level columns (indices into the schema's columns). */
export function leavesOfColumns(schema: TableSchema, columns: readonly number[]): number[] {
  const wanted = new Set(columns);
  return leafColumns(schema).flatMap((column, leaf) => (wanted.has(column) ? [leaf] : []));
}

/**
 * The granule's records (committed, in its span, in the file's bucket), as many as the
 * catalog says. `offsets` (the row group's first and last offset, from its footer) can
 * narrow the read (`readSpan`): the span is the range's, shared by every bucket's file,
 * and a file of a few stragglers at an hour's edge would otherwise fetch all of it.
 */
export async function granuleRecords(
  source: CommittedSource, table: TableRecord, file: CatalogFile, granule: Granule,
  options: Pick<SourceReadOptions, 'keep'> & { offsets?: { first: bigint; last: bigint } | null } = {},
): Promise<KafkaRecord[]> {
  const span = readSpan(granule, options.offsets ?? null);
  // Fetches sized to the span's bytes (the catalog knows them), or to a narrowed read's share of
  // them: the client decodes every record a Fetch brings.
  const fetchBytes = fetchBytesForPart(fetchBytesForSpan(granule.kafkaBytes, granule.startOffset, granule.endOffset), span.startOffset, span.endOffset, granule.startOffset, granule.endOffset);
  const records = await fileRecords(source, table, file, span, undefined, { keep: options.keep, fetchBytes });
  if (records.length !== granule.rowCount) {
    const error = new GranuleMismatchError(file.dataFileId, granule.rowGroup, null, `${records.length} records in offsets [${span.startOffset}, ${span.endOffset}), the catalog has ${granule.rowCount}`);
    throw await withCause(error, source, table.topic);
  }
  return records;
}

/**
 * The offsets to read for a granule: its span, or its records' first to last offset when
 * that is at most half of it (a file of a few stragglers at an hour's edge, a row group
 * followed by aborted records). Nearly whole, narrowing would save little and split the
 * range's other reads (src/reader/shared-reads.ts) around the held piece.
 */
export function readSpan(granule: Granule, offsets: { first: bigint; last: bigint } | null): { startOffset: bigint; endOffset: bigint; narrowed: boolean } {
  const whole = { startOffset: granule.startOffset, endOffset: granule.endOffset, narrowed: false };
  if (!offsets || offsets.first < granule.startOffset || offsets.last >= granule.endOffset) return whole;
  const narrow = offsets.last + 1n - offsets.first;
  return narrow * 2n <= granule.endOffset - granule.startOffset ? { startOffset: offsets.first, endOffset: offsets.last + 1n, narrowed: true } : whole;
}

/** The chunks the catalog holds for `leaves` of the granule: path, size and sha256 of each. */
export function expectedChunks(layout: FileLayout, granule: Granule, leaves: readonly number[]): ExpectedChunk[] {
  const places = layout.rowGroups[granule.rowGroup]!.chunks;
  return leaves.map((leaf) => ({
    leaf, path: places[leaf]!.path, size: places[leaf]!.end - places[leaf]!.start,
    sha256: granule.chunkSha256.subarray(leaf * SHA256_BYTES, (leaf + 1) * SHA256_BYTES),
  }));
}

/** Whether the catalog's statistics say no row of the file is an error row (`_error` null in every row). */
function hasNoErrorRows(file: CatalogFile, schema: TableSchema): boolean {
  const errorColumn = schema.leafIds._error;
  const stats = file.columns.find((column) => column.columnId === errorColumn);
  return stats !== undefined && stats.nullCount === file.recordCount;
}

/** Builds chunks, on this thread or another: `checkedChunks` or a build pool's run of it. */
export type ChunkBuilder = (job: ChunkJob) => ChunkResult | Promise<ChunkResult>;

/**
 * The granule built from its records for the columns of `leaves`, each chunk of `leaves`
 * checked against its sha256; a mismatch throws GranuleMismatchError (with its likeliest cause).
 */
export async function chunksOf(
  source: CommittedSource, table: TableRecord, file: CatalogFile, schema: TableSchema, layout: FileLayout, granule: Granule, records: readonly KafkaRecord[], leaves: readonly number[],
  options: { build?: ChunkBuilder; wantFile?: boolean } = {},
): Promise<VerifiedGranule> {
  const job: ChunkJob = {
    table, schema, partition: file.partition, encoderVersion: file.encoderVersion, records, expected: expectedChunks(layout, granule, leaves),
    wantFile: options.wantFile ?? false, noErrorRows: hasNoErrorRows(file, schema),
  };
  const result = await (options.build ?? checkedChunks)(job);
  if ('mismatch' in result) {
    throw await withCause(new GranuleMismatchError(file.dataFileId, granule.rowGroup, result.mismatch.column, result.mismatch.detail), source, table.topic);
  }
  return result;
}
