/**
 * committed.ts on hand-built Fetch responses (no broker): the cases a broker produces only
 * with effort, such as a response cut before an aborted transaction's marker, or two
 * producers' transactions interleaved.
 */
import { describe, expect, test } from 'vitest';
import { committedSlice } from '../../src/kafka/committed.js';
import { UnsupportedRecordFormatError } from '../../src/kafka/errors.js';
import type { RecordBatch } from '../../src/kafka/batch-header.js';
import { recordBatch } from '../helpers/record-batch-bytes.js';

const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;
const LOG_APPEND_TIME = 1 << 3;

function batch(firstOffset: number, values: string[], options: { producerId?: number; transactional?: boolean; attributes?: number; lastOffsetDelta?: number; magic?: number; key?: Buffer } = {}): RecordBatch {
  const attributes = (options.attributes ?? 0) | (options.transactional ? TRANSACTIONAL : 0);
  const parsed = recordBatch({
    baseOffset: BigInt(firstOffset),
    attributes,
    lastOffsetDelta: options.lastOffsetDelta ?? values.length - 1,
    baseTimestamp: 1_000n,
    maxTimestamp: 9_000n,
    producerId: BigInt(options.producerId ?? -1),
    producerEpoch: 0,
    baseSequence: 0,
    records: values.map((value, i) => ({ timestampDelta: i * 10, offsetDelta: i, key: options.key ?? null, value: Buffer.from(value), headers: [] })),
  });
  return options.magic === undefined ? parsed : { ...parsed, magic: options.magic };
}

/** A COMMIT or ABORT marker: a control batch with one record whose key is (version 0, type). */
function marker(offset: number, producerId: number, type: 'commit' | 'abort'): RecordBatch {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(type === 'abort' ? 0 : 1, 2);
  return batch(offset, ['\0\0\0\0\0\0'], { producerId, transactional: true, attributes: CONTROL, key });
}

const tx = (offset: number, producerId: number, values: string[]) => batch(offset, values, { producerId, transactional: true });
const read = (slice: ReturnType<typeof committedSlice>) => slice.records.map((r) => `${r.offset}:${r.value?.toString()}`);

describe('committedSlice', () => {
  test('one producer aborting twice around a commit: both aborted transactions are dropped', () => {
    const batches = [tx(0, 7, ['A1a', 'A1b']), marker(2, 7, 'abort'), tx(3, 7, ['C1']), marker(4, 7, 'commit'), tx(5, 7, ['A2']), marker(6, 7, 'abort')];
    const slice = committedSlice(batches, [{ producerId: 7n, firstOffset: 0n }, { producerId: 7n, firstOffset: 5n }], 0n, 100n);
    expect(read(slice)).toEqual(['3:C1']);
    expect(slice.nextOffset).toBe(7n);
    expect(slice.abortedRecords).toBe(3);
    expect(slice.controlBatches).toBe(3);
  });

  test('a response cut before the ABORT marker still drops the aborted records', () => {
    const slice = committedSlice([tx(0, 7, ['A1a', 'A1b'])], [{ producerId: 7n, firstOffset: 0n }], 0n, 100n);
    expect(read(slice)).toEqual([]);
    expect(slice.nextOffset).toBe(2n);
  });

  test('interleaved producers: only the aborting producer\'s transactional batches are dropped', () => {
    const batches = [
      tx(0, 1, ['p1-a']), // producer 1, aborted later
      tx(1, 2, ['p2-a']), // producer 2, committed
      batch(2, ['plain'], { producerId: 1 }), // producer 1 but idempotent, not transactional: kept
      tx(3, 1, ['p1-b']),
      marker(4, 1, 'abort'),
      tx(5, 1, ['p1-c']), // producer 1's next transaction: committed
      marker(6, 2, 'commit'),
      marker(7, 1, 'commit'),
    ];
    const slice = committedSlice(batches, [{ producerId: 1n, firstOffset: 0n }], 0n, 100n);
    expect(read(slice)).toEqual(['1:p2-a', '2:plain', '5:p1-c']);
    expect(slice.nextOffset).toBe(8n);
  });

  test('an aborted transaction that starts before fromOffset is still dropped', () => {
    const batches = [tx(0, 7, ['a', 'b', 'c']), marker(3, 7, 'abort'), tx(4, 8, ['ok']), marker(5, 8, 'commit')];
    const slice = committedSlice(batches, [{ producerId: 7n, firstOffset: 0n }], 1n, 100n);
    expect(read(slice)).toEqual(['4:ok']);
    expect(slice.abortedRecords).toBe(2); // b and c; a is below fromOffset
  });

  test('fromOffset and untilOffset cut inside batches; the position never passes untilOffset', () => {
    const batches = [batch(10, ['a', 'b', 'c', 'd']), batch(14, ['e', 'f'])];
    const middle = committedSlice(batches, null, 11n, 13n);
    expect(read(middle)).toEqual(['11:b', '12:c']);
    expect(middle.nextOffset).toBe(13n);
    const atBatchEnd = committedSlice(batches, null, 10n, 14n);
    expect(read(atBatchEnd)).toEqual(['10:a', '11:b', '12:c', '13:d']);
    expect(atBatchEnd.nextOffset).toBe(14n);
    const whole = committedSlice(batches, null, 12n, 1_000n);
    expect(whole.nextOffset).toBe(16n);
    expect(whole.bytes).toBe(4);
  });

  test('an empty batch left by compaction moves the position past its offsets', () => {
    const empty = batch(0, [], { lastOffsetDelta: 4 });
    const slice = committedSlice([empty, batch(5, ['v'])], null, 0n, 100n);
    expect(read(slice)).toEqual(['5:v']);
    expect(slice.nextOffset).toBe(6n);
  });

  test('timestamps: CreateTime per record, LogAppendTime from the batch', () => {
    const create = committedSlice([batch(0, ['a', 'b'])], null, 0n, 10n);
    expect(create.records.map((r) => r.timestamp)).toEqual([1_000, 1_010]);
    const append = committedSlice([batch(0, ['a', 'b'], { attributes: LOG_APPEND_TIME })], null, 0n, 10n);
    expect(append.records.map((r) => r.timestamp)).toEqual([9_000, 9_000]);
  });

  test('message format v0/v1 is refused, naming the partition and offset', () => {
    expect(() => committedSlice([batch(3, ['a'], { magic: 1 })], null, 0n, 10n, { topic: 'orders', partition: 2 })).toThrow(UnsupportedRecordFormatError);
    expect(() => committedSlice([batch(3, ['a'], { magic: 1 })], null, 0n, 10n, { topic: 'orders', partition: 2 })).toThrow('offset 3 of orders-2 uses message format v1');
  });
});
