/**
 * A granule's column chunks rebuilt and checked: the chosen top-level columns of its
 * records encoded as a file of one row group (`encodeColumns`: a chunk depends only on its
 * leaf's values in its row group, so these are the data file's own chunks), each wanted
 * chunk compared by size and sha256 with what the catalog took at indexing. Pure, so that
 * it runs the same on the reader's thread and on a build worker (src/files/pool.ts).
 */
import type { TableRecord } from '../table/record.js';
import type { FileRecords } from '../kafka/record.js';
import { bytesOfRange, fileLayout, leafCount, sha256OfRange } from '../parquet/index.js';
import type { TableSchema } from '../schema/table-schema.js';
import { encodeColumns } from './files.js';

/** A chunk the catalog knows: its leaf (footer order), path, size in the data file and sha256. */
export interface ExpectedChunk {
  leaf: number;
  path: string;
  size: number;
  sha256: Uint8Array;
}

export interface ChunkJob {
  table: TableRecord;
  schema: TableSchema;
  partition: number;
  encoderVersion: string;
  /** The granule's records: committed, in its span, in the file's bucket (as columns on a build worker). */
  records: FileRecords;
  expected: readonly ExpectedChunk[];
  /** Also hand back the built one-row-group file (a query reads it as a file of its own). */
  wantFile: boolean;
  /**
   * The file has no error rows (its statistics say so): a json table's values need no JSON
   * check, a registry table's records decode only the chosen columns' fields (the chunks'
   * sha256 is checked either way).
   */
  noErrorRows?: boolean;
}

export type ChunkResult =
  | { chunks: Map<number, Uint8Array>; fileBytes?: Uint8Array }
  /** What does not match, by column path (null: the whole granule). */
  | { mismatch: { column: string | null; detail: string } };

/** The top-level column (index into the schema's columns) of each leaf, in leaf order. */
export function leafColumns(schema: TableSchema): number[] {
  return schema.columns.flatMap((column, c) => new Array<number>(leafCount(column)).fill(c));
}

export function checkedChunks(job: ChunkJob): ChunkResult {
  const ofLeaf = leafColumns(job.schema);
  const columns = [...new Set(job.expected.map((chunk) => ofLeaf[chunk.leaf]!))].sort((a, b) => a - b);
  const built = encodeColumns(job.table, job.schema, job.partition, job.records, job.encoderVersion, columns, { noErrorRows: job.noErrorRows ?? false });
  const own = fileLayout(built.footer, built.byteLength);
  if ('problem' in own) return { mismatch: { column: null, detail: own.problem } };
  // The built file's leaves are those of `columns`, in order.
  const builtLeaf = new Map<number, number>();
  let at = 0;
  for (let leaf = 0; leaf < ofLeaf.length; leaf++) if (columns.includes(ofLeaf[leaf]!)) builtLeaf.set(leaf, at++);
  const chunks = new Map<number, Uint8Array>();
  for (const want of job.expected) {
    const got = own.rowGroups[0]?.chunks[builtLeaf.get(want.leaf)!];
    if (!got) return { mismatch: { column: want.path, detail: 'the rebuild has no such chunk' } };
    if (got.end - got.start !== want.size) return { mismatch: { column: want.path, detail: `${got.end - got.start} bytes, the catalog has ${want.size}` } };
    if (!Buffer.from(sha256OfRange(built.parts, got.start, got.end)).equals(want.sha256)) return { mismatch: { column: want.path, detail: 'sha256 differs' } };
    chunks.set(want.leaf, bytesOfRange(built.parts, got.start, got.end));
  }
  return job.wantFile ? { chunks, fileBytes: built.bytes } : { chunks };
}
