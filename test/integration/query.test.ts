/**
 * `query` against the real broker and Postgres: answers equal what a read_committed
 * consumer sees, files and fresh tail together; pruning reads from Kafka only the
 * candidate files' offsets (bytes counted through a wrapped CommittedSource); a record
 * committed after indexing is in the answer before any file holds it; the fresh tail is
 * encoded as the table's own files are (its compression's encoder).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { runQuery } from '../../src/query/run.js';
import { ReaderService } from '../../src/reader/service.js';
import { countingSource } from '../../src/kafka/counting-source.js';
import { recordBytes, type KafkaRecord } from '../../src/kafka/record.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { tmpdir } from 'node:os';

const run = promisify(execFile);
const hour = 3_600_000;
const t0 = Math.floor(Date.now() / hour) * hour - 4 * hour;

let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
const committed = new Map<number, KafkaRecord[]>();

async function query(sql: string) {
  const source = countingSource(kafkaSource(engine.kafka));
  const service = new ReaderService(engine.catalog, source);
  const result = await runQuery({ catalog: engine.catalog, source, service }, sql);
  return { ...result, log: source.log };
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

beforeAll(async () => {
  engine = await testEngine('query');
  const topic = await newTopic(engine, 2, 'query');
  await createTableFromTopic(engine, { name: 'clicks', topic, format: 'json', settings: resolveSettings({ granularity: 'hour', file_window: '30m' }) });
  // Four hours of clicks, 40 an hour, padded so each file has real bytes; one aborted batch.
  for (let h = 0; h < 4; h += 1) {
    const records = Array.from({ length: 40 }, (_, j) => ({
      key: `user-${j % 7}`,
      value: JSON.stringify({ h, j, page: `/p/${j % 5}`, pad: 'x'.repeat(200) }),
      partition: j % 2,
      timestamp: t0 + h * hour + j * 30_000,
    }));
    await produce(engine.kafka, topic, records, { transactionalId: `q-${topic}`, abort: false });
    if (h === 1) await produce(engine.kafka, topic, records.slice(0, 6).map((r) => ({ ...r, value: '{"aborted":true}' })), { transactionalId: `q-${topic}`, abort: true });
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, 'clicks');
  files = await listFiles(engine.catalog, table.tableId);
  const ends = [0, 1].map((partition) => ({ topic, partition, start: 0n, end: files.filter((f) => f.partition === partition).at(-1)!.endOffset }));
  (await readCommittedIndependently(engine.config.kafkaBrokers, ends)).forEach((records, partition) => committed.set(partition, records));
}, 120_000);

afterAll(async () => {
  await engine?.close();
});

describe('offsetlake query', () => {
  it('answers from the files exactly what a read_committed consumer sees', async () => {
    expect(files.length).toBeGreaterThanOrEqual(8); // 4 hours × 2 partitions
    const result = await query('SELECT _partition, _offset, _value FROM clicks ORDER BY _partition, _offset');
    const expected = [...committed].flatMap(([partition, records]) => records.map((r) => ({ _partition: partition, _offset: r.offset.toString(), _value: Buffer.from(r.value!).toString() })));
    expect(expected.length).toBe(160);
    expect(result.rows).toEqual(expected);
    expect(result.plan[0]!.candidates.length).toBe(files.length);
    expect(result.plan[0]!.tail).toEqual([]);
  });

  it('a narrow time range rebuilds only the candidate files: Kafka reads are exactly their offsets', async () => {
    const from = t0 + 2 * hour;
    const until = t0 + 2 * hour + 10 * 60_000;
    const result = await query(`SELECT count(*) AS n, min(_timestamp) AS first FROM clicks WHERE _timestamp >= TIMESTAMP '${iso(from)}' AND _timestamp < '${iso(until)}'`);
    const all = [...committed.values()].flat();
    const want = all.filter((r) => r.timestamp >= from && r.timestamp < until);
    expect(want.length).toBe(20);
    expect(result.rows).toEqual([{ n: '20', first: new Date(from).toISOString().replace('T', ' ').replace('.000Z', '+00') }]);

    const candidates = files.filter((f) => Number(f.columns.find((c) => c.columnName === '_timestamp')!.max) >= from && Number(f.columns.find((c) => c.columnName === '_timestamp')!.min) < until);
    expect(candidates.length).toBe(2); // hour 2, one file per partition
    expect(result.plan[0]!.candidates).toEqual(candidates.map((f) => f.dataFileId.toString()));
    // Kafka was read for exactly the candidates' offsets, and nothing else.
    // (Rebuilds run concurrently: compare the reads in partition order.)
    const reads = result.log.reads.map((r) => [r.partition, r.from, r.until]).sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(reads).toEqual(candidates.map((f) => [f.partition, f.startOffset, f.endOffset]));
    const candidateBytes = candidates.flatMap((f) => committed.get(f.partition)!.filter((r) => r.offset >= f.startOffset && r.offset < f.endOffset)).reduce((n, r) => n + recordBytes(r), 0);
    const totalBytes = all.reduce((n, r) => n + recordBytes(r), 0);
    expect(result.log.bytes).toBe(candidateBytes);
    expect(result.log.bytes).toBeLessThan(totalBytes / 3);

    const full = await query(`SELECT count(*) AS n FROM clicks WHERE _timestamp + INTERVAL 0 SECOND >= TIMESTAMP '${iso(from)}'`);
    expect(full.plan[0]!.candidates.length).toBe(files.length); // not a simple predicate: nothing pruned
    expect(full.log.bytes).toBe(totalBytes);
  });

  it('a value predicate on _partition and _offset prunes too, and the answer is unchanged', async () => {
    const p1 = committed.get(1)!;
    const low = p1[10]!.offset;
    const high = p1[14]!.offset;
    const result = await query(`SELECT _offset FROM clicks c WHERE c._partition = 1 AND _offset BETWEEN ${low} AND ${high} ORDER BY _offset`);
    expect(result.rows.map((r) => r._offset)).toEqual(p1.filter((r) => r.offset >= low && r.offset <= high).map((r) => r.offset.toString()));
    const holders = files.filter((f) => f.partition === 1 && f.endOffset > low && f.startOffset <= high);
    expect(result.plan[0]!.candidates).toEqual(holders.map((f) => f.dataFileId.toString()));
    expect(result.plan[0]!.predicates.map((p) => p.column)).toEqual(['_partition', '_offset']);
  });

  it('unclear SQL prunes nothing: OR, self-joins and subqueries read every file and still answer right', async () => {
    for (const sql of [
      'SELECT count(*) AS n FROM clicks WHERE _partition = 0 OR _partition = 1',
      'SELECT count(*) AS n FROM clicks a JOIN clicks b USING (_partition, _offset) WHERE a._partition = 0 OR TRUE',
      'SELECT count(*) AS n FROM (SELECT * FROM clicks) WHERE _partition >= 0',
    ]) {
      const result = await query(sql);
      expect(result.rows, sql).toEqual([{ n: '160' }]);
      expect(result.plan[0]!.candidates.length, sql).toBe(files.length);
    }
  });

  it('freshness: a record committed after indexing is in the answer before any file holds it; aborted ones are not', async () => {
    const marker = `fresh-${Date.now()}`;
    const [produced] = await produce(engine.kafka, table.topic, [{ key: 'k', value: JSON.stringify({ marker }), partition: 1, timestamp: Date.now() }], { transactionalId: `fresh-${table.topic}` });
    await produce(engine.kafka, table.topic, [{ key: 'k', value: JSON.stringify({ marker, aborted: true }), partition: 1, timestamp: Date.now() }], { transactionalId: `fresh-${table.topic}`, abort: true });
    const now = await listFiles(engine.catalog, table.tableId);
    expect(now.some((f) => f.partition === 1 && f.endOffset > produced!.firstOffset)).toBe(false);

    const result = await query(`SELECT _partition, _offset, _value->>'marker' AS marker, _value->>'aborted' AS aborted FROM clicks WHERE _value->>'marker' = '${marker}'`);
    expect(result.rows).toEqual([{ _partition: 1, _offset: produced!.firstOffset.toString(), marker, aborted: null }]);
    const tail = result.plan[0]!.tail.find((t) => t.partition === 1)!;
    expect(tail.records).toBe(1);
    expect(BigInt(tail.from)).toBe(now.filter((f) => f.partition === 1).at(-1)!.endOffset);

    const count = await query('SELECT count(*) AS n FROM clicks');
    expect(count.rows).toEqual([{ n: '161' }]);
  });

  it('the CLI prints a table, --json and --csv; SQL over no table of the catalog is a clear error listing the tables', async () => {
    const cli = (...args: string[]) => run(process.execPath, ['bin/offsetlake.js', 'query', '--database-url', engine.config.databaseUrl, ...args], { cwd: process.cwd() });
    const sql = 'SELECT _partition AS p, count(*) AS n FROM clicks WHERE _timestamp < TIMESTAMP \'' + iso(t0 + hour) + '\' GROUP BY 1 ORDER BY 1';
    // Four processes at once: each pays tsx, the catalog and DuckDB start-up.
    const [json, csv, text, unknown] = await Promise.all([
      cli('--json', sql),
      cli('--csv', '--quiet', sql),
      cli('-q', sql),
      cli('SELECT * FROM nowhere').then(() => undefined, (error: { code: number; stderr: string }) => error),
    ]);
    expect(JSON.parse(json.stdout)).toEqual([{ p: 0, n: '20' }, { p: 1, n: '20' }]);
    expect(json.stderr).toMatch(/clicks: 2 of \d+ files may match/);
    expect(csv.stdout).toBe('p,n\r\n0,20\r\n1,20\r\n');
    expect(csv.stderr).toBe('');
    expect(text.stdout).toBe('p  n\n0  20\n1  20\n');
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringMatching(/query: the SQL names no table of the catalog \(tables: clicks\)/) });
  }, 60_000);

  it('SQL naming a column the table lacks, or holding a string never closed, is an error that names the column or the string', async () => {
    await expect(query('SELECT nope FROM clicks')).rejects.toThrow(/nope/);
    await expect(query("SELECT 'open FROM clicks")).rejects.toThrow(/string that is never closed/);
  });

  it('SQL of more than one statement is refused before anything runs, naming how many it holds (issue 26.6)', async () => {
    for (const [sql, count] of [['SELECT count(*) FROM clicks; SELECT 1', 2], ["SELECT count(*) FROM clicks; CREATE TABLE planted AS SELECT 1; SELECT ';'", 3]] as const) {
      const source = countingSource(kafkaSource(engine.kafka));
      const service = new ReaderService(engine.catalog, source);
      await expect(runQuery({ catalog: engine.catalog, source, service }, sql), sql).rejects.toThrow(`query takes one SQL statement, and this holds ${count}: run each with its own \`offsetlake query\``);
      expect([service.metrics.rebuilds, source.log.records, source.log.reads.length], sql).toEqual([0, 0, 0]);
    }
    // a ; inside a string or a trailing one is still one statement
    expect((await query("SELECT count(*) AS n FROM clicks WHERE _key <> ';';")).rows).toHaveLength(1);
  });

  it('a typo or a wrong column is reported before any file is rebuilt or any record read from Kafka', async () => {
    for (const sql of ['SELEC * FROM clicks', 'SELECT _ofset FROM clicks WHERE _partition = 0', 'SELECT count(*) FROM clicks WHERE nope(_offset)']) {
      const source = countingSource(kafkaSource(engine.kafka));
      const service = new ReaderService(engine.catalog, source);
      await expect(runQuery({ catalog: engine.catalog, source, service }, sql), sql).rejects.toThrow(/(Parser|Binder|Catalog) Error/);
      expect([service.metrics.rebuilds, source.log.records, source.log.reads.length], sql).toEqual([0, 0, 0]);
    }
  });
});

describe("query's fresh tail is encoded as the table's files are", () => {
  // Parquet's names of the codecs (parquet.thrift CompressionCodec), as DuckDB reads them from each file's footer.
  const codecOf = { zstd: 'ZSTD', snappy: 'SNAPPY', lz4_raw: 'LZ4_RAW', none: 'UNCOMPRESSED' } as const;
  const cases = [
    ...Object.keys(codecOf).map((compression) => ({ label: compression, compression: compression as keyof typeof codecOf, storedBefore: false })),
    // a table stored before `compression` existed: its files are LZ4_RAW, what it was built with
    { label: 'stored before the setting existed', compression: 'lz4_raw' as const, storedBefore: true },
  ];
  it.each(cases)('$label: every file DuckDB reads for the table, rebuilt files and the tail alike, has its codec', async ({ compression, storedBefore }) => {
    const topic = await newTopic(engine, 1, `tail-${compression}`);
    const created = await testTable(engine, topic, storedBefore ? {} : { compression });
    if (storedBefore) await engine.catalog.query("UPDATE offsetlake.lake_table SET settings = settings - 'compression' WHERE table_id = $1", [created.tableId]);
    const table = await findTable(engine.catalog, created.name);
    expect(table.settings.compression).toBe(compression); // read back typed, the missing setting as what the table was built with
    const records = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ key: `k${i % 3}`, value: JSON.stringify({ i: from + i, pad: 'z'.repeat(100) }), partition: 0 }));
    await produce(engine.kafka, topic, records(0, 20));
    const indexer = await indexerFor(testRuntime(engine, `tail-${topic}`), table, 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    expect((await listFiles(engine.catalog, table.tableId)).length).toBeGreaterThan(0);
    await produce(engine.kafka, topic, records(20, 5)); // the tail: committed, in no file yet

    // DuckDB reads the codec of every Parquet file this query's views read (the query's own directory).
    const files = `${tmpdir()}/offsetlake-query-*/${table.name}-*.parquet`;
    const result = await query(`SELECT regexp_extract(m.file_name, '[^/]*$') AS file, list(DISTINCT m.compression) AS codecs, (SELECT count(*) FROM ${table.name}) AS n
      FROM parquet_metadata('${files}') m GROUP BY file ORDER BY file`);
    expect(result.plan[0]!.tail).toEqual([{ partition: 0, from: '20', until: '25', records: 5 }]);
    const rows = result.rows as { file: string; codecs: string[]; n: string }[];
    expect(rows.map((row) => row.n)).toEqual(rows.map(() => '25'));
    expect(rows.map((row) => row.file)).toContain(`${table.name}-tail-0.parquet`);
    expect(rows.filter((row) => /-\d+(-\d+)?\.parquet$/.test(row.file)).length).toBeGreaterThan(0); // rebuilt files (or granules)
    for (const row of rows) expect(row.codecs, row.file).toEqual([codecOf[compression]]);
  });
});
