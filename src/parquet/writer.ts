/**
 * Our own Parquet writer (encoders v2 and v3; v3 is v2 with cut bounds that are copies,
 * see `WriterSettings.boundsRaisedInPlace`). v1's hyparquet-writer spent over half of its
 * encode time outside compression: per-page statistics on every value, a dictionary
 * attempt per column, and copies through a doubling buffer (profile in docs/measurements.md,
 * "Encoder v2: the figures"). Our files need much less than a general writer offers, so this one
 * does only that, in one pass per column chunk into one reused page buffer:
 *
 * - data pages v1 (the kind every reader takes), PLAIN values, levels as RLE runs
 *   (runs only: levels are few, and the page is compressed after), no dictionary;
 * - pages of about `pageBytes` uncompressed and at most `pageRows` rows, cut only where
 *   a row starts, so each page holds whole rows and the offset index can name its first;
 * - footer statistics min_value/max_value in the column's order (TypeDefinedOrder, with
 *   `column_orders`), null and NaN counts; byte-array bounds longer than
 *   `statisticsBytes` are cut (min to a prefix, max to a prefix raised by one), marked
 *   inexact; UTF-8 columns are cut on a character, so a reader decoding a bound as text
 *   never meets a broken character. The catalog's statistics stay exact (statistics.ts);
 * - the page index (ColumnIndex + OffsetIndex) on every column chunk, laid out after the
 *   row groups; float and double chunks get no ColumnIndex: how a page of only NaN is
 *   bounded there is not settled between readers; nor does a decimal stored as plain
 *   fixed bytes (`wideDecimalAsFixed`), which gets no footer min/max either;
 * - Parquet field_id from `fieldIds` on each schema node named there: top-level columns
 *   and leaves only, unless `groupFieldIds` (v5 on) lets the nested groups have theirs.
 *
 * One module per Parquet concept, as hyparquet-writer keeps them: leaf-plan.ts (the schema
 * as stored, a plan per leaf), shred.ts (levels and entries), column-chunk.ts (a chunk cut
 * into pages), data-page.ts (one page), plain-values.ts (its values and their bounds),
 * stored-bounds.ts (bounds as the file stores them), page-index.ts, file-metadata.ts (the
 * footer's FileMetaData), file-parts.ts; this one puts them together, row group by row group.
 *
 * Everything here is plain JavaScript over typed arrays and depends on nothing but the
 * input, so the same input gives the same bytes; the compressor is a parameter, pinned
 * by the encoder version that chooses it (encoder.ts).
 */
import { type ChunkMeta, writeChunk } from './column-chunk.js';
import { writeFileMetaData } from './file-metadata.js';
import { Parts } from './file-parts.js';
import { PARQUET_MAGIC } from './footer.js';
import { leafPlans, storedSchema } from './leaf-plan.js';
import { writePageIndex } from './page-index.js';
import { leafChunks } from './shred.js';
import { Bounds } from './stored-bounds.js';
import { CompactWriter } from './thrift.js';
import type { PreparedData } from './values.js';
import type { WriteOptions, WriterSettings } from './writer-settings.js';

/**
 * The file as its parts in order (the last two are the metadata and its length + magic,
 * i.e. the footer): indexing only hashes them and keeps the footer, so the whole file is
 * joined into one buffer only when its bytes are served (`joinParts`).
 */
export function writeParquet(data: PreparedData, options: WriteOptions, settings: WriterSettings): readonly Uint8Array[] {
  return assembleParquet(data, encodeRowGroups(data, options.rowGroupRows, settings), options, settings);
}

/** Every row group of the file, `rowGroupRows` rows each (the last one the rest), in order. */
export function encodeRowGroups(data: PreparedData, rowGroupRows: number, settings: WriterSettings): EncodedRowGroup[] {
  const groups: EncodedRowGroup[] = [];
  for (let start = 0; start < data.rowCount; start += rowGroupRows) {
    groups.push(encodeRowGroup(data, start, Math.min(start + rowGroupRows, data.rowCount), settings));
  }
  return groups;
}

/**
 * One row group's column chunks, encoded on their own (a row group depends on nothing
 * before it), so row groups can be encoded anywhere, e.g. on worker threads, and
 * assembled in order: byte offsets in `chunks` count from the group's first byte.
 */
export interface EncodedRowGroup {
  rows: number;
  parts: Uint8Array[];
  chunks: ChunkMeta[];
}

export function encodeRowGroup(data: PreparedData, start: number, end: number, settings: WriterSettings): EncodedRowGroup {
  const plans = leafPlans(data.columns, storedSchema(data.columns, settings), settings);
  const parts = new Parts();
  const chunks: ChunkMeta[] = [];
  data.columns.forEach((column, c) => {
    const own = plans.filter((p) => p.column === c);
    const entries = leafChunks(column, data.arrays[c]!, start, end);
    own.forEach((plan, k) => chunks.push(writeChunk(parts, plan, entries[k]!, settings)));
  });
  return { rows: end - start, parts: parts.list, chunks };
}

/** The file from its row groups in order: their bytes, the page index, the footer. */
export function assembleParquet(data: Pick<PreparedData, 'columns' | 'rowCount'>, encoded: readonly EncodedRowGroup[], options: WriteOptions, settings: WriterSettings): readonly Uint8Array[] {
  const schema = storedSchema(data.columns, settings);
  const plans = leafPlans(data.columns, schema, settings);
  const parts = new Parts();
  parts.push(PARQUET_MAGIC);
  const groups = encoded.map((group) => {
    const base = parts.offset;
    for (const part of group.parts) parts.push(part);
    const chunks = group.chunks.map((chunk) => ({ ...chunk, start: chunk.start + base, pages: chunk.pages.map((page) => ({ ...page, offset: page.offset + base })) }));
    return { rows: group.rows, chunks };
  });
  // one for the page index and the footer: encoder 2's footer read what its page index raised
  const bounds = new Bounds(settings);
  writePageIndex(parts, groups, bounds);
  const meta = new CompactWriter();
  writeFileMetaData(meta, schema, plans, groups, data.rowCount, options, settings, bounds);
  const metadata = meta.take();
  parts.push(metadata);
  const tail = new Uint8Array(8);
  new DataView(tail.buffer).setUint32(0, metadata.length, true);
  tail.set(PARQUET_MAGIC, 4);
  parts.push(tail);
  return parts.list;
}
