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
import type { CommittedSource } from '../kafka/source.js';
import type { KafkaRecord } from '../kafka/record.js';
import { fetchBytesForSpan } from '../kafka/fetch-size.js';
import { bytesOfRange, fileLayout, leafCount, sha256OfRange, SHA256_BYTES, type FileLayout } from '../parquet/index.js';
import type { TableSchema } from '../schema/table-schema.js';
import { fileRecords } from './rebuild.js';

export class GranuleMismatchError extends Error {
  override name = 'GranuleMismatchError';
  constructor(readonly dataFileId: bigint, readonly rowGroup: number, readonly column: string | null, readonly detail: string) {
    super(`file ${dataFileId}, row group ${rowGroup}${column === null ? '' : `, column ${column}`}: rebuilt from Kafka, it does not match the catalog (${detail}); the bytes were not served`);
  }
}

/** The top-level column (index into the schema's columns) of each leaf, in leaf order. */
export function leafColumns(schema: TableSchema): number[] {
  return schema.columns.flatMap((column, c) => new Array<number>(leafCount(column)).fill(c));
}

/**
 * The chunks of `leaves` (leaf indices in the file's footer order) of one granule, each
 * verified. Reads the granule's offset span once (not at all when given its records,
 * `read`, as granuleRecords returned them); encodes each top-level column that holds a
 * wanted leaf once.
 */
export async function rebuildChunks(
  source: CommittedSource, table: TableRecord, file: DataFile, schema: TableSchema, layout: FileLayout, granule: Granule, leaves: readonly number[],
  read?: readonly KafkaRecord[],
): Promise<Map<number, Uint8Array>> {
  const records = read ?? (await granuleRecords(source, table, file, granule));
  return chunksOf(records, table, file, schema, layout, granule, leaves);
}

/**
 * The records of one granule, as its chunks are built from: committed, in its span, in
 * the file's bucket. Fetches ask for about the span's bytes (the catalog knows them), not
 * read.ts's 4 MiB: the client decodes every record a Fetch brings, and with small row
 * groups most of 4 MiB would be the next row groups' records, decoded and dropped.
 */
export function granuleRecords(source: CommittedSource, table: TableRecord, file: DataFile, granule: Granule): Promise<KafkaRecord[]> {
  return fileRecords(source, table, file, granule, undefined, { fetchBytes: fetchBytesForSpan(granule.kafkaBytes, granule.startOffset, granule.endOffset) });
}

/** The chunks of `leaves` of one granule built from its records (granuleRecords), each verified. */
function chunksOf(
  records: readonly KafkaRecord[], table: TableRecord, file: DataFile, schema: TableSchema, layout: FileLayout, granule: Granule, leaves: readonly number[],
): Map<number, Uint8Array> {
  if (records.length !== granule.rowCount) {
    throw new GranuleMismatchError(file.dataFileId, granule.rowGroup, null, `${records.length} records in offsets [${granule.startOffset}, ${granule.endOffset}), the catalog has ${granule.rowCount}`);
  }
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
  return chunks;
}
