/**
 * Data pages v1: levels as RLE runs, then the PLAIN values, compressed as a whole, after
 * a Thrift page header. Its own module because it owns the one page buffer reused across
 * pages and files, and a page is where the codec is applied.
 */
import type { LeafPlan } from './leaf-plan.js';
import type { Parts } from './file-parts.js';
import { type PageBounds, writeValues } from './plain-values.js';
import type { LeafChunk } from './shred.js';
import { CompactWriter } from './thrift.js';
import type { WriterSettings } from './writer-settings.js';

/** Encodings and page type, numbered as parquet.thrift's `Encoding` and `PageType`. */
export const PLAIN = 0;
export const RLE = 3;
const DATA_PAGE = 0;

/** A page buffer reused across pages and files: only compressed pages are kept. */
let scratch = new Uint8Array(1 << 20);
let scratchView = new DataView(scratch.buffer);
function reserve(bytes: number): void {
  if (bytes <= scratch.length) return;
  scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
  scratchView = new DataView(scratch.buffer);
}

/** A page as written: where it starts among the file's parts, its bytes (header + body), and its header + values uncompressed. */
export interface WrittenPage {
  offset: number;
  size: number;
  uncompressedSize: number;
  bounds: PageBounds;
}

/** Writes levels and values of entries [from, to) into the scratch buffer, then the page. */
export function writePage(parts: Parts, leaf: LeafPlan, chunk: LeafChunk, from: number, to: number, valueBytes: number, settings: WriterSettings): WrittenPage {
  const { values, offset, def, rep } = chunk;
  const levelBound = (to - from) * 6 + 8;
  reserve(valueBytes + (rep ? levelBound : 0) + (def ? levelBound : 0));
  let at = 0;
  if (rep && leaf.maxRep > 0) at = writeLevels(rep, from, to, leaf.maxRep, at);
  if (def && leaf.maxDef > 0) at = writeLevels(def, from, to, leaf.maxDef, at);
  const bounds = writeValues(scratch, scratchView, leaf, values, offset, def, from, to, at);
  const size = at + valueBytes;
  const page = scratch.subarray(0, size);
  const body = settings.codec === 'UNCOMPRESSED' ? page.slice() : settings.compress(page);
  const header = new CompactWriter();
  header.message(() => {
    header.i32(1, DATA_PAGE);
    header.i32(2, size);
    header.i32(3, body.length);
    header.struct(5, () => {
      header.i32(1, to - from);
      header.i32(2, PLAIN);
      header.i32(3, RLE);
      header.i32(4, RLE);
    });
  });
  const head = header.take();
  const pageOffset = parts.offset;
  parts.push(head);
  parts.push(body);
  return { offset: pageOffset, size: head.length + body.length, uncompressedSize: head.length + size, bounds };
}

/** RLE runs (no bit-packed groups) of levels [from, to), after a 4-byte length. */
function writeLevels(levels: Uint8Array, from: number, to: number, max: number, at: number): number {
  const start = at;
  at += 4;
  const byteWidth = Math.ceil(Math.max(1, 32 - Math.clz32(max)) / 8);
  let i = from;
  while (i < to) {
    const level = levels[i]!;
    let run = 1;
    while (i + run < to && levels[i + run] === level) run++;
    let header = run * 2;
    while (header >= 0x80) {
      scratch[at++] = (header & 0x7f) | 0x80;
      header >>>= 7;
    }
    scratch[at++] = header;
    scratch[at++] = level;
    for (let b = 1; b < byteWidth; b++) scratch[at++] = 0;
    i += run;
  }
  scratchView.setUint32(start, at - start - 4, true);
  return at;
}
