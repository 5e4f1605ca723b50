/**
 * A minimal writer of uncompressed magic-2 record batches, for tests that need batches of a
 * shape no producer makes on request (an empty batch left by compaction, interleaved
 * transactions cut anywhere). The parsers' own tests read bytes that real producers wrote
 * (test/fixtures/kafka); this writer follows the same layout (src/kafka/batch-header.ts for
 * the batch, record-batch.ts for its records).
 */
import { crc32cJs } from '../../src/kafka/crc32c.js';
import { parseRecordBatches, type RecordBatch } from '../../src/kafka/batch-header.js';

export interface RecordSpec {
  offsetDelta: number;
  timestampDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  /** A name as text (written as UTF-8), or as the bytes to write. */
  headers?: [string | Buffer, Buffer | null][];
}

export interface BatchSpec {
  baseOffset: bigint;
  attributes?: number;
  lastOffsetDelta?: number;
  baseTimestamp?: bigint;
  maxTimestamp?: bigint;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  records: RecordSpec[];
}

/** A zigzag varint, as Kafka writes record fields. */
export function varint(n: number | bigint): Buffer {
  let z = BigInt(n) >= 0n ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
  const out: number[] = [];
  do {
    let b = Number(z & 0x7fn);
    z >>= 7n;
    if (z > 0n) b |= 0x80;
    out.push(b);
  } while (z > 0n);
  return Buffer.from(out);
}

const bytesField = (b: Buffer | null) => (b === null ? varint(-1) : Buffer.concat([varint(b.length), b]));

export function recordBytes(r: RecordSpec): Buffer {
  const headers = r.headers ?? [];
  const body = Buffer.concat([
    Buffer.from([0]),
    varint(r.timestampDelta),
    varint(r.offsetDelta),
    bytesField(r.key),
    bytesField(r.value),
    varint(headers.length),
    ...headers.flatMap(([name, value]) => [bytesField(typeof name === 'string' ? Buffer.from(name, 'utf8') : name), bytesField(value)]),
  ]);
  return Buffer.concat([varint(body.length), body]);
}

/** The bytes of one uncompressed batch (its records section given whole, or made from `records`). */
export function batchBytes(spec: BatchSpec, recordsSection?: Buffer): Buffer {
  const records = recordsSection ?? Buffer.concat(spec.records.map(recordBytes));
  const afterCrc = Buffer.alloc(40);
  afterCrc.writeInt16BE(spec.attributes ?? 0, 0);
  afterCrc.writeInt32BE(spec.lastOffsetDelta ?? Math.max(0, spec.records.length - 1), 2);
  afterCrc.writeBigInt64BE(spec.baseTimestamp ?? 0n, 6);
  afterCrc.writeBigInt64BE(spec.maxTimestamp ?? 0n, 14);
  afterCrc.writeBigInt64BE(spec.producerId ?? -1n, 22);
  afterCrc.writeInt16BE(spec.producerEpoch ?? -1, 30);
  afterCrc.writeInt32BE(spec.baseSequence ?? -1, 32);
  afterCrc.writeInt32BE(spec.records.length, 36);
  const checked = Buffer.concat([afterCrc, records]);
  const head = Buffer.alloc(21);
  head.writeBigInt64BE(spec.baseOffset, 0);
  head.writeInt32BE(9 + checked.length, 8);
  head.writeInt32BE(0, 12);
  head.writeInt8(2, 16);
  head.writeUInt32BE(crc32cJs(checked), 17);
  return Buffer.concat([head, checked]);
}

/** One batch, parsed back. */
export function recordBatch(spec: BatchSpec): RecordBatch {
  return parseRecordBatches(batchBytes(spec), { topic: 'test', partition: 0 })[0]!;
}

/**
 * Bytes as one zstd frame (RFC 8878 section 3.1.1) of raw blocks and, for runs of zeros,
 * RLE blocks: a producer's zstd of mostly zeros, in kilobytes, without compressing
 * gigabytes in a test. A part is bytes, or a count of zeros.
 */
export function zstdFrame(parts: (Buffer | number)[]): Buffer {
  const BLOCK = 128 << 10; // Block_Maximum_Size
  const blocks: Buffer[] = [];
  const block = (type: number, size: number, content: Buffer) => {
    const header = Buffer.alloc(3);
    header.writeUIntLE((size << 3) | (type << 1), 0, 3);
    blocks.push(header, content);
  };
  for (const part of parts) {
    if (typeof part === 'number') for (let left = part; left > 0; left -= BLOCK) block(1, Math.min(BLOCK, left), Buffer.from([0]));
    else for (let at = 0; at < part.length; at += BLOCK) block(0, Math.min(BLOCK, part.length - at), part.subarray(at, at + BLOCK));
  }
  blocks.push(Buffer.from([1, 0, 0])); // an empty last raw block
  // magic; Frame_Header_Descriptor 0 (no content size, not single-segment); Window_Descriptor: 2^(10+7) = 128 KiB
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3]), ...blocks]);
}
