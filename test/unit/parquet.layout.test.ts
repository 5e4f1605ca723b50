import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bytesOfRange, piecesOf, rowGroupSpans, sha256OfRange, type FileLayout, type Piece } from '../../src/parquet/layout.js';
import { seededRandom } from '../helpers/random.js';

describe('rowGroupSpans', () => {
  it('the first span starts at the range start, each next one at its first row offset, the last ends at the range end', () => {
    // rows at offsets 5 7 | 9 12 | 15 (gaps: aborted records, other buckets, markers)
    expect(rowGroupSpans([2, 2, 1], (row) => [5n, 7n, 9n, 12n, 15n][row]!, 3n, 20n)).toEqual([
      { start: 3n, end: 9n },
      { start: 9n, end: 15n },
      { start: 15n, end: 20n },
    ]);
  });

  it('one row group spans the whole range', () => {
    expect(rowGroupSpans([3], (row) => [10n, 11n, 19n][row]!, 10n, 25n)).toEqual([{ start: 10n, end: 25n }]);
  });
});

/** A small file: magic, 2 row groups of 3 and 2 chunks, an index region, a footer. */
const layout: FileLayout = {
  fileSize: 60,
  rowGroups: [
    { rows: 10, chunks: [{ path: 'a', start: 4, end: 10 }, { path: 'b', start: 10, end: 11 }, { path: 'c', start: 11, end: 20 }], offsets: null },
    { rows: 4, chunks: [{ path: 'a', start: 20, end: 27 }, { path: 'b', start: 27, end: 33 }], offsets: null },
  ],
  dataEnd: 33,
  footerStart: 41,
};

/** What byte `at` of the file is, written from the layout's description, one byte at a time. */
function pieceAt(at: number): string {
  if (at < 4) return 'magic';
  for (const [g, group] of layout.rowGroups.entries()) {
    for (const [leaf, chunk] of group.chunks.entries()) if (at >= chunk.start && at < chunk.end) return `chunk ${g}/${leaf}`;
  }
  return at < layout.footerStart ? 'index' : 'footer';
}

function name(piece: Piece): string {
  return piece.kind === 'chunk' ? `chunk ${piece.rowGroup}/${piece.leaf}` : piece.kind;
}

function pieceStart(piece: Piece): number {
  if (piece.kind === 'magic') return 0;
  if (piece.kind === 'index') return layout.dataEnd;
  if (piece.kind === 'footer') return layout.footerStart;
  return layout.rowGroups[piece.rowGroup]!.chunks[piece.leaf]!.start;
}

describe('piecesOf', () => {
  it('for every range of a small file, the pieces name each byte of it once, in order, as the layout places it', () => {
    for (let start = 0; start < layout.fileSize; start++) {
      for (let end = start + 1; end <= layout.fileSize; end++) {
        const named: string[] = [];
        const positions: number[] = [];
        for (const piece of piecesOf(layout, start, end)) {
          expect(piece.to).toBeGreaterThan(piece.from);
          for (let at = piece.from; at < piece.to; at++) {
            named.push(name(piece));
            positions.push(pieceStart(piece) + at);
          }
        }
        const expectedPositions = Array.from({ length: end - start }, (_, i) => start + i);
        expect(positions).toEqual(expectedPositions);
        expect(named).toEqual(expectedPositions.map(pieceAt));
      }
    }
  });

  it('an empty index region gives no index piece', () => {
    const tight = { ...layout, footerStart: layout.dataEnd, fileSize: layout.dataEnd + 19 };
    expect(piecesOf(tight, 30, tight.fileSize).map((piece) => piece.kind)).toEqual(['chunk', 'footer']);
  });
});

describe('ranges of a file given as parts', () => {
  it('bytesOfRange and sha256OfRange agree with the joined file for random splits and ranges', () => {
    const rnd = seededRandom(7);
    for (let trial = 0; trial < 200; trial++) {
      const parts = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => Uint8Array.from({ length: Math.floor(rnd() * 9) }, () => Math.floor(rnd() * 256)));
      const joined = Buffer.concat(parts);
      const start = Math.floor(rnd() * (joined.length + 1));
      const end = start + Math.floor(rnd() * (joined.length - start + 1));
      expect(Buffer.from(bytesOfRange(parts, start, end)).equals(joined.subarray(start, end))).toBe(true);
      expect(Buffer.from(sha256OfRange(parts, start, end)).equals(createHash('sha256').update(joined.subarray(start, end)).digest())).toBe(true);
    }
  });
});
