/**
 * Rebuilt bytes (column chunks, whole files) and a granule's records kept in memory,
 * bounded by their total bytes (least recently used goes first). Keys start with the
 * file id and its sha256: a key names exactly one content, so an entry can never answer
 * for different bytes. An entry larger than the whole budget is not kept.
 */
export class ByteBoundedCache<V extends { readonly byteLength: number } = Uint8Array> {
  private readonly entries = new Map<string, V>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {
    if (!Number.isFinite(maxBytes) || maxBytes < 0) throw new RangeError(`cache size must be a number of bytes >= 0, got ${maxBytes}`);
  }

  static key(dataFileId: bigint, sha256: Uint8Array): string {
    return `${dataFileId}:${Buffer.from(sha256).toString('hex')}`;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /** Whether the cache holds `key` (without making it the most recently used). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value) {
      // Map keeps insertion order: re-inserting makes this the most recently used.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    if (value.byteLength > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.byteLength;
    }
    this.entries.set(key, value);
    this.bytes += value.byteLength;
    for (const [oldest, bytes] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= bytes.byteLength;
    }
  }
}
