/**
 * Issue 14, `query` reads granules: row groups whose footer statistics (or offset span)
 * cannot match the WHERE clause are never rebuilt, and only the columns the statement
 * may use are encoded. Against the real broker and Postgres; expected answers come from
 * what confluent-kafka reads read_committed (test/helpers/independent-kafka.ts), never
 * from our own reads. Kafka bytes are the reader's own count of what it fetched.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findGranules, listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Granule } from '../../src/catalog/file-writes.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { runQuery } from '../../src/query/run.js';
import { ReaderService } from '../../src/reader/service.js';
import { readCommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';
import { seededRandom } from '../helpers/random.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';

const run = promisify(execFile);
const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 30, 8);
const perHour = 100; // per partition: five row groups of 20 rows per file

let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
let granules: Map<bigint, Granule[]>;
const committed = new Map<number, IndependentRecord[]>();

async function query(sql: string, options: { wholeFiles?: boolean } = {}) {
  const source = kafkaSource(engine.kafka);
  const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
  const result = await runQuery({ catalog: engine.catalog, source, service, ...options }, sql);
  return { ...result, metrics: service.metrics };
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const keyText = (record: IndependentRecord) => (record.key === null ? null : record.key.toString());
const allRecords = () => [...committed].flatMap(([partition, records]) => records.map((record) => ({ partition, record })));

beforeAll(async () => {
  engine = await testEngine('query_granules');
  const topic = await newTopic(engine, 2, 'query-granules');
  const created = await testTable(engine, topic, { granularity: 'hour', file_window: '2h', row_group_rows: '20' });
  for (let h = 0; h < 4; h += 1) {
    const records = Array.from({ length: 2 * perHour }, (_, j) => ({
      key: j % 11 === 0 ? null : `user-${j % 7}`,
      value: JSON.stringify({ h, j, page: `/p/${j % 5}`, pad: 'x'.repeat(100 + (j % 13) * 10) }),
      partition: j % 2,
      timestamp: t0 + h * hour + j * 15_000,
    }));
    await produce(engine.kafka, topic, records, { transactionalId: `qg-${topic}`, abort: false });
    // Aborted records and markers inside the files' offsets: granules' spans hold them, their Kafka bytes do not.
    if (h === 2) await produce(engine.kafka, topic, records.slice(0, 8).map((r) => ({ ...r, value: '{"aborted":true}' })), { transactionalId: `qg-${topic}`, abort: true });
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
  files = await listFiles(engine.catalog, table.tableId);
  granules = new Map();
  for (const file of files) granules.set(file.dataFileId, (await findGranules(engine.catalog, file.dataFileId))!.granules);
  const ends = [0, 1].map((partition) => ({ topic, partition, start: 0n, end: files.filter((f) => f.partition === partition).at(-1)!.endOffset }));
  (await readCommittedIndependently(engine.config.kafkaBrokers, ends)).forEach((records, partition) => committed.set(partition, records));
}, 180_000);

afterAll(async () => {
  await engine?.close();
});

/** A file of partition 1 with several row groups, and one of its middle row groups. */
function middleGranule(): { file: CatalogFile; granule: Granule } {
  const file = files.find((f) => f.partition === 1 && granules.get(f.dataFileId)!.length >= 3)!;
  return { file, granule: granules.get(file.dataFileId)![2]! };
}

describe('query reads granules', () => {
  it('the indexed table has several files of several row groups, all with granules', () => {
    expect(files.length).toBe(8); // 4 hours × 2 partitions
    expect(files.every((file) => file.hasGranules)).toBe(true);
    expect(files.map((file) => granules.get(file.dataFileId)!.length)).toEqual(new Array(8).fill(5));
    expect(allRecords().length).toBe(8 * perHour);
  });

  it('an _offset range inside one row group rebuilds only that granule, for only the named columns: Kafka bytes read equal its kafka_bytes', async () => {
    const { file, granule } = middleGranule();
    const inside = committed.get(1)!.filter((r) => r.offset >= granule.startOffset && r.offset < granule.endOffset);
    expect(inside.length).toBe(20);
    const low = inside[3]!.offset;
    const high = inside[12]!.offset;
    const result = await query(`SELECT _offset, _key FROM ${table.name} WHERE _partition = 1 AND _offset BETWEEN ${low} AND ${high} ORDER BY _offset`);
    expect(result.rows).toEqual(inside.slice(3, 13).map((r) => ({ _offset: r.offset.toString(), _key: keyText(r) })));
    const [plan] = result.plan;
    expect(plan!.reads).toEqual([{ file: file.dataFileId.toString(), partition: 1, startOffset: file.startOffset.toString(), endOffset: file.endOffset.toString(), rowGroups: [2], rowGroupsInFile: 5, kafkaBytes: granule.kafkaBytes }]);
    expect(plan!.rowGroups.read).toBe(1);
    expect(plan!.columns).toEqual(['_partition', '_offset', '_key']);
    expect(plan!.kafkaBytes).toBe(granule.kafkaBytes);
    expect(result.metrics).toMatchObject({ rebuilds: 0, granuleRebuilds: 0, partialGranuleRebuilds: 1, chunkMismatches: 0, kafkaBytes: granule.kafkaBytes });

    // The same query reading whole files: Kafka bytes of the whole file, one whole rebuild of every column.
    const whole = await query(`SELECT _offset, _key FROM ${table.name} WHERE _partition = 1 AND _offset BETWEEN ${low} AND ${high} ORDER BY _offset`, { wholeFiles: true });
    expect(whole.rows).toEqual(result.rows);
    const fileBytes = granules.get(file.dataFileId)!.reduce((n, g) => n + g.kafkaBytes, 0);
    expect(whole.metrics.kafkaBytes).toBe(fileBytes);
    expect(whole.plan[0]!.columns.length).toBe(whole.plan[0]!.tableColumns);
    expect(result.metrics.kafkaBytes).toBeLessThan(fileBytes / 3);
  });

  it('a statement using one column encodes only that column in every row group; count(*) encodes one column; * and a row as a struct encode all', async () => {
    const all = allRecords();
    const latest = await query(`SELECT max(_timestamp) AS latest FROM ${table.name}`);
    const maxTimestamp = Math.max(...all.map(({ record }) => record.timestamp));
    expect(latest.rows).toEqual([{ latest: new Date(maxTimestamp).toISOString().replace('T', ' ').replace('.000Z', '+00') }]);
    expect(latest.plan[0]!.columns).toEqual(['_timestamp']);
    expect(latest.plan[0]!.rowGroups).toEqual({ read: 40, of: 40 });
    expect(latest.metrics).toMatchObject({ rebuilds: 0, granuleRebuilds: 0, partialGranuleRebuilds: 40 });

    const counted = await query(`SELECT count(*) AS n FROM ${table.name}`);
    expect(counted.rows).toEqual([{ n: String(all.length) }]);
    expect(counted.plan[0]!.columns).toEqual(['_partition']);

    const star = await query(`SELECT * FROM ${table.name} WHERE _partition = 0 AND _offset < 3 ORDER BY _offset`);
    expect(star.rows.map((row) => [row._offset, row._key])).toEqual(committed.get(0)!.filter((r) => r.offset < 3n).map((r) => [r.offset.toString(), keyText(r)]));
    expect(star.plan[0]!.columns.length).toBe(star.plan[0]!.tableColumns);
    expect(star.metrics).toMatchObject({ rebuilds: 0, granuleRebuilds: 1, partialGranuleRebuilds: 0 });

    const rows = await query(`SELECT count(DISTINCT c) AS n FROM ${table.name} c WHERE _partition = 0`);
    expect(rows.rows).toEqual([{ n: String(committed.get(0)!.length) }]);
    expect(rows.plan[0]!.columns.length).toBe(rows.plan[0]!.tableColumns);
  });

  it('random predicates (seeded) on _partition, _offset, _timestamp and _key: granule reads answer what the committed records hold, and what whole-file reads answer', async () => {
    const rnd = seededRandom(14_004);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    const maxOffset = Math.max(...allRecords().map(({ record }) => Number(record.offset)));
    const ops = ['=', '<', '<=', '>', '>=', 'between'] as const;
    const compare = (op: (typeof ops)[number], a: number, b: number, c = 0): boolean =>
      op === '=' ? a === b : op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : op === '>=' ? a >= b : a >= b && a <= c;
    const edges = files.flatMap((file) =>
      granules.get(file.dataFileId)!.flatMap((g) => {
        const rows = committed.get(file.partition)!.filter((r) => r.offset >= g.startOffset && r.offset < g.endOffset);
        return [rows[0]!, rows.at(-1)!];
      }),
    );
    let rowGroupsRead = 0;
    let rowGroupsOf = 0;
    let granuleBytes = 0;
    let wholeBytes = 0;
    for (let round = 0; round < 60; round += 1) {
      const sqlParts: string[] = [];
      const tests: ((partition: number, r: IndependentRecord) => boolean)[] = [];
      for (const column of ['_partition', '_offset', '_timestamp', '_key']) {
        if (rnd() < 0.35) continue;
        if (column === '_key') {
          const key = `user-${Math.floor(rnd() * 7)}`;
          sqlParts.push(`_key <> '${key}'`);
          tests.push((_p, r) => r.key !== null && r.key.toString() !== key);
          continue;
        }
        const op = pick(ops);
        // Half the literals sit on a row group's first or last row, or one next to it: where a wrong bound shows.
        const uniform = (): number => (column === '_offset' ? Math.floor(rnd() * (maxOffset + 10)) - 5 : t0 - 600_000 + Math.floor(rnd() * (4 * hour + 1_200_000)));
        const edge = (): number => {
          const record = pick(edges);
          return (column === '_offset' ? Number(record.offset) : record.timestamp) + pick([-1, 0, 0, 1]);
        };
        const value = (): number => (column === '_partition' ? Math.floor(rnd() * 3) : rnd() < 0.5 ? edge() : uniform());
        const literal = (v: number) => (column === '_timestamp' ? `${rnd() < 0.5 ? 'TIMESTAMP ' : ''}'${iso(v)}'` : String(v));
        const a = value();
        const b = op === 'between' ? a + Math.floor(rnd() * (column === '_timestamp' ? 2 * hour : 120)) : 0;
        const flipped = op !== 'between' && rnd() < 0.3;
        const mirror = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as Record<string, string>;
        sqlParts.push(op === 'between' ? `${column} BETWEEN ${literal(a)} AND ${literal(b)}` : flipped ? `${literal(a)} ${mirror[op]} ${column}` : `${column} ${op} ${literal(a)}`);
        const of = (p: number, r: IndependentRecord) => (column === '_partition' ? p : column === '_offset' ? Number(r.offset) : r.timestamp);
        tests.push((p, r) => compare(op, of(p, r), a, b));
      }
      const sql = `SELECT _partition, _offset, _key FROM ${table.name}${sqlParts.length ? ` WHERE ${sqlParts.join(' AND ')}` : ''} ORDER BY _partition, _offset`;
      const expected = allRecords().filter(({ partition, record }) => tests.every((test) => test(partition, record))).map(({ partition, record }) => ({ _partition: partition, _offset: record.offset.toString(), _key: keyText(record) }));
      const granular = await query(sql);
      const whole = await query(sql, { wholeFiles: true });
      expect(granular.rows, sql).toEqual(expected);
      expect(whole.rows, sql).toEqual(expected);
      expect(granular.metrics.chunkMismatches, sql).toBe(0);
      // Every row group that holds an expected row was read.
      for (const row of expected) {
        const file = files.find((f) => f.partition === row._partition && BigInt(row._offset) >= f.startOffset && BigInt(row._offset) < f.endOffset)!;
        const group = granules.get(file.dataFileId)!.findIndex((g) => BigInt(row._offset) >= g.startOffset && BigInt(row._offset) < g.endOffset);
        expect(granular.plan[0]!.reads.find((read) => read.file === file.dataFileId.toString())?.rowGroups, sql).toContain(group);
      }
      expect(granular.metrics.kafkaBytes, sql).toBe(granular.plan[0]!.kafkaBytes);
      rowGroupsRead += granular.plan[0]!.rowGroups.read;
      rowGroupsOf += granular.plan[0]!.rowGroups.of;
      granuleBytes += granular.metrics.kafkaBytes;
      wholeBytes += whole.metrics.kafkaBytes;
    }
    // Pruning happened (what the seed draws prunes some row groups inside candidate files).
    expect(rowGroupsRead).toBeLessThan(rowGroupsOf);
    expect(granuleBytes).toBeLessThan(wholeBytes);
  }, 600_000); // seeded predicates, each answered three ways: ~30 s alone, several times that on a busy machine

  it('the first and last row of every row group are found by their exact _timestamp and _offset, each reading that row group alone', async () => {
    const wrong: string[] = [];
    for (const file of files) {
      for (const [g, granule] of granules.get(file.dataFileId)!.entries()) {
        const rows = committed.get(file.partition)!.filter((r) => r.offset >= granule.startOffset && r.offset < granule.endOffset);
        for (const row of [rows[0]!, rows.at(-1)!]) {
          const t = `TIMESTAMP '${iso(row.timestamp)}'`;
          const sql = `SELECT _offset FROM ${table.name} WHERE _partition = ${file.partition} AND _timestamp >= ${t} AND _timestamp <= ${t} AND _offset >= ${row.offset} AND _offset <= ${row.offset}`;
          const result = await query(sql);
          const reads = result.plan[0]!.reads.map((read) => [read.file, read.rowGroups]);
          if (JSON.stringify(result.rows) !== JSON.stringify([{ _offset: row.offset.toString() }]) || JSON.stringify(reads) !== JSON.stringify([[file.dataFileId.toString(), [g]]])) {
            wrong.push(`${sql}: ${JSON.stringify(result.rows)}, read ${JSON.stringify(reads)}`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  }, 120_000);

  it('granuleFile names the row group or column a file does not have, and reads nothing from Kafka', async () => {
    const { file } = middleGranule();
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 0 });
    await expect(service.producer.granuleFile(table, file, 5, [0])).rejects.toThrow(`file ${file.dataFileId} has row groups 0 to 4, not 5`);
    await expect(service.producer.granuleFile(table, file, 0, [0, 7])).rejects.toThrow(`file ${file.dataFileId} has columns 0 to 6, not 7`);
    await expect(service.producer.granuleFile(table, file, 0, [])).rejects.toThrow('a granule file needs at least one column');
    expect(service.metrics).toMatchObject({ kafkaBytes: 0, granuleRebuilds: 0, partialGranuleRebuilds: 0 });
  });

  it('a file without granules is read whole (its Kafka bytes unknown in the plan) and gets granules, which the next query reads', async () => {
    const { file } = middleGranule();
    await engine.catalog.query('DELETE FROM offsetlake.granule WHERE data_file_id = $1', [file.dataFileId]);
    await engine.catalog.query('UPDATE offsetlake.data_file SET page_index = NULL WHERE data_file_id = $1', [file.dataFileId]);
    const sql = `SELECT count(*) AS n FROM ${table.name} WHERE _partition = 1 AND _offset >= ${file.startOffset} AND _offset < ${file.endOffset}`;
    const want = committed.get(1)!.filter((r) => r.offset >= file.startOffset && r.offset < file.endOffset).length;
    const first = await query(sql);
    expect(first.rows).toEqual([{ n: String(want) }]);
    expect(first.plan[0]!.reads).toEqual([expect.objectContaining({ file: file.dataFileId.toString(), rowGroups: null, rowGroupsInFile: null, kafkaBytes: null })]);
    expect(first.plan[0]!.filesWithUnknownKafkaBytes).toBe(1);
    expect(first.metrics).toMatchObject({ rebuilds: 1, granuleRebuilds: 0, partialGranuleRebuilds: 0 });
    const again = await query(sql);
    expect(again.rows).toEqual(first.rows);
    expect(again.plan[0]!.reads[0]!.rowGroups).toEqual([0, 1, 2, 3, 4]);
    expect(again.metrics).toMatchObject({ rebuilds: 0, partialGranuleRebuilds: 5 });
  });

  it('the CLI --plan prints files, row groups and columns chosen and the Kafka bytes to read; --plan --json prints the plan as JSON', async () => {
    const { file, granule } = middleGranule();
    const inside = committed.get(1)!.filter((r) => r.offset >= granule.startOffset && r.offset < granule.endOffset);
    const sql = `SELECT _offset FROM ${table.name} WHERE _partition = 1 AND _offset BETWEEN ${inside[0]!.offset} AND ${inside[1]!.offset}`;
    const cli = (...args: string[]) => run(process.execPath, ['bin/offsetlake.js', 'query', '--database-url', engine.config.databaseUrl, ...args], { cwd: process.cwd() });
    const [text, json] = await Promise.all([cli('--plan', '-q', sql), cli('--plan', '--json', '-q', sql)]);
    expect(text.stdout).toBe(`_offset\n${inside[0]!.offset}\n${inside[1]!.offset}\n`);
    const lines = text.stderr.trim().split('\n');
    expect(lines).toEqual([
      `plan: ${table.name}: files 1 of 8 (1 by catalog statistics); row groups 1 of 5; ${granule.kafkaBytes} Kafka bytes to read`,
      `plan: ${table.name}: columns 2 of 7: _partition, _offset`,
      `plan: ${table.name}: pruned by _partition = 1 AND _offset BETWEEN ${inside[0]!.offset} AND ${inside[1]!.offset}`,
      `plan: ${table.name}: file ${file.dataFileId} (partition 1, offsets [${file.startOffset}, ${file.endOffset})): row groups 2 of 5, ${granule.kafkaBytes} Kafka bytes`,
      expect.stringMatching(new RegExp(`^plan: read ${granule.kafkaBytes} Kafka bytes \\(files; the tail apart\\) for \\d+ Parquet bytes handed to DuckDB \\([\\d.]+ per Parquet byte\\); row groups rebuilt: 1 for some columns, 0 with every column; files rebuilt whole: 0$`)),
    ]);
    expect(JSON.parse(json.stdout)).toEqual([{ _offset: inside[0]!.offset.toString() }, { _offset: inside[1]!.offset.toString() }]);
    const plan = JSON.parse(json.stderr.trim().replace(/^plan: /, ''));
    expect(plan.tables).toMatchObject([{ table: table.name, files: 8, rowGroups: { read: 1, of: 5 }, columns: ['_partition', '_offset'], kafkaBytes: granule.kafkaBytes }]);
    expect(plan.read).toMatchObject({ kafkaBytes: granule.kafkaBytes, partialGranuleRebuilds: 1, granuleRebuilds: 0, wholeFileRebuilds: 0 });
    expect(plan.read.parquetBytes).toBeGreaterThan(0);
  }, 60_000);
});
