/**
 * Poison records (issue 46): values that our checks took but that left a file unreadable.
 *
 * - A json table's value with an escaped lone surrogate (`{"s":"\ud800"}`) is JSON to
 *   JSON.parse, but DuckDB's reader refuses it, and with it every query that read `_value`
 *   of its file. Which values are JSON is asked of DuckDB itself; the served file must then
 *   read whole in DuckDB, each refused value an error row. A file an older encoder (v3)
 *   indexed with such a value keeps its bytes.
 * - A JSON Schema table's untyped field (`"doc": {}`) nested deeper than JSON.stringify can
 *   recurse on one thread but not on another: indexed on the thread that reads Kafka and
 *   served from a build worker (or the other way round), the file never matched again (a
 *   500 forever). Depth is bounded the same on every thread: both ways give the same bytes,
 *   the value at the limit decodes (DuckDB reads back the text produced), beyond it an
 *   error row. The same for an Avro record that contains itself (avsc's read recursed too).
 *
 * Files are fetched from the read API as `serve` answers them (ReaderService, as serve makes
 * it, with or without build workers) and read by a stock DuckDB as plain Parquet.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { wireHeader } from '../../src/schema/wire.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { runCli } from '../helpers/cli.js';
import { registerSchema } from '../helpers/registry.js';
import { DuckdbSession } from '../helpers/duckdb-session.js';
import { listeningReader } from '../helpers/reader-server.js';

const token = 'poison-values-token';
const hour = Date.UTC(2026, 11, 1, 10);
let duck: DuckdbSession;
let dir: string;
const engines: Engine[] = [];

beforeAll(async () => {
  duck = await DuckdbSession.open();
  dir = mkdtempSync(join(tmpdir(), 'poison-values-'));
});

afterAll(async () => {
  await duck?.close();
  await Promise.all(engines.map((engine) => engine.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function engine(name: string): Promise<Engine> {
  const made = await testEngine(name);
  engines.push(made);
  return made;
}

/** A SQL string literal of `text` (DuckDB: no backslash escapes, quotes doubled). */
const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/**
 * Every file of the table as serve answers it (`buildThreads` build workers, 0: on the
 * serving thread), written as plain Parquet; the glob DuckDB reads them by, and their bytes.
 */
async function servedFiles(engine: Engine, tableName: string, buildThreads: number): Promise<{ glob: string; statuses: number[]; bytes: Buffer[] }> {
  const table = await findTable(engine.catalog, tableName);
  const files = await listFiles(engine.catalog, table.tableId);
  expect(files.length).toBeGreaterThan(0);
  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024, buildThreads });
  const reader = await listeningReader(readerHandler(service, { token }));
  const folder = mkdtempSync(join(dir, `${tableName}-`));
  const statuses: number[] = [];
  const bytes: Buffer[] = [];
  try {
    for (const file of files) {
      const response = await fetch(`${reader.url}/tables/${tableName}/files/${file.dataFileId}.parquet`, { headers: { authorization: `Bearer ${token}` } });
      statuses.push(response.status);
      const body = Buffer.from(await response.arrayBuffer());
      bytes.push(body);
      if (response.status === 200) writeFileSync(join(folder, `${file.dataFileId}.parquet`), body);
    }
  } finally {
    await reader.stop();
    await service.close();
  }
  return { glob: join(folder, '*.parquet'), statuses, bytes };
}

describe('a json table: an escaped lone surrogate', () => {
  // value texts as produced: a backslash in these strings is a backslash in the record
  const values = [
    '{"n":0,"s":"plain"}',
    '{"n":1,"s":"\\ud800"}',
    '{"n":2,"s":"\\udc00"}',
    '{"n":3,"s":"\\ud800\\u0041"}',
    '{"n":4,"s":"\\ud83d\\ude00"}',
    '{"\\udbff":5}',
    'not json',
    '{"n":7,"s":"\\\\ud800"}',
    '{"n":8,"s":"\\udfff\\ud800"}',
  ];

  /** Whether DuckDB's JSON type takes each value: the expected error rows are the ones it refuses. */
  async function duckdbTakes(): Promise<boolean[]> {
    const verdicts: boolean[] = [];
    for (const value of values) verdicts.push(!(await duck.query(`SELECT try_cast(${literal(value)} AS JSON) IS NULL AS refused`)).rows[0]![0]);
    return verdicts;
  }

  it('is an error row with its reason, and DuckDB reads every other row of the file, _value included', async () => {
    const taken = await duckdbTakes();
    expect(taken).toEqual([true, false, false, false, true, false, false, true, false]);
    const e = await engine('poison_json');
    const topic = await newTopic(e, 1, 'poisonjson');
    const table = await testTable(e, topic, { file_window: '1h' });
    await produce(e.kafka, topic, values.map((value, i) => ({ value, timestamp: hour + i })), { transactionalId: `poison-${topic}` });
    const run = await runCli(e.config.databaseUrl, ['run', '--once']);
    expect(run.code, run.stderr).toBe(0);
    const served = await servedFiles(e, table.name, 0);
    expect(served.statuses).toEqual(served.statuses.map(() => 200));
    // a query that reads _value as JSON: DuckDB refused the whole file before
    const { rows } = await duck.query(`SELECT _offset, _value::VARCHAR, _value->>'$.n', _error FROM read_parquet('${served.glob}') ORDER BY _offset`);
    expect(rows.map((row) => row[0])).toEqual(values.map((_, i) => i));
    rows.forEach(([offset, value, , error], i) => {
      if (taken[i]) {
        expect([offset, value, error]).toEqual([i, values[i], null]);
      } else {
        expect(value, `offset ${i}`).toBeNull();
        expect(error, `offset ${i}`).toMatch(values[i] === 'not json' ? /^value is not valid JSON: unexpected "o" at byte 1$/ : /^value is not valid JSON: lone surrogate escape \\u[dD][89a-fA-F][0-9a-fA-F]{2} at byte \d+$/);
      }
    });
    expect(rows[1]![3]).toBe('value is not valid JSON: lone surrogate escape \\ud800 at byte 12');
    expect(rows[5]![3]).toBe('value is not valid JSON: lone surrogate escape \\udbff at byte 2');
    expect(rows.filter((row) => row[2] !== null).map((row) => row[2])).toEqual(['0', '4', '7']);
  }, 180_000);

  it('in a file encoder v3 indexed, stays as v3 made it: the file rebuilds to its bytes and is served', async () => {
    const v3 = 'offsetlake-parquet@3/lz4-napi@2.10.0';
    const e = await engine('poison_json_v3');
    const topic = await newTopic(e, 1, 'poisonjsonvthree');
    const table = await testTable(e, topic, { file_window: '1h' });
    await produce(e.kafka, topic, values.map((value, i) => ({ value, timestamp: hour + i })), { transactionalId: `poison-v3-${topic}` });
    await new LocalRunner(e, rangeBuilder(e.catalog, undefined, v3), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    const files = await listFiles(e.catalog, table.tableId);
    expect(files.map((f) => f.encoderVersion)).toEqual(files.map(() => v3));
    // the file has an error row ('not json'), so its rebuild runs the JSON check: v3's rules, or it would not match
    const served = await servedFiles(e, table.name, 0);
    expect(served.statuses).toEqual(files.map(() => 200));
    const { rows } = await duck.query(`SELECT _offset, _error IS NULL FROM read_parquet('${served.glob}') ORDER BY _offset`);
    expect(rows).toEqual(values.map((value, i) => [i, value !== 'not json']));
    const check = await runCli(e.config.databaseUrl, ['check', table.name]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  }, 180_000);
});

/**
 * The table `deep` over one topic in two catalogs (made before `produceRecords` runs: a new
 * table starts at the topic's end), one indexed on the thread that reads Kafka and served
 * from a build worker, the other the other way round; each file's bytes as served by both
 * (which must agree) and the first's glob for DuckDB.
 */
async function bothWays(topic: string, format: string, produceRecords: () => Promise<unknown>): Promise<{ glob: string }> {
  const [first, second] = await Promise.all([engine(`${format.replace(/\W/g, '_')}_thread`), engine(`${format.replace(/\W/g, '_')}_workers`)]);
  for (const e of [first, second]) {
    const create = await runCli(e.config.databaseUrl, ['table', 'create', 'deep', '--topic', topic, '--format', format, '--file_window', '1h']);
    expect(create.code, create.stderr).toBe(0);
  }
  await produceRecords();
  const indexedOn = await Promise.all([
    runCli(first.config.databaseUrl, ['run', '--once', '--build-threads', '0']),
    runCli(second.config.databaseUrl, ['run', '--once', '--build-threads', '1']),
  ]);
  for (const run of indexedOn) expect(run.code, run.stderr).toBe(0);
  // each served the other way: before, the side that decoded further made other bytes, and the file was a 500
  const servedFirst = await servedFiles(first, 'deep', 1);
  const servedSecond = await servedFiles(second, 'deep', 0);
  expect(servedFirst.statuses).toEqual(servedFirst.statuses.map(() => 200));
  expect(servedSecond.statuses).toEqual(servedSecond.statuses.map(() => 200));
  expect(servedSecond.bytes.map((b) => b.toString('hex'))).toEqual(servedFirst.bytes.map((b) => b.toString('hex')));
  return { glob: servedFirst.glob };
}

describe('a JSON Schema table: an untyped value nested deep', () => {
  const schemaText = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { n: { type: 'integer' }, doc: {} } });
  const arrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const objects = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
  // doc texts as produced (compact, as JSON.stringify writes them back)
  const docs = [
    '{"a":[1,"x",null]}',
    arrays(999),
    arrays(1000), // the limit: decodes
    objects(1000),
    arrays(1001), // one level beyond: an error row
    objects(1001),
    arrays(5000), // beyond the serving thread's JSON.stringify, within a build worker's
    arrays(200_000),
    '"\\ud800"', // a lone surrogate: no engine's JSON
  ];
  const decodes = [true, true, true, true, false, false, false, false, false];

  it('gives the same bytes indexed on the thread that reads Kafka and served from a build worker, and the other way round; at the limit it decodes, beyond it is an error row', async () => {
    // the limit as DuckDB sees the texts: each is JSON to it except the lone surrogate
    for (const [i, doc] of docs.entries()) {
      const refused = (await duck.query(`SELECT try_cast(${literal(doc)} AS JSON) IS NULL`)).rows[0]![0];
      expect(refused, `doc ${i}`).toBe(i === docs.length - 1);
    }
    const producer = await engine('deep_producer');
    const topic = await newTopic(producer, 1, 'deepjson');
    const schema = await registerSchema(`${topic}-value`, schemaText, 'JSON');
    const payloads = docs.map((doc, n) => Buffer.concat([wireHeader(schema.id), Buffer.from(`{"n":${n},"doc":${doc}}`)]));
    const { glob } = await bothWays(topic, 'json-schema', () => produce(producer.kafka, topic, payloads.map((value, i) => ({ value, timestamp: hour + i })), { transactionalId: `deep-${topic}` }));

    const { rows } = await duck.query(`SELECT n, doc::VARCHAR, _error, _value FROM read_parquet('${glob}') ORDER BY _offset`);
    expect(rows.length).toBe(docs.length);
    rows.forEach(([n, doc, error, raw], i) => {
      if (decodes[i]) {
        expect([n, doc, error, raw], `doc ${i}`).toEqual([i, docs[i], null, null]);
      } else {
        expect([n, doc], `doc ${i}`).toEqual([null, null]);
        expect(raw, `doc ${i}: the record's bytes kept`).toBe(payloads[i]!.toString('hex'));
        expect(error, `doc ${i}`).toBe(
          i === docs.length - 1
            ? 'value: $.doc: a string holds a lone surrogate, which UTF-8 text cannot hold'
            : 'value: $.doc: arrays and objects nest deeper than 1000 levels, the limit of a JSON value decoded into JSON text',
        );
      }
    });
  }, 300_000);
});

describe('an Avro table: a record that contains itself, nested deep', () => {
  const schemaText = JSON.stringify({ type: 'record', name: 'Node', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'Node'] }] });
  /** Avro's zigzag varint of a small int, from the specification. */
  const varint = (n: number): number[] => {
    const out: number[] = [];
    let z = n >= 0 ? n * 2 : -n * 2 - 1;
    while (z >= 0x80) {
      out.push((z & 0x7f) | 0x80);
      z = Math.floor(z / 128);
    }
    out.push(z);
    return out;
  };
  /** A list of `nodes` nodes, byte by byte: each its int, then the union's branch (1: Node; the last one 0: null). */
  const list = (nodes: number): Buffer => Buffer.from(Array.from({ length: nodes }, (_, k) => [...varint(k), ...varint(k === nodes - 1 ? 0 : 1)]).flat());
  /** Node k's JSON text: a union inside a value become JSON text keeps its branch's name. */
  const nodeText = (k: number, nodes: number): string => `{"v":${k},"next":${k === nodes - 1 ? 'null' : `{"Node":${nodeText(k + 1, nodes)}}`}}`;
  // the value read nests a record and a branch per node after the first: 500 nodes are 999 levels
  const lengths = [3, 500, 501, 3_000, 20_000];
  const decodes = [true, true, false, false, false];

  it('gives the same bytes indexed on the thread that reads Kafka and served from a build worker, and the other way round; at the limit it decodes, beyond it is an error row', async () => {
    const producer = await engine('avro_producer');
    const topic = await newTopic(producer, 1, 'deepavro');
    const schema = await registerSchema(`${topic}-value`, schemaText, 'AVRO');
    const payloads = lengths.map((nodes) => Buffer.concat([wireHeader(schema.id), list(nodes)]));
    const { glob } = await bothWays(topic, 'avro', () => produce(producer.kafka, topic, payloads.map((value, i) => ({ value, timestamp: hour + i })), { transactionalId: `deep-avro-${topic}` }));

    const { rows } = await duck.query(`SELECT v, next::VARCHAR, json_valid(next), _error, _value FROM read_parquet('${glob}') ORDER BY _offset`);
    expect(rows.length).toBe(lengths.length);
    rows.forEach(([v, next, valid, error, raw], i) => {
      if (decodes[i]) {
        // the top record's `next` (a union of null and one branch) is its branch's value, JSON text
        expect([v, next, valid, error, raw], `list of ${lengths[i]}`).toEqual([0, nodeText(1, lengths[i]!), true, null, null]);
      } else {
        expect([v, next, raw], `list of ${lengths[i]}`).toEqual([null, null, payloads[i]!.toString('hex')]);
        expect(error, `list of ${lengths[i]}`).toBe(`value: Avro schema ${schema.id}: arrays and objects nest deeper than 1000 levels, the limit of a JSON value decoded into JSON text`);
      }
    });
  }, 300_000);
});
