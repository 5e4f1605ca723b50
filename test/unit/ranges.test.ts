import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/ranges/buckets.js';
import { RangeOrderError, RangeSealer, type SealedRange, type SealingRules } from '../../src/ranges/sealer.js';
import { recordBytes, type KafkaRecord } from '../../src/kafka/record.js';
import {
  aged,
  bucketStart,
  bytesOf,
  modelRanges,
  randomScenario,
  sealingViolations,
  totalBytes,
  type Property,
  type Scenario,
  type SealerRun,
  type Violation,
} from '../helpers/ranges-model.js';

const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
const rules: SealingRules = { fileBytes: 1000, fileWindowMs: 60_000, fileAgeMs: 60_000, granularity: 'hour' };

function record(offset: number, timestamp: number, valueBytes = 10): KafkaRecord {
  return { offset: BigInt(offset), timestamp, key: null, value: new Uint8Array(valueBytes), headers: [] };
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
    expect(bytesOf(withAll)).toBe(3 + 4 + 7 + 5 + 1); // the property tests' own count agrees
  });

  it('span: max − min of timestamps, not first − last; the record that would reach file_window opens the next range', () => {
    const sealer = new RangeSealer(rules, 0n);
    const base = t0 + 600_000;
    // first − last stays under 60 s throughout; max − min reaches 60 s at offset 2.
    const sealed = sealer.push([record(0, base + 30_000), record(1, base + 59_000), record(2, base - 1_000), record(3, base + 30_000)], 4n, 0);
    expect(sealed.map((r) => [r.startOffset, r.endOffset, r.reason])).toEqual([[0n, 2n, 'span']]);
    expect(sealer.openRecords).toBe(2);
  });

  it('span is a file\'s, not the range\'s: a late record of the bucket before widens only its own file, so jittered timestamps across an hour do not cut a range of one record', () => {
    const hourly = { ...rules, fileWindowMs: 3_600_000, granularity: 'hour' as const };
    const hour = Date.UTC(2026, 11, 1, 16);
    const sealer = new RangeSealer(hourly, 0n);
    // 16:00:00, then 15:59:59 (late), then 16:59:59.5: over the range that spans 1 h 0.5 s, in bucket 16:00 only 59:59.5
    const sealed = sealer.push([record(0, hour), record(1, hour - 1_000), record(2, hour + 3_599_500), record(3, hour + 3_600_000)], 4n, 0);
    expect(sealed.map((r) => [r.startOffset, r.endOffset, r.reason, r.files.map((f) => [f.bucket, f.records.length])])).toEqual([[0n, 3n, 'bucket', [[hour - 3_600_000, 1], [hour, 2]]]]);
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

/** Drives a RangeSealer through a scenario's steps, as a partition reader does. */
function runSealer(scenario: Scenario): SealerRun {
  const sealer = new RangeSealer(scenario.rules, scenario.start, scenario.earlierReadAt, scenario.earlierRecords);
  const sealed: SealerRun['sealed'] = [];
  scenario.steps.forEach((step, index) => {
    if (step.kind === 'batch') {
      for (const range of sealer.push(step.records, step.next, step.now)) sealed.push({ range, step: index });
    } else {
      const range = step.kind === 'tick' ? sealer.tick(step.now) : sealer.flush(step.reason);
      if (range) sealed.push({ range, step: index });
    }
  });
  return { sealed, sealedUpTo: sealer.sealedUpTo, openRecords: sealer.openRecords, position: sealer.position };
}

const seeds = Array.from({ length: 500 }, (_, i) => i + 1);
let memo: { scenario: Scenario; run: SealerRun; violations: Violation[] }[] | undefined;
const scenarios = () => (memo ??= seeds.map((seed) => {
  const scenario = randomScenario(seed);
  const run = runSealer(scenario);
  return { scenario, run, violations: sealingViolations(scenario, run) };
}));

/** The violations of one property over every seed (the first few, to read). */
function violations(property: Property): string[] {
  return scenarios().flatMap(({ violations: found }) => found.filter((v) => v.property === property).map((v) => v.message)).slice(0, 5);
}

describe('RangeSealer on seeded out-of-order input (500 seeds), checked against the rules of docs/design.md', () => {
  it('every record read is in exactly one file, or in the open range when no flush ends the input', () => {
    expect(violations('one-file')).toEqual([]);
  });

  it('ranges tile the offsets from the start position: each starts where the one before ended, holds only its offsets, and ends at the reader\'s next fetch position', () => {
    expect(violations('tiling')).toEqual([]);
  });

  it('each file holds the records of one time bucket, in offset order; a range has one file per bucket among its records', () => {
    expect(violations('one-bucket')).toEqual([]);
  });

  it('every seal is justified by its reason (bytes reached by its last record, span and bucket by the record that opens the next range, age by the read time, flush, capacity and chunk by the caller)', () => {
    expect(violations('justified')).toEqual([]);
  });

  it('no trigger was missed: no range goes on past a record, a batch end, a tick or a flush at which a trigger held', () => {
    expect(violations('not-missed')).toEqual([]);
  });

  it('the sealer ends its ranges where the plain model does, each with a reason that holds there', () => {
    for (const { scenario, run } of scenarios()) {
      const model = modelRanges(scenario);
      const got = run.sealed.map(({ range, step }) => ({
        start: range.startOffset,
        end: range.endOffset,
        step,
        offsets: range.files.flatMap((f) => f.records.map((r) => r.offset)).sort((a, b) => (a < b ? -1 : 1)),
      }));
      expect(got, `seed ${scenario.seed}`).toEqual(model.ranges.map(({ start, end, step, offsets }) => ({ start, end, step, offsets })));
      run.sealed.forEach(({ range }, i) => expect(model.ranges[i]!.reasons, `seed ${scenario.seed}, range ${i}`).toContain(range.reason));
      expect([run.sealedUpTo, run.openRecords, run.position], `seed ${scenario.seed}`).toEqual([model.sealedUpTo, model.openOffsets.length, model.position]);
    }
  });

  it('the input is out of order and reaches every trigger, several at once and each exactly at its threshold', () => {
    const count = new Map<string, number>();
    const add = (what: string) => count.set(what, (count.get(what) ?? 0) + 1);
    for (const { scenario } of scenarios()) {
      const { rules, steps } = scenario;
      const reads = steps.flatMap((step, index) => (step.kind === 'batch' ? step.records.map((record) => ({ record, now: step.now, step: index })) : []));
      reads.forEach((read, i) => {
        if (i > 0 && read.record.timestamp < reads[i - 1]!.record.timestamp) add('timestamp goes backwards');
        if (i > 0 && read.record.offset > reads[i - 1]!.record.offset + 1n) add('offset gap between records');
        if (read.record.offset > 2n ** 53n) add('offset above 2^53');
      });
      steps.forEach((step, index) => {
        if (step.kind === 'batch' && step.records.length === 0) add('batch of no record');
        if (step.kind === 'batch' && step.records.length > 0 && step.next > step.records.at(-1)!.offset + 1n) add('offsets after a batch\'s last record');
        if (step.kind === 'tick' && steps[index - 1]?.kind === 'batch' && steps[index + 1]?.kind === 'batch') add('tick between batches');
      });
      const model = modelRanges(scenario);
      model.ranges.forEach((range, r) => {
        const records = reads.filter((read) => read.record.offset >= range.start && read.record.offset < range.end);
        const buckets = new Set(records.map((read) => bucketStart(read.record.timestamp, rules.granularity)));
        if (buckets.size > 1) add('late record: a range with files in several buckets');
        for (const reason of range.reasons) add(`sealed by ${reason}${reason === 'age' ? (steps[range.step]!.kind === 'tick' ? ' on a tick' : ' on a record') : ''}`);
        if (range.reasons.length > 1) add('several triggers at one record');
        const opener = reads.find((read) => read.record.offset === range.end && read.step === range.step);
        // span is a file's: the timestamps of the opener's bucket among the range's records
        const openerBucket = opener && bucketStart(opener.record.timestamp, rules.granularity);
        const stamps = [...records, ...(opener ? [opener] : [])].filter((read) => bucketStart(read.record.timestamp, rules.granularity) === openerBucket).map((read) => read.record.timestamp);
        const firstReadAt = r === 0 && scenario.earlierReadAt !== undefined ? Math.min(scenario.earlierReadAt, records[0]!.now) : records[0]!.now;
        const sealStep = steps[range.step]!;
        const sealNow = sealStep.kind === 'tick' ? sealStep.now : opener?.now;
        if (range.reasons.includes('bytes') && totalBytes(records.map((read) => read.record)) === rules.fileBytes) add('bytes exactly file_bytes');
        if (range.reasons.includes('span') && Math.max(...stamps) - Math.min(...stamps) === rules.fileWindowMs) add('span exactly file_window');
        if (range.reasons.includes('age') && sealNow !== undefined && sealNow - firstReadAt === rules.fileAgeMs) add('age exactly file_age');
        if (range.reasons.includes('age') && rules.fileAgeMs < rules.fileWindowMs) add('sealed by age, file_age shorter than file_window');
        if (range.reasons.includes('age') && r === 0 && scenario.earlierReadAt !== undefined && scenario.earlierReadAt < records[0]!.now) add('age counted from an earlier reader');
        // The earlier reader's records stay together although the range was already aged when they were read again.
        if (r === 0 && scenario.earlierReadAt !== undefined && scenario.earlierRecords >= 2 && records.length >= scenario.earlierRecords && aged(rules, firstReadAt, records[1]!.now)) add('records an earlier reader held are not split by age');
      });
      if (model.openOffsets.length > 0) add('input ends with records in the open range');
    }
    const wanted = [
      'timestamp goes backwards', 'offset gap between records', 'offset above 2^53', 'batch of no record', 'offsets after a batch\'s last record',
      'tick between batches', 'late record: a range with files in several buckets', 'several triggers at one record',
      'sealed by bytes', 'sealed by span', 'sealed by bucket', 'sealed by age on a record', 'sealed by age on a tick',
      'sealed by flush', 'sealed by capacity', 'sealed by chunk',
      'bytes exactly file_bytes', 'span exactly file_window', 'age exactly file_age', 'sealed by age, file_age shorter than file_window', 'age counted from an earlier reader',
      'records an earlier reader held are not split by age',
      'input ends with records in the open range',
    ];
    const seen = Object.fromEntries(wanted.map((what) => [what, count.get(what) ?? 0]));
    expect(Object.entries(seen).filter(([, n]) => n < 10), JSON.stringify(seen)).toEqual([]);
  });
});

describe('the property checks reject a wrong sealer', () => {
  /** A correct run of the first seed that has a range sealed by `reason` (not at its first range). */
  function runWith(reason: string) {
    for (const { scenario, run } of scenarios()) {
      const index = run.sealed.findIndex(({ range }, i) => i > 0 && range.reason === reason && i + 1 < run.sealed.length);
      if (index > 0) return { scenario, run, index };
    }
    throw new Error(`no seed seals a range by ${reason}`);
  }
  const properties = (scenario: Scenario, run: SealerRun) => [...new Set(sealingViolations(scenario, run).map((v) => v.property))].sort();
  const withRange = (run: SealerRun, index: number, change: (range: SealedRange) => SealedRange): SealerRun => ({
    ...run,
    sealed: run.sealed.map((entry, i) => (i === index ? { ...entry, range: change(entry.range) } : entry)),
  });

  it('a range that goes on past a trigger (two ranges merged) is a missed trigger', () => {
    for (const reason of ['bytes', 'span', 'bucket', 'age', 'flush'] as const) {
      const { scenario, run, index } = runWith(reason);
      const [a, b] = [run.sealed[index - 1]!, run.sealed[index]!];
      const records = [...a.range.files, ...b.range.files].flatMap((f) => f.records).sort((x, y) => (x.offset < y.offset ? -1 : 1));
      const merged = { range: { ...b.range, startOffset: a.range.startOffset, files: splitByBucket(records, scenario), recordCount: records.length, bytes: totalBytes(records) }, step: b.step };
      const wrong = { ...run, sealed: [...run.sealed.slice(0, index - 1), merged, ...run.sealed.slice(index + 1)] };
      expect(properties(scenario, wrong), `${reason}, seed ${scenario.seed}`).toContain('not-missed');
    }
  });

  it('a seal under a reason that does not hold is unjustified', () => {
    const { scenario, run, index } = runWith('bytes');
    expect(properties(scenario, withRange(run, index, (range) => ({ ...range, reason: 'chunk' })))).toEqual(['justified']);
    const span = runWith('span');
    expect(modelRanges(span.scenario).ranges[span.index]!.reasons).toEqual(['span']);
    expect(properties(span.scenario, withRange(span.run, span.index, (range) => ({ ...range, reason: 'bytes' })))).toEqual(['justified']);
  });

  it('an end moved by one offset breaks the tiling', () => {
    const { scenario, run, index } = runWith('span');
    const moved = withRange(withRange(run, index, (range) => ({ ...range, endOffset: range.endOffset + 1n })), index + 1, (range) => ({ ...range, startOffset: range.startOffset + 1n }));
    expect(properties(scenario, moved)).toContain('tiling');
  });

  it('a record lost or put in two files is reported', () => {
    const { scenario, run, index } = runWith('bytes');
    const lost = withRange(run, index, (range) => ({ ...range, files: range.files.map((f, i) => (i === 0 ? { ...f, records: f.records.slice(1) } : f)) }));
    expect(properties(scenario, lost)).toContain('one-file');
    const extra = run.sealed[index - 1]!.range.files[0]!.records[0]!;
    const twice = withRange(run, index, (range) => ({ ...range, files: [...range.files, { bucket: bucketOf(extra.timestamp, scenario.rules.granularity), records: [extra] }] }));
    expect(properties(scenario, twice)).toContain('one-file');
  });
});

function splitByBucket(records: KafkaRecord[], scenario: Scenario) {
  const buckets = [...new Set(records.map((r) => bucketStart(r.timestamp, scenario.rules.granularity)))].sort((a, b) => a - b);
  return buckets.map((bucket) => ({ bucket, records: records.filter((r) => bucketStart(r.timestamp, scenario.rules.granularity) === bucket) }));
}
