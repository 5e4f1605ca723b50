/**
 * Issue 29 item 4: one WHERE tree prunes files and row groups by statistics and by
 * indexes for the forms users write for a column's type (casts to BLOB and VARCHAR,
 * encode(), integer and timestamp casts, IN, BETWEEN, OR, IS NULL), and NOT never prunes.
 * Against the real broker, registry and Postgres. The records are written by confluent-
 * kafka (a producer we did not write) and read back by its read_committed consumer; the
 * expected rows are DuckDB's over a plain Parquet copy of those records, and the files a
 * query must read are the files holding those rows (a POSTINGS index and exact statistics
 * read no other).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/catalog/db.js';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { insertIndex } from '../../src/catalog/indexes.js';
import { findTable } from '../../src/catalog/tables.js';
import type { TableRecord } from '../../src/table/record.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { parseIndexColumn } from '../../src/indexes/definition.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { runQuery } from '../../src/query/run.js';
import { ReaderService } from '../../src/reader/service.js';
import type { Engine } from '../../src/runtime/engine.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { produceWithLibrdkafka } from '../helpers/independent-producers.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';

const hour = 3_600_000;
// Recent enough that the broker's retention keeps them, in whole hours: one file per hour and partition.
const t0 = Math.floor(Date.now() / hour) * hour - 6 * hour;
const perPartition = 200; // four hours of 50 records: four files of five row groups of 10

let engine: Engine;
let dir: string;
let duck: DuckDBConnection;
let closeDuck: () => void;
let table: TableRecord;
let files: CatalogFile[];

/** Record i of a partition: its key is its row group's (`k` partition hour group), null for some of partition 1's first hour. */
const keyOf = (partition: number, i: number) => (partition === 1 && i < 50 && i % 7 === 3 ? null : `k${partition}${Math.floor(i / 50)}${Math.floor((i % 50) / 10)}`);

async function query(sql: string) {
  const source = kafkaSource(engine.kafka);
  const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
  return runQuery({ catalog: engine.catalog, source, service }, sql);
}

/** DuckDB's answer over the plain copy. */
async function plainAnswer(sql: string) {
  return (await duck.runAndReadAll(sql.replace(new RegExp(`\\b${table.name}\\b`, 'g'), 'plain'))).getRowObjectsJson();
}

/** The data files holding the given rows, by id. */
function filesHolding(rows: readonly Record<string, unknown>[]): string[] {
  const held = rows.map((row) => files.find((f) => f.partition === row._partition && BigInt(row._offset as string) >= f.startOffset && BigInt(row._offset as string) < f.endOffset)!);
  return [...new Set(held.map((f) => f.dataFileId.toString()))].sort();
}

const readFiles = (plan: Awaited<ReturnType<typeof query>>['plan'][number]) => plan.reads.map((read) => read.file).sort();

beforeAll(async () => {
  engine = await testEngine('query_predicates');
  dir = await mkdtemp(join(tmpdir(), 'query-predicates-'));
  const topic = await newTopic(engine, 2, 'query-predicates');
  table = await findTable(engine.catalog, (await testTable(engine, topic, { granularity: 'hour', file_window: '2h', row_group_rows: '10' })).name);
  await inTransaction(engine.catalog, (client) =>
    insertIndex(client, table.name, { tableId: table.tableId, name: 'by_key', kind: 'postings', columns: [parseIndexColumn('_key')], scope: 'history', granuleRows: 10, falsePositiveRate: null, postingBuckets: 16, state: 'active' }),
  );
  for (const partition of [0, 1]) {
    const records = Array.from({ length: perPartition }, (_, i) => {
      const key = keyOf(partition, i);
      return { key: key === null ? null : Buffer.from(key), value: Buffer.from(JSON.stringify({ n: i % 50 })), timestamp: t0 + Math.floor((i * 4 * hour) / perPartition) };
    });
    await produceWithLibrdkafka(engine.config.kafkaBrokers, topic, partition, 'none', records);
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  files = await listFiles(engine.catalog, table.tableId);

  // The plain copy: what confluent-kafka reads, as newline-delimited JSON, copied by DuckDB into one Parquet file.
  const read = await readCommittedIndependently(engine.config.kafkaBrokers, [0, 1].map((partition) => ({ topic, partition, start: 0n, end: BigInt(perPartition) })));
  const lines = read.flatMap((records, p) => records.map((r) => JSON.stringify({ p, o: r.offset.toString(), ts: r.timestamp, k: r.key?.toString('hex') ?? null, v: r.value?.toString('utf8') ?? null })));
  const ndjson = join(dir, 'records.ndjson');
  await writeFile(ndjson, `${lines.join('\n')}\n`);
  const instance = await DuckDBInstance.create(':memory:');
  duck = await instance.connect();
  closeDuck = () => {
    duck.closeSync();
    instance.closeSync();
  };
  await duck.run("SET TimeZone = 'UTC'");
  const parquet = join(dir, 'plain.parquet');
  await duck.run(`COPY (SELECT p AS _partition, o::BIGINT AS _offset, epoch_ms(ts) AS _timestamp, unhex(k) AS _key, v AS _value
    FROM read_json('${ndjson}', format = 'newline_delimited', columns = {p: 'INTEGER', o: 'VARCHAR', ts: 'BIGINT', k: 'VARCHAR', v: 'VARCHAR'})) TO '${parquet}' (FORMAT parquet)`);
  await duck.run(`CREATE VIEW plain AS SELECT * FROM read_parquet('${parquet}')`);
}, 240_000);

afterAll(async () => {
  closeDuck?.();
  await engine?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('one WHERE tree prunes by statistics and indexes', () => {
  it('the table has eight files (an hour of a partition each) and the plain copy every record', async () => {
    expect(files).toHaveLength(8);
    expect(await plainAnswer(`SELECT count(*) AS n FROM ${table.name}`)).toEqual([{ n: String(2 * perPartition) }]);
  });

  it('each form of a key lookup, IN, BETWEEN with casts, OR (of keys, of a key and an offset range) and IS NULL reads only the files holding the rows DuckDB returns over the plain copy', async () => {
    const forms = [
      "_key = 'k013'",
      "_key = 'k013'::BLOB",
      "_key = CAST('k013' AS BLOB)",
      "_key = encode('k013')",
      "_key = 'k013'::VARCHAR",
      "_key IN ('k013', 'k121'::BLOB)",
      "_key = 'k013' OR _key = 'k121'",
      "_key = 'k013' OR _offset BETWEEN 160 AND 170",
      "_offset BETWEEN 10::BIGINT AND CAST('25' AS BIGINT) AND _partition = 1",
      `_timestamp >= '${new Date(t0 + 3 * hour).toISOString().slice(0, 19).replace('T', ' ')}'::TIMESTAMP AND _key IN (encode('k030'), 'k131')`,
      '_key IS NULL',
    ];
    for (const where of forms) {
      const sql = `SELECT _partition, _offset FROM ${table.name} WHERE ${where} ORDER BY 1, 2`;
      const expected = await plainAnswer(sql);
      expect(expected.length, sql).toBeGreaterThan(0);
      const result = await query(sql);
      expect(result.rows, sql).toEqual(expected);
      const holding = filesHolding(expected);
      expect(holding.length, sql).toBeLessThan(files.length);
      expect(readFiles(result.plan[0]!), sql).toEqual(holding);
    }
  });

  it('NOT and a cast of the column read every file, answer what DuckDB answers, and --plan names what missed them', async () => {
    for (const where of ["NOT _key = 'k013'", "_key::VARCHAR = 'k013'", "NOT (_offset < 190 OR _key = 'k013')"]) {
      const sql = `SELECT _partition, _offset FROM ${table.name} WHERE ${where} ORDER BY 1, 2`;
      const result = await query(sql);
      expect(result.rows, sql).toEqual(await plainAnswer(sql));
      expect(result.plan[0]!.reads, sql).toHaveLength(files.length);
      expect(result.plan[0]!.missed.join('\n'), sql).toMatch(/index by_key \(POSTINGS\) could not use it/);
    }
    const sql = `SELECT count(*) AS n FROM ${table.name} WHERE _key::VARCHAR = 'k013' OR _offset + 0 = 5`;
    const cli = await promisify(execFile)(process.execPath, ['bin/offsetlake.js', 'query', '--database-url', engine.config.databaseUrl, '--plan', '-q', sql], { cwd: process.cwd() });
    const missed = cli.stderr.split('\n').filter((line) => line.startsWith(`plan: ${table.name}: missed: `));
    expect(missed).toEqual([
      `plan: ${table.name}: missed: \`_key::VARCHAR = 'k013'\` is not a form the planner reads (see docs/querying.md#predicates-the-planner-reads): index by_key (POSTINGS) could not use it`,
      `plan: ${table.name}: missed: \`_offset + 0 = 5\` is not a form the planner reads (see docs/querying.md#predicates-the-planner-reads): the _offset statistics could not use it`,
    ]);
  }, 120_000);

  it('a literal no statistic or index is certain of is named too, and prunes nothing', async () => {
    const sql = `SELECT _partition, _offset FROM ${table.name} WHERE _offset > 190.5 OR _key > 'k1'`;
    const result = await query(sql);
    expect(result.rows.length).toBe((await plainAnswer(sql)).length);
    expect(result.plan[0]!.reads).toHaveLength(files.length);
    expect(result.plan[0]!.missed).toEqual([
      "`_offset > 190.5`: its literal is not certain for the _offset statistics, so they could not use it",
      "`_key > 'k1'`: index by_key (POSTINGS) does not answer this form or literal for its column, so it could not use it",
    ]);
  });
});
