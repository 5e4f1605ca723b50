/**
 * A zstd record batch of several frames: concatenated frames decode to the concatenation of
 * their contents (RFC 8878 section 3), as Java's ZstdInputStream and librdkafka's
 * ZSTD_decompress read them. Node's zstdDecompressSync stops at the end of the first frame
 * that leaves room in its 16 KiB output chunk, so such a batch once read short and was a
 * "corrupt batch" that stopped its partition. Here both decompressors (whole, for reading;
 * as a stream, for measuring a batch against MAX_BATCH_RECORD_BYTES) read every frame, under
 * the same limits. The frames are zlib's (zstdCompressSync) of parts cut anywhere, an empty
 * frame, a skippable frame and frames of raw and RLE blocks written from RFC 8878
 * (test/helpers/record-batch-bytes.ts); what they must decode to is the records they were
 * made of.
 */
import * as zlib from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { BatchTooLargeError, CorruptRecordBatchError } from '../../src/kafka/errors.js';
import { batchRecordBytes, decompressedChunks, MAX_BATCH_RECORD_BYTES } from '../../src/kafka/batch-decompress.js';
import { parseRecordBatches, type RecordBatch } from '../../src/kafka/batch-header.js';
import { appendRecords, decodeRecords, type BatchRecord } from '../../src/kafka/record-batch.js';
import { zlibChunks, zlibDecompress } from '../../src/kafka/batch-codecs.js';
import { recordHeads } from '../../src/kafka/unreadable-batch.js';
import { batchBytes, recordBytes, varint, zstdFrame, type RecordSpec } from '../helpers/record-batch-bytes.js';

const MiB = 1 << 20;
const source = { topic: 'frames', partition: 1 };
const ZSTD = 4;

/** Records of many sizes (keys, values, headers), so frame ends fall inside records' every field. */
const specs: RecordSpec[] = Array.from({ length: 3000 }, (_, i) => ({
  offsetDelta: i, timestampDelta: i * 3,
  key: i % 7 === 0 ? null : Buffer.from(`key-${i}`),
  value: i % 11 === 0 ? null : Buffer.alloc((i * 37) % 700, i % 251),
  headers: i % 5 === 0 ? [['h', Buffer.from(`${i}`)]] : [],
}));
const section = Buffer.concat(specs.map(recordBytes));

/** A skippable frame (RFC 8878 section 3.1.2): magic 0x184D2A5?, a 4-byte size, that many bytes a decoder passes over. */
const skippable = (content: Buffer) => {
  const head = Buffer.alloc(8);
  head.writeUInt32LE(0x184d2a53, 0);
  head.writeUInt32LE(content.length, 4);
  return Buffer.concat([head, content]);
};

/** One zlib frame per piece of `section` between the cuts. */
function framesAt(cuts: number[]): Buffer[] {
  const ends = [...cuts, section.length];
  return ends.map((end, i) => zlib.zstdCompressSync(section.subarray(i === 0 ? 0 : ends[i - 1]!, end)));
}

function zstdBatch(compressed: Buffer, records: (RecordSpec | null)[] = specs, lastOffsetDelta?: number): RecordBatch {
  const spec = { baseOffset: 5000n, attributes: ZSTD, baseTimestamp: 1_700_000_000_000n, maxTimestamp: 1_700_000_000_000n, records: records as RecordSpec[], lastOffsetDelta };
  return parseRecordBatches(batchBytes(spec, compressed), source)[0]!;
}

/** A record as one line of text (comparing thousands of Buffers one by one is slow). */
const line = (offset: bigint, timestamp: number, key: Buffer | null, value: Buffer | null, headers: [string | Buffer, Buffer | null][]) =>
  [offset, timestamp, key?.toString('hex') ?? 'null', value?.toString('hex') ?? 'null', ...headers.flatMap(([k, v]) => [k.toString(), v?.toString('hex') ?? 'null'])].join(' ');
const row = (r: BatchRecord) => line(r.offset, r.timestamp, r.key, r.value, r.headers);
const expected = specs.map((s) => line(5000n + BigInt(s.offsetDelta), 1_700_000_000_000 + s.timestampDelta, s.key, s.value, s.headers ?? []));

// Frame ends inside a record, on a record's end, on 16 KiB multiples of the output (where Node's
// zstd went on to the next frame), one byte either side of them, and frames of a few bytes.
const recordEnd = recordBytes(specs[0]!).length + recordBytes(specs[1]!).length;
const cutSets: [string, number[]][] = [
  ['two frames, the first ending inside a record', [1000]],
  ['two frames, the first ending on a record\'s end', [recordEnd]],
  ['frames ending on 16 KiB multiples of the output, and one byte past', [16384, 32768, 65536 + 1]],
  ['frames ending one byte short of 16 KiB multiples', [16383, 49151]],
  ['many frames of a few bytes to 40 KiB', Array.from({ length: 40 }, (_, i) => 3 * i * i + i * 997 + 1).filter((c) => c < section.length).sort((a, b) => a - b)],
];

describe('a zstd batch of several frames', () => {
  test.each(cutSets)('%s: read whole, every record as written', (_name, cuts) => {
    const batch = zstdBatch(Buffer.concat(framesAt(cuts)));
    expect(batchRecordBytes(batch, source)!.equals(section)).toBe(true);
    expect(decodeRecords(batch, source).map(row)).toEqual(expected);
  });

  test.each(cutSets)('%s: as a stream, the same bytes, and the records\' heads', (_name, cuts) => {
    const batch = zstdBatch(Buffer.concat(framesAt(cuts)));
    const parts: Buffer[] = [];
    decompressedChunks(batch, source, (chunk) => parts.push(Buffer.from(chunk)) > 0);
    expect(Buffer.concat(parts).equals(section)).toBe(true);
    const heads = recordHeads((visit) => decompressedChunks(batch, source, visit), batch.recordCount, batch.lastOffsetDelta);
    expect(heads).toEqual(specs.map((s) => ({ offsetDelta: s.offsetDelta, timestampDelta: s.timestampDelta })));
  });

  test('empty frames, skippable frames and a frame of raw blocks (RFC 8878) between zlib\'s frames', () => {
    const compressed = Buffer.concat([
      skippable(Buffer.from('passed over')), zlib.zstdCompressSync(section.subarray(0, 500)), zlib.zstdCompressSync(Buffer.alloc(0)), skippable(Buffer.alloc(0)),
      zstdFrame([section.subarray(500, 20_000)]), zlib.zstdCompressSync(section.subarray(20_000)), skippable(Buffer.from([1, 2, 3])),
    ]);
    const batch = zstdBatch(compressed);
    expect(batchRecordBytes(batch, source)!.equals(section)).toBe(true);
    expect(decodeRecords(batch, source).map(row)).toEqual(expected);
  });

  test('a read that ends inside the first frame gets the records a whole read gets (files built before the fix rebuild the same)', () => {
    const batch = zstdBatch(Buffer.concat(framesAt([10_000, 20_000])));
    const out: BatchRecord[] = [];
    appendRecords(batch, source, 5000n, 5010n, out);
    expect(out.map(row)).toEqual(expected.slice(0, 10));
  });

  test('the memory budget counts every frame: a limit of exactly the batch\'s size reads it; one byte less, or the first frame\'s size, is a BatchTooLargeError', () => {
    const frames = framesAt([1000, 40_000]);
    const batch = zstdBatch(Buffer.concat(frames));
    const at = (maxRecordBytes: number) => ({ ...source, maxRecordBytes });
    expect(batchRecordBytes(batch, at(section.length))!.equals(section)).toBe(true);
    expect(() => decodeRecords(batch, at(section.length - 1))).toThrow(BatchTooLargeError);
    expect(() => decodeRecords(batch, at(1000))).toThrow(BatchTooLargeError);
  });

  test('bytes after the last frame that are not a frame: a corrupt batch, as for Java and librdkafka (and not the records read before them)', () => {
    const batch = zstdBatch(Buffer.concat([zlib.zstdCompressSync(section), Buffer.from('trailing')]));
    expect(() => decodeRecords(batch, source)).toThrow(CorruptRecordBatchError);
    expect(() => decodeRecords(batch, source)).toThrow(/its zstd records do not decompress/);
    expect(() => decompressedChunks(batch, source, () => true)).toThrow(CorruptRecordBatchError);
  });
});

describe('a zstd batch of several frames over MAX_BATCH_RECORD_BYTES', () => {
  test('is measured across its frames: one error row per record with its own offset and timestamp, under a budget and without one', () => {
    // three records: a small one in a zlib frame; two of 1.1 GiB of zeros in frames of RLE blocks, cut inside their values
    const small = recordBytes({ offsetDelta: 0, timestampDelta: 0, key: Buffer.from('k'), value: Buffer.from('v') });
    const bigHead = (offsetDelta: number, timestampDelta: number) => {
      const before = Buffer.concat([Buffer.from([0]), varint(timestampDelta), varint(offsetDelta), varint(-1), varint(1100 * MiB)]);
      return Buffer.concat([varint(before.length + 1100 * MiB + 1), before]);
    };
    const frames = [
      zlib.zstdCompressSync(small),
      zstdFrame([bigHead(1, 5), 600 * MiB]), zstdFrame([500 * MiB, varint(0), bigHead(3, 9)]),
      zstdFrame([1100 * MiB, varint(0)]),
    ];
    const batch = zstdBatch(Buffer.concat(frames), [null, null, null], 3);
    expect(small.length + 2 * 1100 * MiB).toBeGreaterThan(MAX_BATCH_RECORD_BYTES);
    expect(batchRecordBytes(batch, { ...source, maxRecordBytes: 64 * MiB })).toBeNull();
    const rows = decodeRecords(batch, { ...source, maxRecordBytes: 64 * MiB });
    expect(rows.map((r) => [r.offset, r.timestamp, r.value, r.readError !== undefined])).toEqual([
      [5000n, 1_700_000_000_000, null, true], [5001n, 1_700_000_000_005, null, true], [5003n, 1_700_000_000_009, null, true],
    ]);
    expect(decodeRecords(batch, source).map((r) => r.offset)).toEqual([5000n, 5001n, 5003n]);
  });
});

describe('zlibDecompress and zlibChunks', () => {
  test('zstd: every frame; gzip: every member, as Node\'s own gunzipSync reads them', () => {
    const pieces = [section.subarray(0, 7), section.subarray(7, 30_000), section.subarray(30_000)];
    const zstd = Buffer.concat(pieces.map((p) => zlib.zstdCompressSync(p)));
    const gzip = Buffer.concat(pieces.map((p) => zlib.gzipSync(p)));
    expect(zlibDecompress(4, zstd, Infinity).equals(section)).toBe(true);
    expect(zlibDecompress(1, gzip, Infinity).equals(zlib.gunzipSync(gzip))).toBe(true);
    for (const [codec, data] of [[4, zstd], [1, gzip]] as const) {
      const parts: Buffer[] = [];
      zlibChunks(codec, data, (chunk) => parts.push(Buffer.from(chunk)) > 0);
      expect(Buffer.concat(parts).equals(section), `codec ${codec}`).toBe(true);
    }
  });

  test('stops at its limit without holding more, and when the visitor says so', () => {
    const zstd = Buffer.concat([zlib.zstdCompressSync(section.subarray(0, 100)), zlib.zstdCompressSync(section.subarray(100))]);
    expect(() => zlibDecompress(4, zstd, section.length - 1)).toThrow();
    expect(zlibDecompress(4, zstd, section.length).length).toBe(section.length);
    let seen = 0;
    zlibChunks(4, zstd, (chunk) => (seen += chunk.length) < 100);
    expect(seen).toBe(100);
  });
});
