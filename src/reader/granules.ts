/**
 * A read that rebuilds only what it covers: the column chunks of one granule (row group),
 * from the Kafka offsets of that granule alone, encoded for only the columns they belong
 * to, and each checked against the sha256 the catalog took at indexing before it is
 * handed out. The bytes are those of a whole-file rebuild, always: a chunk depends only on
 * its leaf's values in its row group (src/build/files.ts, encodeColumns).
 */
import type { DataFile } from '../catalog/file-reads.js';
import type { Granule } from '../catalog/file-writes.js';
import type { TableRecord } from '../catalog/tables.js';
import { encodeColumns } from '../build/files.js';
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import { fetchBytesForSpan } from '../kafka/fetch-size.js';
import { bytesOfRange, fileLayout, leafCount, sha256OfRange, SHA256_BYTES, type EncodedFile, type FileLayout } from '../parquet/index.js';
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

/** The top-level column (index into the schema's columns) of each leaf, in leaf order. */
export function leafColumns(schema: TableSchema): number[] {
  return schema.columns.flatMap((column, c) => new Array<number>(leafCount(column)).fill(c));
}

/** A granule rebuilt for some top-level columns: the one-row-group file, and its chunks, each verified. */
export interface VerifiedGranule {
  /** The chosen columns of the granule's rows as a file of one row group (readable by any engine). */
  file: EncodedFile;
  /** Each wanted leaf's chunk (leaf index in the data file's footer order), checked against the catalog. */
  chunks: Map<number, Uint8Array>;
}

/**
 * One granule rebuilt for the top-level columns that hold `leaves` (leaf indices in the
 * file's footer order), each chunk of `leaves` checked against the catalog (a mismatch
 * throws). Reads the granule's offset span once. The built file holds every leaf of those
 * columns: it is wholly verified when `leaves` are all of them.
 */
export async function rebuildGranuleColumns(
  source: CommittedSource, table: TableRecord, file: DataFile, schema: TableSchema, layout: FileLayout, granule: Granule, leaves: readonly number[],
): Promise<VerifiedGranule> {
  const records = await granuleRecords(source, table, file, granule);
  return chunksOf(source, table, file, schema, layout, granule, records, leaves);
}

/** The leaves (footer order) of some top-level columns (indices into the schema's columns). */
export function leavesOfColumns(schema: TableSchema, columns: readonly number[]): number[] {
  const wanted = new Set(columns);
  return leafColumns(schema).flatMap((column, leaf) => (wanted.has(column) ? [leaf] : []));
}

/** The granule's records (committed, in its span, in the file's bucket), as many as the catalog says. */
export async function granuleRecords(source: CommittedSource, table: TableRecord, file: DataFile, granule: Granule, options: Pick<SourceReadOptions, 'keep'> = {}): Promise<KafkaRecord[]> {
  // Fetches sized to the span's bytes (the catalog knows them): the client decodes every record a Fetch brings.
  const records = await fileRecords(source, table, file, granule, undefined, { ...options, fetchBytes: fetchBytesForSpan(granule.kafkaBytes, granule.startOffset, granule.endOffset) });
  if (records.length !== granule.rowCount) {
    const error = new GranuleMismatchError(file.dataFileId, granule.rowGroup, null, `${records.length} records in offsets [${granule.startOffset}, ${granule.endOffset}), the catalog has ${granule.rowCount}`);
    throw await withCause(error, source, table.topic);
  }
  return records;
}

/** The granule built from its records for the columns of `leaves`, each chunk of `leaves` checked against its sha256. */
export async function chunksOf(
  source: CommittedSource, table: TableRecord, file: DataFile, schema: TableSchema, layout: FileLayout, granule: Granule, records: readonly KafkaRecord[], leaves: readonly number[],
): Promise<VerifiedGranule> {
  try {
    return checkedChunks(table, file, schema, layout, granule, records, leaves);
  } catch (error) {
    throw await withCause(error, source, table.topic);
  }
}

function checkedChunks(
  table: TableRecord, file: DataFile, schema: TableSchema, layout: FileLayout, granule: Granule, records: readonly KafkaRecord[], leaves: readonly number[],
): VerifiedGranule {
  const ofLeaf = leafColumns(schema);
  const columns = [...new Set(leaves.map((leaf) => ofLeaf[leaf]!))].sort((a, b) => a - b);
  const built = encodeColumns(table, schema, file.partition, records, file.encoderVersion, columns);
  const own = fileLayout(built.footer, built.byteLength);
  if ('problem' in own) throw new GranuleMismatchError(file.dataFileId, granule.rowGroup, null, own.problem);
  // The built file's leaves are those of `columns`, in order.
  const builtLeaf = new Map<number, number>();
  let at = 0;
  for (let leaf = 0; leaf < ofLeaf.length; leaf++) if (columns.includes(ofLeaf[leaf]!)) builtLeaf.set(leaf, at++);
  const expected = layout.rowGroups[granule.rowGroup]!;
  const chunks = new Map<number, Uint8Array>();
  for (const leaf of leaves) {
    const place = expected.chunks[leaf]!;
    const got = own.rowGroups[0]?.chunks[builtLeaf.get(leaf)!];
    if (!got) throw new GranuleMismatchError(file.dataFileId, granule.rowGroup, place.path, 'the rebuild has no such chunk');
    if (got.end - got.start !== place.end - place.start) {
      throw new GranuleMismatchError(file.dataFileId, granule.rowGroup, place.path, `${got.end - got.start} bytes, the catalog has ${place.end - place.start}`);
    }
    const sha256 = sha256OfRange(built.parts, got.start, got.end);
    const want = granule.chunkSha256.subarray(leaf * SHA256_BYTES, (leaf + 1) * SHA256_BYTES);
    if (!Buffer.from(sha256).equals(want)) throw new GranuleMismatchError(file.dataFileId, granule.rowGroup, place.path, 'sha256 differs');
    chunks.set(leaf, bytesOfRange(built.parts, got.start, got.end));
  }
  return { file: built, chunks };
}
