/**
 * The page index (parquet-format's PageIndex.md): a ColumnIndex (each page's bounds and
 * null count) and an OffsetIndex (each page's place and first row) per column chunk,
 * laid out after the row groups. Its own module because it is what engines read to skip
 * pages, and the only part of the file written from every chunk's pages at once.
 */
import type { ChunkMeta } from './column-chunk.js';
import type { Parts } from './file-parts.js';
import type { LeafPlan } from './leaf-plan.js';
import { compareBytes } from './stat-text.js';
import { type Bounds, comparatorOf } from './stored-bounds.js';
import { CompactType, CompactWriter } from './thrift.js';

/**
 * Every chunk's ColumnIndex, then every chunk's OffsetIndex, appended to `parts`, their
 * places set on the chunks (which the footer names). Float and double chunks get no
 * ColumnIndex (how a page of only NaN is bounded there is not settled between readers),
 * nor does a leaf the file does not bound (`fileBounds`).
 */
export function writePageIndex(parts: Parts, groups: readonly { chunks: ChunkMeta[] }[], bounds: Bounds): void {
  const index = new CompactWriter();
  for (const group of groups) {
    for (const chunk of group.chunks) {
      if (chunk.leaf.physical === 'FLOAT' || chunk.leaf.physical === 'DOUBLE' || !chunk.leaf.fileBounds) continue;
      writeColumnIndex(index, chunk, bounds);
      const bytes = index.take();
      chunk.columnIndex = { offset: parts.offset, length: bytes.length };
      parts.push(bytes);
    }
  }
  for (const group of groups) {
    for (const chunk of group.chunks) {
      writeOffsetIndex(index, chunk);
      const bytes = index.take();
      chunk.offsetIndex = { offset: parts.offset, length: bytes.length };
      parts.push(bytes);
    }
  }
}

function writeColumnIndex(w: CompactWriter, chunk: ChunkMeta, cut: Bounds): void {
  const { leaf, pages } = chunk;
  const bounds = pages.map((p) =>
    p.bounds.bounded
      ? { min: cut.value(leaf, p.bounds.min, false).bytes, max: cut.value(leaf, p.bounds.max, true).bytes, lo: p.bounds.min, hi: p.bounds.max }
      : null,
  );
  w.message(() => {
    w.list(1, CompactType.True, bounds, (b) => w.boolValue(b === null));
    w.list(2, CompactType.Binary, bounds, (b) => w.binaryValue(b ? b.min : new Uint8Array(0)));
    w.list(3, CompactType.Binary, bounds, (b) => w.binaryValue(b ? b.max : new Uint8Array(0)));
    w.i32(4, boundaryOrder(leaf, bounds.filter((b) => b !== null)));
    w.list(5, CompactType.I64, pages, (p) => w.i64Value(p.bounds.nulls));
  });
}

/** ASCENDING (1) or DESCENDING (2) when the pages' bounds are, else UNORDERED (0). */
function boundaryOrder(leaf: LeafPlan, bounds: { min: Uint8Array; max: Uint8Array; lo: unknown; hi: unknown }[]): number {
  // byte arrays are compared as written (possibly cut), other types by value
  const compare = leaf.physical === 'BYTE_ARRAY' ? (a: unknown, b: unknown) => compareBytes(a as Uint8Array, b as Uint8Array) : comparatorOf(leaf.physical);
  const lo = (b: (typeof bounds)[number]) => (leaf.physical === 'BYTE_ARRAY' ? b.min : b.lo);
  const hi = (b: (typeof bounds)[number]) => (leaf.physical === 'BYTE_ARRAY' ? b.max : b.hi);
  let ascending = true;
  let descending = true;
  for (let k = 1; k < bounds.length; k++) {
    const a = bounds[k - 1]!;
    const b = bounds[k]!;
    if (compare(lo(a), lo(b)) > 0 || compare(hi(a), hi(b)) > 0) ascending = false;
    if (compare(lo(a), lo(b)) < 0 || compare(hi(a), hi(b)) < 0) descending = false;
  }
  return ascending ? 1 : descending ? 2 : 0;
}

function writeOffsetIndex(w: CompactWriter, chunk: ChunkMeta): void {
  w.message(() => {
    w.list(1, CompactType.Struct, chunk.pages, (p) =>
      w.structValue(() => {
        w.i64(1, p.offset);
        w.i32(2, p.size);
        w.i64(3, p.firstRow);
      }),
    );
  });
}
