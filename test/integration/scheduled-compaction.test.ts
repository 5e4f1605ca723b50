/**
 * The scheduled compactor (functions/compact, src/compaction/scheduled.ts) against the real
 * broker and Postgres: every partition with merges due gets them, one merge per lease, in
 * turns; a partition whose lease an indexer holds is left for the next run; and an
 * indexer's delivery that arrives while the compactor holds a partition's lease waits for
 * it instead of failing. Rows and statistics come from an independent Parquet reader over
 * the rebuilt bytes and the committed records from librdkafka (checkTable).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { acquireLease, compactorOwner, releaseLease } from '../../src/catalog/leases.js';
import { produce } from '../../src/kafka/produce.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { compactDuePartitions, type ScheduledCompactionResult } from '../../src/compaction/scheduled.js';
import { DeliveryFailedError, handleKafkaEvent } from '../../src/indexer/handler.js';
import { loadEvent } from '../fixtures/events.js';
import type { Engine } from '../../src/runtime/engine.js';
import type { TableRecord } from '../../src/table/record.js';
import { indexPartition, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { readCommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';
import { checkTable } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('scheduled_compaction');
});
afterAll(async () => {
  await engine.close();
});

/** An hour that ended days ago: its bucket has aged, so its consecutive files are all merged. */
const t0 = Date.UTC(2026, 10, 30, 9, 0, 0);

/** A table of `rounds` small files per partition, each of 5 records of the aged hour. */
async function smallFiles(partitions: number, rounds: number, settings: Record<string, string> = {}): Promise<TableRecord> {
  const topic = await newTopic(engine, partitions, 'scheduled-compaction');
  const created = await testTable(engine, topic, { file_window: '20m', merge_files: '10', ...settings });
  const table = await findTable(engine.catalog, created.name);
  const runtime = testRuntime(engine, `indexer-${topic}`);
  for (let round = 0; round < rounds; round += 1) {
    await produce(engine.kafka, topic, Array.from({ length: 5 * partitions }, (_, j) => ({
      key: `k${j}`, value: JSON.stringify({ round, j }), partition: j % partitions, timestamp: t0 + round * 60_000 + j,
    })));
    for (let p = 0; p < partitions; p += 1) await indexPartition(runtime, table, p);
  }
  return table;
}

const ofTable = (result: ScheduledCompactionResult, table: TableRecord) => result.partitions.filter((p) => p.table === table.name).sort((a, b) => a.partition - b.partition);
const liveFiles = async (table: TableRecord, partition: number) => (await listFiles(engine.catalog, table.tableId)).filter((f) => f.partition === partition);

function mskEventOf(topic: string, partition: number, records: IndependentRecord[]): Record<string, unknown> {
  return {
    ...loadEvent('msk'),
    records: {
      [`${topic}-${partition}`]: records.map((r) => ({
        topic, partition, offset: Number(r.offset), timestamp: r.timestamp, timestampType: 'CREATE_TIME',
        key: r.key?.toString('base64') ?? null, value: r.value?.toString('base64') ?? null, headers: [],
      })),
    },
  };
}

describe('the scheduled compactor', () => {
  it('merges the aged files of every partition, one merge per lease, in turns; the rows and statistics are those of the committed records before and after; a second run finds nothing', async () => {
    const table = await smallFiles(3, 6);
    const before = await checkTable(engine, table);
    expect(before.files).toHaveLength(18);

    const result = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-run-1') });
    expect(result.failures).toEqual([]);
    expect(ofTable(result, table)).toEqual([0, 1, 2].map((partition) => ({ table: table.name, partition, merges: 1, filesReplaced: 6, refused: 0, left: 0, busy: 0, leaseLost: 0 })));
    const after = await checkTable(engine, table);
    expect(after.files.map((f) => [f.partition, f.startOffset, f.endOffset])).toEqual([[0, 0n, 30n], [1, 0n, 30n], [2, 0n, 30n]]);
    // The same committed records, read by librdkafka, and the same rows from the rebuilt bytes.
    expect(after.committedOffsets).toEqual(before.committedOffsets);
    const rows = (check: typeof before) => [...check.rowsByFile.values()].flat().map((r) => `${r._partition}/${r._offset}/${r._value}`).sort();
    expect(rows(after)).toEqual(rows(before));
    // The compactor gave every lease back.
    const leases = await engine.catalog.query<{ live: boolean }>('SELECT lease_expires_at > now() AS live FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId]);
    expect(leases.rows.map((r) => r.live)).toEqual([false, false, false]);

    const again = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-run-2') });
    expect(ofTable(again, table)).toEqual([]);
  });

  it('a partition whose lease an indexer holds is tried again after the others, then left with its merges counted; the next run merges it', async () => {
    const table = await smallFiles(2, 3);
    const indexer = (await acquireLease(engine.catalog, table.tableId, 1, 'an-indexer', 60_000))!;
    const result = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-busy'), busyRetries: 2 });
    expect(ofTable(result, table)).toEqual([
      { table: table.name, partition: 0, merges: 1, filesReplaced: 3, refused: 0, left: 0, busy: 0, leaseLost: 0 },
      { table: table.name, partition: 1, merges: 0, filesReplaced: 0, refused: 0, left: 1, busy: 3, leaseLost: 0 },
    ]);
    expect(await liveFiles(table, 1)).toHaveLength(3);
    await releaseLease(engine.catalog, indexer);
    const next = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-busy-2') });
    expect(ofTable(next, table)).toEqual([{ table: table.name, partition: 1, merges: 1, filesReplaced: 3, refused: 0, left: 0, busy: 0, leaseLost: 0 }]);
    await checkTable(engine, table);
  });

  it('stops starting merges once its signal aborts; what is left is counted and merged by the next run', async () => {
    const table = await smallFiles(2, 3);
    const stop = new AbortController();
    stop.abort();
    const result = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-abort'), signal: stop.signal });
    expect(result.stoppedEarly).toBe(true);
    expect(ofTable(result, table).map((p) => [p.partition, p.merges, p.left])).toEqual([[0, 0, 1], [1, 0, 1]]);
    const next = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner('test-abort-2') });
    expect(ofTable(next, table).map((p) => [p.partition, p.merges, p.left])).toEqual([[0, 1, 0], [1, 1, 0]]);
  });
});

describe('the indexer Lambda and the compactor\'s lease', () => {
  it('an MSK event for a partition whose lease the compactor holds waits until the compactor gives it back, then indexes; the delivery does not fail', async () => {
    const topic = await newTopic(engine, 1, 'compactor-lease');
    const created = await testTable(engine, topic, { file_bytes: '100B' });
    const table = await findTable(engine.catalog, created.name);
    await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'x'.repeat(60) }), partition: 0 })));
    const records = (await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 4n }]))[0]!;

    const compactor = (await acquireLease(engine.catalog, table.tableId, 0, compactorOwner('merge-in-progress'), table.settings.lease_ttl))!;
    const heldMs = 1_500;
    const mergeEnds = new Promise<number>((resolve) => setTimeout(() => void releaseLease(engine.catalog, compactor).then(() => resolve(Date.now())), heldMs));
    const started = Date.now();
    const outcome = await handleKafkaEvent(mskEventOf(topic, 0, records), { ...testRuntime(engine, `lambda-${topic}`), releaseAfterEvent: true });
    const released = await mergeEnds;
    expect(outcome).toEqual([{ table: table.name, topic, partition: 0, indexedEnd: '4', position: '4', rangesCommitted: 2, filesCommitted: 2 }]);
    // It waited for the compactor's merge: it committed after the lease was given back.
    expect(Date.now()).toBeGreaterThanOrEqual(released);
    expect(released - started).toBeGreaterThanOrEqual(heldMs - 50);
    const check = await checkTable(engine, table);
    expect(check.files.map((f) => [f.startOffset, f.endOffset])).toEqual([[0n, 2n], [2n, 4n]]);
  });

  it('a compactor that never gives the lease back (it died mid-merge) delays the event until its lease expires, then the event indexes', async () => {
    const topic = await newTopic(engine, 1, 'compactor-died');
    const created = await testTable(engine, topic, { file_bytes: '100B', lease_ttl: '2s' });
    const table = await findTable(engine.catalog, created.name);
    await produce(engine.kafka, topic, [0, 1].map((i) => ({ value: JSON.stringify({ i, pad: 'x'.repeat(60) }), partition: 0 })));
    const records = (await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 2n }]))[0]!;
    await acquireLease(engine.catalog, table.tableId, 0, compactorOwner('died'), 2_000);
    const outcome = await handleKafkaEvent(mskEventOf(topic, 0, records), { ...testRuntime(engine, `lambda-${topic}`), releaseAfterEvent: true });
    expect(outcome.map((o) => o.indexedEnd)).toEqual(['2']);
  });

  it('a lease another indexer holds still fails the delivery at once (the mapping delivers it again), naming the partition', async () => {
    const topic = await newTopic(engine, 1, 'indexer-lease');
    const created = await testTable(engine, topic);
    const table = await findTable(engine.catalog, created.name);
    await produce(engine.kafka, topic, [{ value: '{"i":0}', partition: 0 }]);
    const records = (await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 1n }]))[0]!;
    await acquireLease(engine.catalog, table.tableId, 0, 'another-instance', 60_000);
    const started = Date.now();
    const failed = await handleKafkaEvent(mskEventOf(topic, 0, records), { ...testRuntime(engine, `lambda-${topic}`), releaseAfterEvent: true }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(DeliveryFailedError);
    expect((failed as Error).message).toMatch(new RegExp(`partition 0 of table ${table.name} is leased by another indexer`));
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
