/**
 * Merged files through every face (issue 49): a merge replaces a partition's files by one,
 * and every engine must answer as before it. Expected values never come from our code:
 * row counts and offset sums from a read_committed consumer we did not write
 * (confluent-kafka), answers from a stock DuckDB 1.4.4 over the DuckLake attach and over
 * the same files read as plain Parquet, pyiceberg and fastavro over the Iceberg catalog
 * (every snapshot scanned, its manifests read entry by entry), Spark's Iceberg runtime
 * (VERSION AS OF, .snapshots, .entries), and `offsetlake check` rebuilding every live file
 * from Kafka. Retention then moves Kafka's earliest offset into a merged file.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { checkRetention } from '../../src/retention/check.js';
import { compactPartition } from '../../src/compaction/compact.js';
import { libpqConnectionString } from '../../src/cli/attach.js';
import { committedOffsetsIndependently } from '../helpers/independent-kafka.js';
import { DuckdbSession } from '../helpers/duckdb-session.js';
import { runCli } from '../helpers/cli.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { sparkAnswer, startSpark } from '../helpers/iceberg-spark.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';
import { checkTable } from '../helpers/verify.js';

const keys = { accessKeyId: 'offsetlake-merged', secretAccessKey: 'merged-s3cret' };
const bucket = 'offsetlake';
const token = 'merged-token';
const t0 = Date.UTC(2026, 10, 20, 10, 5);

let engine: Engine;
let service: ReaderService;
let reader: ListeningReader | undefined;
let duck: DuckdbSession;

beforeAll(async () => {
  engine = await testEngine('merged');
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
  reader = await listeningReader(readerHandler(service, { token, s3: { bucket, credentials: keys }, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, { bucket, region: 'us-east-1', credentials: keys }) }));
  duck = await DuckdbSession.open();
  await duck.query(`CREATE SECRET serve (TYPE http, BEARER_TOKEN '${token}', SCOPE '${reader.url}/')`);
  await duck.query(`ATTACH 'ducklake:postgres:${libpqConnectionString(engine.config.databaseUrl)}' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '${reader.url}/', OVERRIDE_DATA_PATH TRUE)`);
}, 120_000);

afterAll(async () => {
  await duck?.close();
  await reader?.stop();
  await engine?.close();
});

async function indexAll(): Promise<void> {
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
}

/**
 * A table of `batches` ranges a partition, all in one hour: each batch produced, then
 * indexed (`run --once` flushes), so each is a file of its own that a merge may take.
 */
async function smallFiles(name: string, partitions: number, batches: number): Promise<TableRecord> {
  const topic = await newTopic(engine, partitions, name);
  const created = await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({}) });
  for (let b = 0; b < batches; b += 1) {
    await produce(engine.kafka, topic, Array.from({ length: 12 * partitions }, (_, j) => ({
      key: `k${j % 5}`, value: JSON.stringify({ b, j }), partition: j % partitions, timestamp: t0 + b * 60_000 + j * 100,
    })), { transactionalId: `merged-${topic}`, abort: b === 1 });
    await indexAll();
  }
  return findTable(engine.catalog, created.name);
}

/**
 * The compactor (src/compaction), as a scheduled run does it: every partition, under a
 * lease it takes; each partition's files (one aged hour) become one. The tables keep the
 * default merge_files (off), so that `run --once` (indexAll) leaves their small files be;
 * the merge is asked for here, with merge_files 10 and merge_after 1 ms (every hour aged).
 */
async function mergeAll(table: TableRecord): Promise<void> {
  const partitions = await engine.catalog.query<{ partition_id: number }>('SELECT partition_id FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY 1', [table.tableId]);
  const merging = { ...table, settings: { ...table.settings, merge_files: 10, merge_after: 1 } };
  for (const { partition_id: partition } of partitions.rows) {
    const result = await compactPartition({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, merging, partition, { owner: 'merged-faces-test' });
    expect(result).toMatchObject({ busy: false, refused: [], left: 0 });
    expect(result.merges.length).toBe(1);
  }
}

/** [count, sum(_offset), sum(_partition)] of the committed records of the table's indexed range, by a consumer we did not write. */
async function committed(table: TableRecord): Promise<number[]> {
  const pairs = await committedPairs(table);
  return [pairs.length, pairs.reduce((s, [, o]) => s + o, 0), pairs.reduce((s, [p]) => s + p, 0)];
}

/** The same numbers through the DuckLake attach (the session stays attached across merges). */
async function throughDucklake(table: TableRecord): Promise<number[]> {
  const row = await duck.row(`SELECT count(*)::BIGINT AS n, sum(_offset)::BIGINT AS o, sum(_partition)::BIGINT AS p FROM lake.main.${table.name}`);
  return [Number(row.n), Number(row.o ?? 0), Number(row.p ?? 0)];
}

/** The data files DuckDB's own listing of the attach names (ducklake_list_files), as catalog ids. */
async function ducklakeFiles(table: TableRecord): Promise<bigint[]> {
  const { rows } = await duck.query(`SELECT data_file FROM ducklake_list_files('lake', '${table.name}')`);
  return rows.map(([path]) => BigInt(/(\d+)\.parquet$/.exec(String(path))![1]!)).sort((a, b) => (a < b ? -1 : 1));
}

async function ducklakeSnapshot(): Promise<number> {
  return Number((await duck.row("SELECT id FROM ducklake_current_snapshot('lake')")).id);
}

function python<T>(script: string, job: unknown, timeoutMs = 300_000, env: NodeJS.ProcessEnv = process.env): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = execFile('python3', [fileURLToPath(new URL(`./${script}`, import.meta.url))], { maxBuffer: 256 * 1024 * 1024, timeout: timeoutMs, env }, (error, out, err) =>
      (error ? reject(new Error(`${script} failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as T)));
    child.stdin!.end(JSON.stringify(job));
  });
}

type Entry = { status: number; path: string; snapshot: number; sequence: number };
type Snapshot = { id: number; sequence: number; parent: number | null; operation: string; summary: Record<string, string>; rows: [number, number][]; manifests: { path: string; addedSnapshot: number; sequence: number; counts: number[]; entries: Entry[] }[] };
type History = { current: number; snapshots: Snapshot[]; droppedScan: string | null };

/** Every snapshot of the table's Iceberg history as pyiceberg scans it and fastavro reads its manifests (test/integration/iceberg_clients.py). */
async function icebergHistory(table: TableRecord, droppedSnapshots: number[] = []): Promise<History> {
  const answer = await python<{ history: History & { error?: string; trace?: string } }>('iceberg_clients.py', { mode: 'history', uri: `${reader!.url}/iceberg`, endpoint: reader!.url, token, table: table.name, droppedSnapshots });
  expect(answer.history.error, answer.history.trace).toBeUndefined();
  return answer.history;
}

const fileId = (path: string) => BigInt(/(\d+)\.parquet$/.exec(path)![1]!);
const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
/** [partition, offset] pairs sorted, as the history client gives a snapshot's rows. */
async function committedPairs(table: TableRecord): Promise<[number, number][]> {
  const indexed = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
  const offsets = await committedOffsetsIndependently(engine.config.kafkaBrokers, indexed.rows.map((p) => ({ topic: table.topic, partition: p.partition_id, start: BigInt(p.indexed_start), end: BigInt(p.indexed_end) })));
  return offsets.flatMap((list, i) => list.map((offset) => [indexed.rows[i]!.partition_id, Number(offset)] as [number, number])).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

/** `offsetlake check NAME --json`: every live file rebuilt from Kafka and compared with all the catalog keeps of it. */
async function check(table: TableRecord): Promise<{ checked: number; identical: number }> {
  const run = await runCli(engine.config.databaseUrl, ['check', table.name, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { checked: number; identical: number };
}

describe('a merge, seen through DuckLake, Iceberg and Spark', () => {
  let table: TableRecord;
  let sources: CatalogFile[];
  let before: History;

  beforeAll(async () => {
    void startSpark().catch(() => {}); // the run's one Spark starts while the tables are built; the Spark test says why if it failed
    table = await smallFiles('merged_events', 2, 4);
    sources = await listFiles(engine.catalog, table.tableId);
    expect(sources.length).toBe(6); // 3 committed batches x 2 partitions
    before = await icebergHistory(table);
  }, 300_000);

  it('DuckLake: the same session answers as a read_committed consumer before and after; the attach lists the merged files and not their sources; the snapshot id moved', async () => {
    const expected = await committed(table);
    expect(await throughDucklake(table)).toEqual(expected);
    expect(await ducklakeFiles(table)).toEqual(sources.map((f) => f.dataFileId).sort(byId));
    const snapshotBefore = await ducklakeSnapshot();

    await mergeAll(table);
    const live = await listFiles(engine.catalog, table.tableId);
    const merged = live.filter((f) => !sources.some((s) => s.dataFileId === f.dataFileId));
    expect(merged.length).toBe(2); // one a partition

    expect(await ducklakeSnapshot()).toBeGreaterThan(snapshotBefore);
    expect(await ducklakeFiles(table)).toEqual(merged.map((f) => f.dataFileId).sort(byId));
    expect(await throughDucklake(table)).toEqual(expected);
    // the table statistics DuckDB plans with count live files only
    const stats = await engine.catalog.query<{ record_count: string }>('SELECT record_count::text FROM ducklake.ducklake_table_stats WHERE table_id = $1', [table.tableId]);
    expect(stats.rows).toEqual([{ record_count: String(expected[0]) }]);
  }, 300_000);

  it("Iceberg: the cut after the merge is a replace naming the merged files (ADDED) and their sources as DELETED; pyiceberg reads the older snapshot from the replaced files, and both give the consumer's rows", async () => {
    const live = await listFiles(engine.catalog, table.tableId);
    const merged = live.filter((f) => !sources.some((s) => s.dataFileId === f.dataFileId));
    const rows = await committedPairs(table);
    const after = await icebergHistory(table);
    expect(after.snapshots.map((s) => s.operation)).toEqual(['append', 'replace']);
    const [old, replace] = after.snapshots as [Snapshot, Snapshot];
    expect(old).toEqual(before.snapshots[0]); // the older snapshot: the same files, manifests and rows
    expect(old.rows).toEqual(rows);
    expect(replace.rows).toEqual(rows);
    expect(replace.parent).toBe(old.id);
    const records = String(rows.length);
    expect(replace.summary).toMatchObject({
      'added-data-files': String(merged.length), 'deleted-data-files': String(sources.length), 'added-records': records, 'deleted-records': records,
      'total-data-files': String(merged.length), 'total-records': records,
    });
    const entries = replace.manifests.flatMap((m) => m.entries);
    expect(entries.filter((e) => e.status === 1).map((e) => fileId(e.path)).sort(byId)).toEqual(merged.map((f) => f.dataFileId).sort(byId));
    expect(entries.filter((e) => e.status === 1).every((e) => e.snapshot === replace.id && e.sequence === 2)).toBe(true);
    // the spec's record of a replaced file: status 2, the snapshot that removed it, the sequence number that added it
    expect(entries.filter((e) => e.status === 2).map((e) => fileId(e.path)).sort(byId)).toEqual(sources.map((f) => f.dataFileId).sort(byId));
    expect(entries.filter((e) => e.status === 2).every((e) => e.snapshot === replace.id && e.sequence === 1)).toBe(true);
    expect(entries.filter((e) => e.status === 0)).toEqual([]);
    for (const manifest of replace.manifests) {
      const of = (status: number) => manifest.entries.filter((e) => e.status === status);
      expect(manifest.counts).toEqual([of(1).length, of(0).length, of(2).length,
        ...[of(1), of(0), of(2)].map((list) => list.reduce((sum, e) => sum + Number(live.concat(sources).find((f) => f.dataFileId === fileId(e.path))!.recordCount), 0))]);
    }
  }, 300_000);

  it('Spark: VERSION AS OF the snapshot before the merge and the current one count what the consumer counts; .snapshots says append then replace; .entries holds the merged files as added', async () => {
    const history = await icebergHistory(table);
    const [old, replace] = history.snapshots as [Snapshot, Snapshot];
    const spark = await sparkAnswer<{ error?: string; trace?: string; count: number; sums: number[]; versions: Record<string, number[]>; snapshots: [number, string][]; entries: [number, number, string][] }>(
      fileURLToPath(new URL('./merged_spark.py', import.meta.url)), 'read', { uri: `${reader!.url}/iceberg`, token, table: table.name, versions: [old.id, replace.id] }, 400_000);
    expect(spark.error, spark.trace).toBeUndefined();
    const [count, offsets, partitions] = await committed(table);
    expect([spark.count, ...spark.sums]).toEqual([count, offsets, partitions]);
    expect(spark.versions).toEqual({ [old.id]: [count, offsets], [replace.id]: [count, offsets] });
    expect(spark.snapshots).toEqual([[old.id, 'append'], [replace.id, 'replace']]);
    const live = await listFiles(engine.catalog, table.tableId);
    expect(spark.entries.filter(([status]) => status === 1).map(([, snapshot, path]) => [snapshot, fileId(path)])).toEqual(
      live.map((f) => [replace.id, f.dataFileId]).sort((a, b) => byId(a[1] as bigint, b[1] as bigint)));
  }, 420_000);

  it('offsetlake check rebuilds every live file byte for byte, and the invariants hold (tiling, every committed record once, statistics)', async () => {
    const result = await check(table);
    expect(result.checked).toBe(2);
    expect(result.identical).toBe(2);
    await checkTable(engine, table);
  }, 300_000);
});

describe('a cut that finds a merge and other changes', () => {
  /** One more committed batch of a partition-one table, at `at`, indexed into a file of its own. */
  async function oneMoreBatch(table: TableRecord, at: number): Promise<void> {
    await produce(engine.kafka, table.topic, Array.from({ length: 12 }, (_, j) => ({ key: null, value: JSON.stringify({ more: j }), timestamp: at + j })), { transactionalId: `merged-more-${table.topic}` });
    await indexAll();
  }

  it("new files beside a merge of files the newest snapshot named: two snapshots in one cut, an append then a replace, as Iceberg's own transactions commit them; each reads the consumer's rows", async () => {
    const table = await smallFiles('merged_and_appended', 1, 4);
    const first = await icebergHistory(table);
    expect(first.snapshots.map((s) => s.operation)).toEqual(['append']);
    await oneMoreBatch(table, t0 + 3_600_000); // the next hour: a file no merge takes
    await mergeAll(table);
    const after = await icebergHistory(table);
    expect(after.snapshots.map((s) => s.operation)).toEqual(['append', 'append', 'replace']);
    const [, append, replace] = after.snapshots as [Snapshot, Snapshot, Snapshot];
    const rows = await committedPairs(table);
    expect(append.rows).toEqual(rows);
    expect(replace.rows).toEqual(rows);
    expect(append.summary).toMatchObject({ 'added-data-files': '1', 'deleted-data-files': '0', 'added-records': '12' });
    expect(replace.summary).toMatchObject({ 'added-data-files': '1', 'deleted-data-files': '3', 'added-records': '36', 'deleted-records': '36' });
    expect(replace.parent).toBe(append.id);
  }, 300_000);

  it('a merge that took records no snapshot named (a file sealed after the last cut) changes the data a snapshot holds: an overwrite, not a replace', async () => {
    const table = await smallFiles('merged_overwrite', 1, 4);
    await icebergHistory(table);
    await oneMoreBatch(table, t0 + 10 * 60_000); // the same hour: the merge takes it with the named files
    await mergeAll(table);
    const after = await icebergHistory(table);
    expect(after.snapshots.map((s) => s.operation)).toEqual(['append', 'overwrite']);
    const [, overwrite] = after.snapshots as [Snapshot, Snapshot];
    expect(overwrite.rows).toEqual(await committedPairs(table));
    expect(overwrite.summary).toMatchObject({ 'added-data-files': '1', 'deleted-data-files': '3', 'added-records': '48', 'deleted-records': '36' });
  }, 300_000);
});

describe('retention into a merged file', () => {
  it("Kafka's earliest offset inside a merged file: it expires, and its sources Kafka still holds are live again in the same transaction; DuckLake, Iceberg and check answer as Kafka does", async () => {
    const table = await smallFiles('merged_retention', 1, 5);
    const sources = await listFiles(engine.catalog, table.tableId);
    expect(sources.length).toBe(4);
    await icebergHistory(table); // a first snapshot, of the sources
    await mergeAll(table);
    const [mergedFile] = await listFiles(engine.catalog, table.tableId);
    expect(mergedFile!.startOffset).toBe(sources[0]!.startOffset);
    const mergedHistory = await icebergHistory(table);
    expect(mergedHistory.snapshots.map((s) => s.operation)).toEqual(['append', 'replace']);

    // Kafka deletes up to the middle of the second source: the first two sources start below it
    const earliest = sources[1]!.startOffset + 3n;
    expect(await deleteRecords(engine.kafka, table.topic, 0, earliest)).toBe(earliest);
    await checkRetention(engine.catalog, engine.kafka, { table: table.name });

    // what Kafka still holds of whole files, as without the merge: sources 3 and 4, live again
    const live = await listFiles(engine.catalog, table.tableId);
    expect(live.map((f) => f.dataFileId)).toEqual(sources.slice(2).map((f) => f.dataFileId));
    const all = await listFiles(engine.catalog, table.tableId, { includeExpired: true, includeReplaced: true });
    const expiredIds = all.filter((f) => f.expiredAt !== null).map((f) => f.dataFileId).sort(byId);
    expect(expiredIds).toEqual([...sources.slice(0, 2).map((f) => f.dataFileId), mergedFile!.dataFileId].sort(byId));

    const expected = await committed(table);
    expect(expected[0]).toBeGreaterThan(0);
    expect(await throughDucklake(table)).toEqual(expected);
    expect(await ducklakeFiles(table)).toEqual(sources.slice(2).map((f) => f.dataFileId).sort(byId));

    // Iceberg: a cut at once, removing the merged file and adding the sources again (data changed: an overwrite);
    // every snapshot that named an expired file left the history
    const after = await icebergHistory(table, mergedHistory.snapshots.map((s) => s.id));
    expect(after.snapshots.map((s) => s.operation)).toEqual(['overwrite']);
    const [current] = after.snapshots as [Snapshot];
    expect(current.rows).toEqual(await committedPairs(table));
    expect(current.summary).toMatchObject({ 'added-data-files': '2', 'deleted-data-files': '1' });
    expect(after.droppedScan).toMatch(/snapshot/i);
    const entries = current.manifests.flatMap((m) => m.entries);
    expect(entries.filter((e) => e.status === 1).map((e) => fileId(e.path))).toEqual(sources.slice(2).map((f) => f.dataFileId));
    expect(entries.filter((e) => e.status === 2).map((e) => fileId(e.path))).toEqual([mergedFile!.dataFileId]);

    const result = await check(table);
    expect(result).toMatchObject({ checked: 2, identical: 2 });
    await checkTable(engine, table);
  }, 420_000);
});
