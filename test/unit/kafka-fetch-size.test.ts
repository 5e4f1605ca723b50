/**
 * fetchBytesFor: how many bytes the MSK handler's committed re-read asks per Fetch, from
 * the event's records. Only the number of Fetches depends on it (test/integration/
 * kafka.test.ts reads a real span with it), so these are its bounds.
 */
import { describe, expect, it } from 'vitest';
import { fetchBytesFor, fetchBytesForPart } from '../../src/kafka/fetch-size.js';
import { defaultMaxBytes } from '../../src/kafka/read.js';
import type { KafkaRecord } from '../../src/kafka/record.js';

/** Kafka's record batch header (magic 2): base offset 8, length 4, leader epoch 4, magic 1, CRC 4, attributes 2, last offset delta 4, two timestamps 16, producer id 8, epoch 2, base sequence 4, record count 4. */
const batchHeader = 61;

const record = (offset: number, valueBytes: number): KafkaRecord => ({
  offset: BigInt(offset),
  timestamp: 0,
  key: Buffer.from('key'),
  value: Buffer.alloc(valueBytes, 1),
  headers: [['trace', Buffer.from('1234')]],
});
/** key + value + header name and value bytes, counted here by hand. */
const bytesOf = (valueBytes: number) => 3 + valueBytes + 5 + 4;

describe('fetchBytesFor', () => {
  it('asks for at least the span records\' bytes plus a whole batch header per offset (one record per batch, the most framing Kafka can add)', () => {
    const records = Array.from({ length: 100 }, (_, i) => record(10 + i, 1024));
    const asked = fetchBytesFor(records, 10n, 110n);
    expect(asked).toBeGreaterThanOrEqual(100 * (bytesOf(1024) + batchHeader));
    expect(asked).toBeLessThan(defaultMaxBytes);
  });

  it('counts only the records in [from, until): a part of the event below the position, or past the end, asks for nothing more', () => {
    const inside = Array.from({ length: 50 }, (_, i) => record(100 + i, 1024));
    const below = Array.from({ length: 50 }, (_, i) => record(50 + i, 4096));
    const after = [record(150, 100_000)];
    expect(fetchBytesFor([...below, ...inside, ...after], 100n, 150n)).toBe(fetchBytesFor(inside, 100n, 150n));
  });

  it('grows with the span\'s offsets the event does not show (markers, aborted records, records before the event), so that a gap is read in few Fetches', () => {
    const records = Array.from({ length: 10 }, (_, i) => record(1000 + i, 1024));
    expect(fetchBytesFor(records, 0n, 1010n)).toBeGreaterThan(fetchBytesFor(records, 1000n, 1010n) + 1000 * batchHeader);
  });

  it('never asks for more than a read\'s default, however large the event or the span', () => {
    const records = Array.from({ length: 10_000 }, (_, i) => record(i, 1024));
    expect(fetchBytesFor(records, 0n, 10_000n)).toBe(defaultMaxBytes);
    expect(fetchBytesFor([], 0n, 10_000_000_000n)).toBe(defaultMaxBytes);
  });
});

describe('fetchBytesForPart', () => {
  it('a gap of a read asks for its share of the read\'s bytes, never more than the read, and the whole read asks for all of it', () => {
    const whole = 3_000_000;
    expect(fetchBytesForPart(whole, 0n, 1000n, 0n, 1000n)).toBe(whole);
    const tiny = fetchBytesForPart(whole, 0n, 5n, 0n, 5000n);
    expect(tiny).toBeGreaterThanOrEqual(Math.ceil((whole * 5) / 5000));
    expect(tiny).toBeLessThan(whole / 4);
    const most = fetchBytesForPart(whole, 8n, 5000n, 0n, 5000n);
    expect(most).toBeGreaterThanOrEqual(Math.ceil((whole * 4992) / 5000));
    expect(most).toBeLessThanOrEqual(whole);
  });
});
