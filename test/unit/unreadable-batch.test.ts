/**
 * A record batch that decompresses to more than MAX_BATCH_RECORD_BYTES (2 GiB less a byte,
 * a fixed property of the format) becomes error rows with its records' own offsets and
 * timestamps, under any memory budget and without one; it never stops its partition.
 * The batches are written here from Kafka's record format (test/helpers/record-batch-bytes.ts),
 * their values zeros so that gigabytes take kilobytes: zstd as one frame of RLE blocks
 * written from RFC 8878, gzip as members made by zlib.
 */
import * as zlib from 'node:zlib';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, test } from 'vitest';
import { BatchTooLargeError } from '../../src/kafka/errors.js';
import { batchRecordBytes, MAX_BATCH_RECORD_BYTES } from '../../src/kafka/batch-decompress.js';
import { parseRecordBatches, type RecordBatch } from '../../src/kafka/batch-header.js';
import { decodeRecords, recordColumns } from '../../src/kafka/record-batch.js';
import { zlibChunks } from '../../src/kafka/batch-codecs.js';
import { recordHeads } from '../../src/kafka/unreadable-batch.js';
import { packRecords, unpackRecords } from '../../src/files/record-transfer.js';
import { encodeFile } from '../../src/files/files.js';
import { encoderOf } from '../../src/parquet/index.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { resolveSettings, type TableFormat, defaultSettings } from '../../src/table/settings.js';
import type { TableRecord } from '../../src/table/record.js';
import { batchBytes, recordBytes, varint, zstdFrame } from '../helpers/record-batch-bytes.js';
import { readAsText } from '../helpers/table-audit.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const MiB = 1 << 20;
const source = { topic: 'bombs', partition: 2 };
const ZSTD = 4;
const GZIP = 1;

const gzipZeros = new Map<number, Buffer>();
/** gzip of bytes and zeros: one member per part (gunzip, as Kafka's readers, takes concatenated members); zeros in 64 MiB members made once. */
function gzipParts(parts: (Buffer | number)[]): Buffer {
  let zeros64 = gzipZeros.get(64);
  if (!zeros64) gzipZeros.set(64, (zeros64 = zlib.gzipSync(Buffer.alloc(64 * MiB))));
  return Buffer.concat(parts.flatMap((part) => {
    if (typeof part !== 'number') return [zlib.gzipSync(part)];
    if (part % (64 * MiB) !== 0) throw new Error('whole 64 MiB runs of zeros only');
    return new Array<Buffer>(part / (64 * MiB)).fill(zeros64!);
  }));
}

/**
 * Three records at offset deltas 0, 2 and 4 of a batch whose last offset delta is 4 (a
 * compacted batch: 3 records over 5 offsets): a small one, then two of null key whose
 * values are `firstMiB` and `secondMiB` MiB of zeros, and one header on the last.
 */
function bigBatch(codec: number, firstMiB: number, secondMiB: number): { batch: RecordBatch; decompressed: number } {
  const small = recordBytes({ offsetDelta: 0, timestampDelta: 0, key: Buffer.from('k'), value: Buffer.from('v') });
  const big = (offsetDelta: number, timestampDelta: number, mib: number, headers: Buffer) => {
    const before = Buffer.concat([Buffer.from([0]), varint(timestampDelta), varint(offsetDelta), varint(-1), varint(mib * MiB)]);
    const length = before.length + mib * MiB + headers.length;
    return { head: Buffer.concat([varint(length), before]), tail: headers, bytes: varint(length).length + length };
  };
  const header = Buffer.concat([varint(1), varint(1), Buffer.from('h'), varint(1), Buffer.from('x')]);
  const first = big(2, 7, firstMiB, varint(0));
  const second = big(4, 3, secondMiB, header);
  const parts = [Buffer.concat([small, first.head]), firstMiB * MiB, Buffer.concat([first.tail, second.head]), secondMiB * MiB, second.tail];
  const section = codec === ZSTD ? zstdFrame(parts) : gzipParts(parts);
  // the record count comes from `records`: three, whose bytes are the compressed section
  const spec = { baseOffset: 1000n, attributes: codec, lastOffsetDelta: 4, baseTimestamp: 1_700_000_000_000n, maxTimestamp: 1_700_000_000_007n, records: new Array(3).fill(null) };
  const batch = parseRecordBatches(batchBytes(spec, section), source)[0]!;
  return { batch, decompressed: small.length + first.bytes + second.bytes };
}

const error = (batch: RecordBatch, codec: string) =>
  `the record batch at offsets [1000, 1004] (${codec}, ${12 + batch.batchLength} bytes in Kafka) decompresses to more than 2147483647 bytes, the most one batch may: its records' keys, values and headers are not read`;

const rowsOf = (batch: RecordBatch, maxRecordBytes?: number) =>
  decodeRecords(batch, { ...source, maxRecordBytes }).map((r) => ({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers, readError: r.readError }));

describe('a batch over MAX_BATCH_RECORD_BYTES', () => {
  test('is 2 GiB less a byte: the largest size Int32Array positions address', () => {
    expect(MAX_BATCH_RECORD_BYTES).toBe(2147483647);
  });

  test.each([['zstd', ZSTD], ['gzip', GZIP]] as const)('%s under a memory budget: measured as a stream, then one error row per record with its own offset and timestamp', (name, codec) => {
    const { batch, decompressed } = bigBatch(codec, 1536, 640);
    expect(decompressed).toBeGreaterThan(MAX_BATCH_RECORD_BYTES);
    const expected = [[1000n, 0], [1002n, 7], [1004n, 3]].map(([offset, delta]) => ({
      offset, timestamp: 1_700_000_000_000 + (delta as number), key: null, value: null, headers: [], readError: error(batch, name),
    }));
    expect(rowsOf(batch, 64 * MiB)).toEqual(expected);
    expect(batchRecordBytes(batch, { ...source, maxRecordBytes: 64 * MiB })).toBeNull();
  });

  test('without a memory budget: the same rows (decompression stops at the bound)', () => {
    const { batch } = bigBatch(ZSTD, 1536, 640);
    expect(rowsOf(batch)).toEqual(rowsOf(batch, 64 * MiB));
  });

  test('one under the bound is read without a budget, and under a smaller budget waits (BatchTooLargeError), never error rows', () => {
    // 2048 MiB of values and 3 records' other bytes: just over; 1984 MiB: under
    const under = bigBatch(ZSTD, 1344, 640);
    expect(under.decompressed).toBeLessThanOrEqual(MAX_BATCH_RECORD_BYTES);
    expect(() => decodeRecords(under.batch, { ...source, maxRecordBytes: 64 * MiB })).toThrow(BatchTooLargeError);
    const read = decodeRecords(under.batch, source);
    expect(read.map((r) => [r.offset, r.value?.length ?? null, r.readError])).toEqual([[1000n, 1, undefined], [1002n, 1344 * MiB, undefined], [1004n, 640 * MiB, undefined]]);
  });

  test('a range that starts inside the batch gets only its rows', () => {
    const { batch } = bigBatch(ZSTD, 1536, 640);
    const rows = decodeRecords(batch, source).filter((r) => r.offset >= 1001n);
    expect(rows.map((r) => r.offset)).toEqual([1002n, 1004n]);
  });
});

describe('the error rows in a file', () => {
  const table = (format: TableFormat): TableRecord => ({ tableId: 1n, name: 't', topic: 'bombs', format, settings: resolveSettings({}) }) as unknown as TableRecord;
  const { batch } = bigBatch(ZSTD, 1536, 640);
  const normal = { offset: 999n, timestamp: 1_699_999_999_999, key: Buffer.from('a'), value: Buffer.from('{"x":1}'), headers: [] };

  test.each(['json', 'avro', 'raw'] as const)('%s: _error names the batch in each of its rows (raw: no _error, null _key and _value), the same after crossing to a build worker', async (format) => {
    const records = [normal, ...decodeRecords(batch, source)];
    const schema = initialSchema(format);
    const direct = encodeFile(table(format), schema, 2, records, encoderVersion);
    const crossed = encodeFile(table(format), schema, 2, unpackRecords(packRecords(records)), encoderVersion);
    expect(Buffer.from(crossed.bytes).equals(Buffer.from(direct.bytes))).toBe(true);
    const rows = (await parquetReadObjects({ ...readAsText, file: direct.bytes.slice().buffer })) as Record<string, unknown>[];
    expect(rows.map((r) => [r._offset, r._timestamp, r._key, r._value])).toEqual([
      [999n, new Date(1_699_999_999_999), expect.anything(), format === 'raw' ? expect.anything() : format === 'json' ? '{"x":1}' : expect.anything()],
      [1000n, new Date(1_700_000_000_000), null, null],
      [1002n, new Date(1_700_000_000_007), null, null],
      [1004n, new Date(1_700_000_000_003), null, null],
    ]);
    if (format === 'raw') expect(rows.every((r) => !('_error' in r))).toBe(true);
    else expect(rows.slice(1).map((r) => r._error)).toEqual([error(batch, 'zstd'), error(batch, 'zstd'), error(batch, 'zstd')]);
    expect(recordColumns(records).readErrors).toEqual([null, error(batch, 'zstd'), error(batch, 'zstd'), error(batch, 'zstd')]);
  });
});

describe('recordHeads: each record\'s offset and timestamp from the stream of its records', () => {
  // records of many sizes, so that heads cross the stream's chunks at every byte
  const specs = Array.from({ length: 20_000 }, (_, i) => ({
    offsetDelta: 3 * i + (i % 2), timestampDelta: (i * 7919) % 100_000 - 50_000,
    key: i % 5 === 0 ? null : Buffer.alloc(i % 13, 1), value: Buffer.alloc((i * 31) % 300, 2),
  }));
  const records = Buffer.concat(specs.map(recordBytes));
  const lastOffsetDelta = specs.at(-1)!.offsetDelta;
  const expected = specs.map(({ offsetDelta, timestampDelta }) => ({ offsetDelta, timestampDelta }));

  test('through zlib\'s stream, for gzip and zstd', () => {
    expect(recordHeads((visit) => zlibChunks(1, zlib.gzipSync(records), visit), specs.length, lastOffsetDelta)).toEqual(expected);
    expect(recordHeads((visit) => zlibChunks(4, zlib.zstdCompressSync(records), visit), specs.length, lastOffsetDelta)).toEqual(expected);
  });

  test('in chunks of 1 to 40 bytes', () => {
    for (const size of [1, 2, 3, 5, 21, 22, 40]) {
      const chunks = (visit: (chunk: Buffer) => boolean) => {
        for (let at = 0; at < records.length; at += size) if (!visit(records.subarray(at, at + size))) return;
      };
      expect(recordHeads(chunks, specs.length, lastOffsetDelta), `chunks of ${size}`).toEqual(expected);
    }
  });

  test('records that end early, or offsets out of order, are named', () => {
    const cut = records.subarray(0, records.length - 200);
    expect(recordHeads((visit) => { visit(cut); }, specs.length, lastOffsetDelta)).toMatch(/^its records end after \d+ of the 20000 it says$/);
    expect(recordHeads((visit) => { visit(records); }, specs.length, 10)).toBe('record 4\'s offset delta 12 is not after 10 and at most the batch\'s last, 10');
  });

  test('a stream that does not decompress is an error', () => {
    expect(() => zlibChunks(4, Buffer.from('not zstd at all'), () => true)).toThrow();
  });
});
