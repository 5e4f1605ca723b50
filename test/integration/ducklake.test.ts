/**
 * The catalog as a DuckLake: a stock DuckDB 1.4.4 (PyPI, with the ducklake, postgres and
 * httpfs extensions of the PyPI wheels) attaches schema `ducklake` read-only, its
 * DATA_PATH a running read API, and must answer exactly what DuckDB answers over the same
 * files read as plain Parquet. Expected values never come from our code: they come from
 * DuckDB's read_parquet over the served files, and the row counts from a read_committed
 * consumer we did not write.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { defaultSettings, resolveSettings } from '../../src/table/settings.js';
import { encoderForCompression } from '../../src/parquet/index.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { checkRetention } from '../../src/retention/check.js';
import { indexedRowsIndependently } from '../helpers/independent-kafka.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { DuckdbSession } from '../helpers/duckdb-session.js';
import { asStackReader } from '../helpers/database.js';
import { libpqConnectionString } from '../../src/cli/attach.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { stackConfig } from '../../src/stack/config.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import pg from 'pg';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

describe('an Avro decimal above precision 38 (Iceberg fixed[21]): the DuckLake face declares a blob of its two\'s complement bytes, and the other columns read', () => {
  const V5 = 'offsetlake-parquet@5/lz4-napi@2.10.0';
  let ledger: TableRecord;
  const wide = JSON.stringify({
    type: 'record', name: 'Entry', fields: [{ name: 'n', type: 'int' }, { name: 'amount', type: ['null', { type: 'bytes', logicalType: 'decimal', precision: 50, scale: 5 }] }],
  });
  /** Unscaled values near the edges of precision 50, both signs, and small ones. */
  const unscaled = (i: number): bigint | null => (i % 5 === 4 ? null : (i % 2 === 0 ? 1n : -1n) * (10n ** BigInt(5 + 11 * (i % 4)) + BigInt(i)) * (i % 3 === 0 ? 10n ** 5n : 1n));
  /** Avro's bytes of a decimal: the unscaled value's two's complement, big-endian, as few bytes as hold its sign. */
  function avroBytes(value: bigint): Buffer {
    let length = 1;
    while (value >= 2n ** BigInt(8 * length - 1) || value < -(2n ** BigInt(8 * length - 1))) length += 1;
    return Buffer.from(twosComplement(value, length), 'hex');
  }
  /** The bytes Iceberg's spec gives a decimal of precision 50 (fixed[21]): two's complement, big-endian, 21 bytes. */
  function twosComplement(value: bigint, length: number): string {
    const modulus = 2n ** BigInt(8 * length);
    return (((value % modulus) + modulus) % modulus).toString(16).padStart(2 * length, '0');
  }

  beforeAll(async () => {
    const topic = await newTopic(engine, 1, 'ducklake-wide-decimal');
    const created = await createTableFromTopic(engine, { name: 'ledger', topic, format: 'avro', settings: resolveSettings({}) });
    const schema = await registerSchema(`${topic}-value`, wide, 'AVRO');
    const batch = (from: number) => produce(engine.kafka, topic, Array.from({ length: 12 }, (_, k) => {
      const value = unscaled(from + k);
      return { key: null, value: encodeWith(schema, { n: from + k, amount: value === null ? null : { bytes: avroBytes(value) } }), partition: 0, timestamp: t0 + from + k };
    }));
    await batch(0);
    await new LocalRunner(engine, rangeBuilder(engine.catalog, undefined, V5), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    await batch(12);
    await indexAll();
    ledger = await findTable(engine.catalog, created.name);
    await attach('lake_wide');
  }, 120_000);

  afterAll(async () => {
    await duck.query('DETACH lake_wide');
  });

  it('v6 files: each amount as the 21 bytes the spec gives it; every row of v5 and v6 files read without it; v5\'s DECIMAL-annotated bytes, which DuckDB reads as DOUBLE, are refused, not misread', async () => {
    const files = await listFiles(engine.catalog, ledger.tableId);
    expect(new Set(files.map((f) => f.encoderVersion))).toEqual(new Set([V5, encoderForCompression[defaultSettings.compression]]));
    // rows 12..23 are the v6 files': the predicate on n prunes the v5 file by its statistics
    const viaLake = await duck.query('SELECT n, hex(amount) AS amount, typeof(amount) AS type FROM lake_wide.ledger WHERE n >= 12 ORDER BY n');
    expect(viaLake.rows).toEqual(Array.from({ length: 12 }, (_, k) => {
      const value = unscaled(12 + k);
      return [12 + k, value === null ? null : twosComplement(value, 21).toUpperCase(), 'BLOB'];
    }));
    expect(viaLake.rows.filter((row) => row[1] !== null && (row[1] as string).startsWith('FF')).length).toBeGreaterThan(2);
    expect(await duck.row('SELECT count(*) AS n, sum(n) AS total FROM lake_wide.ledger')).toEqual({ n: 24, total: 276 });
    await expect(duck.query('SELECT hex(amount) FROM lake_wide.ledger WHERE n < 12')).rejects.toThrow(/column "amount" has type DOUBLE/);
  });
});

const token = 'ducklake-test-token';
const s3Keys = { accessKeyId: 'ducklake-reader', secretAccessKey: 'ducklake-s3-secret' };
const run = promisify(execFile);

let engine: Engine;
let service: ReaderService;
let reader: ListeningReader | undefined;
let serveUrl: string;
let duck: DuckdbSession;
let plainDir: string;

const hour = 3_600_000;
const t0 = Math.floor(Date.now() / hour) * hour - 3 * hour;

/** Indexes everything committed so far, as `run --once` does. */
async function indexAll(): Promise<void> {
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
}

/** Every live file of the table fetched from the read API, as plain Parquet files in a folder of its own. */
async function plainCopies(table: TableRecord): Promise<{ files: CatalogFile[]; glob: string }> {
  const files = await listFiles(engine.catalog, table.tableId);
  const dir = join(plainDir, `${table.name}-${Date.now()}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const file of files) {
    const response = await fetch(`${serveUrl}/tables/${table.name}/files/${file.dataFileId}.parquet`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    writeFileSync(join(dir, `${file.dataFileId}.parquet`), Buffer.from(await response.arrayBuffer()));
  }
  return { files, glob: join(dir, '*.parquet') };
}

beforeAll(async () => {
  engine = await testEngine('ducklake');
  plainDir = mkdtempSync(join(tmpdir(), 'ducklake-plain-'));
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
  reader = await listeningReader(readerHandler(service, { token, s3: { bucket: 'offsetlake', credentials: s3Keys } }));
  serveUrl = reader.url;
  duck = await DuckdbSession.open();
  await duck.query(`CREATE SECRET serve (TYPE http, BEARER_TOKEN '${token}', SCOPE '${serveUrl}/')`);
}, 60_000);

afterAll(async () => {
  await duck?.close();
  await reader?.stop();
  await engine?.close();
  if (plainDir) rmSync(plainDir, { recursive: true, force: true });
});

/** A node of DuckDB's EXPLAIN (FORMAT JSON) plan, found depth first by its operator name. */
interface PlanNode { name: string; children: PlanNode[]; extra_info: Record<string, string> }
function findPlanNode(plan: PlanNode | PlanNode[], name: string): PlanNode | undefined {
  for (const node of Array.isArray(plan) ? plan : [plan]) {
    if (node.name.trim() === name) return node;
    const found = findPlanNode(node.children, name);
    if (found) return found;
  }
  return undefined;
}

const attach = (alias: string, databaseUrl = engine.config.databaseUrl) =>
  duck.query(`ATTACH 'ducklake:postgres:${libpqConnectionString(databaseUrl)}' AS ${alias} (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '${serveUrl}/', OVERRIDE_DATA_PATH TRUE)`);

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
    expect(viaLake.n).toBe((await indexedRowsIndependently(engine, json)).rows);
    expect(viaLake.n).toBe(150);
    expect(viaLake.first_header_keys).toBe(50);
  });

  it('the planner estimates a table at the rows its live files hold, so a join builds its hash table on the smaller side, not on the Kafka table', async () => {
    const { files, glob } = await plainCopies(json);
    const { n } = await duck.row(`SELECT count(*) AS n FROM read_parquet('${glob}')`);
    // More rows than the table has files (what DuckDB estimated a scan at without table statistics), fewer than its rows.
    const small = files.length + 20;
    expect(small).toBeLessThan(n as number);
    const { explain_value: text } = await duck.row(`EXPLAIN (FORMAT JSON) SELECT t._offset, d.x FROM lake.clicks t JOIN (SELECT range AS x FROM range(${small})) d ON d.x = t._offset`);
    const join = findPlanNode(JSON.parse(text as string), 'HASH_JOIN')!;
    const [probe, build] = join.children.map((child) => child.name.trim());
    expect([probe, build]).toEqual(['DUCKLAKE_SCAN', 'RANGE']);
    expect(Number(findPlanNode(join, 'DUCKLAKE_SCAN')!.extra_info['Estimated Cardinality'])).toBe(n);
  });

  /** Kafka bytes of the json table's granules that match `where` (over granule g of file f; $1 is the table). */
  async function granuleBytes(where: string, params: unknown[]): Promise<number> {
    const result = await engine.catalog.query<{ bytes: string }>(
      `SELECT coalesce(sum(g.kafka_bytes), 0)::text AS bytes FROM offsetlake.granule g JOIN offsetlake.data_file f USING (data_file_id) WHERE f.table_id = $1 AND ${where}`,
      [json.tableId, ...params],
    );
    return Number(result.rows[0]!.bytes);
  }

  it('pruning by our statistics: a predicate that matches one row of one file reads only granules that may hold it; a predicate on an hour reads only that hour\'s files', async () => {
    // A read API of its own (empty cache) under a URL DuckDB has not seen: its counters count this query alone.
    const own = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
    const ownReader = await listeningReader(readerHandler(own, { token }));
    const ownUrl = ownReader.url;
    try {
      await duck.query(`CREATE SECRET pruned (TYPE http, BEARER_TOKEN '${token}', SCOPE '${ownUrl}/')`);
      await duck.query(`ATTACH 'ducklake:postgres:${libpqConnectionString(engine.config.databaseUrl)}' AS pruned (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '${ownUrl}/', OVERRIDE_DATA_PATH TRUE)`);
      const { glob } = await plainCopies(json);
      const p0 = await duck.row(`SELECT min(_offset) + 7 AS target FROM read_parquet('${glob}') WHERE _partition = 0`);
      const predicate = `_partition = 0 AND _offset = ${p0.target as number}`;
      const plain = await duck.row(`SELECT count(*) AS n, count(DISTINCT filename) AS files, sum(strlen(_value)) AS bytes FROM read_parquet('${glob}', filename = true) WHERE ${predicate}`);
      expect(plain).toMatchObject({ n: 1, files: 1 });

      const viaLake = await duck.row(`SELECT count(*) AS n, sum(strlen(_value)) AS bytes FROM pruned.clicks WHERE ${predicate}`);
      expect(viaLake).toEqual({ n: plain.n, bytes: plain.bytes });
      const metrics = own.metrics;
      // the file that matched: its footer from Postgres (one ranged GET, no HEAD), then only its row groups
      // that may hold the offset, from their own offsets: nothing of any file that cannot hold it
      expect(metrics.footerHits).toBe(1);
      expect([metrics.rebuilds, metrics.mismatches, metrics.chunkMismatches]).toEqual([0, 0, 0]);
      expect(metrics.kafkaBytes).toBeGreaterThan(0);
      expect(metrics.kafkaBytes).toBeLessThanOrEqual(await granuleBytes('f.partition_id = 0 AND f.start_offset <= $2 AND $2 < f.end_offset AND g.start_offset <= $2 AND $2 < g.end_offset', [p0.target]));

      // A predicate on time: only the files of the hour it names are read.
      const hourFiles = await duck.row(`SELECT count(DISTINCT filename) AS files, count(*) AS n FROM read_parquet('${glob}', filename = true)
        WHERE _timestamp >= TIMESTAMPTZ '${new Date(t0 + hour).toISOString()}' AND _timestamp < TIMESTAMPTZ '${new Date(t0 + 2 * hour).toISOString()}'`);
      const viaLakeHour = await duck.row(`SELECT count(*) AS n FROM pruned.clicks
        WHERE _timestamp >= TIMESTAMPTZ '${new Date(t0 + hour).toISOString()}' AND _timestamp < TIMESTAMPTZ '${new Date(t0 + 2 * hour).toISOString()}'`);
      expect(viaLakeHour.n).toBe(hourFiles.n);
      // only granules of that hour's files were read
      const hourBytes = await granuleBytes('f.time_bucket = to_timestamp($2::double precision / 1000)', [t0 + hour]);
      expect(own.metrics.kafkaBytes - metrics.kafkaBytes).toBeGreaterThan(0);
      expect(own.metrics.kafkaBytes - metrics.kafkaBytes).toBeLessThanOrEqual(hourBytes);
      expect(own.metrics.rebuilds).toBe(0);
    } finally {
      await duck.query('DETACH pruned');
      await ownReader.stop();
    }
  });
});

describe('an Avro table with nested columns, evolving while a session is attached', () => {
  let orders: TableRecord;
  let topic: string;
  const v1 = JSON.stringify({
    type: 'record', name: 'Order', fields: [
      { name: 'id', type: 'long' },
      { name: 'name', type: 'string' },
      { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
      { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 'day', type: { type: 'int', logicalType: 'date' } },
      { name: 'tags', type: { type: 'array', items: 'string' } },
      { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }, { name: 'geo', type: { type: 'record', name: 'Geo', fields: [{ name: 'lat', type: 'double' }] } }] } },
      { name: 'items', type: { type: 'array', items: { type: 'record', name: 'Item', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }] } } },
    ],
  });
  const v2 = JSON.stringify({ ...JSON.parse(v1), fields: [...JSON.parse(v1).fields, { name: 'score', type: ['null', 'double'], default: null }] });
  // names with U+0000 and a leading U+FEFF: bounds Postgres text cannot hold, and a BOM that is part of the value
  const names = ['\u0000nul', '\uFEFFbom', 'plain'];
  const unscaled = (cents: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32BE(cents);
    return bytes;
  };
  const order = (i: number) => ({
    id: i,
    name: `${names[i % 3]}-${i}`,
    price: unscaled(i * 125 - 1000),
    at: t0 + i * 3 * 60_000,
    day: 20_000 + (i % 4),
    tags: i % 2 ? [`t${i}`, 'x'] : [],
    address: { city: `city-${i % 5}`, geo: { lat: i / 3 } },
    items: Array.from({ length: i % 3 }, (_, k) => ({ sku: `sku-${k}`, qty: k + i })),
  });

  beforeAll(async () => {
    topic = await newTopic(engine, 1, 'ducklake-avro');
    const created = await createTableFromTopic(engine, { name: 'orders', topic, format: 'avro', settings: resolveSettings({ file_window: '10m', granularity: 'hour' }) });
    const schema = await registerSchema(`${topic}-value`, v1, 'AVRO');
    await produce(engine.kafka, topic, Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: encodeWith(schema, order(i)), partition: 0, timestamp: t0 + i * 3 * 60_000 })));
    await indexAll();
    orders = await findTable(engine.catalog, created.name);
  }, 120_000);

  // lat is a double: summed as decimals, so the sum does not depend on the order rows come in
  const aggregates = `count(*) AS n, sum(id) AS ids, sum(price) AS prices, min("at") AS first, max("at") AS last, count(DISTINCT "day") AS days,
    sum(len(tags)) AS tags, count(address.city) AS cities, sum(address.geo.lat::DECIMAL(38, 9)) AS lats, sum(len(items)) AS items,
    sum(list_sum(list_transform(items, x -> x.qty))) AS quantities, count(items[1].sku) AS first_skus, count(_error) AS errors`;

  it('nested columns read through the DuckLake are not null and equal DuckDB over the plain files; predicates on every kind of statistic, NUL and BOM strings included, find the same rows', async () => {
    const { files, glob } = await plainCopies(orders);
    expect(files.length).toBeGreaterThan(1);
    const viaLake = await duck.row(`SELECT ${aggregates} FROM lake.orders`);
    expect(viaLake).toEqual(await duck.row(`SELECT ${aggregates} FROM read_parquet('${glob}')`));
    expect(viaLake).toMatchObject({ n: 60, cities: 60, errors: 0 });
    expect(viaLake.lats).not.toBeNull();

    for (const predicate of [
      // DuckLake 1.4.4 cuts its own SQL at a U+0000 inside a pushed-down constant (its error
      // below), so a string with U+0000 is looked for with a function, which is not pushed down
      `starts_with(name, chr(0))`,
      `name = chr(65279) || 'bom-4'`,
      `name > chr(65279)`,
      `name = chr(65279) || 'bom-4'`,
      `name >= 'plain'`,
      `"at" BETWEEN TIMESTAMPTZ '${new Date(t0 + hour).toISOString()}' AND TIMESTAMPTZ '${new Date(t0 + hour + 30 * 60_000).toISOString()}'`,
      `"at" > TIMESTAMPTZ '${new Date(t0 + 2 * hour + 1).toISOString()}'`,
      `"day" = DATE '${new Date(20_001 * 86_400_000).toISOString().slice(0, 10)}'`,
      'price < -5.5',
      'price = 3.75',
      'id IN (5, 17, 59)',
    ]) {
      const expected = await duck.row(`SELECT count(*) AS n, sum(id) AS ids FROM read_parquet('${glob}') WHERE ${predicate}`);
      expect(expected.n, predicate).toBeGreaterThan(0);
      expect(await duck.row(`SELECT count(*) AS n, sum(id) AS ids FROM lake.orders WHERE ${predicate}`), predicate).toEqual(expected);
    }
    expect(await duck.error(`SELECT count(*) FROM lake.orders WHERE name = chr(0) || 'nul-3'`)).toMatch(/Failed to get data file list from DuckLake: unterminated quoted string/);
  });

  it('a schema that evolves is seen by the session that is attached: the new column appears, older files read it as null', async () => {
    const before = await duck.query('DESCRIBE lake.orders');
    expect(before.rows.map((r) => r[0])).not.toContain('score');
    const schema = await registerSchema(`${topic}-value`, v2, 'AVRO');
    await produce(engine.kafka, topic, Array.from({ length: 10 }, (_, k) => {
      const i = 60 + k;
      return { key: `k${i}`, value: encodeWith(schema, { ...order(i), at: t0 + 3 * hour + k, score: { double: k / 2 } }), partition: 0, timestamp: t0 + 3 * hour + k };
    }));
    await indexAll();
    const { glob } = await plainCopies(orders);
    const columns = `${aggregates}, count(score) AS scores, sum(score) AS score_sum`;
    const viaLake = await duck.row(`SELECT ${columns} FROM lake.orders`);
    expect(viaLake).toEqual(await duck.row(`SELECT ${columns} FROM read_parquet('${glob}', union_by_name = true)`));
    expect(viaLake).toMatchObject({ n: 70, scores: 10, score_sum: 22.5 });
    expect(await duck.row('SELECT count(*) AS n FROM lake.orders WHERE score IS NULL')).toEqual({ n: 60 });
  });
});

describe('encoder v6 beside v5: JSON text stored as STRING and local millisecond timestamps in micros still read as JSON and TIMESTAMP_MS', () => {
  const V5 = 'offsetlake-parquet@5/lz4-napi@2.10.0';
  let docs: TableRecord;
  let visits: TableRecord;
  const seenAt = (i: number) => Date.UTC(2025, 5, 1, 9) + i * 61_001 - (i % 3 === 0 ? 2 * 10 ** 12 : 0);
  const visit = JSON.stringify({
    type: 'record', name: 'Visit', fields: [{ name: 'n', type: 'int' }, { name: 'seen', type: { type: 'long', logicalType: 'local-timestamp-millis' } }],
  });

  /** Indexes what is committed with encoder `encoder` (default: the one of new files). */
  async function indexWith(encoder?: string): Promise<void> {
    await new LocalRunner(engine, rangeBuilder(engine.catalog, undefined, encoder), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  }
  /** Each served file's Parquet type of `column` as DuckDB's parquet_schema reads it: physical, logical. */
  async function fileTypes(glob: string, column: string): Promise<string[]> {
    const { rows } = await duck.query(`SELECT DISTINCT type || ' ' || coalesce(logical_type, '') FROM parquet_schema('${glob}') WHERE name = '${column}' ORDER BY 1`);
    return rows.map((r) => r[0] as string);
  }

  beforeAll(async () => {
    const jsonTopic = await newTopic(engine, 1, 'ducklake-v6-json');
    const avroTopic = await newTopic(engine, 1, 'ducklake-v6-avro');
    const createdDocs = await createTableFromTopic(engine, { name: 'docs', topic: jsonTopic, format: 'json', settings: resolveSettings({}) });
    const createdVisits = await createTableFromTopic(engine, { name: 'visits', topic: avroTopic, format: 'avro', settings: resolveSettings({}) });
    const schema = await registerSchema(`${avroTopic}-value`, visit, 'AVRO');
    const batch = async (from: number) => {
      await produce(engine.kafka, jsonTopic, Array.from({ length: 20 }, (_, k) => {
        const i = from + k;
        return { key: null, value: i % 9 === 4 ? 'not json' : JSON.stringify({ n: i, page: `/p/${i % 3}`, tags: Array.from({ length: i % 3 }, (_, t) => `t${t}`) }), partition: 0, timestamp: t0 + i };
      }));
      await produce(engine.kafka, avroTopic, Array.from({ length: 20 }, (_, k) => ({ key: null, value: encodeWith(schema, { n: from + k, seen: seenAt(from + k) }), partition: 0, timestamp: t0 + from + k })));
    };
    await batch(0);
    await indexWith(V5);
    await batch(20);
    await indexWith();
    docs = await findTable(engine.catalog, createdDocs.name);
    visits = await findTable(engine.catalog, createdVisits.name);
    await attach('lake_v6');
  }, 120_000);

  afterAll(async () => {
    await duck.query('DETACH lake_v6');
  });

  it('a json table of v5 and v6 files: `_value` is JSON through the DuckLake, and ->>, json_extract, json_type and json_keys answer as DuckDB over the plain files', async () => {
    const { files, glob } = await plainCopies(docs);
    expect(new Set(files.map((f) => f.encoderVersion))).toEqual(new Set([V5, encoderForCompression[defaultSettings.compression]]));
    // what the files hold: v5 annotates JSON, v6 stores Iceberg's string (Parquet STRING)
    expect(await fileTypes(glob, '_value')).toEqual(['BYTE_ARRAY JsonType()', 'BYTE_ARRAY StringType()']);
    const aggregates = (value: string) => `count(*) AS n, count(${value}) AS values, sum((${value}->>'$.n')::int) AS ns, count(DISTINCT ${value}->>'page') AS pages,
      count(json_extract(${value}, '$.tags[1]')) AS second_tags, count(*) FILTER (WHERE json_type(${value}) = 'OBJECT') AS objects,
      string_agg(DISTINCT array_to_string(json_keys(${value}), ','), ';') AS keys`;
    const viaLake = await duck.row(`SELECT ${aggregates('_value')}, string_agg(DISTINCT typeof(_value), ',') AS types FROM lake_v6.docs`);
    const plain = await duck.row(`SELECT ${aggregates('_value::VARCHAR::JSON')} FROM read_parquet('${glob}')`);
    expect(viaLake).toEqual({ ...plain, types: 'JSON' });
    expect(viaLake.n).toBe((await indexedRowsIndependently(engine, docs)).rows);
    expect(viaLake).toMatchObject({ n: 40, values: 36, objects: 36, keys: 'n,page,tags' }); // 4 of 40 not JSON (i % 9 === 4)
  });

  it('an Avro local-timestamp-millis field in files of v5 (TIMESTAMP(MILLIS, false)) and v6 (TIMESTAMP(MICROS, false)): TIMESTAMP_MS through the DuckLake, the instants written, and a predicate finds the rows it should', async () => {
    const { files, glob } = await plainCopies(visits);
    expect(new Set(files.map((f) => f.encoderVersion))).toEqual(new Set([V5, encoderForCompression[defaultSettings.compression]]));
    expect(await fileTypes(glob, 'seen')).toEqual([
      'INT64 TimestampType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))',
      'INT64 TimestampType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=MilliSeconds(), MICROS=<null>, NANOS=<null>))',
    ]);
    const viaLake = await duck.query('SELECT n, epoch_ms(seen) AS ms, typeof(seen) AS type FROM lake_v6.visits ORDER BY n');
    expect(viaLake.rows).toEqual(Array.from({ length: 40 }, (_, i) => [i, seenAt(i), 'TIMESTAMP_MS']));
    const cut = new Date(seenAt(17)).toISOString().replace('T', ' ').replace('Z', '');
    const expected = Array.from({ length: 40 }, (_, i) => i).filter((i) => seenAt(i) >= seenAt(17)).length;
    expect(expected).toBeGreaterThan(5);
    expect(await duck.row(`SELECT count(*) AS n FROM lake_v6.visits WHERE seen >= TIMESTAMP '${cut}'`)).toEqual({ n: expected });
    expect(await duck.row(`SELECT count(*) AS n FROM read_parquet('${glob}', union_by_name = true) WHERE seen >= TIMESTAMP '${cut}'`)).toEqual({ n: expected });
  });
});

describe('retention and the attached session', () => {
  it('files that expire leave the attached session: the same session then counts what the live files hold, and a new session estimates the table at their rows', async () => {
    const topic = await newTopic(engine, 1, 'ducklake-expiry');
    const created = await createTableFromTopic(engine, { name: 'short', topic, format: 'json', settings: resolveSettings({ file_bytes: '600' }) });
    await produce(engine.kafka, topic, Array.from({ length: 300 }, (_, i) => ({ key: null, value: `{"n":${i}}`, partition: 0, timestamp: t0 + i })));
    await indexAll();
    const table = await findTable(engine.catalog, created.name);
    expect(await duck.row('SELECT count(*) AS n, sum(_offset) AS offsets FROM lake.short')).toEqual({ n: 300, offsets: (299 * 300) / 2 });

    await deleteRecords(engine.kafka, topic, 0, 140n);
    expect((await checkRetention(engine.catalog, engine.kafka, { table: table.name })).expiredFiles).toBeGreaterThan(0);
    const { files, glob } = await plainCopies(table);
    const plain = await duck.row(`SELECT count(*) AS n, sum(_offset) AS offsets, min(_offset) AS first FROM read_parquet('${glob}')`);
    expect(plain.first as number).toBeGreaterThanOrEqual(140);
    expect(files.every((f) => f.startOffset >= 140n)).toBe(true);
    expect(await duck.row('SELECT count(*) AS n, sum(_offset) AS offsets, min(_offset) AS first FROM lake.short')).toEqual(plain);
    // A session attached now estimates the table at its live files' rows (one attached before keeps its statistics until a new file appears).
    await attach('after_expiry');
    const { explain_value: text } = await duck.row('EXPLAIN (FORMAT JSON) SELECT _offset FROM after_expiry.short');
    expect(Number(findPlanNode(JSON.parse(text as string), 'DUCKLAKE_SCAN')!.extra_info['Estimated Cardinality'])).toBe(plain.n);
    await duck.query('DETACH after_expiry');
  });
});

describe('the reader role', () => {
  it('a login in role offsetlake_ducklake_reader attaches the DuckLake and reads it, but cannot read the catalog tables behind it', async () => {
    const login = `ducklake_reader_${Date.now()}`;
    await engine.catalog.query(`CREATE ROLE ${login} LOGIN PASSWORD 'reader-pw' IN ROLE offsetlake_ducklake_reader`);
    try {
      // Straight to Postgres, not through the test pooler: PgBouncer logs in to the server
      // with the passwords of its own user list, which holds the catalog's owner only.
      const url = new URL(engine.config.databaseUrl);
      url.username = login;
      url.password = 'reader-pw';
      url.port = String(stackConfig().postgresPort);
      await duck.query(`ATTACH 'ducklake:postgres:${libpqConnectionString(url.toString())}' AS as_reader (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '${serveUrl}/', OVERRIDE_DATA_PATH TRUE)`);
      expect(await duck.row('SELECT count(*) AS n FROM as_reader.clicks')).toEqual(await duck.row('SELECT count(*) AS n FROM lake.clicks'));
      await duck.query(`ATTACH 'postgres:${libpqConnectionString(url.toString())}' AS as_reader_pg (READ_ONLY)`);
      expect(await duck.error('SELECT count(*) FROM as_reader_pg.offsetlake.data_file')).toMatch(/permission denied/);
      expect(await duck.row('SELECT count(*) > 0 AS any FROM as_reader_pg.ducklake.ducklake_data_file')).toEqual({ any: true });
      await duck.query('DETACH as_reader');
      await duck.query('DETACH as_reader_pg');
    } finally {
      await engine.catalog.query(`DROP OWNED BY ${login}`).catch(() => {});
      await engine.catalog.query(`DROP ROLE IF EXISTS ${login}`);
    }
  });
});

describe('offsetlake attach, as a user types it', () => {
  const cliWith = async (env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> => {
    try {
      const { stdout, stderr } = await run(process.execPath, ['bin/offsetlake.js', 'attach', ...args], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl, OFFSETLAKE_READER_URL: asStackReader(engine.config.databaseUrl), ...env }, timeout: 120_000 });
      return { stdout, stderr, code: 0 };
    } catch (error) {
      const failed = error as { stdout: string; stderr: string; code: number };
      return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
    }
  };

  const cli = (...args: string[]) => cliWith({}, ...args);

  it('prints SQL that, pasted into a new DuckDB session, attaches the tables; --check lists them with a footer of each read through serve', async () => {
    // the tables the describe blocks above made, by name
    const tablesSoFar = ['clicks', 'docs', 'ledger', 'orders', 'short', 'visits'];
    const printed = await cli('--url', serveUrl, '--token', token);
    expect(printed.code).toBe(0);
    const pasted = await DuckdbSession.open();
    try {
      await pasted.query(printed.stdout);
      const tables = await pasted.query("SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY 1");
      expect(tables.rows.flat()).toEqual(tablesSoFar);
      expect(await pasted.row('SELECT count(*) AS n, sum(_offset) AS offsets FROM lake.clicks')).toEqual(await duck.row('SELECT count(*) AS n, sum(_offset) AS offsets FROM lake.clicks'));
    } finally {
      await pasted.close();
    }

    const checked = await cli('--url', serveUrl, '--token', token, '--check', '--json');
    expect(checked.code).toBe(0);
    const answer = JSON.parse(checked.stdout) as { duckdb: string; tables: { table: string; files: number; firstFileRows: number }[] };
    expect(answer.duckdb).toBe('1.4.4');
    const catalogFiles = async (name: string) => (await listFiles(engine.catalog, (await findTable(engine.catalog, name)).tableId)).length;
    expect(answer.tables.map((t) => [t.table, t.files])).toEqual(await Promise.all(tablesSoFar.map(async (name) => [name, await catalogFiles(name)])));
    expect(answer.tables.every((t) => t.firstFileRows > 0)).toBe(true);
  });

  it('with the S3 key pair: SQL that attaches through the S3 face at the catalog\'s own data path, pasted into a new DuckDB session', async () => {
    const printed = await cli('--url', serveUrl, '--s3-access-key-id', s3Keys.accessKeyId, '--s3-secret-access-key', s3Keys.secretAccessKey);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("(METADATA_SCHEMA 'ducklake', READ_ONLY);");
    const pasted = await DuckdbSession.open();
    try {
      await pasted.query(printed.stdout);
      expect(await pasted.row('SELECT count(*) AS n, sum(_offset) AS offsets FROM lake.clicks')).toEqual(await duck.row('SELECT count(*) AS n, sum(_offset) AS offsets FROM lake.clicks'));
    } finally {
      await pasted.close();
    }
    const wrong = await cliWith({ OFFSETLAKE_S3_SECRET_ACCESS_KEY: 'not-the-secret' }, '--url', serveUrl, '--s3-access-key-id', s3Keys.accessKeyId);
    expect([wrong.code, wrong.stdout, wrong.stderr.trim()]).toEqual([1, '', `offsetlake attach: serve at ${serveUrl} refuses this S3 key pair: give the one serve was started with`]);
  });

  it('hands out a login that can only read: pasted into DuckDB, it cannot create, change, drop or run programs through the postgres extension (issue 26.1)', async () => {
    const printed = await cli('--url', serveUrl, '--token', token, '--json');
    expect(printed.code, printed.stderr).toBe(0);
    const statements = (JSON.parse(printed.stdout) as { statements: string[] }).statements;
    const attachLine = statements.find((s) => s.startsWith('ATTACH'))!;
    expect(attachLine).toContain(`user=offsetlake_reader`);
    expect(attachLine).not.toContain(new URL(engine.config.databaseUrl).password);
    const libpq = /ducklake:postgres:(.*)' AS lake/.exec(attachLine)![1]!.replaceAll("''", "'");
    const pasted = await DuckdbSession.open();
    try {
      for (const statement of statements) await pasted.query(statement);
      const tablesSeen = "SELECT count(*) AS n FROM duckdb_tables() WHERE database_name = 'lake'";
      const before = await pasted.row(tablesSeen);
      // the same login through DuckDB's postgres extension, not read-only on DuckDB's side
      await pasted.query(`ATTACH 'postgres:${libpq.replaceAll("'", "''")}' AS raw_pg`);
      const attempts = [
        'CREATE TABLE raw_pg.ducklake.planted (i INTEGER)',
        'CREATE TABLE raw_pg.public.planted (i INTEGER)',
        "CALL postgres_execute('raw_pg', 'CREATE SCHEMA planted')",
        "CALL postgres_execute('raw_pg', 'ALTER ROLE offsetlake_reader SUPERUSER')",
        "CALL postgres_execute('raw_pg', 'DROP SCHEMA offsetlake CASCADE')",
        "CALL postgres_execute('raw_pg', 'CREATE TABLE public.planted (i int)')",
        "CALL postgres_execute('raw_pg', 'COPY (SELECT 1) TO PROGRAM ''true''')",
        "CALL postgres_execute('raw_pg', 'SELECT * FROM offsetlake.data_file')",
      ];
      for (const attempt of attempts) expect(await pasted.error(attempt), attempt).toMatch(/permission denied|read-only transaction|must be superuser|not allowed/i);
      expect(await pasted.row(tablesSeen)).toEqual(before);
    } finally {
      await pasted.close();
    }
    expect((await engine.catalog.query("SELECT to_regclass('public.planted') AS t")).rows[0].t).toBeNull();
  });

  it('refuses to hand out a login that can write the catalog, saying why and what to give instead; --allow-writer prints it with a warning (issue 26.1)', async () => {
    const writer = ['bin/offsetlake.js', 'attach', '--url', serveUrl];
    const env = { ...process.env, DATABASE_URL: engine.config.databaseUrl, OFFSETLAKE_READER_URL: '', OFFSETLAKE_TOKEN: token };
    const refused = await run(process.execPath, writer, { env }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    const superuser = new URL(engine.config.databaseUrl).username;
    expect([(refused as { code: number }).code, (refused as { stdout: string }).stdout]).toEqual([1, '']);
    expect((refused as { stderr: string }).stderr.trim()).toBe(`offsetlake attach: the SQL would hand out a login that can write the catalog: ${superuser} is a superuser (it can change or drop the catalog, and run programs on its server). `
      + 'Give a login that can only read (in role offsetlake_ducklake_reader) with --database-url or OFFSETLAKE_READER_URL (on the local stack leave both and DATABASE_URL unset: attach then uses its reader login offsetlake_reader), or --allow-writer to hand this one out all the same');
    const allowed = await run(process.execPath, [...writer, '--allow-writer'], { env });
    expect(allowed.stdout).toContain('ATTACH ');
    expect(allowed.stderr).toContain(`warning: the SQL below holds a login that can write the catalog (${superuser} is a superuser`);
  });

  it('a reader login that takes every lock it can stalls neither table create nor migrations; its sessions are read-only and bounded (issue 26.2)', async () => {
    const reader = new pg.Client({ connectionString: asStackReader(engine.config.databaseUrl) });
    await reader.connect();
    try {
      // the keys writers once waited on: mapping ids (migration 6's trigger) and migrations
      await reader.query('SELECT pg_advisory_lock(1868983664), pg_advisory_lock($1)', [0x6f_66_6c_6b]);
      for (const attempt of ['LOCK TABLE offsetlake.mapping_id_turn', 'SELECT * FROM offsetlake.table_schema FOR UPDATE', 'SELECT * FROM ducklake.ducklake_table FOR UPDATE', 'LOCK TABLE ducklake.ducklake_table']) {
        await reader.query('BEGIN');
        await expect(reader.query(attempt), attempt).rejects.toThrow(/permission denied/);
        await reader.query('ROLLBACK');
      }
      const hung = new Promise<'hung'>((done) => setTimeout(() => done('hung'), 60_000).unref());
      const topic = await newTopic(engine, 1, 'locked-out');
      const created = createTableFromTopic(engine, { name: 'made_while_locked', topic, format: 'json', settings: resolveSettings({}) }).then(() => 'created');
      expect(await Promise.race([created, hung])).toBe('created');
      expect(await Promise.race([migrateCatalog(engine.catalog).then((r) => r.applied), hung])).toEqual([]);
      const settings = await reader.query("SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('default_transaction_read_only') AS read_only, (SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user) AS connections");
      expect(settings.rows[0]).toEqual({ statement: '5min', idle: '1h', read_only: 'on', connections: 20 });
    } finally {
      await reader.end();
    }
  });

  it('takes secrets from the environment or a file; a secret given as a flag works but is warned about, since `ps` shows it (issue 26.6)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'offsetlake-secret-'));
    try {
      writeFileSync(join(dir, 's3-secret'), `${s3Keys.secretAccessKey}\n`, { mode: 0o600 });
      const fromFile = await cliWith({ OFFSETLAKE_S3_SECRET_ACCESS_KEY_FILE: join(dir, 's3-secret') }, '--url', serveUrl, '--s3-access-key-id', s3Keys.accessKeyId);
      expect([fromFile.code, fromFile.stderr]).toEqual([0, '']);
      expect(fromFile.stdout).toContain(`SECRET '${s3Keys.secretAccessKey}'`);
      const fromEnv = await cliWith({ OFFSETLAKE_TOKEN: token }, '--url', serveUrl);
      expect([fromEnv.code, fromEnv.stderr]).toEqual([0, '']);
      const flagged = await cli('--url', serveUrl, '--token', token);
      expect(flagged.code).toBe(0);
      expect(flagged.stderr.trim()).toBe('warning: --token on the command line shows in `ps` to every user of this machine; set OFFSETLAKE_TOKEN, or OFFSETLAKE_TOKEN_FILE to a file that holds it');
      const missing = await cliWith({ OFFSETLAKE_TOKEN_FILE: join(dir, 'nothing-here') }, '--url', serveUrl);
      expect([missing.code, missing.stderr.trim()]).toEqual([2, `offsetlake attach: OFFSETLAKE_TOKEN_FILE names ${join(dir, 'nothing-here')}, which cannot be read (ENOENT)`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says what is wrong, in a sentence, before printing anything: a wrong token, no serve, no token, a bad name', async () => {
    const wrong = await cli('--url', serveUrl, '--token', 'not-the-token');
    expect([wrong.code, wrong.stdout]).toEqual([1, '']);
    expect(wrong.stderr).toContain(`serve at ${serveUrl} refuses this token`);
    const nobody = await cliWith({ OFFSETLAKE_TOKEN: token }, '--url', 'http://127.0.0.1:1');
    expect([nobody.code, nobody.stderr.trim()]).toEqual([1, 'offsetlake attach: no offsetlake serve answers at http://127.0.0.1:1: start one (offsetlake serve --token T) or name it with --url']);
    const untold = await run(process.execPath, ['bin/offsetlake.js', 'attach', '--url', serveUrl], { env: { ...process.env, OFFSETLAKE_TOKEN: '' } }).catch((e: { code: number; stderr: string }) => e);
    expect((untold as { code: number }).code).toBe(2);
    expect((untold as { stderr: string }).stderr).toContain("the SQL needs serve's bearer token");
    expect((await cli('--url', serveUrl, '--token', token, '--as', 'My Lake')).code).toBe(2);
  });
});
