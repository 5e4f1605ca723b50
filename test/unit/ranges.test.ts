import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/ranges/buckets.js';
import { RangeOrderError, RangeSealer, type SealedRange, type SealingRules } from '../../src/ranges/sealer.js';
import { recordBytes, type KafkaRecord } from '../../src/kafka/record.js';
import { seededRandom } from '../helpers/random.js';

const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
const rules: SealingRules = { fileBytes: 1000, fileWindowMs: 60_000, granularity: 'hour' };

function record(offset: number, timestamp: number, valueBytes = 10): KafkaRecord {
  return { offset: BigInt(offset), timestamp, key: null, value: new Uint8Array(valueBytes), headers: [] };
}

function offsets(range: SealedRange): number[] {
  return range.files.flatMap((file) => file.records.map((r) => Number(r.offset))).sort((a, b) => a - b);
}

describe('RangeSealer: each trigger', () => {
  it('bytes: the record that reaches file_bytes is in; the range ends at the next fetch position', () => {
    const sealer = new RangeSealer(rules, 100n);
    const sealed = sealer.push([record(100, t0, 400), record(101, t0, 400), record(102, t0, 200), record(103, t0, 5)], 104n, 0);
    expect(sealed).toHaveLength(1);
    expect(sealed[0]).toMatchObject({ startOffset: 100n, endOffset: 103n, reason: 'bytes', recordCount: 3, bytes: 1000 });
    expect(sealer.sealedUpTo).toBe(103n);
  });

  it('bytes reached by a batch\'s last record: the range takes the offsets up to the position after the batch', () => {
    const sealer = new RangeSealer(rules, 0n);
    const sealed = sealer.push([record(0, t0, 999), record(1, t0, 1)], 5n, 0);
    expect(sealed.map((r) => [r.startOffset, r.endOffset, r.reason])).toEqual([[0n, 5n, 'bytes']]);
    expect(sealer.sealedUpTo).toBe(5n);
  });

  it('counts key, value and header bytes', () => {
    const withAll: KafkaRecord = { offset: 0n, timestamp: t0, key: new Uint8Array(3), value: new Uint8Array(4), headers: [['héader', new Uint8Array(5)], ['x', null]] };
    expect(recordBytes(withAll)).toBe(3 + 4 + 7 + 5 + 1);
  });

  it('span: max − min of timestamps, not first − last; the record that would reach file_window opens the next range', () => {
    const sealer = new RangeSealer(rules, 0n);
    const base = t0 + 600_000;
    // first − last stays under 60 s throughout; max − min reaches 60 s at offset 2.
    const sealed = sealer.push([record(0, base + 30_000), record(1, base + 59_000), record(2, base - 1_000), record(3, base + 30_000)], 4n, 0);
    expect(sealed.map((r) => [r.startOffset, r.endOffset, r.reason])).toEqual([[0n, 2n, 'span']]);
    expect(sealer.openRecords).toBe(2);
  });

  it('age: a range whose first record was read file_window ago seals on a tick, with no new record', () => {
    const sealer = new RangeSealer(rules, 10n);
    expect(sealer.push([record(10, t0)], 13n, 1_000)).toEqual([]);
    expect(sealer.tick(60_999)).toBeUndefined();
    const sealed = sealer.tick(61_000);
    expect(sealed).toMatchObject({ startOffset: 10n, endOffset: 13n, reason: 'age', recordCount: 1 });
    expect(sealer.tick(1_000_000)).toBeUndefined();
  });

  it('age: a range read again after its reader was gone counts from when it was first read', () => {
    const sealer = new RangeSealer(rules, 10n, 5_000);
    sealer.push([record(10, t0)], 11n, 60_000);
    expect(sealer.openSince).toBe(5_000);
    expect(sealer.tick(65_000)).toMatchObject({ reason: 'age', startOffset: 10n, endOffset: 11n });
    // Only the range that started there had an earlier reader: the next one counts from now.
    sealer.push([record(11, t0)], 12n, 70_000);
    expect(sealer.openSince).toBe(70_000);
  });

  it('age: a record read after the window opens the next range', () => {
    const sealer = new RangeSealer(rules, 0n);
    sealer.push([record(0, t0)], 1n, 0);
    const sealed = sealer.push([record(1, t0 + 1)], 2n, 60_000);
    expect(sealed.map((r) => [r.startOffset, r.endOffset, r.reason])).toEqual([[0n, 1n, 'age']]);
  });

  it('bucket: a record in a later bucket opens the next range; a late record in an earlier one becomes its own file', () => {
    const sealer = new RangeSealer({ ...rules, fileWindowMs: 10 * hour }, 0n);
    const boundary = Math.ceil(t0 / hour) * hour + hour; // a bucket start after t0
    const sealed = sealer.push(
      [record(0, boundary - 10_000), record(1, boundary - 2 * hour), record(2, boundary - 5_000), record(3, boundary + 1)],
      4n,
      0,
    );
    expect(sealed).toHaveLength(1);
    const range = sealed[0]!;
    expect([range.startOffset, range.endOffset, range.reason]).toEqual([0n, 3n, 'bucket']);
    expect(range.files.map((f) => [f.bucket, f.records.map((r) => Number(r.offset))])).toEqual([
      [bucketOf(boundary - 2 * hour, 'hour'), [1]],
      [bucketOf(boundary - 10_000, 'hour'), [0, 2]],
    ]);
  });

  it('flush, capacity and chunk seal what is open, at the reader position', () => {
    for (const reason of ['flush', 'capacity', 'chunk'] as const) {
      const sealer = new RangeSealer(rules, 7n);
      expect(sealer.flush(reason)).toBeUndefined();
      sealer.push([record(7, t0), record(9, t0)], 12n, 0);
      expect(sealer.flush(reason)).toMatchObject({ startOffset: 7n, endOffset: 12n, reason, recordCount: 2 });
    }
  });
});

describe('RangeSealer: offsets with no committed record', () => {
  it('belong to the range before them: gaps inside a batch and after its last record', () => {
    const sealer = new RangeSealer(rules, 0n);
    // 1–3 aborted, 4 a marker; 6–8 aborted; position 9 after markers.
    const sealed = sealer.push([record(0, t0, 600), record(5, t0, 600), record(9, t0)], 12n, 0);
    expect(sealed.map((r) => [r.startOffset, r.endOffset])).toEqual([[0n, 9n]]);
    expect(sealer.flush('flush')).toMatchObject({ startOffset: 9n, endOffset: 12n, recordCount: 1 });
  });

  it('a batch of only aborted records moves the position; the next range starts where the last one ended', () => {
    const sealer = new RangeSealer(rules, 0n);
    sealer.push([record(0, t0)], 1n, 0);
    expect(sealer.flush('flush')).toMatchObject({ startOffset: 0n, endOffset: 1n });
    sealer.push([], 6n, 0);
    expect(sealer.sealedUpTo).toBe(1n);
    sealer.push([record(6, t0)], 7n, 0);
    expect(sealer.flush('flush')).toMatchObject({ startOffset: 1n, endOffset: 7n, recordCount: 1 });
  });

  it('refuses records out of order or positions that go back, naming both offsets', () => {
    const sealer = new RangeSealer(rules, 10n);
    expect(() => sealer.push([record(9, t0)], 10n, 0)).toThrow(new RangeOrderError('record offset 9 is below the reader\'s position 10: records are pushed once, in order'));
    sealer.push([record(10, t0)], 11n, 0);
    expect(() => sealer.push([], 10n, 0)).toThrow('next position 10 is below the offset after the last record pushed (11)');
  });
});


/** The rules written as plainly as possible: walk the records, ask each trigger in turn. */
function naiveRanges(batches: { records: KafkaRecord[]; next: bigint; now: number }[], start: bigint, r: SealingRules) {
  const out: { start: bigint; end: bigint; reason: string; offsets: number[] }[] = [];
  let current: { start: bigint; records: KafkaRecord[]; readAt: number } | undefined;
  let rangeStart = start;
  let position = start;
  const close = (end: bigint, reason: string) => {
    out.push({ start: current!.start, end, reason, offsets: current!.records.map((x) => Number(x.offset)) });
    rangeStart = end;
    current = undefined;
  };
  for (const batch of batches) {
    for (const rec of batch.records) {
      if (current) {
        const bytes = current.records.reduce((s, x) => s + recordBytes(x), 0);
        const stamps = [...current.records.map((x) => x.timestamp), rec.timestamp];
        const maxBucket = Math.max(...current.records.map((x) => bucketOf(x.timestamp, r.granularity)));
        if (bytes >= r.fileBytes) close(rec.offset, 'bytes');
        else if (batch.now - current.readAt >= r.fileWindowMs) close(rec.offset, 'age');
        else if (bucketOf(rec.timestamp, r.granularity) > maxBucket) close(rec.offset, 'bucket');
        else if (Math.max(...stamps) - Math.min(...stamps) >= r.fileWindowMs) close(rec.offset, 'span');
      }
      current ??= { start: rangeStart, records: [], readAt: batch.now };
      current.records.push(rec);
    }
    position = batch.next;
    if (current && current.records.reduce((s, x) => s + recordBytes(x), 0) >= r.fileBytes) close(position, 'bytes');
  }
  return { ranges: out, position };
}

describe('RangeSealer against the naive rules on shuffled input', () => {
  it('agrees on every range, tiles the offsets, and puts each record in exactly one file', () => {
    for (let seed = 1; seed <= 200; seed += 1) {
      const rand = seededRandom(seed);
      const r: SealingRules = { fileBytes: 200 + Math.floor(rand() * 2000), fileWindowMs: 1000 + Math.floor(rand() * 120_000), granularity: rand() < 0.5 ? 'minute' : 'hour' };
      const start = BigInt(Math.floor(rand() * 1000));
      let offset = start;
      let clock = 0;
      let time = t0;
      const batches: { records: KafkaRecord[]; next: bigint; now: number }[] = [];
      for (let b = 0; b < 30; b += 1) {
        const records: KafkaRecord[] = [];
        const count = Math.floor(rand() * 8);
        for (let i = 0; i < count; i += 1) {
          offset += BigInt(1 + (rand() < 0.2 ? Math.floor(rand() * 4) : 0)); // aborted records between
          time += Math.floor(rand() * 20_000);
          const late = rand() < 0.1 ? Math.floor(rand() * 2 * hour) : 0;
          records.push(record(Number(offset - 1n), time - late, Math.floor(rand() * 300)));
        }
        const next = offset + BigInt(rand() < 0.2 ? Math.floor(rand() * 3) : 0);
        offset = next;
        clock += Math.floor(rand() * 20_000);
        batches.push({ records, next, now: clock });
      }
      const sealer = new RangeSealer(r, start);
      const got = batches.flatMap((batch) => sealer.push(batch.records, batch.next, batch.now));
      const want = naiveRanges(batches, start, r);
      expect(got.map((x) => ({ start: x.startOffset, end: x.endOffset, reason: x.reason, offsets: offsets(x) })), `seed ${seed}`).toEqual(want.ranges);
      // Tiling: each range starts where the one before ended.
      let expectedStart = start;
      for (const range of got) {
        expect(range.startOffset).toBe(expectedStart);
        expect(range.endOffset).toBeGreaterThan(range.startOffset);
        for (const file of range.files) for (const rec of file.records) expect(bucketOf(rec.timestamp, r.granularity)).toBe(file.bucket);
        expectedStart = range.endOffset;
      }
      expect(sealer.sealedUpTo).toBe(expectedStart);
      const all = batches.flatMap((batch) => batch.records.map((x) => Number(x.offset)));
      const inFiles = [...got.flatMap(offsets), ...Array.from({ length: sealer.openRecords }, () => -1)];
      expect(inFiles.length).toBe(all.length);
      expect(new Set(got.flatMap(offsets)).size).toBe(got.flatMap(offsets).length);
    }
  });
});
