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
import { rangeBuilder } from '../../src/build/files.js';
import { handleKafkaEvent, type IndexerRuntime } from '../../src/indexer/handler.js';
import { tickIdlePartitions } from '../../src/indexer/tick.js';
import { toKafkaEvent } from '../../src/events/msk.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { deleteRecords, deleteTopic } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { bodyBytes, readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { partitionStatus } from '../../src/catalog/status.js';
import { freshDatabase } from '../helpers/database.js';
import { createTableFromTopic } from '../../src/catalog/create-table.js';
import { resolveSettings } from '../../src/catalog/settings.js';
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

    const metrics = await readerHandler(new ReaderService(engine.catalog, kafkaSource(engine.kafka)), { token: null })({ method: 'GET', path: '/metrics', headers: {} });
    expect(JSON.parse(Buffer.from(await bodyBytes(metrics.body)).toString()).lostOffsets).toEqual([{ table: created.name, partition: 0, intervals: 1, offsets: '5' }]);
    // The file [0, 10) can no longer be rebuilt (Kafka deleted it): retention's business, not the checker's.
    await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = now() WHERE table_id = $1 AND end_offset <= 15', [created.tableId]);
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 10 WHERE table_id = $1', [created.tableId]);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(15 + i)));
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
