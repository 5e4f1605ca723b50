import { describe, expect, it } from 'vitest';
import type { CatalogFile } from '../../src/catalog/file-reads.js';
import type { FileGranules } from '../../src/catalog/file-writes.js';
import { storedPieceDifferences, storedTailMismatch } from '../../src/files/stored-pieces.js';

// FIPS 180-2, appendix B.1: SHA-256("abc")
const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';

/** A file of 10 bytes: chunks to byte 7, page index "ab", footer "c". */
function stored(pageIndex: string, tailSha256: string): { file: CatalogFile; granules: FileGranules } {
  const file = { dataFileId: 12n, fileSizeBytes: 10n, footer: Buffer.from('c') } as CatalogFile;
  return { file, granules: { pageIndex: Buffer.from(pageIndex), tailSha256: Buffer.from(tailSha256, 'hex'), granules: [] } };
}

describe('the stored page index and footer, checked before a read sends them (issue 46)', () => {
  it('pass when the page index and footer together have the recorded sha256 and fill the file after its last chunk', () => {
    const { file, granules } = stored('ab', abc);
    expect(storedTailMismatch(file, granules, 7)).toBeNull();
  });

  it('are refused, naming the file, the bytes and both hashes, when one byte of the page index differs', () => {
    const { file, granules } = stored('aB', abc);
    const error = storedTailMismatch(file, granules, 7);
    expect(error?.message).toMatch(new RegExp(`^file 12: its page index and footer in the catalog \\(bytes 7 to 10\\) hash to sha256 (?!${abc})[0-9a-f]{64}, not ${abc} as the file built from Kafka did; the bytes were not served`));
  });

  it('are refused when they do not fill the file after its last chunk, even with the recorded hash', () => {
    const { file, granules } = stored('ab', abc);
    expect(storedTailMismatch(file, granules, 6)?.message).toContain('file 12: its page index (2 bytes) and footer (1 bytes) in the catalog do not fill bytes 6 to 10, after its last column chunk');
  });
});

describe('check: stored pieces against the rebuilt file', () => {
  const granule = (chunks: number[], kafkaBytes = 10) => ({ rowGroup: 0, startOffset: 0n, endOffset: 5n, rowCount: 5, kafkaBytes, chunkSha256: Buffer.concat(chunks.map((b) => Buffer.alloc(32, b))) });
  const rebuilt: FileGranules = { pageIndex: Buffer.from('ab'), tailSha256: Buffer.from(abc, 'hex'), granules: [granule([1, 2])] };

  it('agree when every piece is the rebuild\'s; Kafka bytes (never sent) are not compared', () => {
    expect(storedPieceDifferences({ ...rebuilt, granules: [granule([1, 2], 99)] }, rebuilt, ['_offset', '_value'], 4)).toEqual([]);
  });

  it('name the page index, its sha256, a granule\'s offsets and a chunk\'s sha256 by column', () => {
    const forged: FileGranules = { pageIndex: Buffer.from('aB'), tailSha256: Buffer.alloc(32, 7), granules: [{ ...granule([1, 3]), endOffset: 6n }] };
    expect(storedPieceDifferences(forged, rebuilt, ['_offset', '_value'], 4)).toEqual([
      "page index: the catalog's 2 bytes are not the rebuilt file's 2 (bytes 4 to 6)",
      `page index and footer sha256: ${'07'.repeat(32)} in the catalog, ${abc} rebuilt`,
      'granule 0: offsets [0, 6) in the catalog, [0, 5) rebuilt',
      `granule 0, column _value: chunk sha256 ${'03'.repeat(32)} in the catalog, ${'02'.repeat(32)} rebuilt`,
    ]);
  });
});
