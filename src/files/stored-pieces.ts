/**
 * The pieces of a file the catalog keeps and a read sends as they are: the page index
 * (`data_file.page_index`, the bytes between the last column chunk and the footer) and the
 * footer (`data_file.footer`). Everything else a read sends is rebuilt from Kafka and
 * checked (chunks against their granule's sha256, whole files against the file's) or is
 * the 4-byte magic. Before a byte of the two stored pieces leaves, their sha256 together
 * is compared with the one taken from the file as it was built from Kafka
 * (`data_file.tail_sha256`, migration 15); `check` compares them, and the granules, with
 * a whole rebuild byte for byte. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { FileGranules } from '../catalog/file-writes.js';
import { SHA256_BYTES } from '../parquet/index.js';

/** A piece the catalog keeps does not match what the file was built with: never served. */
export class StoredPieceMismatchError extends Error {
  override name = 'StoredPieceMismatchError';
  constructor(readonly dataFileId: bigint, readonly detail: string) {
    super(`file ${dataFileId}: ${detail}; the bytes were not served (the catalog's copy changed after the file was built: \`offsetlake check\` names the piece)`);
  }
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** sha256 of the page index and the footer as one run of bytes (the file's tail). */
export function tailSha256(pageIndex: Uint8Array, footer: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(pageIndex).update(footer).digest());
}

/**
 * Why the stored page index and footer are not the bytes the file was built with, or null
 * when they are: together they fill the file from `dataEnd` (the end of its last column
 * chunk, by its footer) to its end, and hash to the sha256 recorded when it was built.
 */
export function storedTailMismatch(file: CatalogFile, granules: FileGranules, dataEnd: number): StoredPieceMismatchError | null {
  const size = Number(file.fileSizeBytes);
  const { pageIndex } = granules;
  if (dataEnd + pageIndex.byteLength + file.footer.byteLength !== size) {
    return new StoredPieceMismatchError(file.dataFileId, `its page index (${pageIndex.byteLength} bytes) and footer (${file.footer.byteLength} bytes) in the catalog do not fill bytes ${dataEnd} to ${size}, after its last column chunk`);
  }
  const got = tailSha256(pageIndex, file.footer);
  if (Buffer.from(got).equals(granules.tailSha256)) return null;
  return new StoredPieceMismatchError(file.dataFileId, `its page index and footer in the catalog (bytes ${dataEnd} to ${size}) hash to sha256 ${hex(got)}, not ${hex(granules.tailSha256)} as the file built from Kafka did`);
}

/**
 * How the catalog's granules, page index and their sha256 differ from those of the file
 * rebuilt whole from Kafka (and checked against the file's size, footer and sha256), one
 * sentence per piece; empty when they agree. `kafkaBytes` is left out: it sizes the reads
 * a granule's rebuild makes and is never sent.
 */
export function storedPieceDifferences(stored: FileGranules, rebuilt: FileGranules, paths: readonly string[], dataEnd: number): string[] {
  const differences: string[] = [];
  if (!Buffer.from(stored.pageIndex).equals(rebuilt.pageIndex)) {
    differences.push(`page index: the catalog's ${stored.pageIndex.byteLength} bytes are not the rebuilt file's ${rebuilt.pageIndex.byteLength} (bytes ${dataEnd} to ${dataEnd + rebuilt.pageIndex.byteLength})`);
  }
  if (!Buffer.from(stored.tailSha256).equals(rebuilt.tailSha256)) {
    differences.push(`page index and footer sha256: ${hex(stored.tailSha256)} in the catalog, ${hex(rebuilt.tailSha256)} rebuilt`);
  }
  if (stored.granules.length !== rebuilt.granules.length) {
    differences.push(`granules: ${stored.granules.length} in the catalog, the rebuilt file has ${rebuilt.granules.length} row groups`);
    return differences;
  }
  rebuilt.granules.forEach((want, g) => {
    const got = stored.granules[g]!;
    if (got.startOffset !== want.startOffset || got.endOffset !== want.endOffset) {
      differences.push(`granule ${g}: offsets [${got.startOffset}, ${got.endOffset}) in the catalog, [${want.startOffset}, ${want.endOffset}) rebuilt`);
    }
    if (got.rowCount !== want.rowCount) differences.push(`granule ${g}: ${got.rowCount} rows in the catalog, ${want.rowCount} rebuilt`);
    const leaves = want.chunkSha256.byteLength / SHA256_BYTES;
    if (got.chunkSha256.byteLength !== want.chunkSha256.byteLength) {
      differences.push(`granule ${g}: ${got.chunkSha256.byteLength / SHA256_BYTES} chunk checksums in the catalog, ${leaves} column chunks rebuilt`);
      return;
    }
    for (let leaf = 0; leaf < leaves; leaf++) {
      const at = leaf * SHA256_BYTES;
      if (!Buffer.from(got.chunkSha256.subarray(at, at + SHA256_BYTES)).equals(want.chunkSha256.subarray(at, at + SHA256_BYTES))) {
        differences.push(`granule ${g}, column ${paths[leaf] ?? leaf}: chunk sha256 ${hex(got.chunkSha256.subarray(at, at + SHA256_BYTES))} in the catalog, ${hex(want.chunkSha256.subarray(at, at + SHA256_BYTES))} rebuilt`);
      }
    }
  });
  return differences;
}
