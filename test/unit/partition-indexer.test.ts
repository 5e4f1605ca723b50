/**
 * PartitionIndexer without Postgres: its catalog calls go to an in-memory twin written from
 * docs/design.md (test/helpers/memory-indexing-catalog.ts) that fails any call, before it
 * acts or after (its answer lost); its committed reads to a log in memory that fails too;
 * its builds to a builder that keeps each file's offsets, whose Schema Registry is out now and
 * then (the sealed ranges then wait in memory). Deliveries come shuffled,
 * repeated and failing, with lease takeovers between them. Whatever happened, the
 * catalog must end as docs/design.md's invariants say (1: the ranges tile the indexed
 * range and every committed record is in exactly one file; 3: nothing is added without the
 * current lease), and its ranges must be the ones the ranges model
 * (test/helpers/ranges-model.ts, written from the rules without the sealer) cuts from the
 * same records read once. The log's records are the model's own seeded input: offsets with
 * gaps (aborted records, markers), timestamps out of order across time buckets.
 */
import { describe, expect, test } from 'vitest';
import { ChunkRun, type HistorySource } from '../../src/backfill/chunk.js';
import type { NewRange } from '../../src/catalog/file-writes.js';
import { LeaseLostError } from '../../src/catalog/leases.js';
import { LeaseHeldError, PartitionIndexer, type PartitionIndexerDeps } from '../../src/indexer/partition.js';
import { OffsetOutOfRangeError } from '../../src/kafka/errors.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import type { CommittedSource, SourceBatch } from '../../src/kafka/source.js';
import type { SealedRange } from '../../src/ranges/sealer.js';
import { RegistryUnavailableError } from '../../src/schema/registry.js';
import { resolveSettings } from '../../src/table/settings.js';
import type { TableRecord } from '../../src/table/record.js';
import { MemoryIndexingCatalog, type IndexingCall } from '../helpers/memory-indexing-catalog.js';
import { seededRandom } from '../helpers/random.js';
import { modelRanges, randomScenario, type Scenario } from '../helpers/ranges-model.js';

const TABLE_ID = 7n;
const PARTITION = 3;
const TTL = 30_000;

class KafkaUnreachableError extends Error {
  override name = 'KafkaUnreachableError';
}

/**
 * The committed records of a partition, read in batches of a few records; while `failRate` > 0
 * a read may fail after any batch. Offsets below `earliest` are deleted (retention): a read
 * from below it is refused as Kafka refuses it.
 */
function memoryLog(records: readonly KafkaRecord[], end: bigint, rand: () => number): CommittedSource & { failRate: number; earliest: bigint } {
  const source = {
    failRate: 0,
    earliest: 0n,
    lastStableOffset: async () => end,
    async *read(topic: string, partition: number, from: bigint, until: bigint): AsyncIterable<SourceBatch> {
      if (from < source.earliest) throw new OffsetOutOfRangeError(topic, partition, from, source.earliest, end, 'below-earliest');
      const stop = until < end ? until : end;
      const wanted = records.filter((record) => record.offset >= from && record.offset < stop);
      let at = 0;
      do {
        await Promise.resolve();
        if (rand() < source.failRate) throw new KafkaUnreachableError('Kafka did not answer a Fetch (a fault of the test)');
        const size = 1 + Math.floor(rand() * 4);
        const batch = wanted.slice(at, at + size);
        at += size;
        yield { records: batch, nextOffset: wanted[at]?.offset ?? stop };
      } while (at < wanted.length);
    },
  };
  return source;
}

/** A build that keeps only what the test checks: each file's offsets (in its footer, as text). */
async function build(_table: TableRecord, _partition: number, range: SealedRange): Promise<NewRange> {
  await Promise.resolve();
  return {
    startOffset: range.startOffset, endOffset: range.endOffset, reason: range.reason, indexIds: [],
    files: range.files.map((file) => ({
      bucket: file.bucket, recordCount: file.records.length, fileSizeBytes: 0,
      footer: Buffer.from(file.records.map((record) => record.offset).join(',')), sha256: new Uint8Array(32),
      schemaVersion: 1, encoderVersion: 'test', columns: [], granules: null, indexEntries: [],
    })),
  };
}

/** The records of a scenario of the ranges model, in the order a reader reads them. */
const recordsOf = (scenario: Scenario): KafkaRecord[] => scenario.steps.flatMap((step) => (step.kind === 'batch' ? step.records : []));

const offsetsOf = (range: NewRange) => range.files.flatMap((file) => Buffer.from(file.footer).toString().split(',').map(BigInt)).sort((a, b) => (a < b ? -1 : 1));

function tableOf(scenario: Scenario): TableRecord {
  const settings = { ...resolveSettings({}), file_bytes: scenario.rules.fileBytes, file_window: scenario.rules.fileWindowMs, file_age: scenario.rules.fileAgeMs, granularity: scenario.rules.granularity, lease_ttl: TTL };
  return { tableId: TABLE_ID, name: 'orders', topic: 'orders', format: 'json', settings, createdAt: new Date(0), topicId: null };
}

interface Run {
  twin: MemoryIndexingCatalog;
  records: KafkaRecord[];
  start: bigint;
  end: bigint;
  scenario: Scenario;
  fencedCommits: number;
}

/**
 * One seed: the scenario's records as a log; deliveries of `until`s cut anywhere, shuffled
 * and repeated; the twin and the log failing at `failRate`; now and then the lease expires
 * and another owner's indexer takes over while the old one still holds its open range.
 * Then deliveries to the end until one succeeds, and a flush.
 */
async function indexWithFaults(seed: number, failRate: number): Promise<Run> {
  const scenario = randomScenario(seed);
  const rand = seededRandom(seed * 7919 + 1);
  const records = recordsOf(scenario);
  const last = [...scenario.steps].reverse().find((step) => step.kind === 'batch');
  const start = scenario.start;
  const end = last?.kind === 'batch' ? last.next : start;
  const twin = new MemoryIndexingCatalog();
  twin.addPartition(TABLE_ID, PARTITION, start);
  const table = tableOf(scenario);
  const log = memoryLog(records, end, rand);
  log.failRate = failRate;
  // the Schema Registry is out now and then: the sealed ranges wait in memory and are built first on the next call
  let registryOut = false;
  const buildOrWait: typeof build = async (...args) => {
    if (registryOut) throw new RegistryUnavailableError('http://registry.test', 'connection refused (a fault of the test)');
    return build(...args);
  };
  const deps = (owner: string): PartitionIndexerDeps => ({ indexingCatalog: twin, source: log, build: buildOrWait, owner, clock: () => 0 });
  let owners = 0;
  let indexer = new PartitionIndexer(table, PARTITION, deps(`owner-${owners}`));
  const previous: PartitionIndexer[] = [];
  let fencedCommits = 0;

  const untils: bigint[] = [];
  const span = Number(end - start);
  for (let i = 0, n = 3 + Math.floor(rand() * 12); i < n; i += 1) untils.push(start + BigInt(Math.floor(rand() * (span + 1))));
  untils.sort((a, b) => (a < b ? -1 : 1));
  for (let i = 0; i < untils.length; i += 1) {
    if (rand() < 0.3) untils.splice(i + 1, 0, untils[i]!); // repeated
    if (rand() < 0.2 && i > 0) [untils[i - 1], untils[i]] = [untils[i]!, untils[i - 1]!]; // shuffled
  }
  twin.chaos = (_call) => (rand() < failRate ? (rand() < 0.5 ? 'before' : 'after') : undefined);
  for (const until of untils) {
    registryOut = rand() < failRate;
    const r = rand();
    if (r < 0.1) {
      // the lease expires; another owner takes over, the old indexer keeps what it held
      twin.now += TTL + 1;
      previous.push(indexer);
      owners += 1;
      indexer = new PartitionIndexer(table, PARTITION, deps(`owner-${owners}`));
    } else if (r < 0.15 && previous.length > 0) {
      // a late delivery to an earlier holder: refused while another holds the lease (once that
      // has expired it takes the lease back, under a new epoch, and reads again from indexed_end)
      await previous[Math.floor(rand() * previous.length)]!.advance(until).catch((error: unknown) => {
        if (error instanceof LeaseHeldError || error instanceof LeaseLostError) fencedCommits += 1;
      });
    } else if (r < 0.25) {
      await indexer.renew().catch(() => {});
    } else if (r < 0.3) {
      await indexer.release().catch(() => {});
    }
    await indexer.advance(until).catch(() => {});
  }
  twin.chaos = undefined;
  log.failRate = 0;
  registryOut = false;
  for (let tries = 0; ; tries += 1) {
    try {
      await indexer.advance(end);
      await indexer.flush();
      break;
    } catch (error) {
      // the faults are over, but a lease taken by an earlier owner lives until it expires
      if (tries > 1 || !(error instanceof LeaseHeldError)) throw error;
      twin.now += TTL + 1;
    }
  }
  return { twin, records, start, end, scenario, fencedCommits };
}

/** Invariant 1, and the model's ranges from the same records read once. */
function expectInvariants(run: Run): void {
  const { twin, records, start, end, scenario } = run;
  const row = twin.row(TABLE_ID, PARTITION);
  const ranges = row.ranges.map((committed) => committed.range);
  // tiling: the ranges cover [indexed_start, indexed_end) exactly, no gap, no overlap; indexed_end is past
  // the last record and at most the log's end (offsets after the last record, with none, lead the next range)
  expect(row.indexedStart).toBe(start);
  let at = start;
  for (const range of ranges) {
    expect(range.startOffset, `seed ${scenario.seed}: a range starts where the one before ended`).toBe(at);
    expect(range.endOffset > range.startOffset).toBe(true);
    at = range.endOffset;
  }
  expect(row.indexedEnd).toBe(at);
  expect(at <= end).toBe(true);
  if (records.length > 0) expect(at > records.at(-1)!.offset).toBe(true);
  // nothing lost, nothing twice; each file's records inside its range
  const filed = ranges.flatMap(offsetsOf);
  expect(filed, `seed ${scenario.seed}: every committed record in exactly one file`).toEqual(records.map((record) => record.offset));
  for (const range of ranges) for (const offset of offsetsOf(range)) expect(offset >= range.startOffset && offset < range.endOffset).toBe(true);
  // the model: the same records read once, at one clock (no age), flushed at the end
  const model = modelRanges({ ...scenario, earlierReadAt: undefined, earlierRecords: 0, steps: [{ kind: 'batch', records, next: end, now: 0 }, { kind: 'flush', reason: 'flush' }] });
  expect(ranges.map(offsetsOf), `seed ${scenario.seed}: the ranges the model cuts`).toEqual(model.ranges.map((range) => range.offsets));
  ranges.forEach((range, i) => expect(model.ranges[i]!.reasons, `seed ${scenario.seed}: range ${i}'s reason`).toContain(range.reason));
}

describe('PartitionIndexer against the ranges model, its catalog an in-memory twin', () => {
  test('deliveries in order, once each: the model\'s ranges, tiling the indexed range', async () => {
    for (let seed = 1; seed <= 150; seed += 1) expectInvariants(await indexWithFaults(seed, 0));
  });

  test('shuffled, repeated and failing deliveries (any catalog call or Fetch failing, before or after it acts) and takeovers: the same ranges, nothing lost or twice', async () => {
    const failed = new Set<string>();
    let fenced = 0;
    for (let seed = 1; seed <= 300; seed += 1) {
      const run = await indexWithFaults(seed, 0.15);
      expectInvariants(run);
      for (const call of run.twin.calls) if (call.failed) failed.add(`${call.call} ${call.failed}`);
      fenced += run.fencedCommits;
    }
    // the faults reached every call, both ways, and late holders were fenced off
    const calls: IndexingCall[] = ['acquireLease', 'renewLease', 'releaseLease', 'setWaitingReason', 'commitRanges'];
    for (const call of calls) for (const when of ['before', 'after']) expect(failed, `${call} ${when}`).toContain(`${call} ${when}`);
    expect(fenced).toBeGreaterThan(0);
  });

  test('a commit under a lease that expired and was taken while the range was built is refused and adds nothing (invariant 3)', async () => {
    const scenario = randomScenario(42);
    const records = recordsOf(scenario);
    const end = records.at(-1)!.offset + 1n;
    const twin = new MemoryIndexingCatalog();
    twin.addPartition(TABLE_ID, PARTITION, scenario.start);
    const log = memoryLog(records, end, seededRandom(1));
    let duringBuild: (() => Promise<void>) | undefined;
    const slowBuild: typeof build = async (table, partition, range) => {
      const then = duringBuild;
      duringBuild = undefined;
      await then?.();
      return build(table, partition, range);
    };
    const deps = (owner: string): PartitionIndexerDeps => ({ indexingCatalog: twin, source: log, build: slowBuild, owner, clock: () => 0 });
    const table = { ...tableOf(scenario), settings: { ...tableOf(scenario).settings, file_bytes: 1 << 30, file_window: 1 << 30, granularity: 'day' as const } };
    const first = new PartitionIndexer(table, PARTITION, deps('first'));
    const second = new PartitionIndexer(table, PARTITION, deps('second'));
    await first.advance(end);
    expect(first.openBytes).toBeGreaterThan(0); // an open range, nothing sealed yet
    await expect(second.advance(end)).rejects.toBeInstanceOf(LeaseHeldError);
    // while the first builds its range, its lease expires and the second takes the partition
    duringBuild = async () => {
      twin.now += TTL + 1;
      await second.advance(end);
    };
    const row = twin.row(TABLE_ID, PARTITION);
    const before = row.ranges.length; // what the first committed while it held the lease
    await expect(first.flush()).rejects.toBeInstanceOf(LeaseLostError);
    expect(row.ranges.slice(before).map((c) => c.epoch)).toEqual(row.ranges.slice(before).map(() => 2n)); // nothing more of the first's epoch
    expect(row.ranges.slice(0, before).map((c) => c.epoch)).toEqual(row.ranges.slice(0, before).map(() => 1n));
    expect(first.heldLease).toBeUndefined(); // it dropped what it held
    await second.flush();
    expect(row.ranges[0]!.range.startOffset).toBe(scenario.start);
    expect(row.indexedEnd).toBe(end);
    expect(row.ranges.flatMap((c) => offsetsOf(c.range))).toEqual(records.map((record) => record.offset));
  });

  test('retention deletes offsets nobody indexed while calls fail: lost intervals and ranges tile the indexed range, each record in one file or lost, none twice', async () => {
    let lostSeen = 0;
    const failed = new Set<string>();
    for (let seed = 1; seed <= 200; seed += 1) {
      const scenario = randomScenario(seed);
      const rand = seededRandom(seed * 31 + 7);
      const records = recordsOf(scenario);
      if (records.length < 4) continue;
      const end = records.at(-1)!.offset + 1n;
      const twin = new MemoryIndexingCatalog();
      twin.addPartition(TABLE_ID, PARTITION, scenario.start);
      const log = memoryLog(records, end, rand);
      const indexer = new PartitionIndexer(tableOf(scenario), PARTITION, { indexingCatalog: twin, source: log, build, owner: 'one', clock: () => 0 });
      twin.chaos = (_call) => (rand() < 0.15 ? (rand() < 0.5 ? 'before' : 'after') : undefined);
      for (let i = 0; i < 8; i += 1) {
        // Kafka deletes up to a record's offset now and then, below or above what is indexed
        if (rand() < 0.3) {
          const upTo = records[Math.floor(rand() * records.length)]!.offset;
          if (upTo > log.earliest) log.earliest = upTo;
        }
        await indexer.advance(scenario.start + BigInt(Math.floor(rand() * Number(end - scenario.start + 1n)))).catch(() => {});
      }
      twin.chaos = undefined;
      await indexer.advance(end);
      await indexer.flush();
      for (const call of twin.calls) if (call.failed) failed.add(`${call.call} ${call.failed}`);
      const row = twin.row(TABLE_ID, PARTITION);
      lostSeen += row.lost.length;
      // ranges and lost intervals tile [indexed_start, indexed_end)
      const pieces = [...row.ranges.map((c) => ({ start: c.range.startOffset, end: c.range.endOffset })), ...row.lost].sort((a, b) => (a.start < b.start ? -1 : 1));
      let at = row.indexedStart;
      for (const piece of pieces) {
        expect(piece.start, `seed ${seed}: tiling`).toBe(at);
        at = piece.end;
      }
      expect(at).toBe(row.indexedEnd);
      expect(row.indexedEnd > records.at(-1)!.offset).toBe(true);
      // each record in exactly one file, or in a lost interval (then deleted before it was indexed); none twice
      const filed = row.ranges.flatMap((c) => offsetsOf(c.range));
      expect(new Set(filed).size, `seed ${seed}: no record twice`).toBe(filed.length);
      const inFiles = new Set(filed);
      for (const record of records) {
        const lost = row.lost.some((l) => record.offset >= l.start && record.offset < l.end);
        expect(inFiles.has(record.offset) !== lost, `seed ${seed}: offset ${record.offset} in a file (${inFiles.has(record.offset)}) or lost (${lost}), one of them`).toBe(true);
        if (lost) expect(record.offset < log.earliest).toBe(true);
      }
    }
    expect(lostSeen).toBeGreaterThan(0);
    for (const when of ['before', 'after']) expect(failed).toContain(`recordLostInterval ${when}`);
  });

  test('backfill chunks commit through the same seam, at indexed_start under their claim, while live indexing commits at indexed_end: together they tile, each record once, a chunk whose answer was lost is not committed twice', async () => {
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 120; seed += 1) {
      const scenario = randomScenario(seed);
      const rand = seededRandom(seed * 131 + 3);
      const records = recordsOf(scenario);
      if (records.length < 6) continue;
      const end = records.at(-1)!.offset + 1n;
      const liveStart = records[Math.floor(records.length / 2)]!.offset;
      const twin = new MemoryIndexingCatalog();
      const row = twin.addPartition(TABLE_ID, PARTITION, liveStart);
      row.backfill.cursor = liveStart;
      row.backfill.target = scenario.start;
      const table = { ...tableOf(scenario), settings: { ...tableOf(scenario).settings, backfill_offsets: 1 + Math.floor(rand() * Number(liveStart - scenario.start)) } };
      const log = memoryLog(records, end, rand);
      const history: HistorySource = {
        earliest: async () => scenario.start,
        async *read(topic, partition, start, chunkEnd) {
          for await (const batch of log.read(topic, partition, start, chunkEnd)) yield { ...batch, bytes: 0 };
        },
      };
      const live = new PartitionIndexer(table, PARTITION, { indexingCatalog: twin, source: log, build, owner: 'live', clock: () => 0 });
      // a chunk's claim and state as a run of backfillChunk takes them; Postgres is not reached (no target raised, no renewal due)
      // as the state machine asks: a chunk names the cursor it ends at, and is asked again with it after a failure
      const chunk = async (end: bigint | null) => {
        const { claim, state } = twin.claimBackfill(TABLE_ID, PARTITION, 'backfill', TTL);
        const run = new ChunkRun(undefined as never, table, claim, TTL, undefined as never, { history, build, indexingCatalog: twin });
        return run.run(state, end ?? undefined, 0);
      };
      let asked: bigint | null = null;
      twin.chaos = (call) => (call === 'commitBackfillChunk' || call === 'commitRanges') && rand() < 0.25 ? (rand() < 0.5 ? 'before' : 'after') : undefined;
      let done = false;
      for (let i = 0; i < 200 && !done; i += 1) {
        if (rand() < 0.5) await live.advance(liveStart + BigInt(Math.floor(rand() * Number(end - liveStart + 1n)))).catch(() => {});
        asked ??= row.backfill.cursor;
        const result = await chunk(asked).catch((error: Error) => ({ outcome: `failed: ${error.name}` }));
        outcomes.add(result.outcome);
        if (!result.outcome.startsWith('failed')) asked = null;
        done = result.outcome === 'done';
      }
      twin.chaos = undefined;
      expect(done, `seed ${seed}: backfill done`).toBe(true);
      await live.advance(end);
      await live.flush();
      // ranges tile [indexed_start, indexed_end): backfill's below the live start, live's above;
      // indexed_start is at or below the first record (offsets below it with no record stay outside)
      expect(row.backfill.cursor).toBe(scenario.start);
      expect(row.indexedStart <= records[0]!.offset && row.indexedStart >= scenario.start).toBe(true);
      let at = row.indexedStart;
      for (const committed of [...row.ranges].sort((a, b) => (a.range.startOffset < b.range.startOffset ? -1 : 1))) {
        expect(committed.range.startOffset, `seed ${seed}: tiling`).toBe(at);
        expect(committed.source).toBe(committed.range.endOffset <= liveStart ? 'backfill' : 'live');
        at = committed.range.endOffset;
      }
      expect(row.indexedEnd).toBe(at);
      const filed = row.ranges.flatMap((c) => offsetsOf(c.range)).sort((a, b) => (a < b ? -1 : 1));
      expect(filed, `seed ${seed}: every record in exactly one file`).toEqual(records.map((record) => record.offset));
    }
    // a chunk asked again after its commit's answer was lost finds it committed, and commits nothing twice
    expect(outcomes).toEqual(new Set(['committed', 'empty', 'skipped', 'done', 'failed: CatalogUnreachableError']));
  });
});
