/**
 * serve's Iceberg REST catalog, read by clients no one here wrote
 * (test/integration/iceberg_clients.py): pyiceberg 0.12 scans the table through its own S3
 * FileIO on serve's S3 face, DuckDB 1.4.4 attaches the catalog with its iceberg extension,
 * fastavro reads the manifest list and manifests, requests sees the REST answers. Rows are
 * checked against a read_committed consumer we did not write, DuckDB's answers against
 * DuckDB over the same data files read as plain Parquet, manifests and `inspect.files`
 * against the catalog's own files and statistics.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { readerServer } from '../../src/reader/node-server.js';
import { ReaderService } from '../../src/reader/service.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { schemaRegistry } from '../../src/schema/registry.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { committedOffsetsIndependently, readCommittedIndependently } from '../helpers/independent-kafka.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { checkRetention } from '../../src/retention/check.js';
import { cutSnapshotIfChanged } from '../../src/iceberg/snapshots.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { sparkAnswer, startSpark } from '../helpers/iceberg-spark.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

const keys = { accessKeyId: 'offsetlake-reader', secretAccessKey: 's3cret/with+chars' };
const bucket = 'offsetlake';
const token = 'iceberg-token';
const t0 = Date.UTC(2026, 10, 1, 12, 30);
const hour = 3_600_000;

let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
let service: ReaderService;
let reader: ListeningReader | undefined;
let endpoint: string;

async function indexAll(): Promise<void> {
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
}

beforeAll(async () => {
  startSpark().catch(() => {}); // Spark starts (if no other test file has) while the table is made; awaited by the Spark test
  engine = await testEngine('iceberg');
  const topic = await newTopic(engine, 2, 'iceberg');
  const created = await createTableFromTopic(engine, { name: 'events', topic, format: 'json', settings: resolveSettings({ file_bytes: '3000' }) });
  // more tables, so that listing tables has pages to turn; one on a topic without records has no snapshot
  await createTableFromTopic(engine, { name: 'events_by_day', topic, format: 'json', settings: resolveSettings({ granularity: 'day' }) });
  await createTableFromTopic(engine, { name: 'nothing_yet', topic: await newTopic(engine, 1, 'iceberg-empty'), format: 'raw', settings: resolveSettings({}) });
  // four transactions over three hours; the second is aborted and must be nowhere
  for (let i = 0; i < 4; i += 1) {
    await produce(engine.kafka, topic, Array.from({ length: 40 }, (_, j) => ({
      key: j % 5 === 0 ? null : `k${j}`,
      value: j % 7 === 0 ? 'not json' : JSON.stringify({ i, j, text: 'é'.repeat(j) }),
      headers: j % 3 === 0 ? [['h', `v${j}`], ['empty', null]] : [],
      partition: j % 2,
      timestamp: t0 + i * hour + j * 1000,
    })), { transactionalId: `iceberg-${topic}`, abort: i === 1 });
  }
  await indexAll();
  table = await findTable(engine.catalog, created.name);
  files = await listFiles(engine.catalog, table.tableId);
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
  reader = await listeningReader(readerHandler(service, { token, s3: { bucket, credentials: keys }, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, { bucket, region: 'us-east-1', credentials: keys }) }));
  endpoint = reader.url;
}, 180_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

type Answers = Record<string, Record<string, unknown> & { error?: string; trace?: string }>;

/** A Python script of this folder run on `job` (its stdin, JSON); its last stdout line parsed. */
function python<T>(script: string, job: unknown, timeoutMs = 300_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = execFile('python3', [fileURLToPath(new URL(`./${script}`, import.meta.url))], { maxBuffer: 256 * 1024 * 1024, timeout: timeoutMs }, (error, out, err) =>
      (error ? reject(new Error(`${script} failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as T)));
    child.stdin!.end(JSON.stringify(job));
  });
}

function clients(extra: Record<string, unknown> = {}): Promise<Answers> {
  return python<Answers>('iceberg_clients.py', {
    uri: `${endpoint}/iceberg`, endpoint, token, table: table.name, bucket, key: keys.accessKeyId, secret: keys.secretAccessKey,
    files: files.map((f) => `s3://${bucket}/tables/${table.name}/files/${f.dataFileId}.parquet`),
    timestampFrom: t0 + 2 * hour - 30 * 60_000, offsetFrom: 20, emptyTable: 'nothing_yet', ...extra,
  });
}

let answers: Answers;

describe("serve's Iceberg REST catalog", () => {
  beforeAll(async () => {
    answers = await clients();
    for (const [name, answer] of Object.entries(answers)) expect(answer.error, `${name}: ${answer.trace ?? ''}`).toBeUndefined();
  }, 320_000);

  /** The table's rows as a read_committed consumer reads the indexed offsets (`value` null where it is not JSON). */
  async function committedRows() {
    const indexed = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
      'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
    const records = await readCommittedIndependently(engine.config.kafkaBrokers, indexed.rows.map((p) => ({ topic: table.topic, partition: p.partition_id, start: BigInt(p.indexed_start), end: BigInt(p.indexed_end) })));
    return records.flatMap((list, i) => list.map((r) => {
      const text = r.value?.toString('utf8') ?? null;
      let json = true;
      try { JSON.parse(text ?? ''); } catch { json = false; }
      return {
        partition: indexed.rows[i]!.partition_id, offset: Number(r.offset), timestamp: r.timestamp, key: r.key?.toString('hex') ?? null,
        value: json ? text : null, headers: r.headers.map(([k, v]) => [k, v?.toString('hex') ?? null]),
      };
    }));
  }

  it('pyiceberg 0.12 scans the table to Arrow: every row and value equals what a read_committed consumer reads from the indexed offsets', async () => {
    const expected = await committedRows();
    expect(expected.length).toBe(120);
    const py = answers.pyiceberg as { rows: unknown[]; namespaces: string[][]; tables: string[][]; fieldIds: Record<string, number>; empty: unknown; fileTimestamps: { types: string[]; rows: [number, number, string][] } };
    expect(py.rows).toEqual(expected);
    // encoder v5: each file, read by plain pyarrow, holds _timestamp as Iceberg's timestamptz (micros, UTC), the same instants
    expect(py.fileTimestamps.types).toEqual(['timestamp[us, tz=UTC]']);
    expect(py.fileTimestamps.rows).toEqual(expected.map((r) => [r.partition, r.offset, String(BigInt(r.timestamp) * 1000n)]));
    expect(py.namespaces).toEqual([['main']]);
    // a table without files yet: no snapshot, its schema, no rows
    expect(py.empty).toEqual({ rows: 0, snapshot: null, fields: ['_kafka_partition', '_offset', '_timestamp', '_key', '_headers', '_value'] });
    expect(py.tables).toEqual([['main', 'events'], ['main', 'events_by_day'], ['main', 'nothing_yet']]);
    // the schema's field ids are the catalog's column ids (the Parquet field_ids); Kafka's
    // partition is _kafka_partition, since Iceberg reserves _partition for a metadata column
    const columns = await engine.catalog.query<{ column_name: string; column_id: number }>('SELECT column_name, column_id FROM offsetlake.table_column WHERE table_id = $1 AND parent_column IS NULL', [table.tableId]);
    expect(py.fieldIds).toEqual(Object.fromEntries(columns.rows.map((c) => [c.column_name === '_partition' ? '_kafka_partition' : c.column_name, c.column_id])));
  });

  it("polars' scan_iceberg reads `_value`, Iceberg `string`, as String (encoder v6 stores it as Parquet STRING; v5's JSON annotation it refused: `incoming: Binary != target: String`), every value as a read_committed consumer reads it", async () => {
    const expected = await committedRows();
    const seen = answers.polars as { types: Record<string, string>; rows: [number, number, string | null][] };
    expect(seen.types._value).toBe('String');
    expect(seen.rows).toEqual(expected.map((r) => [r.partition, r.offset, r.value]).sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number)));
  });

  it("pyiceberg's inspect.files lists the catalog's files with their sizes, counts, partition hours, split offsets and exact bounds", async () => {
    const listed = (answers.pyiceberg as { files: Record<string, unknown>[] }).files;
    const byPath = new Map(listed.map((f) => [f.file_path as string, f]));
    expect([...byPath.keys()].sort()).toEqual(files.map((f) => `s3://${bucket}/tables/events/files/${f.dataFileId}.parquet`).sort());
    const offsetId = files[0]!.columns.find((c) => c.columnName === '_offset')!.columnId;
    const timestampId = files[0]!.columns.find((c) => c.columnName === '_timestamp')!.columnId;
    for (const file of files) {
      const seen = byPath.get(`s3://${bucket}/tables/events/files/${file.dataFileId}.parquet`)!;
      expect(seen.record_count).toBe(Number(file.recordCount));
      expect(seen.file_size_in_bytes).toBe(Number(file.fileSizeBytes));
      expect(seen.file_format).toBe('PARQUET');
      expect(seen.partition).toEqual({ _timestamp_hour: Math.floor(file.bucket.getTime() / hour) });
      // Arrow maps come as [key, value] pairs
      const pairs = (list: unknown) => Object.fromEntries(list as [number, unknown][]);
      expect(pairs(seen.value_counts)).toEqual(Object.fromEntries(file.columns.map((c) => [c.columnId, Number(c.valueCount)])));
      expect(pairs(seen.null_value_counts)).toEqual(Object.fromEntries(file.columns.map((c) => [c.columnId, Number(c.nullCount)])));
      expect(Object.keys(pairs(seen.column_sizes)).length).toBe(file.columns.length);
      const metrics = seen.readable_metrics as Record<string, { lower_bound: unknown; upper_bound: unknown; value_count: number; null_value_count: number }>;
      const offset = file.columns.find((c) => c.columnId === offsetId)!;
      expect(metrics._offset).toMatchObject({ lower_bound: Number(offset.min), upper_bound: Number(offset.max), value_count: Number(offset.valueCount), null_value_count: 0 });
      const timestamp = file.columns.find((c) => c.columnId === timestampId)!;
      expect(metrics._timestamp).toMatchObject({ lower_bound: Number(timestamp.min), upper_bound: Number(timestamp.max) });
      const errors = file.columns.find((c) => c.columnName === '_error')!;
      if (errors.min !== null) expect(metrics._error).toMatchObject({ lower_bound: errors.min, upper_bound: errors.max });
      // split offsets: where each row group starts (one per granule)
      const granules = await engine.catalog.query<{ n: number }>('SELECT count(*)::int AS n FROM offsetlake.granule WHERE data_file_id = $1', [file.dataFileId]);
      expect((seen.split_offsets as number[]).length).toBe(granules.rows[0]!.n);
      expect((seen.split_offsets as number[])[0]).toBe(4);
    }
  });

  it('pyiceberg prunes by the hour partition: a scan from the third hour on plans only its files and reads only its rows', () => {
    const py = answers.pyiceberg as { plannedAll: number; plannedSince: number; rowsSince: number; rows: { timestamp: number }[] };
    expect(py.plannedAll).toBe(files.length);
    const since = t0 + 2 * hour - 30 * 60_000;
    expect(py.plannedSince).toBe(files.filter((f) => f.bucket.getTime() + hour > since).length);
    expect(py.plannedSince).toBeLessThan(py.plannedAll);
    expect(py.rowsSince).toBe(py.rows.filter((r) => r.timestamp >= since).length);
  });

  it('DuckDB 1.4.4 attaches the catalog (TYPE iceberg) and answers count, sums and predicate queries as DuckDB does over the same files read as plain Parquet', () => {
    const duck = answers.duckdb as { iceberg: Record<string, unknown[]>; plain: Record<string, unknown[]>; tables: string[]; empty: unknown[] };
    expect(duck.iceberg).toEqual(duck.plain);
    expect(duck.iceberg.count).toEqual([120]);
    expect(duck.tables.sort()).toEqual(['events', 'events_by_day', 'nothing_yet']);
    expect(duck.empty).toEqual([0]);
  });

  it("fastavro reads the manifest list and manifests: Iceberg's field ids, and per file what the catalog says; two LoadTable calls give the same bytes, and the ETag a 304", () => {
    const raw = answers.raw as {
      sameBytes: boolean; notModified: number; headStatus: number; config: Record<string, unknown>;
      manifestList: { records: Record<string, unknown>[]; metadata: Record<string, string>; schema: { fields: { name: string; 'field-id': number }[] } };
      manifests: { path: string; length: number; records: { status: number; data_file: Record<string, unknown> }[]; metadata: Record<string, string>; schema: { fields: { name: string; 'field-id': number }[] } }[];
      manifestsTwice: boolean[];
      loaded: { metadata: Record<string, unknown>; 'metadata-location': string; config: Record<string, string> };
    };
    expect(raw.sameBytes).toBe(true);
    expect(raw.notModified).toBe(304);
    expect(raw.headStatus).toBe(204);
    expect(raw.manifestsTwice.every(Boolean)).toBe(true);
    expect(raw.config).toMatchObject({ overrides: { prefix: 'offsetlake' } });
    expect((raw.config.endpoints as string[]).every((e) => /^(GET|HEAD) /.test(e))).toBe(true);
    expect(raw.loaded.config).toMatchObject({ 's3.endpoint': endpoint, 's3.path-style-access': 'true', 's3.access-key-id': keys.accessKeyId });
    const metadata = raw.loaded.metadata;
    expect(metadata['format-version']).toBe(2);
    expect(metadata['partition-specs']).toEqual([{ 'spec-id': 0, fields: [{ 'source-id': files[0]!.columns.find((c) => c.columnName === '_timestamp')!.columnId, 'field-id': 1000, name: '_timestamp_hour', transform: 'hour' }] }]);
    expect(raw.manifestList.schema.fields.map((f) => [f.name, f['field-id']])).toContainEqual(['manifest_path', 500]);
    expect(raw.manifestList.metadata['format-version']).toBe('2');
    // one manifest per hour with files, each the length the list says
    expect(raw.manifests.length).toBe(new Set(files.map((f) => f.bucket.getTime())).size);
    raw.manifests.forEach((manifest, i) => {
      expect(raw.manifestList.records[i]!.manifest_length).toBe(manifest.length);
      expect(manifest.metadata).toMatchObject({ 'format-version': '2', content: 'data', 'partition-spec-id': '0' });
    });
    const entries = raw.manifests.flatMap((m) => m.records);
    expect(entries.length).toBe(files.length);
    expect(entries.every((e) => e.status === 1)).toBe(true); // all added by the one snapshot
    for (const file of files) {
      const entry = entries.find((e) => e.data_file.file_path === `s3://${bucket}/tables/events/files/${file.dataFileId}.parquet`)!.data_file;
      expect(entry.record_count).toBe(Number(file.recordCount));
      expect(entry.file_size_in_bytes).toBe(Number(file.fileSizeBytes));
      const asMap = (list: unknown) => Object.fromEntries((list as { key: number; value: unknown }[]).map((kv) => [kv.key, kv.value]));
      expect(asMap(entry.value_counts)).toEqual(Object.fromEntries(file.columns.map((c) => [c.columnId, Number(c.valueCount)])));
      expect(asMap(entry.null_value_counts)).toEqual(Object.fromEntries(file.columns.map((c) => [c.columnId, Number(c.nullCount)])));
      // _offset's bounds: 8-byte little-endian longs (appendix D)
      const offset = file.columns.find((c) => c.columnName === '_offset')!;
      const le = (value: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64LE(value); return b.toString('hex'); };
      expect(asMap(entry.lower_bounds)[offset.columnId]).toBe(le(BigInt(offset.min!)));
      expect(asMap(entry.upper_bounds)[offset.columnId]).toBe(le(BigInt(offset.max!)));
    }
  });

  it('refuses what a read-only catalog must: unknown table and namespace (404 with their exception types), writes (403 ForbiddenException), a wrong or missing token (401 NotAuthorizedException), a bad page size (400)', () => {
    const raw = answers.raw as { refusals: Record<string, { status: number; type?: string; message?: string }>; pages: string[][]; namespaces: unknown; namespaceHead: number };
    expect(raw.refusals.noTable).toMatchObject({ status: 404, type: 'NoSuchTableException', code: 404 });
    expect(raw.refusals.noTableHead).toBe(404);
    expect(raw.refusals.noNamespace).toMatchObject({ status: 404, type: 'NoSuchNamespaceException' });
    expect(raw.refusals.create).toMatchObject({ status: 403, type: 'ForbiddenException' });
    expect(raw.refusals.create!.message).toMatch(/read only/);
    expect(raw.refusals.drop).toMatchObject({ status: 403, type: 'ForbiddenException' });
    expect(raw.refusals.wrongToken).toMatchObject({ status: 401, type: 'NotAuthorizedException' });
    expect(raw.refusals.noToken).toMatchObject({ status: 401, type: 'NotAuthorizedException' });
    expect(raw.refusals.badPageSize).toMatchObject({ status: 400, type: 'BadRequestException' });
    expect(raw.refusals.noPrefix!.message).toMatch(/prefix offsetlake/);
    expect(raw.pages).toEqual([['events'], ['events_by_day'], ['nothing_yet']]);
    expect(raw.namespaces).toEqual({ namespaces: [['main']], 'next-page-token': null });
    expect(raw.namespaceHead).toBe(204);
  });
});

type HistorySnapshot = { id: number; sequence: number; parent: number | null; operation: string; summary: Record<string, string>; rows: [number, number][]; manifests: { path: string; addedSnapshot: number; sequence: number; counts: number[]; entries: { status: number; path: string; snapshot: number; sequence: number }[] }[] };
type History = { current: number; snapshots: HistorySnapshot[]; snapshotLog: { 'snapshot-id'?: number; snapshot_id?: number }[]; metadataLog: string[]; droppedScan: string | null };

/** The committed records [indexed_start, indexed_end) of each partition, as [partition, offset], by a consumer we did not write. */
async function committedRows(): Promise<[number, number][]> {
  const indexed = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
  const offsets = await committedOffsetsIndependently(engine.config.kafkaBrokers, indexed.rows.map((p) => ({ topic: table.topic, partition: p.partition_id, start: BigInt(p.indexed_start), end: BigInt(p.indexed_end) })));
  return offsets.flatMap((list, i) => list.map((offset) => [indexed.rows[i]!.partition_id, Number(offset)] as [number, number]));
}

describe('the Iceberg catalog of a serve without the S3 face', () => {
  it("names files by the HTTP face's URLs: DuckDB reads them with the bearer token and answers as over the same files read as plain Parquet", async () => {
    const plain = await listeningReader(readerHandler(service, { token, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }) }));
    const address = plain.url;
    try {
      const answer = await python<Answers>('iceberg_clients.py', { mode: 'http', uri: `${address}/iceberg`, endpoint: address, token, table: table.name, emptyTable: 'nothing_yet', files: files.map((f) => `${address}/tables/${table.name}/files/${f.dataFileId}.parquet`) });
      const duck = answer.duckdb as { iceberg: unknown[]; plain: unknown[]; empty: unknown[]; error?: string; trace?: string };
      expect(duck.error, duck.trace).toBeUndefined();
      expect(duck.iceberg).toEqual(duck.plain);
      expect(duck.iceberg[0]).toBe(120);
      expect(duck.empty).toEqual([0]);
    } finally {
      await plain.stop();
    }
  }, 300_000);

  it("tells pyiceberg, which reads no http location, that serve has no S3 face and which flags start it, where pyiceberg said only \"Unrecognized filesystem type in URI: http\"", async () => {
    const plain = await listeningReader(readerHandler(service, { token, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }) }));
    try {
      const seen = (await python<Answers>('iceberg_clients.py', { mode: 'no-s3', uri: `${plain.url}/iceberg`, token, table: table.name })).pyiceberg as { tables: string[]; said?: string; rows?: number; error?: string; trace?: string };
      expect(seen.error, seen.trace).toBeUndefined();
      expect(seen.tables).toContain(table.name);
      expect(seen.said).toContain('serve has no S3 face');
      expect(seen.said).toContain('--s3-access-key-id and --s3-secret-access-key');
    } finally {
      await plain.stop();
    }
  }, 120_000);
});

describe('the Iceberg catalog of a serve without authentication (--no-auth)', () => {
  it('lets pyiceberg in without a token and read the files through the unauthenticated S3 face with the placeholder key pair LoadTable gives', async () => {
    const s3 = { bucket, region: 'us-east-1', credentials: null };
    const open = readerServer(readerHandler(service, { token: null, s3, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, s3) })).listen(0, '127.0.0.1');
    await once(open, 'listening');
    const address = `http://127.0.0.1:${(open.address() as AddressInfo).port}`;
    try {
      const seen = (await python<Answers>('iceberg_clients.py', { mode: 'no-auth', uri: `${address}/iceberg`, table: table.name })).pyiceberg as { rows: number; config: string; error?: string; trace?: string };
      expect(seen.error, seen.trace).toBeUndefined();
      expect(seen).toEqual({ rows: 120, config: 'offsetlake' });
    } finally {
      open.closeAllConnections();
      await new Promise((resolve) => open.close(resolve));
    }
  });
});

describe('Spark 4.1 through the Iceberg catalog', () => {
  it("reads the table with Iceberg's Java REST client and S3FileIO: count and sums as pyiceberg's rows, the .files table (Iceberg's Java manifest reader) with the catalog's files, counts, bounds, split offsets and partitions, .snapshots, VERSION AS OF and TIMESTAMP AS OF, and a time filter that plans only the later hours' files", async () => {
    const since = t0 + 2 * hour - 30 * 60_000;
    const spark = await sparkAnswer<{ error?: string; trace?: string; count: number; sums: number[]; files: [string, number, number][]; snapshots: [number, string][]; versionAsOf: number; timestampAsOf: number; stats: Record<string, { valueCounts: Record<string, number>; nullCounts: Record<string, number>; lower: Record<string, string>; upper: Record<string, string>; splitOffsets: number[]; partition: Record<string, number> }>; since: number; sinceRows: number; plannedSince: number; plan: string; countPlan: string }>(
      fileURLToPath(new URL('./iceberg_spark.py', import.meta.url)), 'read', { uri: `${endpoint}/iceberg`, token, table: table.name, since: new Date(since).toISOString().replace('T', ' ').replace('.000Z', ''), sinceMicros: since * 1000 }, 400_000);
    expect(spark.error, spark.trace).toBeUndefined();
    const rows = (answers.pyiceberg as { rows: { offset: number; partition: number; timestamp: number }[] }).rows;
    expect(spark.count).toBe(120);
    expect(spark.sums).toEqual([rows.reduce((sum, r) => sum + r.offset, 0), rows.reduce((sum, r) => sum + r.partition, 0)]);
    expect(spark.files).toEqual(files.map((f) => [`s3://${bucket}/tables/events/files/${f.dataFileId}.parquet`, Number(f.recordCount), Number(f.fileSizeBytes)]).sort());
    expect(spark.snapshots).toEqual([[(answers.pyiceberg as { currentSnapshot: number }).currentSnapshot, 'append']]);
    expect(spark.versionAsOf).toBe(120);
    expect(spark.timestampAsOf).toBe(120);
    // Iceberg's Java manifest reader: each file's counts, bounds (_offset's: 8-byte little-endian longs), split offsets and partition hour
    const le = (value: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64LE(value); return b.toString('hex'); };
    for (const file of files) {
      const seen = spark.stats[`s3://${bucket}/tables/events/files/${file.dataFileId}.parquet`]!;
      expect(seen.valueCounts).toEqual(Object.fromEntries(file.columns.map((c) => [String(c.columnId), Number(c.valueCount)])));
      expect(seen.nullCounts).toEqual(Object.fromEntries(file.columns.map((c) => [String(c.columnId), Number(c.nullCount)])));
      const offset = file.columns.find((c) => c.columnName === '_offset')!;
      expect(seen.lower[String(offset.columnId)]).toBe(le(BigInt(offset.min!)));
      expect(seen.upper[String(offset.columnId)]).toBe(le(BigInt(offset.max!)));
      expect(seen.splitOffsets).toEqual([4]);
      expect(seen.partition).toEqual({ _timestamp_hour: Math.floor(file.bucket.getTime() / hour) });
    }
    expect(spark.since).toBe(rows.filter((r) => r.timestamp >= since).length);
    expect(spark.plannedSince).toBe(files.filter((f) => f.bucket.getTime() + hour > since).length);
    expect(spark.sinceRows).toBe(spark.since);
    // the filter reaches Iceberg's scan; the count is answered from the manifests alone (aggregate push-down)
    expect(spark.plan).toMatch(new RegExp(`BatchScan lake\\.main\\.events\\[.*\\] IcebergScan\\(table=lake\\.main\\.events, .*filters=_timestamp >= ${since * 1000}`));
    expect(spark.countPlan).toMatch(/LocalTableScan/);
  }, 420_000);
});

describe('Iceberg snapshots', () => {
  it('a snapshot id keeps naming the same files: after more records a new snapshot is cut, pyiceberg scans the old one to its old rows (time travel), and hours without new files keep their manifest', async () => {
    const before = (await clients({ mode: 'history' })).history as unknown as History;
    expect(before.snapshots.length).toBe(1);
    const first = before.snapshots[0]!;
    const rowsBefore = await committedRows();
    expect(first.rows).toEqual(rowsBefore.sort((a, b) => a[0] - b[0] || a[1] - b[1]));

    // a fifth hour of records, committed
    await produce(engine.kafka, table.topic, Array.from({ length: 10 }, (_, j) => ({ key: `late${j}`, value: JSON.stringify({ j }), partition: j % 2, timestamp: t0 + 4 * hour + j })), { transactionalId: `iceberg-more-${table.topic}` });
    await indexAll();
    const after = (await clients({ mode: 'history' })).history as unknown as History;
    expect(after.snapshots.map((s) => s.id)).toEqual([first.id, after.current]);
    const [old, current] = after.snapshots as [HistorySnapshot, HistorySnapshot];
    expect(old).toEqual(first); // the same files, manifests and rows as before
    expect(current.parent).toBe(first.id);
    expect(current.operation).toBe('append');
    expect(current.summary).toMatchObject({ 'added-data-files': '2', 'deleted-data-files': '0', 'added-records': '10' });
    expect(current.rows).toEqual((await committedRows()).sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    expect(current.rows.length).toBe(old.rows.length + 10);
    // the old hours' manifests are the first snapshot's, byte for byte under the same name; the new hour's is the new snapshot's
    expect(current.manifests.slice(0, -1)).toEqual(old.manifests);
    const added = current.manifests.at(-1)!;
    expect(added).toMatchObject({ addedSnapshot: current.id, sequence: 2 });
    expect(added.entries.every((e) => e.status === 1 && e.snapshot === current.id && e.sequence === 2)).toBe(true);
    expect(after.metadataLog.length).toBe(1);
    expect(after.metadataLog[0]).toMatch(new RegExp(`/tables/events/metadata/00001-${first.id}\\.metadata\\.json$`));
  }, 300_000);

  it('retention that expires a file cuts a snapshot at once, whatever the interval, and drops from the history every snapshot that named the file', async () => {
    const before = (await clients({ mode: 'history' })).history as unknown as History;
    const [first] = await listFiles(engine.catalog, table.tableId);
    await deleteRecords(engine.kafka, table.topic, first!.partition, first!.endOffset);
    await checkRetention(engine.catalog, engine.kafka, { table: table.name });
    expect((await listFiles(engine.catalog, table.tableId)).some((f) => f.dataFileId === first!.dataFileId)).toBe(false);
    // a day between cuts does not hold back a cut that removes an expired file
    const sequence = await cutSnapshotIfChanged(engine.catalog, table.tableId, { intervalMs: 86_400_000, maxSnapshots: 100 });
    expect(sequence).toBe(3n);
    const after = (await clients({ mode: 'history', droppedSnapshots: before.snapshots.map((s) => s.id) })).history as unknown as History;
    expect(after.snapshots.length).toBe(1);
    const [current] = after.snapshots as [HistorySnapshot];
    expect(current.operation).toBe('delete');
    expect(Number(current.summary['deleted-data-files'])).toBeGreaterThanOrEqual(1);
    expect(current.rows).toEqual((await committedRows()).sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    // the expired file is in the snapshot that removed it only as the spec records a deletion: status 2 (DELETED), that snapshot's id, its own sequence number
    const entriesOfFirst = current.manifests.flatMap((m) => m.entries).filter((e) => e.path.endsWith(`/${first!.dataFileId}.parquet`));
    expect(entriesOfFirst).toEqual([expect.objectContaining({ status: 2, snapshot: current.id, sequence: 1 })]);
    const withDeletion = current.manifests.find((m) => m.entries.includes(entriesOfFirst[0]!))!;
    expect(withDeletion).toMatchObject({ addedSnapshot: current.id, sequence: 3 });
    // the manifest list counts it: [added, existing, deleted] files, then rows
    const statuses = (status: number) => withDeletion.entries.filter((e) => e.status === status).length;
    expect(withDeletion.counts.slice(0, 3)).toEqual([statuses(1), statuses(0), 1]);
    expect(withDeletion.counts[5]).toBe(Number(first!.recordCount));
    expect(after.droppedScan).toMatch(/snapshot/i);
    const dropped = await engine.catalog.query<{ dropped_reason: string }>('SELECT dropped_reason FROM offsetlake.iceberg_snapshot WHERE table_id = $1 AND dropped_sequence IS NOT NULL', [table.tableId]);
    expect(dropped.rows.map((r) => r.dropped_reason)).toEqual([expect.stringMatching(/^retention expired file/), expect.stringMatching(/^retention expired file/)]);
  }, 300_000);
});

describe('an Iceberg table whose schema evolved (avro, Schema Registry)', () => {
  it("gives every table-schema version as an Iceberg schema with the current one's id; pyiceberg reads the older file's int and float widened to long and double, the added fields null; DuckDB sums them", async () => {
    const topic = await newTopic(engine, 1, 'iceberg-avro');
    const orders = await createTableFromTopic(engine, { name: 'orders', topic, format: 'avro', settings: resolveSettings({ file_window: '30m' }) });
    const v1 = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'int' }, { name: 'price', type: 'float' }, { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }] } }] }), 'AVRO');
    const v2 = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'price', type: 'double' }, { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }, { name: 'zip', type: ['null', 'string'], default: null }] } }, { name: 'note', type: ['null', 'string'], default: null }] }), 'AVRO');
    const runner = () => new LocalRunner(engine, rangeBuilder(engine.catalog, schemaRegistry(process.env.SCHEMA_REGISTRY_URL!)), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    await produce(engine.kafka, topic, [0, 1, 2].map((i) => ({ key: null, value: encodeWith(v1, { id: i, price: 1.5 + i, address: { city: `c${i}` } }), timestamp: t0 + i })));
    await runner();
    await produce(engine.kafka, topic, [3, 4].map((i) => ({ key: null, value: encodeWith(v2, { id: BigInt(2 ** 40 + i), price: 0.1 + i, address: { city: `c${i}`, zip: { string: `z${i}` } }, note: { string: `n${i}` } }), timestamp: t0 + hour + i })));
    await runner();
    const orderFiles = await listFiles(engine.catalog, orders.tableId);
    expect(new Set(orderFiles.map((f) => f.schemaVersion)).size).toBe(2);

    const seen = (await python<Answers>('iceberg_clients.py', { mode: 'evolution', uri: `${endpoint}/iceberg`, endpoint, token, table: 'orders' })).evolution as { error?: string; trace?: string; schemas: { id: number }[]; currentSchemaId: number; types: Record<string, string>; rows: Record<string, unknown>[]; duckdb: unknown[] };
    expect(seen.error, seen.trace).toBeUndefined();
    const versions = await engine.catalog.query<{ v: number }>('SELECT max(schema_version)::int AS v FROM offsetlake.table_schema WHERE table_id = $1', [orders.tableId]);
    expect(seen.schemas.map((s) => s.id)).toEqual(Array.from({ length: versions.rows[0]!.v }, (_, i) => i + 1));
    expect(seen.currentSchemaId).toBe(versions.rows[0]!.v);
    expect(seen.types).toMatchObject({ id: 'long', price: 'double', note: 'string' });
    expect(seen.types.address).toMatch(/city: optional string|city: required string/);
    const f32 = (x: number) => Math.fround(x);
    expect(seen.rows.map(({ _offset: _o, ...row }) => row)).toEqual([
      ...[0, 1, 2].map((i) => ({ id: i, price: f32(1.5 + i), address: { city: `c${i}`, zip: null }, note: null })),
      ...[3, 4].map((i) => ({ id: 2 ** 40 + i, price: 0.1 + i, address: { city: `c${i}`, zip: `z${i}` }, note: `n${i}` })),
    ]);
    const [count, idSum, priceSum, notes, zips] = seen.duckdb as [number, string, number, number, number];
    expect([count, idSum, notes, zips]).toEqual([5, String(0 + 1 + 2 + 2 ** 40 + 3 + 2 ** 40 + 4), 2, 2]);
    // a sum of doubles depends on the order DuckDB adds them in
    expect(priceSum).toBeCloseTo(f32(1.5) + f32(2.5) + f32(3.5) + 3.1 + 4.1, 9);
  }, 300_000);
});
