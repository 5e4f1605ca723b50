/**
 * Parts b ≥ 0 of a POSTINGS index's entries for a file: the keys with hash(key) mod
 * posting_buckets = b, sorted by their bytes, each with the granules holding it (exact);
 * and how a read asks them. Pure.
 */
import { ByteReader, ByteWriter } from './entry-bytes.js';
import { postingBucket } from './keys.js';

/**
 * The entry of each bucket that has keys: `keys` distinct, each with its first granule
 * and the later granules of the few keys in several (ascending).
 */
export function postingEntries(keys: readonly Buffer[], firstGranule: readonly number[], laterGranules: ReadonlyMap<number, number[]>, buckets: number): [number, Uint8Array][] {
  const byBucket = new Map<number, number[]>();
  for (let at = 0; at < keys.length; at++) {
    const bucket = postingBucket(keys[at]!, buckets);
    const list = byBucket.get(bucket);
    if (list) list.push(at);
    else byBucket.set(bucket, [at]);
  }
  const out: [number, Uint8Array][] = [];
  for (const [bucket, list] of [...byBucket].sort((a, b) => a[0] - b[0])) {
    list.sort((a, b) => Buffer.compare(keys[a]!, keys[b]!));
    const writer = new ByteWriter();
    writer.varint(list.length);
    for (const at of list) {
      const key = keys[at]!;
      const later = laterGranules.get(at);
      writer.varint(key.length);
      writer.bytes(key);
      writer.varint(1 + (later?.length ?? 0));
      writer.varint(firstGranule[at]!);
      let previous = firstGranule[at]!;
      for (const g of later ?? []) {
        writer.varint(g - previous);
        previous = g;
      }
    }
    out.push([bucket, writer.done()]);
  }
  return out;
}

/** The granules of one bucket's postings that hold `key`: exact. */
export function postingGranules(payload: Uint8Array, key: Uint8Array): number[] {
  const reader = new ByteReader(payload);
  const count = reader.varint();
  for (let i = 0; i < count; i++) {
    const candidate = reader.bytes(reader.varint());
    const n = reader.varint();
    const granules: number[] = [];
    let g = 0;
    for (let j = 0; j < n; j++) {
      g += reader.varint();
      granules.push(g);
    }
    const order = Buffer.compare(candidate, key);
    if (order === 0) return granules;
    if (order > 0) return [];
  }
  return [];
}

