/**
 * The range rules of docs/design.md ("When a range ends"), written as plainly as
 * possible and without src/ranges/sealer.ts (only its types are named here), for the
 * property tests of test/unit/ranges.test.ts:
 *
 *   - the plain model: walk the input, ask every trigger at every point, close the range;
 *   - the property checks: given the input and the ranges some sealer produced, is every
 *     record in exactly one file, do the ranges tile the offsets, does each file hold one
 *     bucket, is every seal justified by its reason, and was no trigger missed;
 *   - a seeded generator of input that is really out of order.
 *
 * Input is a list of steps, as a partition reader drives a sealer: a batch of records
 * read at `now` with the reader's next fetch position after it, a tick at `now`, or a
 * flush asked for by the caller (manual flush, capacity, end of a backfill chunk).
 */
import type { KafkaRecord } from '../../src/kafka/record.js';
import type { SealedRange, SealReason, SealingRules } from '../../src/ranges/sealer.js';
import type { Granularity } from '../../src/table/settings.js';
import { seededRandom } from './random.js';

export type CallerReason = 'flush' | 'capacity' | 'chunk';

export type Step =
  | { kind: 'batch'; records: KafkaRecord[]; next: bigint; now: number }
  | { kind: 'tick'; now: number }
  | { kind: 'flush'; reason: CallerReason };

export interface Scenario {
  seed: number;
  rules: SealingRules;
  /** Where reading starts (the partition's indexed_end). */
  start: bigint;
  /** When an earlier reader (now gone) first read the range that starts at `start`. */
  earlierReadAt: number | undefined;
  /**
   * How many records that reader held in that range. They were read before the range
   * aged, so the age trigger does not fire at any of them (only at the records after).
   */
  earlierRecords: number;
  steps: Step[];
}

// ---------------------------------------------------------------------------------------
// The rules, on plain values.

const bucketMs: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** The start of the UTC time bucket holding `timestamp`. */
export function bucketStart(timestamp: number, granularity: Granularity): number {
  return Math.floor(timestamp / bucketMs[granularity]) * bucketMs[granularity];
}

export function bucketLength(granularity: Granularity): number {
  return bucketMs[granularity];
}

/** Key + value + header (UTF-8 name + value) bytes: what file_bytes counts. */
export function bytesOf(record: KafkaRecord): number {
  let bytes = (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of record.headers) bytes += new TextEncoder().encode(name).length + (value?.length ?? 0);
  return bytes;
}

export function totalBytes(records: readonly KafkaRecord[]): number {
  return records.reduce((sum, record) => sum + bytesOf(record), 0);
}

/** Trigger `bytes`: the range's key + value + header bytes reached file_bytes. */
export function bytesReached(rules: SealingRules, held: readonly KafkaRecord[]): boolean {
  return totalBytes(held) >= rules.fileBytes;
}

/**
 * Trigger `span`: max − min of the timestamps of one file of the range, the records in
 * `next`'s time bucket with `next` among them, reaches file_window.
 */
export function spanReached(rules: SealingRules, held: readonly KafkaRecord[], next: KafkaRecord): boolean {
  const bucket = bucketStart(next.timestamp, rules.granularity);
  const stamps = [...held, next].filter((record) => bucketStart(record.timestamp, rules.granularity) === bucket).map((record) => record.timestamp);
  return Math.max(...stamps) - Math.min(...stamps) >= rules.fileWindowMs;
}

/** Trigger `age`: the range's first record was read file_age ago. */
export function aged(rules: SealingRules, firstReadAt: number, now: number): boolean {
  return now - firstReadAt >= rules.fileAgeMs;
}

/** Trigger `bucket`: `next` falls in a later time bucket than every record of the range. */
export function laterBucket(rules: SealingRules, held: readonly KafkaRecord[], next: KafkaRecord): boolean {
  const latest = Math.max(...held.map((record) => bucketStart(record.timestamp, rules.granularity)));
  return bucketStart(next.timestamp, rules.granularity) > latest;
}

/** The triggers that hold when `next` is read at `now` into a range holding `held` (first read at `firstReadAt`). */
export function triggersAtRecord(rules: SealingRules, held: readonly KafkaRecord[], firstReadAt: number, next: KafkaRecord, now: number, ageCounts = true): SealReason[] {
  const reasons: SealReason[] = [];
  if (bytesReached(rules, held)) reasons.push('bytes');
  if (ageCounts && aged(rules, firstReadAt, now)) reasons.push('age');
  if (laterBucket(rules, held, next)) reasons.push('bucket');
  if (spanReached(rules, held, next)) reasons.push('span');
  return reasons;
}

/** Whether age may end range `r` at its record number `held` (0-based): not among those an earlier reader had read. */
export function ageMayEndAt(scenario: Scenario, r: number, held: number): boolean {
  return !(r === 0 && scenario.earlierReadAt !== undefined && held < scenario.earlierRecords);
}

// ---------------------------------------------------------------------------------------
// The plain model.

export interface ModelRange {
  start: bigint;
  end: bigint;
  /** Every reason that holds where the range ends (several triggers can fire at one record). */
  reasons: SealReason[];
  offsets: bigint[];
  /** The step at which it is sealed. */
  step: number;
}

export interface ModelResult {
  ranges: ModelRange[];
  /** Records read but in no sealed range when the input ends. */
  openOffsets: bigint[];
  /** Where the next range starts. */
  sealedUpTo: bigint;
  position: bigint;
}

/**
 * Reads the steps one by one. A record first asks whether the open range ends before it
 * (age, bucket, span: it then opens the next range, which starts at its offset), then
 * joins the open range; a range whose bytes reach file_bytes ends right after the record
 * that reached them, at the reader's next fetch position (the next record's offset, or
 * the position after the batch: offsets with no record belong to the range before them).
 * A tick seals an aged range, a flush any open range, both at the reader's position.
 */
export function modelRanges(scenario: Scenario): ModelResult {
  const { rules } = scenario;
  const ranges: ModelRange[] = [];
  let rangeStart = scenario.start;
  let position = scenario.start;
  let open: { records: KafkaRecord[]; firstReadAt: number } | undefined;
  const close = (end: bigint, reasons: SealReason[], step: number) => {
    ranges.push({ start: rangeStart, end, reasons, offsets: open!.records.map((record) => record.offset), step });
    rangeStart = end;
    open = undefined;
  };
  scenario.steps.forEach((step, index) => {
    if (step.kind === 'batch') {
      step.records.forEach((record, i) => {
        if (open) {
          const reasons = triggersAtRecord(rules, open.records, open.firstReadAt, record, step.now, ageMayEndAt(scenario, ranges.length, open.records.length));
          if (reasons.length > 0) close(record.offset, reasons, index);
        }
        if (!open) {
          const readBefore = ranges.length === 0 && scenario.earlierReadAt !== undefined ? scenario.earlierReadAt : Infinity;
          open = { records: [], firstReadAt: Math.min(readBefore, step.now) };
        }
        open.records.push(record);
        if (bytesReached(rules, open.records)) close(step.records[i + 1]?.offset ?? step.next, ['bytes'], index);
      });
      position = step.next;
    } else if (step.kind === 'tick') {
      if (open && aged(rules, open.firstReadAt, step.now)) close(position, ['age'], index);
    } else if (open) {
      close(position, [step.reason], index);
    }
  });
  const openRecords = (open as { records: KafkaRecord[] } | undefined)?.records ?? [];
  return { ranges, openOffsets: openRecords.map((record) => record.offset), sealedUpTo: rangeStart, position };
}

// ---------------------------------------------------------------------------------------
// The property checks.

/** What a sealer produced from a scenario: each sealed range with the step that sealed it, and its state at the end. */
export interface SealerRun {
  sealed: { range: SealedRange; step: number }[];
  sealedUpTo: bigint;
  openRecords: number;
  position: bigint;
}

export type Property = 'one-file' | 'tiling' | 'one-bucket' | 'justified' | 'not-missed';

export interface Violation {
  property: Property;
  message: string;
}

interface Read {
  record: KafkaRecord;
  step: number;
  now: number;
  /** The reader's fetch position right after this record: the next record's offset in its batch, else the batch's next position. */
  after: bigint;
}

/**
 * Checks `run` against the input alone (not against the model):
 *   one-file    every record read is in exactly one file, or in the open range at the end
 *   tiling      ranges start at the start position, each where the one before ended, hold
 *               only their own offsets, and end at the reader's next fetch position
 *   one-bucket  each file holds the records of one bucket, in offset order; one file per bucket
 *   justified   each range's reason held where it was sealed
 *   not-missed  no range (nor the open rest) goes on past a record, batch end, tick or flush
 *               at which a trigger held
 */
export function sealingViolations(scenario: Scenario, run: SealerRun): Violation[] {
  const { rules } = scenario;
  const violations: Violation[] = [];
  const fail = (property: Property, message: string) => violations.push({ property, message: `seed ${scenario.seed}: ${message}` });

  // Every record read, in reading order, and the reader's position after every step.
  const reads: Read[] = [];
  const positionAfter: bigint[] = [];
  let position = scenario.start;
  scenario.steps.forEach((step, index) => {
    if (step.kind === 'batch') {
      step.records.forEach((record, i) => reads.push({ record, step: index, now: step.now, after: step.records[i + 1]?.offset ?? step.next }));
      position = step.next;
    }
    positionAfter.push(position);
  });
  const byOffset = new Map(reads.map((read) => [read.record.offset, read]));

  // one-file: count where each record is.
  const seen = new Map<bigint, number>();
  run.sealed.forEach(({ range }, r) => {
    for (const file of range.files) {
      for (const record of file.records) {
        const read = byOffset.get(record.offset);
        if (!read || read.record.timestamp !== record.timestamp || bytesOf(read.record) !== bytesOf(record)) fail('one-file', `range ${r} holds offset ${record.offset}, which was never read as such`);
        seen.set(record.offset, (seen.get(record.offset) ?? 0) + 1);
      }
    }
  });
  const unsealed = reads.filter((read) => !seen.has(read.record.offset));
  for (const [offset, count] of seen) if (count > 1) fail('one-file', `offset ${offset} is in ${count} files`);
  if (unsealed.length !== run.openRecords) fail('one-file', `${unsealed.length} records read are in no file, but the sealer holds ${run.openRecords} open`);
  const lastEnd = run.sealed.at(-1)?.range.endOffset ?? scenario.start;
  for (const read of unsealed) {
    if (read.record.offset < lastEnd) fail('one-file', `offset ${read.record.offset} is in no file, below the last range's end ${lastEnd}`);
  }
  if (run.sealedUpTo !== lastEnd) fail('tiling', `the sealer's next range starts at ${run.sealedUpTo}, the last range ended at ${lastEnd}`);
  if (run.position !== position) fail('tiling', `the sealer's position is ${run.position}, the reader's is ${position}`);

  // Per range: its records (from its files), in offset order.
  const rangeRecords = run.sealed.map(({ range }) => range.files.flatMap((file) => file.records).sort((a, b) => (a.offset < b.offset ? -1 : 1)));
  let expectedStart = scenario.start;
  let previousStep = 0;
  run.sealed.forEach(({ range, step }, r) => {
    const records = rangeRecords[r]!;
    const name = `range ${r} [${range.startOffset}, ${range.endOffset}) ${range.reason}`;

    // tiling
    if (range.startOffset !== expectedStart) fail('tiling', `${name} starts at ${range.startOffset}, the one before ended at ${expectedStart}`);
    if (range.endOffset <= range.startOffset) fail('tiling', `${name} is empty`);
    if (step < previousStep) fail('tiling', `${name} was sealed at step ${step}, after a range sealed at step ${previousStep}`);
    expectedStart = range.endOffset;
    previousStep = step;
    if (records.length === 0) {
      fail('tiling', `${name} has no record`);
      return;
    }
    for (const record of records) {
      if (record.offset < range.startOffset || record.offset >= range.endOffset) fail('tiling', `${name} holds offset ${record.offset}, outside its offsets`);
    }
    const last = byOffset.get(records.at(-1)!.offset);
    const opener = reads.find((read) => read.record.offset >= range.endOffset);
    const sealedAtRecord = opener !== undefined && opener.step === step && opener.record.offset === range.endOffset;
    const endIsPosition = range.endOffset === positionAfter[step];
    const endRightAfterLast = last !== undefined && last.step === step && range.endOffset === last.after;
    if (!sealedAtRecord && !endIsPosition && !endRightAfterLast) {
      fail('tiling', `${name} sealed at step ${step} ends neither at a record read then nor at the reader's position ${positionAfter[step]}`);
    }
    if (range.recordCount !== records.length) fail('tiling', `${name} says ${range.recordCount} records, its files hold ${records.length}`);
    if (range.bytes !== totalBytes(records)) fail('tiling', `${name} says ${range.bytes} bytes, its records have ${totalBytes(records)}`);

    // one-bucket
    let previousBucket = -Infinity;
    for (const file of range.files) {
      if (file.bucket <= previousBucket) fail('one-bucket', `${name}: file of bucket ${file.bucket} follows bucket ${previousBucket} (one file per bucket, in bucket order)`);
      previousBucket = file.bucket;
      if (file.records.length === 0) fail('one-bucket', `${name}: the file of bucket ${file.bucket} is empty`);
      file.records.forEach((record, i) => {
        if (bucketStart(record.timestamp, rules.granularity) !== file.bucket) fail('one-bucket', `${name}: offset ${record.offset} (bucket ${bucketStart(record.timestamp, rules.granularity)}) is in the file of bucket ${file.bucket}`);
        if (i > 0 && record.offset <= file.records[i - 1]!.offset) fail('one-bucket', `${name}: the file of bucket ${file.bucket} is not in offset order`);
      });
    }

    // justified
    const first = byOffset.get(records[0]!.offset);
    if (!first || !last) return; // reported under one-file
    const firstReadAt = r === 0 && scenario.earlierReadAt !== undefined ? Math.min(scenario.earlierReadAt, first.now) : first.now;
    const sealStep = scenario.steps[step]!;
    const atRecord = (what: string, holds: (next: Read) => boolean) => {
      if (!sealedAtRecord) fail('justified', `${name}: ${what}, but no record read at step ${step} opens the next range at ${range.endOffset}`);
      else if (!holds(opener)) fail('justified', `${name}: ${what} does not hold for offset ${opener.record.offset}`);
    };
    switch (range.reason) {
      case 'bytes': {
        const bytes = totalBytes(records);
        const before = bytes - bytesOf(records.at(-1)!);
        if (bytes < rules.fileBytes) fail('justified', `${name}: ${bytes} bytes do not reach file_bytes ${rules.fileBytes}`);
        if (before >= rules.fileBytes) fail('justified', `${name}: file_bytes ${rules.fileBytes} was reached (${before}) before its last record`);
        if (!endRightAfterLast) fail('justified', `${name}: a bytes seal ends right after the record that reached file_bytes, at ${last.after}, read at step ${last.step}`);
        break;
      }
      case 'span':
        atRecord('span', (next) => spanReached(rules, records, next.record));
        break;
      case 'bucket':
        atRecord('a later bucket', (next) => laterBucket(rules, records, next.record));
        break;
      case 'age':
        if (sealStep.kind === 'tick') {
          if (!aged(rules, firstReadAt, sealStep.now)) fail('justified', `${name}: sealed by a tick at ${sealStep.now}, but first read at ${firstReadAt}`);
          if (!endIsPosition) fail('justified', `${name}: sealed by a tick, but it does not end at the reader's position ${positionAfter[step]}`);
        } else {
          atRecord('age', (next) => aged(rules, firstReadAt, next.now) && ageMayEndAt(scenario, r, records.length));
        }
        break;
      default:
        if (sealStep.kind !== 'flush' || sealStep.reason !== range.reason) fail('justified', `${name}: step ${step} is a ${sealStep.kind}${sealStep.kind === 'flush' ? ` (${sealStep.reason})` : ''}`);
        else if (!endIsPosition) fail('justified', `${name}: sealed by the caller, but it does not end at the reader's position ${positionAfter[step]}`);
    }
  });

  // not-missed: for each range and the open rest, every point it went on past.
  const spans = run.sealed.map(({ step }, r) => ({ records: rangeRecords[r]!, sealedAt: step, name: `range ${r}` }));
  spans.push({ records: unsealed.map((read) => read.record), sealedAt: scenario.steps.length, name: 'the open range' });
  spans.forEach(({ records, sealedAt, name }, r) => {
    const reads_ = records.map((record) => byOffset.get(record.offset)).filter((read): read is Read => read !== undefined);
    if (reads_.length === 0) return;
    const firstReadAt = r === 0 && scenario.earlierReadAt !== undefined ? Math.min(scenario.earlierReadAt, reads_[0]!.now) : reads_[0]!.now;
    for (let k = 1; k < reads_.length; k += 1) {
      const held = reads_.slice(0, k).map((read) => read.record);
      const fired = triggersAtRecord(rules, held, firstReadAt, reads_[k]!.record, reads_[k]!.now, ageMayEndAt(scenario, r, k));
      if (fired.length > 0) fail('not-missed', `${name} went on past offset ${reads_[k]!.record.offset} (read at step ${reads_[k]!.step}), where ${fired.join(', ')} held`);
    }
    for (let t = reads_[0]!.step; t < sealedAt; t += 1) {
      const step = scenario.steps[t]!;
      if (step.kind === 'batch') {
        const held = reads_.filter((read) => read.step <= t).map((read) => read.record);
        if (bytesReached(rules, held)) fail('not-missed', `${name} went on past the end of batch ${t} with ${totalBytes(held)} bytes (file_bytes ${rules.fileBytes})`);
      } else if (step.kind === 'tick') {
        if (aged(rules, firstReadAt, step.now)) fail('not-missed', `${name} went on past a tick at ${step.now}, first read at ${firstReadAt}`);
      } else {
        fail('not-missed', `${name} went on past a ${step.reason} at step ${t}`);
      }
    }
  });
  return violations;
}

// ---------------------------------------------------------------------------------------
// Seeded input that is really out of order.

/**
 * Offsets only grow (that is how a reader reads), with gaps (aborted records, markers)
 * inside batches and after them, and batches of no record at all. Timestamps wander:
 * forward, backwards, repeated, late records from earlier buckets, jumps into later
 * buckets. The reading clock stands still, creeps, or leaps past file_window; ticks and
 * caller flushes come between batches. Half the seeds use coarse values (whole seconds,
 * bytes in fifties) so that bytes, span and age land exactly on their thresholds.
 */
export function randomScenario(seed: number): Scenario {
  const rand = seededRandom(seed);
  const int = (low: number, high: number) => low + Math.floor(rand() * (high - low + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const coarse = rand() < 0.5;
  const grain = (value: number, unit: number) => (coarse ? Math.round(value / unit) * unit : value);

  const granularity = pick<Granularity>(['minute', 'hour', 'hour', 'day']);
  const fileWindowMs = coarse ? int(2, 90) * 1_000 : int(1_000, 120_000);
  const fileBytes = coarse ? int(2, 30) * 100 : int(150, 3_000);
  // file_age: as file_window (a table stored before the setting), or its own, shorter or longer
  const fileAgeMs = rand() < 0.4 ? fileWindowMs : coarse ? int(1, 120) * 1_000 : int(500, 150_000);
  const rules: SealingRules = { fileBytes, fileWindowMs, fileAgeMs, granularity };
  const bucket = bucketLength(granularity);

  // Some partitions are far along: offsets past 2^53 must stay exact.
  const start = rand() < 0.2 ? 9_007_199_254_740_000n + BigInt(int(0, 1_000)) : BigInt(int(0, 100_000));
  let offset = start;
  let now = grain(int(1_000_000, 2_000_000), 1_000);
  let time = grain(Date.UTC(2026, 10, 29, 10) + int(0, 2 * bucket), 1_000);
  const earlierReadAt = rand() < 0.3 ? now - grain(int(-fileAgeMs / 4, 2 * fileAgeMs), 1_000) : undefined;

  const clockStep = () => {
    const r = rand();
    if (r < 0.3) return 0;
    if (r < 0.8) return grain(int(0, fileAgeMs / 2), 1_000);
    return grain(int(fileAgeMs / 2, 2 * fileAgeMs), 1_000);
  };
  const timestamp = (): number => {
    const r = rand();
    if (r < 0.45) time += grain(int(0, fileWindowMs / 4), 1_000); // forward
    else if (r < 0.6) time -= grain(int(1, fileWindowMs), 1_000); // backwards
    else if (r < 0.7) return time - grain(int(1, 3) * bucket + int(0, bucket), 1_000); // a late record from an earlier bucket
    else if (r < 0.8) time = bucketStart(time, granularity) + bucket + grain(int(0, fileWindowMs / 2), 1_000); // into the next bucket
    else if (r < 0.85) time += grain(int(fileWindowMs / 2, 2 * fileWindowMs), 1_000); // a jump forward
    // else: the same timestamp again
    return time;
  };
  const record = (): KafkaRecord => {
    const size = coarse ? int(0, 8) * 50 : int(0, 400);
    const headers: [string, Uint8Array | null][] = rand() < 0.15 ? [['hé', new Uint8Array(coarse ? 0 : int(0, 30))], ['x', null]] : [];
    return {
      offset,
      timestamp: timestamp(),
      key: rand() < 0.3 ? new Uint8Array(coarse ? 0 : int(0, 16)) : null,
      value: rand() < 0.05 ? null : new Uint8Array(size),
      headers,
    };
  };

  const steps: Step[] = [];
  const count = int(10, 60);
  for (let s = 0; s < count; s += 1) {
    const r = rand();
    if (r < 0.15) {
      now += clockStep();
      steps.push({ kind: 'tick', now });
    } else if (r < 0.2) {
      steps.push({ kind: 'flush', reason: pick<CallerReason>(['flush', 'capacity', 'chunk']) });
    } else {
      now += clockStep();
      const records: KafkaRecord[] = [];
      const size = rand() < 0.15 ? 0 : int(1, 12);
      for (let i = 0; i < size; i += 1) {
        if (rand() < 0.2) offset += BigInt(int(1, 5)); // aborted records or markers before it
        records.push(record());
        offset += 1n;
      }
      if (rand() < 0.25) offset += BigInt(int(1, 4)); // aborted records or markers after the last
      steps.push({ kind: 'batch', records, next: offset, now });
    }
  }
  if (rand() < 0.7) steps.push({ kind: 'flush', reason: 'flush' });
  const earlierRecords = earlierReadAt === undefined ? 0 : int(0, 6);
  return { seed, rules, start, earlierReadAt, earlierRecords, steps };
}
