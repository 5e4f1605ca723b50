/**
 * The long-lived local indexer (`offsetlake run`) and the serverless tick stay up and go
 * on: Kafka deleting offsets nobody indexed, tables sharing a topic, a catalog that goes
 * away, a partition that keeps failing. Against the real broker and Postgres.
 */
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { openEngine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { handleKafkaEvent, indexerFor, indexPartitions, type DeliveryOutcome, type IndexerRuntime, type PartitionDelivery } from '../../src/indexer/handler.js';
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import { toKafkaEvent } from '../../src/indexer/kafka-event.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { deleteRecords, deleteTopic } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { bodyBytes, readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { countingSource } from '../../src/kafka/counting-source.js';
import { defaultEmulatorOptions, PartitionEventSource, type Deliver } from '../../src/local/emulator.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { freshDatabase } from '../helpers/database.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { resolveSettings } from '../../src/table/settings.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { checkTable } from '../helpers/verify.js';
import { closedPort } from '../helpers/ports.js';

const t0 = Date.UTC(2026, 10, 30, 8, 0, 0);
const once = { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 };
const values = (n: number, from = 0, partition = 0) => Array.from({ length: n }, (_, i) => ({ value: JSON.stringify({ i: from + i }), partition, timestamp: t0 + (from + i) * 1000 }));

describe('offsets Kafka deleted before anyone indexed them', () => {
  it('run --once goes on from Kafka\'s earliest offset and records [indexed_end, earliest) as a lost interval, shown in status and /metrics; ranges and lost intervals tile the partition', async () => {
    const engine = await testEngine('lost');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'lost');
    const created = await testTable(engine, topic, { file_window: '30m' });
    await produce(engine.kafka, topic, values(10));
    const logs: string[] = [];
    await new LocalRunner(engine, rangeBuilder(engine.catalog), once, (line) => logs.push(line)).run();
    // the indexer was away while retention passed its indexed_end
    await produce(engine.kafka, topic, values(10, 10));
    expect(await deleteRecords(engine.kafka, topic, 0, 15n)).toBe(15n);
    await produce(engine.kafka, topic, values(5, 20));

    const summary = await new LocalRunner(engine, rangeBuilder(engine.catalog), once, (line) => logs.push(line)).run();
    expect(summary.failed).toEqual([]);
    expect(summary.records).toBe(10); // [15, 25): what Kafka still holds
    const lost = await engine.catalog.query('SELECT start_offset, end_offset FROM offsetlake.lost_interval WHERE table_id = $1', [created.tableId]);
    expect(lost.rows).toEqual([{ start_offset: 10n, end_offset: 15n }]);
    const [status] = await partitionStatus(engine, created.name);
    expect([status!.indexedEnd, status!.lag, status!.lostOffsets, status!.waitingReason]).toEqual([25n, 0n, 5n, null]);

    const metrics = await readerHandler(new ReaderService(engine.catalog, kafkaSource(engine.kafka)), { token: null })({ method: 'GET', path: '/metrics', headers: { accept: 'application/json' } });
    expect(JSON.parse(Buffer.from(await bodyBytes(metrics.body)).toString()).lostOffsets).toEqual([{ table: created.name, partition: 0, intervals: 1, offsets: '5' }]);
    // The file [0, 10) can no longer be rebuilt (Kafka deleted it): retention's business, not the checker's.
    await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = now() WHERE table_id = $1 AND end_offset <= 15', [created.tableId]);
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 10 WHERE table_id = $1', [created.tableId]);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(15 + i)));
  });
});

/** The topic's bytes as Kafka itself counts them: the size of each partition's log (DescribeLogDirs). */
async function logBytes(engine: Awaited<ReturnType<typeof testEngine>>, topic: string, partitions: number[]): Promise<bigint> {
  const brokers = await engine.kafka.admin().describeLogDirs({ topics: [{ name: topic, partitions }] });
  let bytes = 0n;
  for (const broker of brokers) for (const dir of broker.results) for (const t of dir.topics) if (t.name === topic) for (const p of t.partitions) bytes += p.partitionSize;
  return bytes;
}

/** ~600-byte JSON records with a key and a header, in turn over `partitions` partitions. */
const wide = (n: number, partitions: number, from = 0) => Array.from({ length: n }, (_, j) => {
  const i = from + j;
  return { key: `k${i % 50}`, value: JSON.stringify({ i, name: `n-${i}`, nested: { x: i / 7, ok: i % 2 === 0 }, pad: 'p'.repeat(500) }), headers: [['source', 'test']] as [string, string][], partition: i % partitions, timestamp: t0 + i };
});
const bytesOf = (records: ReturnType<typeof wide>) => records.reduce((sum, r) => sum + r.key.length + Buffer.byteLength(r.value) + 'source'.length + r.headers[0]![1].length, 0);

describe('the emulated event source of run', () => {
  it('reads each record from Kafka once: its Fetches bring the log\'s bytes once, as Kafka\'s DescribeLogDirs counts them, aborted batches and markers included, in deliveries of an event\'s worth', async () => {
    const engine = await testEngine('fetch_once');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 3, 'fetch-once');
    const created = await testTable(engine, topic, { file_window: '30m' });
    // 16 KiB producer batches (a Java producer's); a committed transaction and an aborted one
    const committed = wide(3000, 3);
    await produce(engine.kafka, topic, committed.slice(0, 2000), { chunkBytes: 16 * 1024 });
    await produce(engine.kafka, topic, committed.slice(2000, 2300), { chunkBytes: 16 * 1024, transactionalId: `${topic}-tx` });
    await produce(engine.kafka, topic, wide(150, 3, 10_000), { chunkBytes: 16 * 1024, transactionalId: `${topic}-tx`, abort: true });
    await produce(engine.kafka, topic, committed.slice(2300), { chunkBytes: 16 * 1024 });

    const counted = countingSource(kafkaSource(engine.kafka), { keepReads: false });
    // events of at most 200 KiB: 150 KiB of record bytes per delivery, so ~5 per partition
    const options = { ...once, emulator: { ...defaultRunnerOptions.emulator, maxPayloadBytes: 200 * 1024 } };
    const summary = await new LocalRunner(engine, rangeBuilder(engine.catalog), options, () => {}, counted).run();

    expect(summary.failed).toEqual([]);
    expect(counted.log.fetchedBytes).toBe(Number(await logBytes(engine, topic, [0, 1, 2])));
    expect([counted.log.records, counted.log.bytes]).toEqual([3000, bytesOf(committed)]);
    expect([summary.records, summary.redelivered]).toEqual([3000, 0]);
    expect(summary.events).toBeGreaterThanOrEqual(12);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect([...check.committedOffsets.values()].reduce((n, offsets) => n + offsets.length, 0)).toBe(3000);
  });

  it('cuts a backlog as the event source mapping would: a delivery reads about batchSize records (give or take a producer batch), the next goes on where its Fetches ended', async () => {
    const engine = await testEngine('chunks');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'chunks');
    const created = await testTable(engine, topic, { file_window: '30m' });
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [created.tableId]);
    const records = wide(1000, 1);
    await produce(engine.kafka, topic, records, { chunkBytes: 16 * 1024 }); // ~26 records a batch
    const counted = countingSource(kafkaSource(engine.kafka));
    const runtime = testRuntime(engine, 'chunks', { source: counted });
    const source = new PartitionEventSource(topic, 0, 0n, runtime.source, { ...defaultEmulatorOptions, batchSize: 100 });
    const deliveries: { delivery: PartitionDelivery; outcomes: readonly DeliveryOutcome[] }[] = [];
    const read = await source.pump(async (delivery) => {
      const outcomes = await indexPartitions([delivery], runtime);
      deliveries.push({ delivery, outcomes });
      return outcomes;
    });
    expect([read, source.position, source.delivered, source.redelivered]).toEqual([1000, 1000n, deliveries.length, 0]);
    // the first delivery learns the records' size (64 KiB); then ~100 records each
    expect(deliveries.length).toBeGreaterThanOrEqual(8);
    for (const { delivery, outcomes } of deliveries) {
      expect(delivery.until).toBe(1000n);
      expect(outcomes).toHaveLength(1);
      expect(outcomes[0]!.recordsRead).toBeLessThanOrEqual(100 + 2 * 26);
    }
    // each delivery starts where the one before ended: no offset read twice
    const spans = counted.log.reads.map((r) => [r.from, r.until]);
    expect(spans[0]![0]).toBe(0n);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBe(BigInt(deliveries[i - 1]!.outcomes[0]!.position));
    expect(counted.log.records).toBe(1000);
    expect(counted.log.fetchedBytes).toBe(Number(await logBytes(engine, topic, [0])));
  });

  it('a delivery that fails is delivered again after a pause; the position moves only when one succeeds; after `attempts` failures the pump gives up and the next pump starts from the same position', async () => {
    const engine = await testEngine('redeliver');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'redeliver');
    const created = await testTable(engine, topic, { file_window: '30m' });
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [created.tableId]);
    await produce(engine.kafka, topic, values(50));
    const counted = countingSource(kafkaSource(engine.kafka), { keepReads: false });
    const runtime = testRuntime(engine, 'redeliver', { source: counted });
    const source = new PartitionEventSource(topic, 0, 0n, runtime.source, { ...defaultEmulatorOptions, retryDelayMs: 40, attempts: 3 });
    const calls: { at: number; position: bigint }[] = [];
    // the first three deliveries fail before the handler runs, the fourth after it has read and indexed
    let call = 0;
    const deliver: Deliver = async (delivery) => {
      calls.push({ at: Date.now(), position: source.position });
      call += 1;
      if (call <= 3) throw new Error(`delivery ${call} failed`);
      const outcomes = await indexPartitions([delivery], runtime);
      if (call === 4) throw new Error('delivery 4 failed after the handler ran');
      return outcomes;
    };
    await expect(source.pump(deliver)).rejects.toThrow('delivery 3 failed');
    expect([source.position, source.delivered, source.redelivered, counted.log.records]).toEqual([0n, 0, 2, 0]);
    for (let i = 1; i < 3; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(35);

    // the next pump starts from the same position; its redelivery finds the records read by the delivery that failed after them
    await source.pump(deliver);
    expect(calls.map((c) => c.position)).toEqual([0n, 0n, 0n, 0n, 0n]);
    expect([source.position, source.delivered, source.redelivered]).toEqual([50n, 1, 3]);
    expect(counted.log.records).toBe(50); // read once, though delivered twice
    await (await indexerFor(runtime, await findTable(engine.catalog, created.name), 0)).flush();
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)).toHaveLength(50);
  });

  it('a position below Kafka\'s earliest offset goes on from the earliest: the handler\'s read resets there and records the lost offsets, and the position follows', async () => {
    const engine = await testEngine('emulated_lost');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'emulated-lost');
    const created = await testTable(engine, topic, { file_window: '30m' });
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [created.tableId]);
    await produce(engine.kafka, topic, values(20));
    expect(await deleteRecords(engine.kafka, topic, 0, 15n)).toBe(15n);
    const runtime = testRuntime(engine, 'emulated-lost');
    const source = new PartitionEventSource(topic, 0, 0n, runtime.source, defaultEmulatorOptions);
    expect(await source.pump((delivery) => indexPartitions([delivery], runtime))).toBe(5);
    expect(source.position).toBe(20n);
    const lost = await engine.catalog.query('SELECT start_offset, end_offset FROM offsetlake.lost_interval WHERE table_id = $1', [created.tableId]);
    expect(lost.rows).toEqual([{ start_offset: 0n, end_offset: 15n }]);
  });
});

describe('tables that share a topic', () => {
  it('each advances on its own: a table created later, at a higher LSO, and one created earlier both reach the LSO in one run --once', async () => {
    const engine = await testEngine('shared');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'shared');
    const settings = resolveSettings({ file_window: '30m' });
    // tables are listed by name: the later one comes first, and used to decide where the shared event source starts
    await createTableFromTopic(engine, { name: 'b_early', topic, format: 'json', settings });
    await produce(engine.kafka, topic, values(6));
    await createTableFromTopic(engine, { name: 'a_late', topic, format: 'json', settings }); // starts at offset 6
    await produce(engine.kafka, topic, values(4, 6));
    await new LocalRunner(engine, rangeBuilder(engine.catalog), once, () => {}).run();
    const status = await partitionStatus(engine);
    expect(status.map((s) => [s.table, s.indexedStart, s.indexedEnd, s.lag])).toEqual([['a_late', 6n, 10n, 0n], ['b_early', 0n, 10n, 0n]]);
    for (const name of ['a_late', 'b_early']) await checkTable(engine, await findTable(engine.catalog, name));
  });

  it('one broken table does not stop the others of its topic: they are indexed and counted, the broken one is named in the summary', async () => {
    const engine = await testEngine('sharedbroken');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'shared-broken');
    const settings = resolveSettings({ file_bytes: '100B' });
    // made first, so the delivery comes to it first
    const broken = await createTableFromTopic(engine, { name: 'broken_first', topic, format: 'json', settings });
    await createTableFromTopic(engine, { name: 'good_second', topic, format: 'json', settings });
    await engine.catalog.query(`UPDATE offsetlake.lake_table SET settings = jsonb_set(settings::jsonb, '{lease_ttl}', '"broken"') WHERE table_id = $1`, [broken.tableId]);
    await produce(engine.kafka, topic, values(4).map((v) => ({ ...v, value: JSON.stringify({ ...JSON.parse(v.value), pad: 'x'.repeat(90) }) })));
    const summary = await new LocalRunner(engine, rangeBuilder(engine.catalog), once, () => {}).run();
    const good = await checkTable(engine, await findTable(engine.catalog, 'good_second'));
    expect([...good.committedOffsets.get(0)!]).toEqual([0n, 1n, 2n, 3n]);
    expect(good.files).toHaveLength(4);
    expect(summary.filesCommitted).toBe(4);
    // named twice, as what happened, in our words (the row is refused where it is read, by setting): the
    // table waits (it gets no indexer), and the delivery of its topic failed for it
    const refusal = 'table "broken_first": its stored setting lease_ttl is "broken", not a positive whole number of milliseconds';
    expect(summary.failed).toEqual([
      { partition: 'table broken_first', error: expect.stringContaining(refusal) },
      { partition: `${topic}-0`, error: expect.stringContaining(`table broken_first (topic ${topic} partition 0): ${refusal}`) },
    ]);
    expect(await listFiles(engine.catalog, broken.tableId)).toEqual([]);
  });
});

describe('a runner that stays up', () => {
  it('keeps running while its catalog cannot be reached, says what it waits for, and indexes again once the catalog is back', async () => {
    const db = await freshDatabase('outage');
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const engine = await openEngine({ databaseUrl: db.url });
    const name = new URL(db.url).pathname.slice(1);
    onTestFinished(async () => {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
      await engine.close();
      await db.drop();
    });
    const topic = await newTopic(engine, 1, 'outage');
    const created = await testTable(engine, topic, { file_window: '30m' });
    const logs: string[] = [];
    const stop = new AbortController();
    const running = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, pollIntervalMs: 50 }, (line) => logs.push(line)).run(stop.signal);
    const settled = running.then(() => 'returned', (error: Error) => `threw: ${error.message}`);

    // The catalog goes away: its connections are cut and it cannot be reconnected to.
    await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    await produce(engine.kafka, topic, values(3));
    await until(() => logs.some((line) => line.startsWith('looking for tables and partitions failed, trying again')), 'the runner to say what it waits for');
    expect(await Promise.race([settled, new Promise((done) => setTimeout(() => done('running'), 200))])).toBe('running');

    await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
    await until(async () => (await partitionStatus(engine, created.name).catch(() => []))[0]?.openRangeRecords === 3n, 'the records to be read after the outage');
    stop.abort();
    expect(await settled).toBe('returned');
  });

  it('keeps running while Kafka cannot be reached, and says so', async () => {
    const engine = await testEngine('no_kafka');
    const topic = await newTopic(engine, 1, 'no-kafka');
    // a catalog with a table, and a runner whose Kafka is a port nobody listens on
    const away = await openEngine({ databaseUrl: engine.config.databaseUrl, kafkaBrokers: `127.0.0.1:${await closedPort()}` });
    onTestFinished(async () => {
      await away.close();
      await engine.close();
    });
    await testTable(engine, topic, { file_window: '30m' });
    const logs: string[] = [];
    const stop = new AbortController();
    const running = new LocalRunner(away, rangeBuilder(away.catalog), { ...defaultRunnerOptions, pollIntervalMs: 50 }, (line) => logs.push(line)).run(stop.signal);
    const settled = running.then(() => 'returned', (error: Error) => `threw: ${error.message}`);
    await until(() => logs.some((line) => line.startsWith('looking for tables and partitions failed, trying again')), 'the runner to say what it waits for');
    expect(await Promise.race([settled, new Promise((done) => setTimeout(() => done('running'), 200))])).toBe('running');
    stop.abort();
    expect(await settled).toBe('returned');
  });

  it('one partition that fails does not stop the serverless tick for the others: the failure is said on that partition', async () => {
    const engine = await testEngine('tick_failure');
    onTestFinished(() => engine.close());
    const [gone, kept] = [await newTopic(engine, 1, 'tick-gone'), await newTopic(engine, 1, 'tick-kept')];
    const [first, second] = [await testTable(engine, gone, { file_window: '60s' }), await testTable(engine, kept, { file_window: '60s' })];
    let now = Date.now();
    const lambda = (owner: string): IndexerRuntime => ({ ...testRuntime(engine, owner, { clock: () => now }), releaseAfterEvent: true });
    for (const topic of [gone, kept]) {
      await produce(engine.kafka, topic, values(2));
      const event = toKafkaEvent([{ topic, partition: 0, records: (await readCommittedRange(engine.kafka, topic, 0, 0n, 2n)).records }], 'local');
      await handleKafkaEvent(event, lambda(`instance-${randomUUID().slice(0, 6)}`));
    }
    await deleteTopic(engine.kafka, gone); // its open range can no longer be read again
    now += 120_000;
    const ticked = await tickIdlePartitions(lambda('tick'));
    expect(ticked.map((o) => [o.table, 'error' in o ? 'failed' : o.rangesCommitted])).toEqual([[first.name, 'failed'], [second.name, 1]]);
    expect((await listFiles(engine.catalog, second.tableId)).map((f) => f.sealReason)).toEqual(['age']);
    const status = await partitionStatus(engine, first.name);
    expect(status[0]!.waitingReason).toMatch(/^indexing failed, retrying: /);
  });
});

describe('a catalog that is not there yet', () => {
  it('run --once started before its catalog answers waits for it, saying so, and indexes every record once it does', async () => {
    const db = await freshDatabase('latecatalog');
    const engine = await openEngine({ databaseUrl: db.url });
    onTestFinished(async () => {
      await engine.close();
      await db.drop();
    });
    const topic = await newTopic(engine, 1, 'late-catalog');
    const created = await testTable(engine, topic);
    await produce(engine.kafka, topic, Array.from({ length: 20 }, (_, i) => ({ value: JSON.stringify({ i }) })));
    // the catalog's address is a port where nothing listens yet; later it forwards to Postgres
    const port = await closedPort();
    const target = new URL(db.url);
    const late = new URL(db.url);
    late.port = String(port);
    const child = spawn(process.execPath, ['bin/offsetlake.js', 'run', '--once'], { env: { ...process.env, DATABASE_URL: late.toString() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    await until(() => /trying again/.test(stderr), 'the runner to say it waits for the catalog');
    const proxy = createServer((socket) => socket.pipe(connect(Number(target.port), target.hostname)).pipe(socket)).listen(port, '127.0.0.1');
    onTestFinished(() => void proxy.close());
    expect(await exited, stderr).toBe(0);
    expect(stderr).toMatch(/cannot open the catalog at .*nothing answers there.*; trying again/);
    const files = await listFiles(engine.catalog, created.tableId);
    expect(files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(20);
    await checkTable(engine, await findTable(engine.catalog, created.name));
  });
});

describe('stopping', () => {
  it('SIGTERM while the Schema Registry cannot be reached: run exits 0 and gives its leases back at once, so another indexer need not wait lease_ttl', async () => {
    const db = await freshDatabase('sigterm');
    const engine = await openEngine({ databaseUrl: db.url });
    onTestFinished(async () => {
      await engine.close();
      await db.drop();
    });
    const topic = await newTopic(engine, 1, 'sigterm');
    const created = await testTable(engine, topic, { file_window: '1s', lease_ttl: '10m' }, 'avro');
    await produce(engine.kafka, topic, [{ value: Buffer.from([0, 0, 0, 0, 42, 2]) }]);
    const port = await closedPort();
    const child = spawn(process.execPath, ['bin/offsetlake.js', 'run'], {
      env: { ...process.env, DATABASE_URL: db.url, SCHEMA_REGISTRY_URL: `http://127.0.0.1:${port}/apis/ccompat/v7` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    await until(async () => ((await partitionStatus(engine, created.name))[0]?.waitingReason ?? '').startsWith('Schema Registry'), 'the runner to wait for the registry').catch((error: Error) => {
      throw new Error(`${error.message}; the runner said: ${stderr}`);
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lease = await engine.catalog.query('SELECT lease_owner IS NOT NULL AS held, lease_expires_at <= now() AS free FROM offsetlake.lake_partition WHERE table_id = $1', [created.tableId]);
    expect(lease.rows).toEqual([{ held: true, free: true }]);
  });
});


async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}
