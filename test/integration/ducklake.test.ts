/**
 * The catalog as a DuckLake: a stock DuckDB 1.4.4 (PyPI, with the ducklake, postgres and
 * httpfs extensions of the PyPI wheels) attaches schema `ducklake` read-only, its
 * DATA_PATH a running read API, and must answer exactly what DuckDB answers over the same
 * files read as plain Parquet. Expected values never come from our code: they come from
 * DuckDB's read_parquet over the served files, and the row counts from a read_committed
 * consumer we did not write.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type DataFile } from '../../src/catalog/file-reads.js';
import { findTable, type TableRecord } from '../../src/catalog/tables.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/build/files.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { readerServer } from '../../src/reader/node-server.js';
import { ReaderService } from '../../src/reader/service.js';
import { resolveSettings } from '../../src/catalog/settings.js';
import { createTableFromTopic } from '../../src/catalog/create-table.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { checkRetention } from '../../src/retention/check.js';
import { committedOffsetsIndependently } from '../helpers/independent-kafka.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { DuckdbSession } from '../helpers/duckdb-session.js';
import { newTopic, testEngine } from '../helpers/engine.js';

const token = 'ducklake-test-token';

let engine: Engine;
let service: ReaderService;
let server: Server;
let serveUrl: string;
let duck: DuckdbSession;
let plainDir: string;

const hour = 3_600_000;
const t0 = Math.floor(Date.now() / hour) * hour - 3 * hour;

/** Indexes everything committed so far, as `run --once` does. */
async function indexAll(): Promise<void> {
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
}

/** The libpq connection string DuckDB's postgres extension takes, from a postgres:// URL. */
function libpq(url: string): string {
  const u = new URL(url);
  return [`host=${u.hostname}`, `port=${u.port}`, `dbname=${u.pathname.slice(1)}`, `user=${decodeURIComponent(u.username)}`, `password=${decodeURIComponent(u.password)}`].join(' ');
}

/** Every live file of the table fetched from the read API, as plain Parquet files in a folder of its own. */
async function plainCopies(table: TableRecord): Promise<{ files: DataFile[]; glob: string }> {
  const files = await listFiles(engine.catalog, table.tableId);
  const dir = join(plainDir, `${table.name}-${Date.now()}`);
  rmSync(dir, { recursive: true, force: true });
  for (const file of files) {
    const response = await fetch(`${serveUrl}/tables/${table.name}/files/${file.dataFileId}.parquet`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${file.dataFileId}.parquet`), Buffer.from(await response.arrayBuffer()));
  }
  return { files, glob: join(dir, '*.parquet') };
}

async function committedCount(table: TableRecord): Promise<number> {
  const partitions = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
  const offsets = await committedOffsetsIndependently(engine.config.kafkaBrokers, partitions.rows.map((p) => ({ topic: table.topic, partition: p.partition_id, start: p.indexed_start, end: p.indexed_end })));
  return offsets.reduce((sum, list) => sum + list.length, 0);
}

beforeAll(async () => {
  engine = await testEngine('ducklake');
  plainDir = mkdtempSync(join(tmpdir(), 'ducklake-plain-'));
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
  server = readerServer(readerHandler(service, { token })).listen(0, '127.0.0.1');
  await once(server, 'listening');
  serveUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  duck = await DuckdbSession.open();
  await duck.query(`CREATE SECRET serve (TYPE http, BEARER_TOKEN '${token}', SCOPE '${serveUrl}/')`);
}, 60_000);

afterAll(async () => {
  await duck?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await engine?.close();
  if (plainDir) rmSync(plainDir, { recursive: true, force: true });
});

const attach = (alias: string, databaseUrl = engine.config.databaseUrl) =>
  duck.query(`ATTACH 'ducklake:postgres:${libpq(databaseUrl)}' AS ${alias} (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '${serveUrl}/', OVERRIDE_DATA_PATH TRUE)`);

describe('DuckDB attaches the catalog as a DuckLake', () => {
  let json: TableRecord;

  beforeAll(async () => {
    const topic = await newTopic(engine, 2, 'ducklake-json');
    const created = await createTableFromTopic(engine, { name: 'clicks', topic, format: 'json', settings: resolveSettings({ file_window: '10m', granularity: 'hour' }) });
    for (let i = 0; i < 6; i += 1) {
      const records: RecordToProduce[] = Array.from({ length: 30 }, (_, j) => ({
        key: j % 5 === 0 ? null : `user-${j % 7}`,
        value: j === 4 ? 'not json' : JSON.stringify({ i, j, page: `/p/${j % 3}`, ms: i * 100 + j }),
        headers: j % 3 === 0 ? ([['source', `app-${j}`], ['trace', null]] as [string, string | null][]) : [],
        partition: j % 2,
        timestamp: t0 + i * 30 * 60_000 + j * 1000,
      }));
      await produce(engine.kafka, topic, records, { transactionalId: `ducklake-${topic}`, abort: i === 2 });
    }
    await indexAll();
    json = await findTable(engine.catalog, created.name);
    await attach('lake');
  }, 120_000);

  it('JSON table: counts and sums through the DuckLake equal DuckDB over the same files as plain Parquet, and the rows a read_committed consumer sees', async () => {
    const { files, glob } = await plainCopies(json);
    expect(files.length).toBeGreaterThan(3);
    const aggregates = `count(*) AS n, sum(_offset) AS offsets, sum(_partition) AS partitions, count(_key) AS keys, count(_value) AS json_values,
      count(_error) AS errors, sum(len(_headers)) AS headers, count(_headers[1].key) AS first_header_keys, sum(octet_length(_key)) AS key_bytes,
      sum((_value->>'ms')::int) AS ms, min(_timestamp) AS first, max(_timestamp) AS last, count(DISTINCT _value->>'page') AS pages`;
    const viaLake = await duck.row(`SELECT ${aggregates} FROM lake.clicks`);
    const plain = await duck.row(`SELECT ${aggregates} FROM read_parquet('${glob}')`);
    expect(viaLake).toEqual(plain);
    expect(viaLake.n).toBe(await committedCount(json));
    expect(viaLake.n).toBe(150);
    expect(viaLake.first_header_keys).toBe(50);
  });
});
