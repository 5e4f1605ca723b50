/**
 * Issue 16 item 5: `query` uses active secondary indexes to rebuild only the row groups
 * that may match, and never changes an answer. Against the real broker, registry and
 * Postgres (through PgBouncer). Expected answers come from DuckDB over plain files of the
 * records as confluent-kafka reads them read_committed (Avro values decoded with avsc),
 * never from our own reads; the plans' row groups come from our catalog's granules.
 */
import { execFile } from 'node:child_process';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import avro from 'avsc';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/catalog/db.js';
import { findGranules, listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import type { Granule } from '../../src/catalog/file-writes.js';
import { indexReports, insertIndex, moveIndexState } from '../../src/catalog/indexes.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { parseIndexColumn, type IndexKind } from '../../src/indexes/definition.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { runQuery } from '../../src/query/run.js';
import { ReaderService } from '../../src/reader/service.js';
import type { Engine } from '../../src/runtime/engine.js';
import { readCommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';
import { seededRandom } from '../helpers/random.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';

const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 30, 8);
const perPartition = 200; // four files of 50 rows (one per hour), 5 row groups of 10 rows each
const count = 2 * perPartition;

let engine: Engine;
let dir: string;
let duck: DuckDBConnection;
let closeDuck: () => void;

interface Lake {
  table: TableRecord;
  files: CatalogFile[];
  granules: Map<bigint, Granule[]>;
  /** The plain view's name in the test's own DuckDB. */
  plain: string;
}
let json: Lake;
let avroLake: Lake;

const tags = ['red', 'green', 'blue', null];
const cities = ['Oslo', 'Lima', 'Pune', 'Kyiv', 'Nice'];

/** Where record j goes, and its ordinal in its partition. */
const place = (j: number) => ({ partition: j % 2, i: Math.floor(j / 2) });
const timestamp = (j: number) => t0 + Math.floor((j * 4 * hour) / count);

function jsonValue(j: number): string {
  // Every 97th user id is a float: its text is not known exactly, so its granule is never skipped.
  const id = j % 97 === 5 ? 5.5 : `u${j}`;
  const tag = tags[j % 4];
  return JSON.stringify({ user: { id }, n: j % 50, ...(tag === null ? {} : { tag }) });
}

const jsonKey = (j: number) => (j % 13 === 0 ? null : `k${Math.floor(place(j).i / 10)}`);
const traces = (j: number): [string, string | null][] => (j % 3 === 0 ? [] : j % 11 === 0 ? [['trace', null]] : [['other', 'x'], ['trace', `t${Math.floor(place(j).i / 25)}`], ['trace', 'second']]);

const avroSchema = JSON.stringify({
  type: 'record', name: 'Reading', fields: [
    { name: 'id', type: 'long' },
    { name: 'city', type: 'string' },
    { name: 'score', type: 'double' },
    { name: 'ok', type: 'boolean' },
    { name: 'who', type: { type: 'record', name: 'Who', fields: [{ name: 'addr', type: { type: 'record', name: 'Addr', fields: [{ name: 'zip', type: 'string' }] } }] } },
  ],
});
const avroValue = (j: number) => ({ id: j * 3, city: cities[j % 5]!, score: (j % 40) - 10.5, ok: j % 3 === 0, who: { addr: { zip: `z${Math.floor(place(j).i / 20)}` } } });

async function addIndex(table: TableRecord, name: string, kind: IndexKind, columns: string[], granuleRows = 10): Promise<void> {
  await inTransaction(engine.catalog, (client) =>
    insertIndex(client, table.name, {
      tableId: table.tableId, name, kind, columns: columns.map(parseIndexColumn), scope: 'history', granuleRows,
      falsePositiveRate: kind === 'bloom' ? 0.01 : null, postingBuckets: kind === 'postings' ? 16 : null, state: 'active',
    }),
  );
}

async function lake(table: TableRecord, plain: string): Promise<Lake> {
  const files = await listFiles(engine.catalog, table.tableId);
  const granules = new Map<bigint, Granule[]>();
  for (const file of files) granules.set(file.dataFileId, (await findGranules(engine.catalog, file.dataFileId))!.granules);
  return { table, files, granules, plain };
}

async function independently(table: TableRecord, files: CatalogFile[]): Promise<Map<number, IndependentRecord[]>> {
  const ends = [0, 1].map((partition) => ({ topic: table.topic, partition, start: 0n, end: files.filter((f) => f.partition === partition).at(-1)!.endOffset }));
  const read = await readCommittedIndependently(engine.config.kafkaBrokers, ends);
  return new Map(read.map((records, partition) => [partition, records]));
}

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));

/** The independently read records as newline-delimited JSON, and a DuckDB view over it with the table's columns. */
async function plainView(
  name: string, records: Map<number, IndependentRecord[]>, decoded?: (value: Buffer) => Record<string, unknown>,
  decodedType = 'STRUCT(id BIGINT, city VARCHAR, score DOUBLE, ok BOOLEAN, who STRUCT(addr STRUCT(zip VARCHAR)))',
  decodedColumnList = 'd.id AS id, d.city AS city, d.score AS score, d.ok AS ok, d.who AS who',
): Promise<void> {
  const lines = [...records].flatMap(([p, list]) => list.map((r) => JSON.stringify({
    p, o: r.offset.toString(), ts: r.timestamp, k: hex(r.key), v: decoded ? null : r.value?.toString('utf8') ?? null,
    h: r.headers.map(([k, v]) => ({ k, v: hex(v) })), ...(decoded && r.value ? { d: decoded(r.value) } : {}),
  })));
  const path = join(dir, `${name}.ndjson`);
  await writeFile(path, `${lines.join('\n')}\n`);
  const decodedColumns = decoded ? `, ${decodedColumnList}` : '';
  const d = decoded ? `, d: '${decodedType}'` : '';
  await duck.run(`CREATE VIEW ${name} AS SELECT p AS _partition, o::BIGINT AS _offset, epoch_ms(ts) AS _timestamp, unhex(k) AS _key,
    list_transform(h, x -> {'key': x.k, 'value': unhex(x.v)}) AS _headers, v AS _value${decodedColumns}
    FROM read_json('${path}', format = 'newline_delimited', columns = {p: 'INTEGER', o: 'VARCHAR', ts: 'BIGINT', k: 'VARCHAR', v: 'VARCHAR', h: 'STRUCT(k VARCHAR, v VARCHAR)[]'${d}})`);
}

async function query(sql: string, options: { wholeFiles?: boolean } = {}) {
  const source = kafkaSource(engine.kafka);
  const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
  const result = await runQuery({ catalog: engine.catalog, source, service, ...options }, sql);
  return { ...result, metrics: service.metrics };
}

/** What DuckDB answers over the plain view for the same statement. */
async function plainAnswer(of: Lake, sql: string) {
  const result = await duck.runAndReadAll(sql.replace(new RegExp(`\\b${of.table.name}\\b`, 'g'), of.plain));
  return result.getRowObjectsJson();
}

/** The row groups (per file id) holding the given rows. */
function groupsOf(of: Lake, rows: { _partition: unknown; _offset: unknown }[]): Map<string, number[]> {
  const out = new Map<string, Set<number>>();
  for (const row of rows) {
    const offset = BigInt(row._offset as string);
    const file = of.files.find((f) => f.partition === row._partition && offset >= f.startOffset && offset < f.endOffset)!;
    const group = of.granules.get(file.dataFileId)!.findIndex((g) => offset >= g.startOffset && offset < g.endOffset);
    out.set(file.dataFileId.toString(), (out.get(file.dataFileId.toString()) ?? new Set()).add(group));
  }
  return new Map([...out].map(([file, groups]) => [file, [...groups].sort((a, b) => a - b)]));
}

const readGroups = (plan: Awaited<ReturnType<typeof query>>['plan'][number]) => new Map(plan.reads.map((read) => [read.file, read.rowGroups]));

beforeAll(async () => {
  engine = await testEngine('query_indexes');
  dir = await mkdtemp(join(tmpdir(), 'query-indexes-'));
  const instance = await DuckDBInstance.create(':memory:');
  duck = await instance.connect();
  await duck.run("SET TimeZone = 'UTC'");
  closeDuck = () => {
    duck.closeSync();
    instance.closeSync();
  };
  const settings = { granularity: 'hour', file_window: '2h', row_group_rows: '10' };

  const jsonTopic = await newTopic(engine, 2, 'query-indexes-json');
  const jsonTable = await findTable(engine.catalog, (await testTable(engine, jsonTopic, settings)).name);
  await addIndex(jsonTable, 'by_user', 'postings', ['_value.user.id']);
  await addIndex(jsonTable, 'by_key', 'bloom', ['_key']);
  await addIndex(jsonTable, 'by_trace', 'bloom', ['_headers.trace'], 20);
  await addIndex(jsonTable, 'n_range', 'minmax', ['_value.n', '_timestamp']);
  await addIndex(jsonTable, 'by_tag_key', 'postings', ['_value.tag', '_key']);
  const jsonRecords = Array.from({ length: count }, (_, j) => ({ partition: place(j).partition, key: jsonKey(j), value: jsonValue(j), headers: traces(j), timestamp: timestamp(j) }));
  await produce(engine.kafka, jsonTopic, jsonRecords, { transactionalId: `qi-${jsonTopic}`, abort: false });

  const avroTopic = await newTopic(engine, 2, 'query-indexes-avro');
  const schema = await registerSchema(`${avroTopic}-value`, avroSchema, 'AVRO');
  const avroTable = await findTable(engine.catalog, (await testTable(engine, avroTopic, settings, 'avro')).name);
  await addIndex(avroTable, 'by_id', 'postings', ['id']);
  await addIndex(avroTable, 'by_city', 'bloom', ['city']);
  await addIndex(avroTable, 'score_range', 'minmax', ['score']);
  await addIndex(avroTable, 'by_zip', 'bloom', ['who.addr.zip'], 20);
  await addIndex(avroTable, 'by_city_ok', 'postings', ['city', 'ok']);
  const avroRecords = Array.from({ length: count }, (_, j) => ({ partition: place(j).partition, key: `a${j % 7}`, value: encodeWith(schema, avroValue(j)), timestamp: timestamp(j) }));
  await produce(engine.kafka, avroTopic, avroRecords, { transactionalId: `qi-${avroTopic}`, abort: false });

  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  json = await lake(jsonTable, 'plain_json');
  avroLake = await lake(avroTable, 'plain_avro');
  await plainView('plain_json', await independently(jsonTable, json.files));
  const reader = avro.Type.forSchema(JSON.parse(avroSchema) as avro.Schema);
  await plainView('plain_avro', await independently(avroTable, avroLake.files), (value) => reader.fromBuffer(value.subarray(5)) as Record<string, unknown>);
}, 240_000);

afterAll(async () => {
  closeDuck?.();
  await engine?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('query uses secondary indexes', () => {
  it('both tables have eight files (an hour of a partition each) of five row groups, each file with entries of every index', async () => {
    for (const of of [json, avroLake]) {
      expect(of.files.map((file) => of.granules.get(file.dataFileId)!.length)).toEqual([5, 5, 5, 5, 5, 5, 5, 5]);
      const reports = await indexReports(engine.catalog, of.table.tableId);
      expect(reports.map((r) => [r.name, r.state, r.filesWithEntries, r.filesWithout])).toEqual(reports.map((r) => [r.name, 'active', 8, 0]));
    }
    expect(await plainAnswer(json, `SELECT count(*) AS n FROM ${json.table.name}`)).toEqual([{ n: String(count) }]);
  });

  it('point lookups through POSTINGS and BLOOM (json field, _key, a header, Avro columns, a nested Avro leaf) rebuild only the row groups holding matches and answer what DuckDB answers over the independently read records', async () => {
    const lookups: [Lake, string, string][] = [
      [json, "_value->>'$.user.id' = 'u123'", 'by_user'],
      [json, "_key = 'k7'", 'by_key'],
      [json, "list_filter(_headers, h -> h.key = 'trace')[1].value = 't4' AND _partition = 1", 'by_trace'],
      [json, "_value->>'tag' = 'blue' AND _key IN ('k3', 'k12')", 'by_tag_key'],
      [avroLake, 'id = 3 * 0 + 363', 'none'], // an expression: no index, every row group
      [avroLake, 'id = 363', 'by_id'],
      [avroLake, "city = 'Lima' AND ok = TRUE AND _offset < 40", 'by_city_ok'],
      [avroLake, "who.addr.zip = 'z3' AND id > 0", 'by_zip'],
    ];
    for (const [of, where, index] of lookups) {
      const sql = `SELECT _partition, _offset FROM ${of.table.name} WHERE ${where} ORDER BY 1, 2`;
      const expected = await plainAnswer(of, sql);
      expect(expected.length, sql).toBeGreaterThan(0);
      const result = await query(sql);
      expect(result.rows, sql).toEqual(expected);
      const [plan] = result.plan;
      const reads = readGroups(plan!);
      const holding = groupsOf(of, expected as never);
      if (index === 'none') {
        expect(plan!.indexes, sql).toEqual([]);
        expect(plan!.rowGroups.read, sql).toBe(40);
        continue;
      }
      // Only the row groups holding matches, or sharing an index granule of 20 rows with one,
      // or holding a json value whose text is not known (the floats: never skipped).
      const unknownGroups = of === json && index === 'by_user' ? groupsOf(of, Array.from({ length: count }, (_, j) => j).filter((j) => j % 97 === 5).map((j) => ({ _partition: place(j).partition, _offset: String(place(j).i) }))) : new Map<string, number[]>();
      const wide = index === 'by_trace' || index === 'by_zip';
      const allowed = (file: string, g: number) => holding.get(file)?.includes(g) || (wide && holding.get(file)?.includes(g ^ 1)) || unknownGroups.get(file)?.includes(g);
      for (const [file, groups] of reads) expect(groups!.every((g) => allowed(file, g)), `${sql}: file ${file} reads ${groups}`).toBe(true);
      for (const [file, groups] of holding) for (const g of groups) expect(reads.get(file), sql).toContain(g);
      const use = plan!.indexes.find((u) => u.index === index)!;
      expect(use, sql).toMatchObject({ files: { used: plan!.candidates.length, skipped: 0 } });
      expect(use.granules.skipped, sql).toBeGreaterThan(0);
      expect(use.granules.considered, sql).toBe(use.granules.skipped + use.granules.read);
      expect(use.kafkaBytesAvoided, sql).toBeGreaterThan(0);
      expect(result.metrics.kafkaBytes, sql).toBe(plan!.kafkaBytes);
    }
  });

  it('a corrupt header entry, a Bloom filter cut short or an index moved out of active is skipped for the read and counted; the answer does not change', async () => {
    const sql = `SELECT _partition, _offset FROM ${json.table.name} WHERE _value->>'$.user.id' IN ('u10', 'u310') ORDER BY 1, 2`;
    const expected = await plainAnswer(json, sql);
    expect(expected).toHaveLength(2);
    const before = (await indexReports(engine.catalog, json.table.tableId)).find((r) => r.name === 'by_user')!;
    const healthy = await query(sql);
    expect(healthy.rows).toEqual(expected);
    expect(healthy.plan[0]!.rowGroups.read).toBeLessThan(20);
    const broken = json.files[0]!;
    await engine.catalog.query("UPDATE offsetlake.index_entry SET payload = '\\x7b6e6f74'::bytea WHERE index_id = $1 AND part = -1 AND data_file_id = $2", [before.indexId, broken.dataFileId]);
    const corrupt = await query(sql);
    expect(corrupt.rows).toEqual(expected);
    const use = corrupt.plan[0]!.indexes.find((u) => u.index === 'by_user')!;
    expect(use.files).toEqual({ used: 7, skipped: 1 });
    expect(use.skippedBecause.join(' ')).toMatch(/unreadable/);
    // The broken file is scanned (all its row groups are read); the others are read as before.
    const healthyReads = readGroups(healthy.plan[0]!);
    for (const file of json.files) {
      const id = file.dataFileId.toString();
      expect(readGroups(corrupt.plan[0]!).get(id)).toEqual(file === broken ? [0, 1, 2, 3, 4] : healthyReads.get(id));
    }
    const after = (await indexReports(engine.catalog, json.table.tableId)).find((r) => r.name === 'by_user')!;
    expect(after.readsSkipped - before.readsSkipped).toBe(1);
    expect(after.readsUsed - before.readsUsed).toBe(8 + 7);

    // A Bloom filter cut short: that file is scanned.
    const bloomSql = `SELECT _partition, _offset FROM ${json.table.name} WHERE _key = 'k7' ORDER BY 1, 2`;
    const byKey = (await indexReports(engine.catalog, json.table.tableId)).find((r) => r.name === 'by_key')!;
    const bloomBroken = json.files[1]!;
    await engine.catalog.query('UPDATE offsetlake.index_entry SET payload = substring(payload from 1 for 40) WHERE index_id = $1 AND part = 0 AND data_file_id = $2', [byKey.indexId, bloomBroken.dataFileId]);
    const cut = await query(bloomSql);
    expect(cut.rows).toEqual(await plainAnswer(json, bloomSql));
    expect(cut.plan[0]!.indexes.find((u) => u.index === 'by_key')!.files).toEqual({ used: 7, skipped: 1 });
    expect(readGroups(cut.plan[0]!).get(bloomBroken.dataFileId.toString())).toEqual([0, 1, 2, 3, 4]);

    await inTransaction(engine.catalog, (client) => moveIndexState(client, before.indexId, 'active', 'building'));
    try {
      const building = await query(sql);
      expect(building.rows).toEqual(expected);
      expect(building.plan[0]!.rowGroups.read).toBe(40);
      expect(building.plan[0]!.indexes.find((u) => u.index === 'by_user')).toMatchObject({ state: 'building', files: { used: 0, skipped: 8 }, skippedBecause: ['it is building, not active'] });
    } finally {
      await inTransaction(engine.catalog, (client) => moveIndexState(client, before.indexId, 'building', 'active'));
    }
  });

  it('the CLI --plan prints per index the files used and skipped, granules considered, skipped and read, and Kafka bytes avoided; --plan --json has the same figures', async () => {
    const sql = `SELECT _offset FROM ${avroLake.table.name} WHERE id = 363`;
    const expected = await plainAnswer(avroLake, sql);
    const cli = (...args: string[]) => promisify(execFile)(process.execPath, ['bin/offsetlake.js', 'query', '--database-url', engine.config.databaseUrl, ...args], { cwd: process.cwd() });
    const [text, asJson] = await Promise.all([cli('--plan', '-q', sql), cli('--plan', '--json', '-q', sql)]);
    expect(JSON.parse(asJson.stdout)).toEqual(expected);
    const plan = JSON.parse(asJson.stderr.trim().replace(/^plan: /, '')) as { tables: { rowGroups: { read: number }; indexes: { index: string; files: object; granules: { considered: number; skipped: number; read: number }; kafkaBytesAvoided: number }[] }[] };
    const [table] = plan.tables;
    expect(table!.rowGroups.read).toBe(1);
    const use = table!.indexes.find((u) => u.index === 'by_id')!;
    expect(use).toMatchObject({ files: { used: 8, skipped: 0 }, granules: { considered: 40, skipped: 39, read: 1 } });
    expect(use.kafkaBytesAvoided).toBeGreaterThan(0);
    expect(text.stderr.split('\n')).toContain(`plan: ${avroLake.table.name}: index by_id (POSTINGS): files 8 used, 0 skipped; granules 40 considered, 39 skipped, 1 read; ${use.kafkaBytesAvoided} Kafka bytes avoided`);
  }, 60_000);

  it('random predicates (seeded) over both tables: with indexes the answer equals reading whole files without indexes and DuckDB over the independently read records', async () => {
    const rnd = seededRandom(16_500);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    const q = (text: string) => `'${text.replace(/'/g, "''")}'`;
    const ops = ['=', '<', '<=', '>', '>='];
    const j = () => Math.floor(rnd() * (count + 20)) - 10; // some absent
    const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    const jsonAtoms = [
      () => `(_value->>'$.user.id' = ${q(`u${j()}`)})`,
      () => `(_value->>'$.user.id' IN (${[j(), j(), j()].map((v) => q(`u${v}`)).join(', ')}))`,
      () => `_key = ${q(`k${Math.floor(rnd() * 24) - 2}`)}`,
      () => `_key IN (${q(`k${Math.floor(rnd() * 22)}`)}, ${q(`k${Math.floor(rnd() * 22)}`)})`,
      () => `list_filter(_headers, h -> h.key = 'trace')[1].value = ${q(`t${Math.floor(rnd() * 9)}`)}`,
      () => `(_value->>'n' ${pick(ops)} ${q(String(Math.floor(rnd() * 55)))})`,
      () => `(_value->>'$.n' BETWEEN ${q(String(Math.floor(rnd() * 50)))} AND ${q(String(Math.floor(rnd() * 50)))})`,
      () => `(_value->>'tag' = ${q(pick(['red', 'green', 'blue', 'pink']))})`,
      () => `_timestamp ${pick(ops)} TIMESTAMP '${iso(timestamp(Math.max(0, j())) + pick([-1, 0, 1]))}'`,
      () => `_key IS NULL`,
      () => `_offset ${pick(ops)} ${Math.floor(rnd() * 210)}`,
    ];
    const avroAtoms = [
      () => `id = ${j() * 3 + pick([0, 0, 1])}`,
      () => `id IN (${j() * 3}, ${j() * 3})`,
      () => `id ${pick(ops)} ${j() * 3}`,
      () => `city = ${q(pick([...cities, 'Rome']))}`,
      () => `city IN (${q(pick(cities))}, ${q(pick([...cities, 'Rome']))})`,
      () => `ok = ${pick(['TRUE', 'FALSE'])}`,
      () => `score ${pick(ops)} ${pick(['-10.5', '0', '3.5', '29.5', '-11', '30', '7.25'])}`,
      () => `score BETWEEN ${pick(['-10.5', '0', '3.5'])} AND ${pick(['3.5', '29.5', '12'])}`,
      () => `who.addr.zip = ${q(`z${Math.floor(rnd() * 11)}`)}`,
      () => `who['addr']['zip'] IN (${q(`z${Math.floor(rnd() * 11)}`)}, 'z1')`,
      () => `_partition = ${Math.floor(rnd() * 2)}`,
    ];
    const tree = (atoms: (() => string)[], depth: number): string =>
      depth > 0 && rnd() < 0.6 ? `(${Array.from({ length: 2 + Math.floor(rnd() * 2) }, () => tree(atoms, depth - 1)).join(rnd() < 0.5 ? ' AND ' : ' OR ')})` : pick(atoms)();
    let skipped = 0;
    for (let round = 0; round < 60; round++) {
      const of = round % 2 === 0 ? json : avroLake;
      const sql = `SELECT _partition, _offset FROM ${of.table.name} WHERE ${tree(of === json ? jsonAtoms : avroAtoms, 2)} ORDER BY 1, 2`;
      const expected = await plainAnswer(of, sql);
      const indexed = await query(sql);
      const whole = await query(sql, { wholeFiles: true });
      expect(indexed.rows, sql).toEqual(expected);
      expect(whole.rows, sql).toEqual(expected);
      expect(whole.plan[0]!.indexes, sql).toEqual([]);
      const reads = readGroups(indexed.plan[0]!);
      for (const [file, groups] of groupsOf(of, expected as never)) for (const g of groups) expect(reads.get(file), sql).toContain(g);
      skipped += indexed.plan[0]!.indexes.reduce((n, use) => n + use.granules.skipped, 0);
    }
    expect(skipped).toBeGreaterThan(0);
  });
});

/**
 * Seeded random tables (one json, one Avro with nullable fields and a date) with seeded
 * random indexes of every kind, composite keys included, and random AND/OR predicates
 * (=, IN, ranges, IS NULL, values absent, values at the data's edges).
 */
describe('query with random indexes over random tables (seeded)', () => {
  const seed = 16_777;
  const rows = 240; // two partitions, three hours: six files of 40 rows, 4 row groups each
  const rnd = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
  const words = ['ant', 'bee', 'cat', 'Dog', 'ému', '', 'ant '];
  let jsonRandom: Lake;
  let avroRandom: Lake;

  const randomSchema = JSON.stringify({
    type: 'record', name: 'R', fields: [
      { name: 'id', type: 'long' },
      { name: 'name', type: ['null', 'string'] },
      { name: 'score', type: ['null', 'double'] },
      { name: 'flag', type: ['null', 'boolean'] },
      { name: 'day', type: { type: 'int', logicalType: 'date' } },
    ],
  });

  /** Up to five indexes drawn from the columns: each kind where the column's type takes it, composites of two. */
  async function randomIndexes(table: TableRecord, columns: { name: string; kinds: IndexKind[] }[]): Promise<string[]> {
    const made: string[] = [];
    // Every column once (in a seeded order), the three kinds among the first three where the column takes them.
    const order = [...columns].sort(() => rnd() - 0.5);
    const kinds: IndexKind[] = ['minmax', 'bloom', 'postings'];
    for (let i = 0; i < 5; i++) {
      const first = order[i % order.length]!;
      const kind = i < 3 && first.kinds.includes(kinds[i]!) ? kinds[i]! : pick(first.kinds);
      const second = kind !== 'minmax' && rnd() < 0.4 ? pick(columns.filter((c) => c !== first && c.kinds.includes(kind))) : undefined;
      const names = second ? [first.name, second.name] : [first.name];
      await addIndex(table, `r${i}`, kind, names, pick([10, 20]));
      made.push(`${kind}(${names.join(', ')})`);
    }
    return made;
  }

  beforeAll(async () => {
    const settings = { granularity: 'hour', file_window: '2h', row_group_rows: '10' };
    const at = (j: number) => t0 + Math.floor((j * 3 * hour) / rows);
    const jsonTopic = await newTopic(engine, 2, 'query-indexes-rjson');
    const jsonTable = await findTable(engine.catalog, (await testTable(engine, jsonTopic, settings)).name);
    const all: IndexKind[] = ['minmax', 'bloom', 'postings'];
    await randomIndexes(jsonTable, [{ name: '_value.a', kinds: all }, { name: '_value.b.c', kinds: all }, { name: '_key', kinds: all }, { name: '_headers.h', kinds: all }, { name: '_timestamp', kinds: all }]);
    const field = (): unknown => pick([pick(words), pick(words), Math.floor(rnd() * 9), null, undefined, 2.5, { x: 1 }]);
    await produce(engine.kafka, jsonTopic, Array.from({ length: rows }, (_, j) => {
      // Values drift with the position (and stray now and then), so that granules differ.
      const a = rnd() < 0.7 ? words[Math.floor(j / 40) % words.length] : field();
      const c = rnd() < 0.2 ? undefined : Math.floor(j / 24) - 2 + (rnd() < 0.1 ? 5 : 0);
      return {
        partition: j % 2, timestamp: at(j),
        key: rnd() < 0.15 ? null : `k${1 + Math.floor(j / 60)}`,
        value: JSON.stringify({ ...(a === undefined ? {} : { a }), b: c === undefined ? {} : { c } }),
        headers: rnd() < 0.3 ? [] : ([['h', rnd() < 0.1 ? null : pick(['x', 'y', 'z'])]] as [string, string | null][]),
      };
    }), { transactionalId: `qr-${jsonTopic}`, abort: false });

    const avroTopic = await newTopic(engine, 2, 'query-indexes-ravro');
    const schema = await registerSchema(`${avroTopic}-value`, randomSchema, 'AVRO');
    const avroTable = await findTable(engine.catalog, (await testTable(engine, avroTopic, settings, 'avro')).name);
    await randomIndexes(avroTable, [
      { name: 'id', kinds: all }, { name: 'name', kinds: all }, { name: 'score', kinds: ['minmax'] }, { name: 'flag', kinds: ['bloom', 'postings'] }, { name: 'day', kinds: all },
    ]);
    // Encoded with avsc alone, framed in the Confluent wire format (magic 0, schema id big-endian).
    const writer = avro.Type.forSchema(JSON.parse(randomSchema) as avro.Schema);
    const framed = (value: unknown) => Buffer.concat([Buffer.from([0, ...new Uint8Array(new Uint32Array([schema.id]).buffer).reverse()]), writer.toBuffer(value)]);
    await produce(engine.kafka, avroTopic, Array.from({ length: rows }, (_, j) => ({
      partition: j % 2, timestamp: at(j), key: null,
      value: framed({
        id: Math.floor(j / 4) + (rnd() < 0.1 ? 7 : 0), name: rnd() < 0.15 ? null : rnd() < 0.8 ? words[Math.floor(j / 35) % words.length] : pick(words),
        score: rnd() < 0.15 ? null : rnd() < 0.8 ? -1.5 + Math.floor(j / 30) * 1.25 : pick([-1.5, 0, 2.25, 7, 1e9]),
        flag: rnd() < 0.2 ? null : Math.floor(j / 50) % 2 === 0 ? rnd() < 0.9 : rnd() < 0.1, day: 20_000 + Math.floor(j / 8) + (rnd() < 0.1 ? 3 : 0),
      }),
    })), { transactionalId: `qr-${avroTopic}`, abort: false });

    await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    jsonRandom = await lake(jsonTable, 'plain_rjson');
    avroRandom = await lake(avroTable, 'plain_ravro');
    await plainView('plain_rjson', await independently(jsonTable, jsonRandom.files));
    const reader = avro.Type.forSchema(JSON.parse(randomSchema) as avro.Schema);
    await plainView('plain_ravro', await independently(avroTable, avroRandom.files), (value) => {
      const decoded = reader.fromBuffer(value.subarray(5)) as Record<string, unknown>;
      return { ...decoded, day: new Date((decoded.day as number) * 86_400_000).toISOString().slice(0, 10) };
    }, "STRUCT(id BIGINT, name VARCHAR, score DOUBLE, flag BOOLEAN, day DATE)", 'd.id AS id, d.name AS name, d.score AS score, d.flag AS flag, d.day AS day');
  }, 600_000); // seeded predicates, each answered three ways: ~30 s alone, several times that on a busy machine

  it('answers with random indexes equal the answers reading whole files without indexes and DuckDB over the independently read records', async () => {
    const q = (text: string) => `'${text.replace(/'/g, "''")}'`;
    const ops = ['=', '<', '<=', '>', '>='];
    const word = () => q(pick([...words, 'zebra', 'a']));
    const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    const jsonAtoms = [
      () => `(_value->>'a' ${pick(ops)} ${rnd() < 0.7 ? word() : q(String(Math.floor(rnd() * 9)))})`,
      () => `(_value->>'$.a' IN (${word()}, ${word()}, '3'))`,
      () => `(_value->>'$.b.c' ${pick(ops)} ${q(String(Math.floor(rnd() * 14) - 3))})`,
      () => `(_value->>'$.b.c' BETWEEN ${q(String(Math.floor(rnd() * 10)))} AND ${q(String(Math.floor(rnd() * 10)))})`,
      () => `(_value->>'a' IS NULL)`,
      () => `_key ${pick(['=', '<', '>='])} ${q(pick(['k1', 'k2', 'k3', 'k4', 'k9', 'k']))}`,
      () => `_key = ${q(pick(['k1', 'k2', 'k3', 'k4', 'k5']))} AND (_value->>'a' = ${word()})`,
      () => `_key IN (${q(pick(['k1', 'k2', 'k5']))}, ${q(pick(['k3', 'k4']))})`,
      () => `list_filter(_headers, h -> h.key = 'h')[1].value = ${q(pick(['x', 'y', 'z', 'w']))}`,
      () => `_timestamp ${pick(ops)} TIMESTAMP '${iso(t0 + Math.floor(rnd() * 3 * hour) + pick([-1, 0, 1]))}'`,
    ];
    const avroAtoms = [
      () => `id ${pick(ops)} ${Math.floor(rnd() * 64) - 2}`,
      () => `id IN (${Math.floor(rnd() * 60)}, ${Math.floor(rnd() * 60)}, ${Math.floor(rnd() * 60)})`,
      () => `name ${pick(ops)} ${word()}`,
      () => `name IN (${word()}, ${word()})`,
      () => `score ${pick(ops)} ${pick(['-1.5', '0', '2.25', '7', '1000000000', '3', '8.5', '-0.25'])}`,
      () => `flag = ${pick(['TRUE', 'FALSE'])}`,
      () => `flag IS NULL`,
      () => `day ${pick(ops)} DATE '${new Date((20_000 + Math.floor(rnd() * 32) - 1) * 86_400_000).toISOString().slice(0, 10)}'`,
      () => `day BETWEEN '${new Date((20_000 + Math.floor(rnd() * 30)) * 86_400_000).toISOString().slice(0, 10)}' AND '${new Date((20_010 + Math.floor(rnd() * 30)) * 86_400_000).toISOString().slice(0, 10)}'`,
    ];
    const tree = (atoms: (() => string)[], depth: number): string =>
      depth > 0 && rnd() < 0.6 ? `(${Array.from({ length: 2 + Math.floor(rnd() * 2) }, () => tree(atoms, depth - 1)).join(rnd() < 0.5 ? ' AND ' : ' OR ')})` : pick(atoms)();
    let skipped = 0;
    for (let round = 0; round < 60; round++) {
      const of = round % 2 === 0 ? jsonRandom : avroRandom;
      const sql = `SELECT _partition, _offset FROM ${of.table.name} WHERE ${tree(of === jsonRandom ? jsonAtoms : avroAtoms, 2)} ORDER BY 1, 2`;
      const expected = await plainAnswer(of, sql);
      const indexed = await query(sql);
      const whole = await query(sql, { wholeFiles: true });
      expect(indexed.rows, sql).toEqual(expected);
      expect(whole.rows, sql).toEqual(expected);
      expect(indexed.plan[0]!.indexes.every((use) => use.files.skipped === 0), sql).toBe(true);
      skipped += indexed.plan[0]!.indexes.reduce((n, use) => n + use.granules.skipped, 0);
    }
    expect(skipped).toBeGreaterThan(0);
  });
});
