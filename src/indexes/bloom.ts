/**
 * Parquet's split-block Bloom filter (parquet-format BloomFilter.md), the one engines
 * already implement, so that its layout, hash and sizing need no invention of ours:
 *   - a filter is z blocks of 256 bits, each block eight 32-bit words (little endian);
 *   - a key is hashed with xxHash64 (seed 0); the upper 32 bits pick the block,
 *     ((hash >>> 32) · z) >>> 32, the lower 32 bits, multiplied by eight salts, set one
 *     bit in each word (bit = (low · salt_i mod 2^32) >>> 27);
 *   - sized for n distinct keys at false-positive rate p from the spec's formula,
 *     m = −8n / ln(1 − p^(1/8)) bits, grown until the filter's own rate is at most p.
 * Pure: bytes in, bytes out. xxhash-wasm is the hash (pinned: it decides which bits are set).
 */
import xxhash from 'xxhash-wasm';

const { h64Raw } = await xxhash();

/** xxHash64 of `bytes` with seed 0. */
export function xxhash64(bytes: Uint8Array): bigint {
  return h64Raw(bytes);
}

const SALT = new Uint32Array([0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31]);
const BLOCK_BYTES = 32;
/** The spec's upper bound for one filter. */
const MAX_BYTES = 128 * 1024 * 1024;

/**
 * The false-positive rate of a filter of `blocks` blocks holding `distinct` keys: a block
 * holds i keys with Poisson probability (λ = distinct / blocks), and a key not inserted
 * is reported when its bit is set in each of the block's 8 words, (1 − (31/32)^i)^8.
 */
export function bloomFalsePositiveRate(distinct: number, blocks: number): number {
  const lambda = distinct / blocks;
  let term = Math.exp(-lambda); // P(0 keys)
  let rate = 0;
  const last = Math.ceil(lambda + 12 * Math.sqrt(lambda) + 12);
  for (let i = 0; i <= last; i++) {
    if (i > 0) term *= lambda / i;
    rate += term * Math.pow(1 - Math.pow(31 / 32, i), 8);
  }
  return rate;
}

/**
 * Bytes of a filter for `distinct` keys whose false-positive rate is at most `fpp`: the
 * spec's formula (m = −8n / ln(1 − p^(1/8)) bits) in whole blocks, then grown block by
 * block until the rate above is met, since the formula alone gives ~1.4 % for 1 % (keys
 * fall unevenly on blocks). At least one block, at most the spec's 128 MiB.
 */
export function bloomBytesFor(distinct: number, fpp: number): number {
  if (!(fpp > 0 && fpp < 1)) throw new RangeError(`a Bloom filter's false-positive rate is above 0 and below 1, not ${fpp}`);
  const n = Math.max(1, distinct);
  const bits = (-8 * n) / Math.log(1 - Math.pow(fpp, 1 / 8));
  let blocks = Math.max(1, Math.ceil(bits / 8 / BLOCK_BYTES));
  const most = MAX_BYTES / BLOCK_BYTES;
  while (blocks < most && bloomFalsePositiveRate(n, blocks) > fpp) blocks = Math.min(most, blocks + Math.max(1, Math.ceil(blocks / 64)));
  return blocks * BLOCK_BYTES;
}

/** floor(high · blocks / 2^32), exact: the product passes 2^53, so it is taken in 16-bit halves. */
function blockOf(high: number, blocks: number): number {
  const upper = Math.floor(high / 0x10000);
  const lower = high % 0x10000;
  return Math.floor((upper * blocks + Math.floor((lower * blocks) / 0x10000)) / 0x10000);
}

export class SplitBlockBloomFilter {
  private readonly words: DataView;
  private readonly blocks: number;

  constructor(readonly bytes: Uint8Array) {
    if (bytes.length === 0 || bytes.length % BLOCK_BYTES !== 0) throw new RangeError(`a split-block Bloom filter is a whole number of 32-byte blocks, not ${bytes.length} bytes`);
    this.words = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.blocks = bytes.length / BLOCK_BYTES;
  }

  /** An empty filter of `size` bytes. */
  static ofSize(size: number): SplitBlockBloomFilter {
    return new SplitBlockBloomFilter(new Uint8Array(size));
  }

  /** A filter over bytes read back (not copied). */
  static from(bytes: Uint8Array): SplitBlockBloomFilter {
    return new SplitBlockBloomFilter(bytes);
  }

  insert(key: Uint8Array): void {
    this.insertHash(xxhash64(key));
  }

  insertHash(hash: bigint): void {
    this.insertHalves(Number(hash >> 32n), Number(hash & 0xffffffffn));
  }

  /** Inserts a hash given as its upper and lower 32 bits (what a builder keeps per key, without BigInts). */
  insertHalves(high: number, low: number): void {
    const base = blockOf(high, this.blocks) * BLOCK_BYTES;
    for (let i = 0; i < 8; i++) {
      const at = base + i * 4;
      const bit = Math.imul(low, SALT[i]!) >>> 27;
      this.words.setUint32(at, (this.words.getUint32(at, true) | (1 << bit)) >>> 0, true);
    }
  }

  mightContain(key: Uint8Array): boolean {
    return this.mightContainHash(xxhash64(key));
  }

  mightContainHash(hash: bigint): boolean {
    const base = blockOf(Number(hash >> 32n), this.blocks) * BLOCK_BYTES;
    const low = Number(hash & 0xffffffffn);
    for (let i = 0; i < 8; i++) {
      const bit = Math.imul(low, SALT[i]!) >>> 27;
      if ((this.words.getUint32(base + i * 4, true) & (1 << bit)) === 0) return false;
    }
    return true;
  }
}
