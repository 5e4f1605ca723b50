/**
 * Our split-block Bloom filter against one written from parquet-format's BloomFilter.md
 * in Python over the xxHash C library (test/unit/index_bloom_spec.py): the same keys must
 * set the same bits. Then what the spec promises: no false negatives, and about the
 * false-positive rate the filter was sized for.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bloomBytesFor, bloomFalsePositiveRate, SplitBlockBloomFilter, xxhash64 } from '../../src/indexes/bloom.js';
import { seededRandom } from '../helpers/random.js';

const here = dirname(fileURLToPath(import.meta.url));

function spec(request: { filters: { bytes: number; keys: string[] }[]; hashes: string[] }): { filters: string[]; hashes: string[] } {
  return JSON.parse(execFileSync('python3', [join(here, 'index_bloom_spec.py')], { input: JSON.stringify(request), encoding: 'utf8', maxBuffer: 64 << 20 })) as { filters: string[]; hashes: string[] };
}

function randomKeys(seed: number, count: number): Uint8Array[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const bytes = new Uint8Array(Math.floor(random() * 40));
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    return bytes;
  });
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

describe('split-block Bloom filter', () => {
  it('xxhash64 equals the xxHash C library on empty, short and long keys', () => {
    const keys = [new Uint8Array(0), ...randomKeys(1, 200), new Uint8Array(1000).fill(7)];
    const expected = spec({ filters: [], hashes: keys.map(hex) }).hashes;
    expect(keys.map((key) => xxhash64(key).toString())).toEqual(expected);
    expect(xxhash64(new Uint8Array(0))).toBe(0xef46db3751d8e999n); // xxHash's published value for no input
  });

  it('sets exactly the bits the specification sets, for filters of 1 to 4,096 blocks', () => {
    const filters = [32, 64, 96, 32 * 7, 32 * 1000, 32 * 4096].map((bytes, i) => ({ bytes, keys: randomKeys(10 + i, 50 + i * 300) }));
    const expected = spec({ filters: filters.map((f) => ({ bytes: f.bytes, keys: f.keys.map(hex) })), hashes: [] }).filters;
    const ours = filters.map((f) => {
      const filter = SplitBlockBloomFilter.ofSize(f.bytes);
      for (const key of f.keys) filter.insert(key);
      return hex(filter.bytes);
    });
    expect(ours).toEqual(expected);
  });

  it('finds every key inserted, and false positives stay within the rate it was sized for', () => {
    const keys = randomKeys(3, 20_000);
    const inserted = new Set(keys.map(hex));
    for (const fpp of [0.01, 0.05]) {
      const filter = SplitBlockBloomFilter.ofSize(bloomBytesFor(inserted.size, fpp));
      for (const key of keys) filter.insert(key);
      expect(keys.every((key) => filter.mightContain(key))).toBe(true);
      const others = randomKeys(4, 50_000).filter((key) => !inserted.has(hex(key)));
      const rate = others.filter((key) => filter.mightContain(key)).length / others.length;
      // the filter is sized so that its expected rate is at most fpp; 50,000 probes leave ±0.1 % of noise
      expect(rate).toBeLessThan(fpp * 1.1);
    }
  });

  it('is sized from the specification formula, grown until the expected rate is at most the one asked for; refuses a rate outside (0, 1)', () => {
    // m = -8n / ln(1 - p^(1/8)) bits: for n = 1000, p = 0.01, 9,682 bits = 1,211 bytes → 38 blocks,
    // whose expected rate is 1.43 % (keys fall unevenly on blocks); 42 blocks give 0.91 %.
    expect(bloomFalsePositiveRate(1000, 38)).toBeGreaterThan(0.014);
    expect(bloomBytesFor(1000, 0.01)).toBe(42 * 32);
    for (const n of [1, 10, 1000, 100_000]) for (const p of [0.001, 0.01, 0.1]) expect(bloomFalsePositiveRate(n, bloomBytesFor(n, p) / 32)).toBeLessThanOrEqual(p);
    expect(bloomBytesFor(0, 0.01)).toBe(32);
    expect(() => bloomBytesFor(10, 0)).toThrow(/above 0 and below 1/);
    expect(() => SplitBlockBloomFilter.from(new Uint8Array(33))).toThrow(/whole number of 32-byte blocks/);
  });
});
