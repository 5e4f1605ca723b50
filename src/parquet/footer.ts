/**
 * What "the footer" of a data file means here: the file's last bytes, exactly as they
 * sit at its end — the Thrift FileMetaData, its 4-byte little-endian length, and the
 * magic "PAR1". The catalog keeps these bytes, so a reader can answer an engine's
 * suffix range request (the first thing any Parquet engine fetches) without rebuilding
 * the file, and a rebuild is checked by comparing this tail byte for byte.
 */
/** "PAR1", at a Parquet file's start and end (shared: never written to). */
export const PARQUET_MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

function hasMagicAt(bytes: Uint8Array, at: number): boolean {
  return PARQUET_MAGIC.every((b, i) => bytes[at + i] === b);
}

/** The footer of a whole Parquet file, as a copy that does not hold the file in memory. */
export function parquetFooter(file: Uint8Array): Uint8Array {
  if (file.byteLength < 12 || !hasMagicAt(file, 0) || !hasMagicAt(file, file.byteLength - 4)) {
    throw new Error(`not a Parquet file: ${file.byteLength} bytes without PAR1 at both ends`);
  }
  const metadataLength = new DataView(file.buffer, file.byteOffset + file.byteLength - 8, 4).getUint32(0, true);
  if (metadataLength + 12 > file.byteLength) {
    throw new Error(`Parquet footer claims ${metadataLength} bytes of metadata in a file of ${file.byteLength}`);
  }
  return file.slice(file.byteLength - 8 - metadataLength);
}

/** The Thrift-encoded FileMetaData inside a footer (without length and magic). */
export function footerMetadata(footer: Uint8Array): Uint8Array {
  if (footer.byteLength < 8 || !hasMagicAt(footer, footer.byteLength - 4)) {
    throw new Error('not a Parquet footer: it does not end in PAR1');
  }
  const metadataLength = new DataView(footer.buffer, footer.byteOffset + footer.byteLength - 8, 4).getUint32(0, true);
  if (metadataLength + 8 !== footer.byteLength) {
    throw new Error(`Parquet footer of ${footer.byteLength} bytes holds a length of ${metadataLength}`);
  }
  return footer.subarray(0, metadataLength);
}
