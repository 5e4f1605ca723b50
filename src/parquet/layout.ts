/**
 * Where a data file's bytes are, read from the footer the catalog keeps: "PAR1", then
 * each row group's column chunks, then whatever lies between the last chunk and the
 * footer (the page index, if the file has one), then the footer. A file whose chunks
 * tile the bytes from 4 on, in row-group and column order, can be served granule by
 * granule: every byte is either a chunk (rebuilt from its row group's offsets and
 * checked against its checksum) or kept in the catalog (the index region and the
 * footer). Pure: no I/O, no state.
 */
import { createHash } from 'node:crypto';
import { parquetMetadata } from 'hyparquet';

export interface ChunkPlace {
  /** The leaf's path as the footer names it, joined with '.'. */
  path: string;
  start: number;
  end: number;
}

export interface RowGroupPlace {
  rows: number;
  /** One per leaf column, in the footer's (schema) order. */
  chunks: ChunkPlace[];
  /**
   * The row group's first and last Kafka offset, from its `_offset` chunk's exact
   * statistics; null without them. Its records lie between the two, so a read of the
   * row group can stop there: a file of a few records whose range spans thousands (a
   * time bucket's stragglers at an hour's edge) is read from a few offsets, not the span.
   */
  offsets: { first: bigint; last: bigint } | null;
}

export interface FileLayout {
  fileSize: number;
  rowGroups: RowGroupPlace[];
  /** The first byte after the last column chunk (4 for a file without rows). */
  dataEnd: number;
  footerStart: number;
}

export const SHA256_BYTES = 32;

/**
 * The layout of a file from its footer, or why the file cannot be served granule by
 * granule (its chunks leave gaps or overlap): such a file is rebuilt whole.
 */
export function fileLayout(footer: Uint8Array, fileSize: number): FileLayout | { problem: string } {
  const metadata = parquetMetadata(footer);
  const footerStart = fileSize - footer.byteLength;
  let at = 4;
  const rowGroups: RowGroupPlace[] = [];
  for (const [g, group] of metadata.row_groups.entries()) {
    const chunks: ChunkPlace[] = [];
    let offsets: RowGroupPlace['offsets'] = null;
    for (const column of group.columns) {
      const meta = column.meta_data;
      if (!meta) return { problem: `row group ${g} has a column chunk without metadata` };
      const path = meta.path_in_schema.join('.');
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const end = start + Number(meta.total_compressed_size);
      if (start !== at) return { problem: `column chunk ${path} of row group ${g} starts at byte ${start}, not ${at} where the one before it ends` };
      chunks.push({ path, start, end });
      at = end;
      if (path === '_offset') offsets = exactBounds(meta.statistics);
    }
    rowGroups.push({ rows: Number(group.num_rows), chunks, offsets });
  }
  if (at > footerStart) return { problem: `column chunks run to byte ${at}, past the footer's start at ${footerStart}` };
  return { fileSize, rowGroups, dataEnd: at, footerStart };
}

/** An INT64 chunk's min and max when the footer holds both and does not call them inexact. */
function exactBounds(statistics: { min_value?: unknown; max_value?: unknown; is_min_value_exact?: boolean; is_max_value_exact?: boolean } | undefined): RowGroupPlace['offsets'] {
  if (!statistics || statistics.is_min_value_exact === false || statistics.is_max_value_exact === false) return null;
  const { min_value: first, max_value: last } = statistics;
  return typeof first === 'bigint' && typeof last === 'bigint' && first <= last ? { first, last } : null;
}

/** A byte range of the file as the parts that make it up, in order. */
export type Piece =
  | { kind: 'magic'; from: number; to: number }
  | { kind: 'chunk'; rowGroup: number; leaf: number; from: number; to: number }
  | { kind: 'index'; from: number; to: number }
  | { kind: 'footer'; from: number; to: number };

/**
 * The pieces that make up [start, end) of the file. `from`/`to` count from the start
 * of the piece's own bytes (the magic, a chunk, the index region, the footer).
 */
export function piecesOf(layout: FileLayout, start: number, end: number): Piece[] {
  const pieces: Piece[] = [];
  const take = (pieceStart: number, pieceEnd: number, make: (from: number, to: number) => Piece): void => {
    const from = Math.max(start, pieceStart);
    const to = Math.min(end, pieceEnd);
    if (from < to) pieces.push(make(from - pieceStart, to - pieceStart));
  };
  take(0, 4, (from, to) => ({ kind: 'magic', from, to }));
  layout.rowGroups.forEach((group, rowGroup) => {
    const first = group.chunks[0];
    const last = group.chunks.at(-1);
    if (!first || !last || last.end <= start || first.start >= end) return;
    group.chunks.forEach((chunk, leaf) => take(chunk.start, chunk.end, (from, to) => ({ kind: 'chunk', rowGroup, leaf, from, to })));
  });
  take(layout.dataEnd, layout.footerStart, (from, to) => ({ kind: 'index', from, to }));
  take(layout.footerStart, layout.fileSize, (from, to) => ({ kind: 'footer', from, to }));
  return pieces;
}

/** sha256 of bytes [start, end) of a file given as its parts in order (never joined). */
export function sha256OfRange(parts: readonly Uint8Array[], start: number, end: number): Uint8Array {
  const hash = createHash('sha256');
  let at = 0;
  for (const part of parts) {
    const partEnd = at + part.byteLength;
    if (partEnd > start && at < end) hash.update(part.subarray(Math.max(0, start - at), Math.min(part.byteLength, end - at)));
    at = partEnd;
    if (at >= end) break;
  }
  return new Uint8Array(hash.digest());
}

/** Bytes [start, end) of a file given as its parts, copied out. */
export function bytesOfRange(parts: readonly Uint8Array[], start: number, end: number): Uint8Array {
  const out = new Uint8Array(end - start);
  let at = 0;
  for (const part of parts) {
    const partEnd = at + part.byteLength;
    if (partEnd > start && at < end) out.set(part.subarray(Math.max(0, start - at), Math.min(part.byteLength, end - at)), Math.max(0, at - start));
    at = partEnd;
    if (at >= end) break;
  }
  return out;
}

/** The sha256 of each column chunk of one row group, concatenated in leaf order. */
export function chunkChecksums(group: RowGroupPlace, parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(group.chunks.length * SHA256_BYTES);
  group.chunks.forEach((chunk, leaf) => out.set(sha256OfRange(parts, chunk.start, chunk.end), leaf * SHA256_BYTES));
  return out;
}

/**
 * Kafka offset spans of a file's row groups: rows are in offset order, so row group g
 * holds the records from its first row's offset up to the next group's first offset;
 * the first span starts at the range's start and the last ends at its end, so the spans
 * tile the file's offsets (records of other buckets and offsets without a committed
 * record fall in the span they are in).
 */
export function rowGroupSpans(rowsPerGroup: readonly number[], offsetOfRow: (row: number) => bigint, rangeStart: bigint, rangeEnd: bigint): { start: bigint; end: bigint }[] {
  const spans: { start: bigint; end: bigint }[] = [];
  let row = 0;
  rowsPerGroup.forEach((rows, g) => {
    const start = g === 0 ? rangeStart : offsetOfRow(row);
    row += rows;
    const end = g === rowsPerGroup.length - 1 ? rangeEnd : offsetOfRow(row);
    spans.push({ start, end });
  });
  return spans;
}
