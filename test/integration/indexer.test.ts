import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { findGranules, listFiles } from '../../src/catalog/file-reads.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import type { SealReason } from '../../src/ranges/sealer.js';
import type { FileGranules } from '../../src/catalog/file-writes.js';
import { buildRangeFiles, rangeToBuild } from '../../src/files/files.js';
import { rangeFromKafka } from '../../src/files/rebuild.js';
import { openCatalog } from '../../src/catalog/db.js';
import { findTable } from '../../src/catalog/tables.js';
import type { Engine } from '../../src/runtime/engine.js';
import { EventShapeError, toKafkaEvent } from '../../src/indexer/kafka-event.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { DeliveryFailedError, handleKafkaEvent, indexerFor, type IndexerRuntime, type PartitionOutcome } from '../../src/indexer/handler.js';
import { LeaseHeldError } from '../../src/indexer/partition.js';
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import { openTransaction, produce, type ProducedPartition } from '../../src/kafka/produce.js';
import { highWatermark } from '../../src/kafka/offsets.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { kafkaSource, type CommittedSource } from '../../src/kafka/source.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { growTopic, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { checkTable } from '../helpers/verify.js';
import { timeOf } from '../helpers/table-audit.js';
import { readCommittedIndependently, readUncommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('indexer');
});
afterAll(async () => {
  await engine.close();
});

const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 29, 9, 0, 0);

const runtime = (owner: string, clock: () => number = Date.now): IndexerRuntime => testRuntime(engine, owner, { clock });
const table = (topic: string, settings: Record<string, string>, format: 'json' | 'raw' = 'json', on: Engine = engine) => testTable(on, topic, settings, format);

async function reasons(tableId: bigint, on: Engine = engine): Promise<string[]> {
  return (await listFiles(on.catalog, tableId)).map((f) => f.sealReason);
}

describe('live indexing against the real broker and Postgres', () => {
  it('tiles every partition, puts each committed record in exactly one file, leaves aborted records in the gaps; files rebuild byte-identical with exact statistics', async () => {
    // The runner indexes every table of its catalog: it gets a catalog of its own.
    const engine = await testEngine('tiling');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 2, 'tiling');
    const created = await table(topic, { file_window: '20m', granularity: 'hour' }, 'json', engine);
    const aborted: ProducedPartition[] = [];
    // 12 transactions over 3 hours, every third aborted; a late record (2 s before the hour its range is in); some values not JSON.
    for (let i = 0; i < 12; i += 1) {
      const records = Array.from({ length: 20 }, (_, j) => {
        const late = j === 7 && i === 4;
        return {
          key: j % 5 === 0 ? null : `key-${j}`,
          value: j === 11 ? `{"broken": ${i}` : JSON.stringify({ i, j, note: 'ünïcödé ✓ '.repeat(j % 3) }),
          headers: j % 2 === 0 ? ([['source', 'test'], ['seq', String(i)]] as [string, string][]) : [],
          partition: j % 2,
          timestamp: late ? t0 + i * 15 * 60_000 - 2000 : t0 + i * 15 * 60_000 + j * 1000,
        };
      });
      const produced = await produce(engine.kafka, topic, records, { transactionalId: `tiling-${topic}`, abort: i % 3 === 2 });
      if (i % 3 === 2) aborted.push(...produced);
    }
    const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {});
    const summary = await runner.run();
    expect(summary.records).toBe(160);

    const tableRecord = await findTable(engine.catalog, created.name);
    const check = await checkTable(engine, tableRecord);
    expect([...check.committedOffsets.values()].reduce((n, offsets) => n + offsets.length, 0)).toBe(160);

    // Aborted records sit inside some file's offsets, never in its rows.
    for (const { partition, firstOffset, lastOffset } of aborted) {
      for (let offset = firstOffset; offset <= lastOffset; offset += 1n) {
        const holder = check.files.find((f) => f.partition === partition && f.startOffset <= offset && offset < f.endOffset);
        expect(holder, `aborted offset ${offset} of partition ${partition} is in a file's range`).toBeDefined();
        expect(check.committedOffsets.get(partition)).not.toContain(offset);
      }
    }
    // Late records become their bucket's file of the same range: some range has two files.
    const perRange = new Map<string, number>();
    for (const f of check.files) perRange.set(`${f.partition}:${f.startOffset}`, (perRange.get(`${f.partition}:${f.startOffset}`) ?? 0) + 1);
    expect([...perRange.values()].some((count) => count >= 2)).toBe(true);
    // A value that is not JSON is still a row, with its error.
    const rows = [...check.rowsByFile.values()].flat();
    const broken = rows.filter((row) => row._error !== null);
    expect(broken.length).toBe(8);
    for (const row of broken) {
      expect(row._value).toBeNull();
      expect(String(row._error)).toMatch(/^value is not valid JSON/);
    }
  });

  describe('each trigger seals a range and is recorded', () => {
    async function indexWith(settings: Record<string, string>, records: { value: string; timestamp: number }[], clock?: () => number) {
      const topic = await newTopic(engine, 1, 'trigger');
      const created = await table(topic, settings);
      await produce(engine.kafka, topic, records.map((r) => ({ ...r, key: null, partition: 0 })));
      const indexer = await indexerFor(runtime(`trigger-${topic}`, clock), await findTable(engine.catalog, created.name), 0);
      return { indexer, created };
    }

    it('bytes: key + value + header bytes reach file_bytes', async () => {
      const records = Array.from({ length: 10 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'p'.repeat(490) }), timestamp: t0 + i }));
      const { indexer, created } = await indexWith({ file_bytes: '1500B' }, records);
      await indexer.advance();
      expect(await reasons(created.tableId)).toEqual(['bytes', 'bytes', 'bytes']);
      const files = await listFiles(engine.catalog, created.tableId);
      expect(files.map((f) => Number(f.recordCount))).toEqual([3, 3, 3]);
    });

    it('span: max − min of record timestamps reaches file_window', async () => {
      const records = [0, 20, 40, 10, 61, 70, 130].map((s, i) => ({ value: `{"i":${i}}`, timestamp: t0 + s * 1000 }));
      const { indexer, created } = await indexWith({ file_window: '60s' }, records);
      await indexer.advance();
      const files = await listFiles(engine.catalog, created.tableId);
      expect(files.map((f) => [f.sealReason, Number(f.recordCount)])).toEqual([['span', 4], ['span', 2]]);
    });

    it('age: the first record was read file_window ago, sealed by a tick with no new record', async () => {
      let now = 1_000_000;
      const records = [0, 1, 2].map((s) => ({ value: `{"s":${s}}`, timestamp: t0 + s * 1000 }));
      const { indexer, created } = await indexWith({ file_window: '60s' }, records, () => now);
      await indexer.advance();
      expect(await reasons(created.tableId)).toEqual([]);
      now += 59_999;
      await indexer.advance();
      expect(await reasons(created.tableId)).toEqual([]);
      now += 1;
      await indexer.advance();
      expect(await reasons(created.tableId)).toEqual(['age']);
    });

    it('bucket: a record in a later granularity bucket', async () => {
      const records = [-2000, -1000, 500, 1500].map((ms, i) => ({ value: `{"i":${i}}`, timestamp: t0 + hour + ms }));
      const { indexer, created } = await indexWith({ granularity: 'hour' }, records);
      await indexer.advance();
      await indexer.flush();
      const files = await listFiles(engine.catalog, created.tableId);
      expect(files.map((f) => [f.sealReason, f.bucket.getTime(), Number(f.recordCount)])).toEqual([['bucket', t0, 2], ['flush', t0 + hour, 2]]);
    });

    it('flush: a manual flush seals what is open', async () => {
      const { indexer, created } = await indexWith({}, [{ value: '{}', timestamp: t0 }]);
      await indexer.advance();
      expect(await reasons(created.tableId)).toEqual([]);
      await indexer.flush();
      expect(await reasons(created.tableId)).toEqual(['flush']);
    });

    /** A catalog of its own (a runner indexes every table it finds), a topic of `partitions`, a JSON table over it, and `records` spread over the partitions. */
    const runnerTable = async (label: string, partitions: number, records: number, padBytes: number) => {
      const engine = await testEngine(label);
      onTestFinished(() => engine.close());
      const topic = await newTopic(engine, partitions, label);
      const created = await table(topic, {}, 'json', engine);
      await produce(engine.kafka, topic, Array.from({ length: records }, (_, i) => ({ key: null, value: JSON.stringify({ i, pad: 'p'.repeat(padBytes) }), partition: i % partitions, timestamp: t0 + i })));
      return { engine, topic, created };
    };

    it('capacity: the memory budget of the local runner seals the largest open range', async () => {
      const { engine, created } = await runnerTable('capacity', 2, 40, 200);
      const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, memoryBudgetBytes: 1000, memoryCosts: { baseBytes: 0, perDeliveryBytes: 0, perPartitionBytes: 0, holdFactor: 1, buildFactor: 1, minRangeBytes: 1, batchFactor: 1 }, emulator: { ...defaultRunnerOptions.emulator, batchSize: 4 } }, () => {});
      const summary = await runner.run();
      expect(summary.capacitySeals).toBeGreaterThan(0);
      expect(await reasons(created.tableId, engine)).toContain('capacity');
      await checkTable(engine, await findTable(engine.catalog, created.name));
    });

    it('run reads at most deliveriesAtOnce partitions at a time, however many it indexes, and indexes every committed record of each', async () => {
      const { engine, topic, created } = await runnerTable('deliveries', 6, 120, 100);
      const kafka = kafkaSource(engine.kafka);
      let reading = 0;
      let most = 0;
      // The first read waits (up to 2 s) for a second to start: reads of a few records end
      // in a millisecond, and on a busy machine they would seldom overlap by themselves.
      let paired = false;
      const watched: CommittedSource = {
        ...kafka,
        async *read(...args) {
          most = Math.max(most, ++reading);
          if (reading >= 2) paired = true;
          try {
            for (let waited = 0; !paired && waited < 2000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
            yield* kafka.read(...args);
          } finally {
            reading--;
          }
        },
      };
      const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, deliveriesAtOnce: 2, emulator: { ...defaultRunnerOptions.emulator, batchSize: 5 } }, () => {}, watched);
      await runner.run();
      expect(most).toBe(2);
      const committed = await readCommittedIndependently(engine.config.kafkaBrokers, Array.from({ length: 6 }, (_, partition) => ({ topic, partition, start: 0n, end: 20n })));
      const files = await listFiles(engine.catalog, created.tableId);
      expect([0, 1, 2, 3, 4, 5].map((p) => files.filter((f) => f.partition === p).reduce((n, f) => n + Number(f.recordCount), 0))).toEqual(committed.map((records) => records.length));
      expect(committed.flat().length).toBe(120);
      await checkTable(engine, await findTable(engine.catalog, created.name));
    });

    it('capacity: a --memory too small for the process and its partitions is refused before a record is read', async () => {
      const engine = await testEngine('capacity_refused');
      onTestFinished(() => engine.close());
      const topic = await newTopic(engine, 2, 'capacity-refused');
      const created = await table(topic, {}, 'json', engine);
      await produce(engine.kafka, topic, [{ key: null, value: '{}', partition: 0, timestamp: t0 }]);
      const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, memoryBudgetBytes: 64 * 1024 * 1024, memoryBudgetGiven: true }, () => {});
      await expect(runner.run()).rejects.toThrow(/--memory 64 MiB is too small for \d+ partition\(s\) and 2 build\(s\) at once.*give at least/);
      expect(await reasons(created.tableId, engine)).toEqual([]);
    });
  });

  describe('starting points', () => {
    it('a new table starts at the LSO; a partition added to the topic later starts at its LSO', async () => {
      const topic = await newTopic(engine, 1, 'starts');
      await produce(engine.kafka, topic, [{ key: null, value: '{"before":1}', partition: 0 }, { key: null, value: '{"before":2}', partition: 0 }]);
      const created = await table(topic, {});
      expect(created.partitions).toEqual([{ partition: 0, start: 2n }]);

      await growTopic(engine, topic, 2);
      await produce(engine.kafka, topic, [{ key: null, value: '{"p1":1}', partition: 1 }, { key: null, value: '{"p0":3}', partition: 0 }]);
      const lsoOfNew = (await readCommittedRange(engine.kafka, topic, 1, 0n, 100n)).nextOffset;
      await produce(engine.kafka, topic, [{ key: null, value: '{"p1":2}', partition: 1 }]);
      const run = runtime(`starts-${topic}`);
      // Discovery of the new partition happens when it is first indexed: at its LSO then.
      const tableRecord = await findTable(engine.catalog, created.name);
      const partition1 = await indexerFor(run, tableRecord, 1);
      const rows = await engine.catalog.query('SELECT partition_id, indexed_start FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [created.tableId]);
      expect(rows.rows).toEqual([{ partition_id: 0, indexed_start: 2n }, { partition_id: 1, indexed_start: lsoOfNew + 1n }]);
      await produce(engine.kafka, topic, [{ key: null, value: '{"p1":3}', partition: 1 }]);
      await partition1.advance();
      await partition1.flush();
      const files = await listFiles(engine.catalog, created.tableId);
      expect(files.map((f) => [f.partition, f.startOffset, Number(f.recordCount)])).toEqual([[1, 2n, 1]]);
    });
  });

  describe('leases', () => {
    it('another indexer takes over after lease_ttl and goes on from indexed_end; the old one stops and drops its memory', async () => {
      const topic = await newTopic(engine, 1, 'lease');
      const created = await table(topic, { lease_ttl: '1s' });
      await produce(engine.kafka, topic, Array.from({ length: 6 }, (_, i) => ({ key: null, value: `{"i":${i}}`, partition: 0, timestamp: t0 + i })));
      const tableRecord = await findTable(engine.catalog, created.name);
      const a = await indexerFor(runtime(`lease-a-${topic}`), tableRecord, 0);
      const b = await indexerFor(runtime(`lease-b-${topic}`), tableRecord, 0);
      await a.advance();
      await a.flush();
      await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ key: null, value: `{"j":${i}}`, partition: 0, timestamp: t0 + 10 + i })));
      await a.advance(); // holds 4 records in memory, uncommitted
      await expect(b.advance()).rejects.toThrow(LeaseHeldError);
      await new Promise((done) => setTimeout(done, 1100));
      const taken = await b.advance();
      expect(taken.indexedEnd).toBe(6n);
      await b.flush();
      // The old holder can no longer commit: it is refused, and drops what it held.
      await expect(a.flush()).rejects.toThrow(LeaseHeldError);
      const check = await checkTable(engine, tableRecord);
      expect(check.files.map((f) => [f.startOffset, f.endOffset, Number(f.recordCount)])).toEqual([[0n, 6n, 6], [6n, 10n, 4]]);
      const lease = await engine.catalog.query('SELECT lease_owner, lease_epoch FROM offsetlake.lake_partition WHERE table_id = $1', [created.tableId]);
      expect(lease.rows[0]).toEqual({ lease_owner: `lease-b-${topic}`, lease_epoch: 2n });
    });

    it('a stopped indexer loses only what it held in memory: the next one resumes from indexed_end with nothing lost', async () => {
      const topic = await newTopic(engine, 1, 'restart');
      const created = await table(topic, { lease_ttl: '1s' });
      await produce(engine.kafka, topic, Array.from({ length: 5 }, (_, i) => ({ key: null, value: `{"i":${i}}`, partition: 0, timestamp: t0 + i })));
      const tableRecord = await findTable(engine.catalog, created.name);
      const first = await indexerFor(runtime(`restart-1-${topic}`), tableRecord, 0);
      await first.advance();
      await first.flush();
      await produce(engine.kafka, topic, Array.from({ length: 5 }, (_, i) => ({ key: null, value: `{"i":${5 + i}}`, partition: 0, timestamp: t0 + 5 + i })));
      await first.advance(); // 5 records in memory; then the process "dies" without releasing its lease
      await new Promise((done) => setTimeout(done, 1100));
      const second = await indexerFor(runtime(`restart-2-${topic}`), tableRecord, 0);
      await second.advance();
      await second.flush();
      const check = await checkTable(engine, tableRecord);
      expect(check.committedOffsets.get(0)).toHaveLength(10);
    });
  });

  describe('the MSK handler', () => {
    async function twoTopicsWithTheSameRecords() {
      const records = Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i }), partition: 0, timestamp: t0 + i * 5 * 60_000 }));
      const clean = await newTopic(engine, 1, 'clean');
      const messy = await newTopic(engine, 1, 'messy');
      const cleanTable = await table(clean, { file_window: '10h' });
      const messyTable = await table(messy, { file_window: '10h' });
      await produce(engine.kafka, clean, records);
      await produce(engine.kafka, messy, records);
      return { clean, messy, cleanTable, messyTable };
    }

    async function eventOf(topic: string, from: bigint, until: bigint) {
      const read = await readCommittedRange(engine.kafka, topic, 0, from, until);
      return toKafkaEvent([{ topic, partition: 0, records: read.records }], engine.config.kafkaBrokers.join(','));
    }

    it('the same event twice, overlapping events and an event after a gap end with the same catalog as one clean pass', async () => {
      const { clean, messy, cleanTable, messyTable } = await twoTopicsWithTheSameRecords();
      const cleanRun = runtime(`clean-${clean}`);
      await handleKafkaEvent(await eventOf(clean, 0n, 30n), cleanRun);
      await (await indexerFor(cleanRun, await findTable(engine.catalog, cleanTable.name), 0)).flush();

      const messyRun = runtime(`messy-${messy}`);
      const first = await eventOf(messy, 0n, 12n);
      await handleKafkaEvent(first, messyRun);
      await handleKafkaEvent(first, messyRun); // redelivered
      await handleKafkaEvent(await eventOf(messy, 8n, 16n), messyRun); // overlaps
      await handleKafkaEvent(await eventOf(messy, 24n, 30n), messyRun); // after a gap: 16..23 read from Kafka
      await handleKafkaEvent(await eventOf(messy, 20n, 26n), messyRun); // old, late redelivery
      await (await indexerFor(messyRun, await findTable(engine.catalog, messyTable.name), 0)).flush();

      const shape = async (tableId: bigint) =>
        (await listFiles(engine.catalog, tableId)).map((f) => [f.startOffset, f.endOffset, f.bucket.getTime(), f.recordCount, f.sealReason, Buffer.from(f.sha256).toString('hex')]);
      const want = await shape(cleanTable.tableId);
      expect(want.length).toBeGreaterThanOrEqual(3);
      expect(await shape(messyTable.tableId)).toEqual(want);
      await checkTable(engine, await findTable(engine.catalog, messyTable.name));
    });

    it('events that also hold aborted records and an open transaction\'s, redelivered, overlapping and out of order, index exactly the records the independent read_committed consumer reads', async () => {
      const topic = await newTopic(engine, 1, 'uncommitted');
      const created = await table(topic, { file_window: '10h' }, 'raw');
      const brokers = engine.config.kafkaBrokers;
      // Null and empty keys, values and header values, repeated header names: what must stay as it is.
      let n = 0;
      const next = (count: number) => Array.from({ length: count }, () => {
        const i = n++;
        return {
          key: i % 4 === 0 ? null : i % 4 === 1 ? '' : `k${i}`,
          value: i % 5 === 0 ? null : i % 5 === 1 ? '' : JSON.stringify({ i }),
          headers: (i % 3 === 0 ? [['h', null], ['h', `v${i}`], ['e', '']] : []) as [string, string | null][],
          partition: 0,
          timestamp: t0 + i * 1000,
        };
      });
      await produce(engine.kafka, topic, next(3));
      await produce(engine.kafka, topic, next(4), { transactionalId: `committed-${topic}` });
      await produce(engine.kafka, topic, next(5), { transactionalId: `aborted-${topic}`, abort: true });
      await produce(engine.kafka, topic, next(2));
      await produce(engine.kafka, topic, next(4), { transactionalId: `aborted-${topic}`, abort: true });
      await produce(engine.kafka, topic, next(3), { transactionalId: `committed-${topic}` });
      const lambda: IndexerRuntime = { ...runtime(`uncommitted-${topic}`), releaseAfterEvent: true };
      const eventOf = (records: IndependentRecord[]) => toKafkaEvent([{ topic, partition: 0, records }], brokers.join(','));
      const open = await openTransaction(engine.kafka, `open-${topic}`);
      let openedAt: bigint;
      let delivered: IndependentRecord[];
      try {
        [{ firstOffset: openedAt }] = (await open.send(topic, next(3))) as [ProducedPartition];
        await produce(engine.kafka, topic, next(2)); // committed, but behind the open transaction
        // Every data record, as an event source mapping reading read_uncommitted delivers them, cut into events of 5.
        [delivered] = (await readUncommittedIndependently(brokers, [{ topic, partition: 0, start: 0n, end: await highWatermark(engine.kafka, topic, 0) }])) as [IndependentRecord[]];
        const events = Array.from({ length: Math.ceil(delivered.length / 5) }, (_, i) => eventOf(delivered.slice(i * 5, i * 5 + 5)));
        const [e0, e1, e2, ...rest] = events;
        await handleKafkaEvent(e0, lambda);
        await handleKafkaEvent(e0, lambda); // redelivered
        await handleKafkaEvent(e2, lambda); // after a gap: e1's offsets are read from Kafka
        await handleKafkaEvent(e1, lambda); // late
        await handleKafkaEvent(eventOf(delivered.slice(3, 12)), lambda); // overlaps e0, e1 and e2
        let outcomes: PartitionOutcome[] = [];
        for (const event of rest) outcomes = await handleKafkaEvent(event, lambda);
        // The last event goes past the open transaction's first offset, the LSO: the read stopped there.
        expect(outcomes.map((o) => o.position)).toEqual([openedAt.toString()]);
        await open.commit();
      } finally {
        await open.close();
      }
      // The next event, after the commit, takes the read past the transaction.
      const hw = await highWatermark(engine.kafka, topic, 0);
      await produce(engine.kafka, topic, next(1));
      const [last] = await readUncommittedIndependently(brokers, [{ topic, partition: 0, start: hw, end: hw + 1n }]);
      await handleKafkaEvent(eventOf(last!), lambda);
      await (await indexerFor(lambda, await findTable(engine.catalog, created.name), 0)).flush();

      const check = await checkTable(engine, await findTable(engine.catalog, created.name));
      const [committed] = await readCommittedIndependently(brokers, [{ topic, partition: 0, start: 0n, end: hw + 1n }]);
      expect(committed!.length).toBe(3 + 4 + 2 + 3 + 3 + 2 + 1);
      expect(delivered.length).toBe(committed!.length - 1 + 5 + 4); // the events also held the aborted ones
      const bytes = (value: unknown) => (value === null || value === undefined ? null : Buffer.from(value as Uint8Array | string).toString('hex'));
      const rows = [...check.rowsByFile.values()].flat().sort((a, b) => Number(a._offset) - Number(b._offset));
      expect(rows.map((row) => ({
        offset: BigInt(row._offset as bigint),
        timestamp: timeOf(row._timestamp),
        key: bytes(row._key),
        value: bytes(row._value),
        headers: (row._headers as { key: unknown; value: unknown }[]).map((h) => [Buffer.from(h.key as Uint8Array | string).toString(), bytes(h.value)]),
      }))).toEqual(committed!.map((r) => ({ offset: r.offset, timestamp: r.timestamp, key: bytes(r.key), value: bytes(r.value), headers: r.headers.map(([name, value]) => [name, bytes(value)]) })));
    });

    it('refuses a malformed event with a clear error and changes nothing', async () => {
      const topic = await newTopic(engine, 1, 'malformed');
      const created = await table(topic, {});
      const run = runtime(`malformed-${topic}`);
      const bad = { eventSource: 'aws:kafka', records: { [`${topic}-0`]: [{ topic, partition: 0, offset: 'seven', timestamp: 1 }] } };
      await expect(handleKafkaEvent(bad, run)).rejects.toThrow(EventShapeError);
      await expect(handleKafkaEvent(bad, run)).rejects.toThrow(`records["${topic}-0"][0].offset: expected a non-negative integer, got "seven"`);
      expect(await listFiles(engine.catalog, created.tableId)).toEqual([]);
    });

    it('throws, so the batch is retried, when the catalog cannot be reached', async () => {
      const topic = await newTopic(engine, 1, 'nodb');
      await produce(engine.kafka, topic, [{ key: null, value: '{}', partition: 0, timestamp: t0 }]);
      const unreachable = openCatalog('postgres://offsetlake:wrong@127.0.0.1:1/offsetlake', 1);
      try {
        await expect(handleKafkaEvent(await eventOf(topic, 0n, 1n), { ...runtime(`nodb-${topic}`), catalog: unreachable })).rejects.toThrow(/ECONNREFUSED/);
      } finally {
        await unreachable.end();
      }
    });

    it('throws, so the batch is retried, while another indexer holds the partition', async () => {
      const topic = await newTopic(engine, 1, 'held');
      const created = await table(topic, {});
      await produce(engine.kafka, topic, [{ key: null, value: '{}', partition: 0, timestamp: t0 }]);
      const holder = await indexerFor(runtime(`holder-${topic}`), await findTable(engine.catalog, created.name), 0);
      await holder.advance();
      const refused = handleKafkaEvent(await eventOf(topic, 0n, 1n), runtime(`other-${topic}`));
      await expect(refused).rejects.toThrow(DeliveryFailedError);
      await expect(refused).rejects.toThrow(`table ${created.name} (topic ${topic} partition 0): partition 0 of table ${created.name} is leased by another indexer`);
    });
  });

  /** Three records read by a Lambda instance that kept them open and handed its lease back; `lambda` runs at the clock `now`. */
  async function rangeLeftOpen(name: string, settings: Record<string, string> = { file_window: '60s' }) {
    const topic = await newTopic(engine, 1, name);
    const created = await table(topic, settings);
    await produce(engine.kafka, topic, [0, 1, 2].map((i) => ({ key: null, value: `{"i":${i}}`, partition: 0, timestamp: t0 + i })));
    const clock = { now: Date.now() };
    const lambda = (owner: string): IndexerRuntime => ({ ...runtime(owner, () => clock.now), releaseAfterEvent: true });
    const event = toKafkaEvent([{ topic, partition: 0, records: (await readCommittedRange(engine.kafka, topic, 0, 0n, 3n)).records }], 'local');
    await handleKafkaEvent(event, lambda(`instance-a-${topic}`));
    return { topic, created, clock, lambda };
  }

  it('serverless: an open range left behind by a Lambda instance is sealed by the idle tick of another, counting from its first read', async () => {
    const { topic, created, clock, lambda } = await rangeLeftOpen('tick');
    const reported = await engine.catalog.query('SELECT open_range_records, lease_expires_at <= now() AS free FROM offsetlake.lake_partition WHERE table_id = $1', [created.tableId]);
    expect(reported.rows[0]).toEqual({ open_range_records: 3n, free: true });

    clock.now += 30_000;
    expect(await tickIdlePartitions(lambda(`tick-1-${topic}`))).toEqual([]);
    clock.now += 30_000;
    const ticked = await tickIdlePartitions(lambda(`tick-2-${topic}`));
    expect(ticked.map((o) => [o.partition, 'rangesCommitted' in o ? o.rangesCommitted : o.error])).toEqual([[0, 1]]);
    expect(await reasons(created.tableId)).toEqual(['age']);
    await checkTable(engine, await findTable(engine.catalog, created.name));
  });

  it('serverless: the idle tick seals by file_age, apart from file_window', async () => {
    const { topic, created, clock, lambda } = await rangeLeftOpen('tick-age', { file_window: '1h', file_age: '20s' });
    clock.now += 10_000;
    expect(await tickIdlePartitions(lambda(`tick-1-${topic}`))).toEqual([]);
    clock.now += 10_000;
    const ticked = await tickIdlePartitions(lambda(`tick-2-${topic}`));
    expect(ticked.map((o) => ('indexedEnd' in o ? [o.indexedEnd, o.rangesCommitted] : o.error))).toEqual([['3', 1]]);
    expect(await reasons(created.tableId)).toEqual(['age']);
  });

  it('serverless: a table stored before file_age existed is sealed by the tick at its file_window', async () => {
    const { topic, created, clock, lambda } = await rangeLeftOpen('tick-stored');
    await engine.catalog.query("UPDATE offsetlake.lake_table SET settings = settings - 'file_age' WHERE table_id = $1", [created.tableId]);
    clock.now += 30_000;
    expect(await tickIdlePartitions(lambda(`tick-1-${topic}`))).toEqual([]);
    clock.now += 30_000;
    const ticked = await tickIdlePartitions(lambda(`tick-2-${topic}`));
    expect(ticked.map((o) => ('indexedEnd' in o ? [o.indexedEnd, o.rangesCommitted] : o.error))).toEqual([['3', 1]]);
    expect(await reasons(created.tableId)).toEqual(['age']);
  });

  it('serverless: a tick long after the range aged still seals every record the gone instance had read as one range', async () => {
    const { topic, created, clock, lambda } = await rangeLeftOpen('tick-late');
    clock.now += 120_000;
    const ticked = await tickIdlePartitions(lambda(`tick-${topic}`));
    expect(ticked.map((o) => ('indexedEnd' in o ? [o.indexedEnd, o.rangesCommitted] : o.error))).toEqual([['3', 1]]);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.files.map((f) => [f.startOffset, f.endOffset, f.sealReason])).toEqual([[0n, 3n, 'age']]);
  });

  it('an indexed range built again from Kafka (rangeFromKafka, then buildRangeFiles, as a merge builds) gives the files indexing committed, byte for byte, from the records an independent read_committed reader finds', async () => {
    const topic = await newTopic(engine, 1, 'again');
    const created = await table(topic, { file_bytes: '1KiB', granularity: 'hour', row_group_rows: '16' });
    // 6 transactions, every third aborted, a late record before the hour in each; one value not JSON
    for (let i = 0; i < 6; i += 1) {
      const records = Array.from({ length: 24 }, (_, j) => ({
        key: `k${j % 4}`, value: j === 5 ? `{"torn": ${i}` : JSON.stringify({ i, j, pad: 'x'.repeat(j * 3) }), partition: 0,
        timestamp: j === 9 ? t0 + hour - 1500 : t0 + hour + i * 60_000 + j * 1000,
      }));
      await produce(engine.kafka, topic, records, { transactionalId: `again-${topic}`, abort: i % 3 === 1 });
    }
    const indexer = await indexerFor(runtime(`again-${topic}`), await findTable(engine.catalog, created.name), 0);
    await indexer.advance();
    await indexer.flush();
    const tableRecord = await findTable(engine.catalog, created.name);
    const files = await listFiles(engine.catalog, tableRecord.tableId);
    const ranges = [...new Map(files.map((f) => [`${f.startOffset}`, { start: f.startOffset, end: f.endOffset, reason: f.sealReason, files: files.filter((g) => g.startOffset === f.startOffset) }])).values()];
    expect(ranges.length).toBeGreaterThan(2);
    expect(ranges.some((range) => range.files.length === 2), 'a range with a late record has a file per bucket').toBe(true);
    const independent = await readCommittedIndependently(engine.config.kafkaBrokers, ranges.map((r) => ({ topic, partition: 0, start: r.start, end: r.end })));
    const source = kafkaSource(engine.kafka);
    for (const [r, range] of ranges.entries()) {
      const sealed = await rangeFromKafka(source, tableRecord, 0, range.start, range.end, range.reason as SealReason);
      expect(sealed.files.flatMap((file) => file.records.map((record) => record.offset)).sort((a, b) => (a < b ? -1 : 1))).toEqual(independent[r]!.map((record) => record.offset));
      const [first] = range.files;
      const built = buildRangeFiles({
        table: tableRecord, schema: await schemaVersion(engine.catalog, tableRecord.tableId, first!.schemaVersion), schemaVersion: first!.schemaVersion, indexes: [],
        encoderVersion: first!.encoderVersion, partition: 0, range: rangeToBuild(sealed),
      });
      expect([built.startOffset, built.endOffset]).toEqual([range.start, range.end]);
      expect(built.files.map((file) => [file.bucket, Buffer.from(file.sha256).toString('hex'), file.fileSizeBytes, Buffer.from(file.footer).toString('hex'), file.recordCount]))
        .toEqual(range.files.map((file) => [file.bucket.getTime(), file.sha256.toString('hex'), Number(file.fileSizeBytes), file.footer.toString('hex'), Number(file.recordCount)]));
      for (const [f, file] of range.files.entries()) {
        // as plain values: the catalog hands bytes back as Buffers
        const plain = (granules: FileGranules | null) => granules && {
          pageIndex: Buffer.from(granules.pageIndex).toString('hex'), tailSha256: Buffer.from(granules.tailSha256).toString('hex'),
          granules: granules.granules.map((granule) => ({ ...granule, chunkSha256: Buffer.from(granule.chunkSha256).toString('hex') })),
        };
        expect(plain(built.files[f]!.granules), `file ${file.dataFileId}: its granules`).toEqual(plain(await findGranules(engine.catalog, file.dataFileId)));
      }
    }
    // a range Kafka does not hold committed yet is refused, not built short
    const end = ranges.at(-1)!.end;
    await expect(rangeFromKafka(source, tableRecord, 0, end, end + 10n, 'flush')).rejects.toThrow(/stopped at/);
  });

  it('raw tables keep the value bytes as they are', async () => {
    const topic = await newTopic(engine, 1, 'raw');
    const created = await table(topic, {}, 'raw');
    await produce(engine.kafka, topic, [{ key: null, value: Buffer.from([0, 255, 1, 2]), partition: 0, timestamp: t0 }]);
    const indexer = await indexerFor(runtime(`raw-${topic}`), await findTable(engine.catalog, created.name), 0);
    await indexer.advance();
    await indexer.flush();
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    const [row] = [...check.rowsByFile.values()].flat();
    expect(Array.from(row!._value as Uint8Array)).toEqual([0, 255, 1, 2]);
  });
});
