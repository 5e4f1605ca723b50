/**
 * A leaf's entries of one row group as a column chunk: cut into pages of whole rows
 * (about `pageBytes`, at most `pageRows`), each page written, and the chunk's counts and
 * bounds gathered from its pages. Its own module because it decides where pages start,
 * which the page index and every reader's page skipping depend on.
 */
import { writePage } from './data-page.js';
import type { Parts } from './file-parts.js';
import type { LeafPlan, Physical } from './leaf-plan.js';
import type { PageBounds } from './plain-values.js';
import type { LeafChunk } from './shred.js';
import { comparatorOf } from './stored-bounds.js';
import type { WriterSettings } from './writer-settings.js';
import { ByteSpans } from './values.js';

/** A column chunk as written: its place and sizes among the file's parts, its counts and exact bounds, its pages; where its page index went, once written. */
export interface ChunkMeta {
  leaf: LeafPlan;
  start: number;
  dataBytes: number;
  uncompressedBytes: number;
  count: number;
  nulls: number;
  nans: number;
  min: unknown;
  max: unknown;
  pages: { offset: number; size: number; firstRow: number; bounds: PageBounds }[];
  columnIndex?: { offset: number; length: number };
  offsetIndex?: { offset: number; length: number };
}

function fixedWidth(physical: Physical, typeLength: number): number {
  switch (physical) {
    case 'INT32':
    case 'FLOAT':
      return 4;
    case 'INT64':
    case 'DOUBLE':
      return 8;
    case 'FIXED_LEN_BYTE_ARRAY':
      return typeLength;
    default:
      return 0;
  }
}

export function writeChunk(parts: Parts, leaf: LeafPlan, chunk: LeafChunk, settings: WriterSettings): ChunkMeta {
  const meta: ChunkMeta = {
    leaf, start: parts.offset, dataBytes: 0, uncompressedBytes: 0, count: chunk.count,
    nulls: 0, nans: 0, min: undefined, max: undefined, pages: [],
  };
  const { values, offset, def, rep, count } = chunk;
  const { maxDef } = leaf;
  const width = fixedWidth(leaf.physical, leaf.typeLength);
  const spanLengths = values instanceof ByteSpans ? values.lengths : null;
  const compare = comparatorOf(leaf.physical);
  let rowsBefore = 0;
  let i = 0;
  do {
    const first = i;
    let valueBytes = 0;
    let present = 0;
    let rows = 0;
    for (; i < count; i++) {
      if (rep === null || rep[i] === 0) {
        if (i > first && (valueBytes >= settings.pageBytes || rows === settings.pageRows)) break;
        rows++;
      }
      if (def !== null && def[i] !== maxDef) continue;
      present++;
      if (width) valueBytes += width;
      else if (spanLengths) valueBytes += 4 + spanLengths[offset + i]!;
      else if (leaf.physical === 'BYTE_ARRAY') valueBytes += 4 + ((values as ArrayLike<unknown>)[offset + i] as Uint8Array).length;
    }
    if (leaf.physical === 'BOOLEAN') valueBytes = Math.ceil(present / 8);
    const page = writePage(parts, leaf, chunk, first, i, valueBytes, settings);
    const { bounds } = page;
    meta.dataBytes += page.size;
    meta.uncompressedBytes += page.uncompressedSize;
    meta.pages.push({ offset: page.offset, size: page.size, firstRow: rowsBefore, bounds });
    if (rep === null) rowsBefore += i - first;
    else for (let k = first; k < i; k++) if (rep[k] === 0) rowsBefore++;
    meta.nulls += bounds.nulls;
    meta.nans += bounds.nans;
    if (bounds.bounded) {
      if (meta.min === undefined || compare(bounds.min, meta.min) < 0) meta.min = bounds.min;
      if (meta.max === undefined || compare(bounds.max, meta.max) > 0) meta.max = bounds.max;
    }
  } while (i < count);
  return meta;
}
