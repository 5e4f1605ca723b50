/**
 * Issue "exact in every registry format", against the real broker, Schema Registry and
 * Postgres: values Postgres text cannot hold, names from Object.prototype, fuzzed
 * payloads, and a catalog that refuses a commit. Nothing a record holds may stop a
 * partition, and what the catalog refuses is said in `status` without stalling others.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor, type IndexerRuntime } from '../../src/indexer/handler.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import type { RegistryFormat } from '../../src/schema/decode.js';
import { schemaRegistry } from '../../src/schema/registry.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { fuzzSchemas, mutatedValue } from '../helpers/fuzz.js';
import { seededRandom } from '../helpers/random.js';
import { registerSchema } from '../helpers/registry.js';
import { avro, utf8, wire } from '../helpers/spec-encoding.js';
import { checkTable } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('registry_exactness');
});
afterAll(async () => {
  await engine.close();
});

const owner = `exactness-${randomUUID().slice(0, 8)}`;
const t0 = Date.UTC(2026, 10, 30, 10, 0, 0);

function runtime(): IndexerRuntime {
  return testRuntime(engine, owner, { build: rangeBuilder(engine.catalog, schemaRegistry(process.env.SCHEMA_REGISTRY_URL!, { backoffMs: [20, 40] })) });
}

async function indexAll(rt: IndexerRuntime, table: Awaited<ReturnType<typeof testTable>>, partition = 0): Promise<void> {
  const indexer = await indexerFor(rt, table, partition);
  await indexer.advance();
  await indexer.flush();
}

describe('values Postgres text cannot hold, and names from Object.prototype', () => {
  it('string bounds holding U+0000 or a leading U+FEFF are committed and read back exactly (text columns NULL, bytes kept); every file rebuilds', async () => {
    const topic = await newTopic(engine, 1, 'nul');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'avro');
    const schema = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'S', fields: [{ name: 's', type: 'string' }, { name: 'constructor', type: 'string' }] }), 'AVRO');
    const strings = ['a\u0000', 'a\u0000\u0000', '\uFEFFz', '\uFEFF'];
    const headers: [string, Buffer][] = [['\u0000key', Buffer.from('v')], ['constructor', Buffer.from('c')], ['__proto__', Buffer.from('p')]];
    await produce(engine.kafka, topic, strings.map((s, i) => ({ value: Buffer.from(wire(schema.id, [...avro.string(s), ...avro.string(s)])), headers, timestamp: t0 + i })));
    await indexAll(runtime(), table);

    const [file] = await listFiles(engine.catalog, table.tableId);
    const bounds = (name: string) => file!.columns.filter((c) => c.columnName === name).map((c) => [c.min, c.max]);
    // UTF-8 order: "a\0" < "a\0\0" < "\uFEFF" < "\uFEFFz"
    expect(bounds('s')).toEqual([['a\u0000', '\uFEFFz']]);
    expect(bounds('constructor')).toEqual([['a\u0000', '\uFEFFz']]);
    expect(bounds('_headers.list.element.key')).toEqual([['\u0000key', 'constructor']]);
    const stored = await engine.catalog.query<{ min_value: string | null; min_value_utf8: Buffer | null; max_value: string | null; max_value_utf8: Buffer | null }>(
      `SELECT s.min_value, s.min_value_utf8, s.max_value, s.max_value_utf8 FROM offsetlake.file_column_stats s JOIN offsetlake.table_column c USING (table_id, column_id)
       WHERE s.data_file_id = $1 AND c.column_name = 's'`,
      [file!.dataFileId],
    );
    expect(stored.rows).toEqual([{ min_value: null, min_value_utf8: Buffer.from('a\u0000'), max_value: '\uFEFFz', max_value_utf8: null }]);
    await checkTable(engine, table);
    // pyarrow reads the rebuilt file: every character is there (hyparquet drops a leading U+FEFF)
    const rebuilt = await rebuildFile(kafkaSource(engine.kafka), table, file!, await schemaVersion(engine.catalog, table.tableId, file!.schemaVersion));
    const dir = mkdtempSync(join(tmpdir(), 'offsetlake-nul-'));
    const path = join(dir, 'f.parquet');
    writeFileSync(path, rebuilt.bytes);
    const script = 'import json, sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); print(json.dumps([t.column(c).to_pylist() for c in ("s", "constructor")]))';
    const { stdout } = await promisify(execFile)('python3', ['-c', script, path]).finally(() => rmSync(dir, { recursive: true, force: true }));
    expect(JSON.parse(stdout)).toEqual([strings, strings]);
  });
});

describe('fuzz against the real catalog', () => {
  for (const format of ['avro', 'protobuf', 'json-schema'] as const satisfies RegistryFormat[]) {
    it(`${format}: 400 random and mutated keys, values and header keys are all rows; the partition never waits; every file rebuilds`, async () => {
      const topic = await newTopic(engine, 1, `fuzz-${format}`);
      const table = await testTable(engine, topic, { file_window: '30m', row_group_rows: '100' }, format);
      const spec = fuzzSchemas[format];
      const schema = await registerSchema(`${topic}-value`, spec.text, spec.type);
      const rnd = seededRandom(7 + format.length);
      const headerKeys = ['constructor', '__proto__', 'toString', '\u0000', '\uFEFF', 'valueOf', 'x'];
      const records: RecordToProduce[] = Array.from({ length: 400 }, (_, i) => ({
        value: rnd() < 0.05 ? null : Buffer.from(mutatedValue(format, schema.id, rnd)),
        key: rnd() < 0.3 ? Buffer.from(mutatedValue(format, schema.id, rnd)) : null,
        headers: rnd() < 0.5 ? [[headerKeys[Math.floor(rnd() * headerKeys.length)]!, Buffer.from([Math.floor(rnd() * 256)])]] : [],
        timestamp: t0 + i * 1000,
      }));
      await produce(engine.kafka, topic, records);
      const rt = runtime();
      await indexAll(rt, table);

      const [status] = await partitionStatus(engine, table.name);
      expect(status!.waitingReason).toBeNull();
      expect(status!.lag).toBe(0n);
      const check = await checkTable(engine, table);
      const rows = [...check.rowsByFile.values()].flat();
      expect(rows).toHaveLength(400);
      // both paths are taken: values that decode, and error rows that keep their bytes
      expect(rows.filter((r) => r._error === null).length).toBeGreaterThan(40);
      const failed = rows.filter((r) => typeof r._error === 'string' && (r._error as string).startsWith('value:'));
      expect(failed.length).toBeGreaterThan(40);
      for (const row of failed) expect(row._value, String(row._offset)).not.toBeNull();
      expect(status!.errorRows).toBe(BigInt(rows.filter((r) => r._error !== null).length));
    });
  }
});

describe('a commit the catalog refuses', () => {
  it('sets that partition\'s waiting reason with the cause; the other partition is indexed; once allowed, it resumes and the reason clears', async () => {
    const topic = await newTopic(engine, 2, 'refused');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'json-schema');
    const schema = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'object', properties: { n: { type: 'integer' } } }), 'JSON');
    await produce(engine.kafka, topic, [0, 1].flatMap((partition) => [1, 2, 3].map((n) => ({ partition, value: Buffer.from(wire(schema.id, utf8(`{"n": ${n}}`))), timestamp: t0 + n }))));
    // A stand-in for any refusal the catalog may make (a constraint, a full disk, a revoked grant).
    const constraint = `refuse_${table.tableId}`;
    await engine.catalog.query(`ALTER TABLE offsetlake.data_file ADD CONSTRAINT ${constraint} CHECK (NOT (table_id = ${table.tableId} AND partition_id = 1)) NOT VALID`);
    const rt = runtime();
    try {
      await indexAll(rt, table, 0);
      await expect(indexAll(rt, table, 1)).rejects.toThrow(constraint);
      const status = await partitionStatus(engine, table.name);
      expect(status.map((s) => [s.partition, s.lag, s.waitingReason?.replace(/: .*/, '')])).toEqual([
        [0, 0n, undefined],
        [1, 3n, 'the catalog refused the files of offsets [0, 3)'],
      ]);
      expect(status[1]!.waitingReason).toContain(constraint);
    } finally {
      await engine.catalog.query(`ALTER TABLE offsetlake.data_file DROP CONSTRAINT ${constraint}`);
    }
    await indexAll(rt, table, 1);
    const status = await partitionStatus(engine, table.name);
    expect(status.map((s) => [s.partition, s.lag, s.waitingReason])).toEqual([[0, 0n, null], [1, 0n, null]]);
    await checkTable(engine, table);
  });
});
