/**
 * fetch-response.ts and record-batch.ts on bytes that no code of ours wrote: Fetch response
 * bodies as Kafka 4.1.1 sent them (test/fixtures/kafka, made by capture.ts), of batches written
 * by confluent-kafka (librdkafka: every codec, raw snappy, transactions) and by the Java client
 * (Kafka's ConsoleProducer: xerial-framed snappy, Java's LZ4 frames), each with the records
 * confluent-kafka's read_committed consumer read from the same topic. Then the decoders at
 * every split and with every byte corrupted.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { compressFrameSync } from 'lz4-napi';
import xxhash from 'xxhash-wasm';
import { describe, expect, test } from 'vitest';
import { committedSlice } from '../../src/kafka/committed.js';
import { crc32c, crc32cJs, crc32cImplementation } from '../../src/kafka/crc32c.js';
import { BatchTooLargeError, CorruptRecordBatchError, MalformedResponseError, UnsupportedRecordFormatError } from '../../src/kafka/errors.js';
import { parseFetchResponse } from '../../src/kafka/fetch-response.js';
import { batchRecordBytes, decompressedChunks } from '../../src/kafka/batch-decompress.js';
import { batchCodec, isControlBatch, parseRecordBatches, type RecordBatch } from '../../src/kafka/batch-header.js';
import { decodeRecords, recordColumns } from '../../src/kafka/record-batch.js';
import { recordHeads } from '../../src/kafka/unreadable-batch.js';
import type { ByteSpanColumn } from '../../src/kafka/record.js';
import { batchBytes, recordBatch, recordBytes } from '../helpers/record-batch-bytes.js';

const dir = new URL('../fixtures/kafka/', import.meta.url);

interface Fixture {
  name: string;
  description: string;
  producer: string;
  compression: string;
  topic: string;
  topicId: string;
  highWatermark: string;
  lastStableOffset: string;
  responses: { version: number; maxBytes: number; from: string; file: string }[];
  records: { offset: string; timestamp: number; key: string | null; value: string | null; headers: [string, string | null][] }[];
}

const fixtures: Fixture[] = readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
  .map((f) => ({ name: f.replace(/\.json$/, ''), ...(JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Omit<Fixture, 'name'>) }));
const responses = fixtures.flatMap((fixture) => fixture.responses.map((response) => ({ fixture, ...response, body: readFileSync(new URL(response.file, dir)) })));

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));
const source = (fixture: Fixture) => ({ topic: fixture.topic, partition: 0 });

function partitionOf(body: Buffer, version: number) {
  const response = parseFetchResponse(body, version);
  expect(response.errorCode).toBe(0);
  expect(response.responses).toHaveLength(1);
  const partition = response.responses[0]!.partitions[0]!;
  expect(partition.errorCode).toBe(0);
  return { response, partition };
}

function batchesOf(fixture: Fixture, file: string, version: number): { batches: RecordBatch[]; records: Buffer } {
  const { partition } = partitionOf(readFileSync(new URL(file, dir)), version);
  return { batches: parseRecordBatches(partition.records!, source(fixture)), records: partition.records! };
}

describe('decompression bounded by maxRecordBytes (the memory budget of run --memory)', () => {
  test('every codec from both producers: a batch decompresses at a limit of exactly its size, and one byte less is a BatchTooLargeError naming its offsets, codec and size in Kafka', () => {
    const seen = new Set<string>();
    for (const { fixture, file, version } of responses) {
      for (const batch of batchesOf(fixture, file, version).batches) {
        if (batchCodec(batch) === 'none' || isControlBatch(batch)) continue;
        const size = batchRecordBytes(batch, source(fixture))!.length;
        const at = (limit: number) => ({ ...source(fixture), maxRecordBytes: limit });
        expect(batchRecordBytes(batch, at(size))!.length).toBe(size);
        expect(decodeRecords(batch, at(size)).length).toBe(batch.recordCount);
        let refused: unknown;
        try {
          decodeRecords(batch, at(size - 1));
        } catch (error) {
          refused = error;
        }
        expect(refused, `${fixture.name} ${batchCodec(batch)} at ${batch.baseOffset}`).toBeInstanceOf(BatchTooLargeError);
        expect((refused as Error).message).toBe(`the record batch at offsets [${batch.baseOffset}, ${batch.baseOffset + BigInt(batch.lastOffsetDelta)}] of ${fixture.topic}-0 (${batchCodec(batch)}, ${12 + batch.batchLength} bytes in Kafka) decompresses to more than ${size - 1} bytes, the most one batch may take under this process's memory budget; it waits for a process with a larger one (\`run --memory\`)`);
        seen.add(`${fixture.producer} ${batchCodec(batch)}${batchCodec(batch) === 'snappy' ? (batch.data[0] === 0x82 ? ' xerial' : ' raw') : ''}`);
      }
    }
    expect([...seen].sort()).toEqual(expect.arrayContaining(['gzip', 'lz4', 'zstd', 'snappy raw'].map((codec) => expect.stringMatching(new RegExp(`${codec}$`)))));
    expect([...seen].some((s) => s.endsWith('snappy xerial'))).toBe(true);
  });
});

describe('decompression as a stream (decompressedChunks, for a batch over MAX_BATCH_RECORD_BYTES)', () => {
  test('every codec from both producers: the parts are the batch\'s records, and the records\' heads give the offsets and timestamps confluent-kafka\'s read_committed consumer reads', () => {
    const seen = new Set<string>();
    for (const { fixture, file, version } of responses) {
      for (const batch of batchesOf(fixture, file, version).batches) {
        if (isControlBatch(batch)) continue;
        const parts: Buffer[] = [];
        decompressedChunks(batch, source(fixture), (chunk) => parts.push(Buffer.from(chunk)) > 0);
        expect(Buffer.concat(parts).equals(batchRecordBytes(batch, source(fixture))!), `${fixture.name} at ${batch.baseOffset}`).toBe(true);
        const last = batch.baseOffset + BigInt(batch.lastOffsetDelta);
        const committed = fixture.records.filter((r) => BigInt(r.offset) >= batch.baseOffset && BigInt(r.offset) <= last);
        if (committed.length === 0) continue; // an aborted transaction's batch
        const heads = recordHeads((visit) => decompressedChunks(batch, source(fixture), visit), batch.recordCount, batch.lastOffsetDelta);
        if (typeof heads === 'string') throw new Error(heads);
        expect(heads.map((h) => ({ offset: String(batch.baseOffset + BigInt(h.offsetDelta)), timestamp: Number(batch.baseTimestamp) + h.timestampDelta })), `${fixture.name} at ${batch.baseOffset}`)
          .toEqual(committed.map((r) => ({ offset: r.offset, timestamp: r.timestamp })));
        seen.add(batchCodec(batch));
      }
    }
    expect([...seen].sort()).toEqual(['gzip', 'lz4', 'none', 'snappy', 'zstd']);
  });
});

describe('the fixtures cover what they claim', () => {
  test('every codec from both producers, both snappy framings, markers, aborted transactions, a cut batch, Fetch v4 to v17', () => {
    const seen = new Set<string>();
    for (const { fixture, file, version } of responses) {
      for (const batch of batchesOf(fixture, file, version).batches) {
        if (isControlBatch(batch)) { seen.add('control'); continue; }
        expect(batchCodec(batch)).toBe(fixture.compression);
        seen.add(`${fixture.producer.startsWith('Java') ? 'java' : 'librdkafka'} ${batchCodec(batch)}`);
        if (batchCodec(batch) === 'snappy') seen.add(batch.data[0] === 0x82 ? 'xerial snappy' : 'raw snappy');
      }
      seen.add(`v${version}`);
    }
    for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) expect(seen).toContain(`librdkafka ${codec}`);
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd']) expect(seen).toContain(`java ${codec}`);
    for (const what of ['xerial snappy', 'raw snappy', 'control', 'v4', 'v5', 'v7', 'v11', 'v12', 'v13', 'v16', 'v17']) expect(seen).toContain(what);
    const records = fixtures.flatMap((f) => f.records);
    expect(records.some((r) => r.key === null) && records.some((r) => r.value === null)).toBe(true);
    expect(records.some((r) => r.headers.some(([name, value]) => name === 'ключ' && value !== null)) && records.some((r) => r.headers.some(([, v]) => v === null))).toBe(true);
  });
});

describe.each(responses)('$file', ({ fixture, version, file, from, maxBytes, body }) => {
  test('decodes to what confluent-kafka\'s read_committed consumer reads', () => {
    // Prepare
    const start = BigInt(from);
    const end = BigInt(fixture.highWatermark);
    // Act
    const { response, partition } = partitionOf(body, version);
    const slice = committedSlice(parseRecordBatches(partition.records!, source(fixture)), partition.abortedTransactions, start, end, source(fixture));
    // Assess
    const topic = response.responses[0]!;
    if (version <= 12) expect([topic.topic, topic.topicId]).toEqual([fixture.topic, null]);
    else expect([topic.topic, topic.topicId]).toEqual([null, fixture.topicId]);
    expect(partition.highWatermark).toBe(end);
    expect(partition.lastStableOffset).toBe(BigInt(fixture.lastStableOffset));
    expect(partition.logStartOffset).toBe(version >= 5 ? 0n : -1n);
    const expected = fixture.records.filter((r) => BigInt(r.offset) >= start && BigInt(r.offset) < slice.nextOffset);
    expect(slice.records.map((r) => ({ offset: r.offset.toString(), timestamp: r.timestamp, key: hex(r.key), value: hex(r.value), headers: r.headers.map(([k, v]) => [k, hex(v)]) }))).toEqual(expected);
    const sizes = slice.records.map((r) => (r.key?.length ?? 0) + (r.value?.length ?? 0) + r.headers.reduce((h, [k, v]) => h + Buffer.byteLength(k) + (v?.length ?? 0), 0));
    expect(slice.bytes).toBe(sizes.reduce((n, size) => n + size, 0));
    // each record's own count, which recordBytes answers from without making its views
    expect(slice.records.map((r) => r.byteSize)).toEqual(sizes);
    if (maxBytes < 1 << 20) {
      expect(slice.nextOffset).toBe(10n); // the second batch was cut: dropped, to be fetched again
      expect(partition.records!.length).toBeGreaterThan(parseRecordBatches(partition.records!, source(fixture))[0]!.batchLength + 12);
    } else if (fixture.name.startsWith('transactions') && start === 0n) {
      expect(slice.nextOffset).toBe(5n); // Kafka answers with the first transaction's batch alone
    } else {
      expect(slice.nextOffset).toBe(end);
    }
    if (start === 5n) {
      expect(partition.abortedTransactions?.map((t) => t.firstOffset)).toEqual([6n, 15n]);
      expect([slice.abortedRecords, slice.controlBatches]).toEqual([6, 5]);
    }
  });

  test('as columns (recordColumns), hold what confluent-kafka\'s read_committed consumer reads, at places in the batches\' bytes', () => {
    // Prepare
    const start = BigInt(from);
    const { partition } = partitionOf(body, version);
    const slice = committedSlice(parseRecordBatches(partition.records!, source(fixture)), partition.abortedTransactions, start, BigInt(fixture.highWatermark), source(fixture));
    // Act
    const columns = recordColumns(slice.records);
    // Assess
    const span = (column: ByteSpanColumn, i: number) => {
      const length = column.lengths[i]!;
      return length < 0 ? null : Buffer.from(column.sources[column.source[i]!]!.subarray(column.starts[i]!, column.starts[i]! + length)).toString('hex');
    };
    const read = Array.from({ length: columns.count }, (_, i) => ({
      offset: String(columns.offsets![i]), timestamp: columns.timestamps[i],
      key: span(columns.key, i), value: span(columns.value, i),
      headers: Array.from({ length: columns.headerStarts[i + 1]! - columns.headerStarts[i]! }, (_, h) => {
        const entry = columns.headerStarts[i]! + h;
        return [Buffer.from(span(columns.headerNames!, entry)!, 'hex').toString('utf8'), span(columns.headerValues, entry)];
      }),
    }));
    expect(read).toEqual(fixture.records.filter((r) => BigInt(r.offset) >= start && BigInt(r.offset) < slice.nextOffset));
    // no copy: places lie in the response itself (uncompressed batches) or in one decompressed buffer per batch
    const batches = parseRecordBatches(partition.records!, source(fixture)).filter((batch) => !isControlBatch(batch));
    if (batches.every((batch) => batchCodec(batch) === 'none')) expect(columns.value.sources.every((bytes) => bytes.buffer === body.buffer)).toBe(true);
    expect(new Set(columns.value.sources).size).toBeLessThanOrEqual(batches.length);
  });

  test('keys, values and header values are views, not copies', () => {
    const { partition } = partitionOf(body, version);
    for (const batch of parseRecordBatches(partition.records!, source(fixture))) {
      const records = decodeRecords(batch, source(fixture));
      const buffers = new Set(records.flatMap((r) => [r.key, r.value, ...r.headers.map(([, v]) => v)]).filter((b) => b !== null).map((b) => b.buffer));
      if (batchCodec(batch) === 'none') expect([...buffers].every((b) => b === body.buffer)).toBe(true);
      else expect(buffers.size).toBeLessThanOrEqual(1); // the batch decompressed, once
    }
  });

  test('a body cut anywhere is a MalformedResponseError, never a short answer', () => {
    for (let at = 0; at < body.length; at++) expect(() => parseFetchResponse(body.subarray(0, at), version)).toThrow(MalformedResponseError);
    expect(() => parseFetchResponse(Buffer.concat([body, Buffer.from([0])]), version)).toThrow('1 bytes are left after the response');
  });
});

describe('record batches at every split and with every byte corrupted', () => {
  const three = fixtures.filter((f) => f.name.startsWith('librdkafka-'));

  test.each(three.map((f) => [f.name, f] as const))('%s: a records section cut anywhere yields the whole batches before the cut', (_name, fixture) => {
    const { batches, records } = batchesOf(fixture, fixture.responses[0]!.file, 17);
    expect(batches).toHaveLength(3);
    const ends = batches.map((b) => b.data.byteOffset + b.data.length - records.byteOffset);
    for (let at = 0; at <= records.length; at++) {
      const whole = ends.filter((end) => end <= at).length;
      const cut = parseRecordBatches(records.subarray(0, at), source(fixture));
      expect(cut.map((b) => b.baseOffset)).toEqual(batches.slice(0, whole).map((b) => b.baseOffset));
    }
  });

  test.each(three.map((f) => [f.name, f] as const))('%s: a changed byte in the second batch is an error naming the partition and the batch\'s offset', (_name, fixture) => {
    const { batches, records } = batchesOf(fixture, fixture.responses[0]!.file, 17);
    const start = batches[1]!.data.byteOffset - records.byteOffset - 61;
    const end = batches[1]!.data.byteOffset + batches[1]!.data.length - records.byteOffset;
    for (let at = start + 16; at < end; at++) {
      const bad = Buffer.from(records);
      bad[at]! ^= 0x10;
      const error = (() => { try { parseRecordBatches(bad, source(fixture)); } catch (e) { return e; } return undefined; })();
      if (at === start + 16) {
        expect(error).toBeUndefined(); // magic 2 → 18: an old format, refused by committedSlice
        expect(() => committedSlice(parseRecordBatches(bad, source(fixture)), null, 0n, 100n, source(fixture))).toThrow(UnsupportedRecordFormatError);
      } else {
        expect(error).toBeInstanceOf(CorruptRecordBatchError);
        expect((error as Error).message).toMatch(new RegExp(`^the record batch at offset 10 of ${fixture.topic}-0 is corrupt: its CRC-32C is 0x[0-9a-f]{8}, the batch says 0x[0-9a-f]{8}`));
      }
    }
  });

  test('an uncompressed batch cut inside a record, with bytes left over, or with a length past its record, is corrupt even with a right CRC', () => {
    const records = [{ offsetDelta: 0, timestampDelta: 0, key: Buffer.from('k'), value: Buffer.from('value') }, { offsetDelta: 1, timestampDelta: 5, key: null, value: Buffer.from('v2') }];
    const whole = Buffer.concat(records.map(recordBytes));
    const where = { topic: 'orders', partition: 3 };
    const decode = (section: Buffer, spec: Partial<Parameters<typeof batchBytes>[0]> = {}) => decodeRecords(parseRecordBatches(batchBytes({ baseOffset: 40n, records, ...spec }, section), where)[0]!, where);
    expect(decode(whole).map((r) => r.value?.toString())).toEqual(['value', 'v2']);
    expect(() => decode(whole.subarray(0, whole.length - 1))).toThrow(/^the record batch at offset 40 of orders-3 is corrupt: record 1 \(byte 13 of its records\)/);
    expect(() => decode(Buffer.concat([whole, Buffer.from([0, 0])]))).toThrow('the record batch at offset 40 of orders-3 is corrupt: 2 bytes are left after its 2 records');
    const longKey = Buffer.from(whole);
    longKey[4] = 40; // the first record's key length: 20 bytes, past its record
    expect(() => decode(longKey)).toThrow(/record 0 \(byte 0 of its records\): its key of 20 bytes runs past the record/);
    const lz4 = compressFrameSync(whole);
    expect(decode(lz4, { attributes: 3 }).map((r) => r.value?.toString())).toEqual(['value', 'v2']);
    expect(() => decode(lz4.subarray(0, lz4.length >> 1), { attributes: 3 })).toThrow(/^the record batch at offset 40 of orders-3 is corrupt: its lz4 records do not decompress/);
    expect(() => decode(whole, { attributes: 6 })).toThrow('unknown compression codec 6');
  });

  test('LZ4 frames of several blocks, stored (uncompressed) blocks, linked blocks (left to the frame decoder), a second frame (an error: its records are missing) and bytes after the frame (not read, as Java does not)', async () => {
    const where = { topic: 'orders', partition: 1 };
    const records = Array.from({ length: 300 }, (_, i) => ({ offsetDelta: i, timestampDelta: i, key: null, value: i % 2 ? randomBytes(2_000) : Buffer.from('x'.repeat(2_000)) }));
    const section = Buffer.concat(records.map(recordBytes));
    const frame = compressFrameSync(section);
    expect(frame.readUInt32LE(0)).toBe(0x184d2204);
    const decode = (compressed: Buffer) => decodeRecords(parseRecordBatches(batchBytes({ baseOffset: 0n, attributes: 3, records }, compressed), where)[0]!, where);
    const values = (decoded: ReturnType<typeof decode>) => Buffer.concat(decoded.map((r) => r.value!));
    const expected = Buffer.concat(records.map((r) => r.value));
    expect(values(decode(frame)).equals(expected)).toBe(true); // 600 KB: several 256 KiB blocks
    const stored = Buffer.concat([frame.subarray(0, 7), Buffer.alloc(4), section, Buffer.alloc(4)]);
    stored.writeUInt32LE((section.length | 0x80000000) >>> 0, 7);
    stored[5] = 0x70; // 4 MiB blocks: the whole section in one stored block
    stored[6] = 0; // the header checksum, which neither decoder is asked to check here
    expect(values(decode(stored)).equals(expected)).toBe(true);
    // A second frame is not read, as Java's KafkaLZ4BlockInputStream stops at the first end mark: the records it held are missing
    const twoFrames = Buffer.concat([compressFrameSync(section.subarray(0, 1000)), compressFrameSync(section.subarray(1000))]);
    expect(() => decode(twoFrames)).toThrow(/^the record batch at offset 0 of orders-1 is corrupt: record 0 \(byte 0 of its records\)/);
    // Bytes after the frame (the broker takes such a batch, and Java's consumer reads its records): ignored, every record read
    expect(values(decode(Buffer.concat([frame, Buffer.from('junk after the frame')]))).equals(expected)).toBe(true);
    expect(values(decode(Buffer.concat([stored, Buffer.alloc(3)]))).equals(expected)).toBe(true);
    const linked = Buffer.from(frame);
    linked[4] = frame[4]! & ~0x20; // blocks marked linked: lz4-napi's frame decoder reads them
    linked[6] = ((await xxhash()).h32Raw(linked.subarray(4, 6), 0) >>> 8) & 0xff; // the header checksum, which it checks
    expect(values(decode(linked)).equals(expected)).toBe(true);
  });

  test('header names are their bytes\' text however they repeat: the same name record after record, another name at the same place, long names, many headers, across batches', () => {
    const long = 'n'.repeat(70);
    const named = (names: string[][]) => names.map((list, i) => ({ offsetDelta: i, timestampDelta: i, key: null, value: null, headers: list.map((name, h): [string, Buffer] => [name, Buffer.from(`v${h}`)]) }));
    const first: string[][] = [['source', 'trace'], ['source', 'trace'], ['sourcf', 'trace'], ['sourc', 'trace', 'é'], [long, long], Array.from({ length: 12 }, (_, h) => `h${h % 5}`), ['source', 'ключ'], []];
    const second: string[][] = [['ключ', 'source'], ['source'], Array.from({ length: 12 }, (_, h) => `h${(h + 1) % 5}`)];
    for (const names of [first, second]) {
      const records = decodeRecords(recordBatch({ baseOffset: 0n, records: named(names) }), { topic: 't', partition: 0 });
      expect(records.map((r) => r.headers.map(([name]) => name))).toEqual(names);
      expect(records.map((r) => r.headers.map(([, value]) => value!.toString()))).toEqual(names.map((list) => list.map((_, h) => `v${h}`)));
    }
  });

  test('a header name that is not UTF-8 is the text a TextDecoder reads of it (U+FFFD for what is not)', () => {
    const raw = Buffer.from([0x61, 0xff, 0x62, 0xc3]); // "a", a byte no UTF-8 has, "b", a sequence cut short
    const text = new TextDecoder().decode(raw);
    expect(text).toBe('a\ufffdb\ufffd');
    const batch = recordBatch({ baseOffset: 3n, records: [{ offsetDelta: 0, timestampDelta: 0, key: null, value: null, headers: [[raw, Buffer.from('v')], ['ok', null]] }] });
    const slice = committedSlice([batch], null, 0n, 10n);
    expect(slice.records.map((r) => r.headers.map(([name, value]) => [name, value?.toString() ?? null]))).toEqual([[[text, 'v'], ['ok', null]]]);
    expect(slice.bytes).toBe(raw.length + 1 + 2); // a name counts its bytes, not its text's
  });

  test('a read whose batches lie below and beyond 2^53 gives every record, in order', () => {
    const below = recordBatch({ baseOffset: 5n, baseTimestamp: 1_000n, records: [{ offsetDelta: 0, timestampDelta: 0, key: null, value: Buffer.from('a') }, { offsetDelta: 1, timestampDelta: 1, key: null, value: Buffer.from('b') }] });
    const beyond = recordBatch({ baseOffset: 2n ** 60n, baseTimestamp: 2_000n, records: [{ offsetDelta: 0, timestampDelta: 0, key: Buffer.from('k'), value: Buffer.from('c') }] });
    const slice = committedSlice([below, beyond], null, 0n, 2n ** 61n);
    expect(slice.records.map((r) => [r.offset, r.timestamp, r.key?.toString() ?? null, r.value?.toString()])).toEqual([[5n, 1_000, null, 'a'], [6n, 1_001, null, 'b'], [2n ** 60n, 2_000, 'k', 'c']]);
    expect(slice.nextOffset).toBe(2n ** 60n + 1n);
  });

  test('empty keys are not null keys; negative and large timestamp deltas; offsets and timestamps beyond 2^53 stay exact', () => {
    const batch = recordBatch({
      baseOffset: 2n ** 60n, baseTimestamp: 2n ** 54n + 1n, maxTimestamp: 0n,
      records: [
        { offsetDelta: 0, timestampDelta: -3, key: Buffer.alloc(0), value: null, headers: [['', Buffer.alloc(0)]] },
        { offsetDelta: 2, timestampDelta: 2 ** 40, key: null, value: Buffer.alloc(0) },
      ],
      lastOffsetDelta: 2,
    });
    const records = decodeRecords(batch, { topic: 't', partition: 0 });
    expect(records.map((r) => [r.offset, r.key, r.value, r.headers])).toEqual([[2n ** 60n, Buffer.alloc(0), null, [['', Buffer.alloc(0)]]], [2n ** 60n + 2n, null, Buffer.alloc(0), []]]);
    expect(records.map((r) => r.timestamp)).toEqual([Number(2n ** 54n - 2n), Number(2n ** 54n + 1n + 2n ** 40n)]);
    const small = decodeRecords(recordBatch({ baseOffset: 7n, baseTimestamp: 1_000n, records: [{ offsetDelta: 0, timestampDelta: -1_000, key: null, value: null }, { offsetDelta: 1, timestampDelta: 2 ** 31 + 5, key: null, value: null }] }), { topic: 't', partition: 0 });
    expect(small.map((r) => [r.offset, r.timestamp])).toEqual([[7n, 0], [8n, 1_000 + 2 ** 31 + 5]]);
  });
});

describe('crc32c', () => {
  test('the check value, and the native and JavaScript implementations agree on any bytes', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32cJs(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32cImplementation).toBe('native'); // @node-rs/crc32 is installed with @platformatic/kafka
    const bytes = randomBytes(4096);
    for (let length = 0; length < 64; length++) {
      for (const start of [0, 1, 3, 7, 100]) expect(crc32cJs(bytes, start, start + length)).toBe(crc32c(bytes.subarray(start, start + length)));
    }
    expect(crc32cJs(bytes)).toBe(crc32c(bytes));
  });
});
