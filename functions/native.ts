/**
 * The native compressors of our writer (napi-rs: snappy, lz4-napi, @toondepauw/node-zstd), exported by every
 * function's entry beside `handler`. Lambda calls only `handler`. The export makes every
 * bundle load both binaries when it starts, so a bundle without the binary of its
 * architecture fails at INIT rather than at its first rebuild, and it lets
 * test/integration/lambda-bundles.test.ts call the very binaries a deployed bundle carries
 * (x86_64 natively, arm64 under emulation) and compare their bytes.
 */
import { compressSync as lz4Compress, uncompressSync as lz4Uncompress } from 'lz4-napi';
import { compressSync as snappyCompress, uncompressSync as snappyUncompress } from 'snappy';
import { Decoder as ZstdDecoder, Encoder as ZstdEncoder } from '@toondepauw/node-zstd';

/** The record batches' CRC-32C: 'native' when the bundle's @node-rs/crc32 binary loaded (and computes the check value). */
export { crc32cImplementation } from '../src/kafka/crc32c.js';

export interface NativeCompressor {
  compress(data: Buffer): Buffer;
  uncompress(data: Buffer): Buffer;
}

const zstdEncoder = new ZstdEncoder(1);
const zstdDecoder = new ZstdDecoder();

/** zstd at level 1, the level of our files (src/parquet/encoder.ts). */
export const nativeCompressors: Readonly<Record<'snappy' | 'lz4' | 'zstd', NativeCompressor>> = Object.freeze({
  snappy: { compress: (data: Buffer) => snappyCompress(data), uncompress: (data: Buffer) => snappyUncompress(data, { asBuffer: true }) as Buffer },
  lz4: { compress: (data: Buffer) => lz4Compress(data), uncompress: (data: Buffer) => lz4Uncompress(data) },
  zstd: { compress: (data: Buffer) => zstdEncoder.encodeSync(data), uncompress: (data: Buffer) => zstdDecoder.decodeSync(data) },
});
