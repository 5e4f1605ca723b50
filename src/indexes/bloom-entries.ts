/**
 * Part 0 of a BLOOM index's entries for a file: per granule a split-block Bloom filter of
 * its distinct keys, sized for the index's false-positive rate; and how a read asks it. Pure.
 */
import { bloomBytesFor, SplitBlockBloomFilter, xxhash64 } from './bloom.js';
import { ByteReader, ByteWriter, IndexEntryError } from './entry-bytes.js';

export const BLOOM_PART = 0;

/**
 * The entry of per-granule key hashes, as upper and lower halves (a key inserted twice
 * sets the same bits; the distinct lower halves size the filter: two keys of one granule
 * share them with odds of about 1 in 2^32 per pair, which only makes a filter a block
 * smaller).
 */
export function bloomEntry(highs: readonly number[][], lows: readonly number[][], falsePositiveRate: number): Uint8Array {
  const out = new ByteWriter();
  out.varint(highs.length);
  for (let g = 0; g < highs.length; g++) {
    const filter = SplitBlockBloomFilter.ofSize(bloomBytesFor(Math.max(1, new Set(lows[g]).size), falsePositiveRate));
    const high = highs[g]!;
    const low = lows[g]!;
    for (let i = 0; i < high.length; i++) filter.insertHalves(high[i]!, low[i]!);
    out.varint(filter.bytes.length);
    out.bytes(filter.bytes);
  }
  return out.done();
}

/** How many granules' filters a BLOOM entry holds (a read checks it against the header). */
export function bloomFilterCount(payload: Uint8Array): number {
  return new ByteReader(payload).varint();
}

/** The granules whose Bloom filter may hold one of `keys` (granules it cannot answer for are not added here). */
export function bloomGranules(payload: Uint8Array, keys: readonly Uint8Array[]): Set<number> {
  const reader = new ByteReader(payload);
  const granules = reader.varint();
  const hashes = keys.map((key) => xxhash64(key));
  const out = new Set<number>();
  for (let g = 0; g < granules; g++) {
    const size = reader.varint();
    if (size === 0 || size % 32 !== 0) throw new IndexEntryError(`bloom filter of granule ${g} has ${size} bytes, not a whole number of 32-byte blocks`);
    const filter = SplitBlockBloomFilter.from(reader.bytes(size));
    if (hashes.some((hash) => filter.mightContainHash(hash))) out.add(g);
  }
  if (!reader.done) throw new IndexEntryError('bloom entry has bytes after its last filter');
  return out;
}

