import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor, type IndexerRuntime } from '../../src/indexer/handler.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { RegistryUnavailableError, schemaRegistry, type SchemaRegistry } from '../../src/schema/registry.js';
import { resolveSettings, type TableFormat } from '../../src/table/settings.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { stackConfig } from '../../src/stack/config.js';
import { registryService, registryUrl } from '../../src/stack/registry.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine, testRuntime } from '../helpers/engine.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { checkTable, type Row } from '../helpers/verify.js';
import { closedPort } from '../helpers/ports.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('registry_formats');
});
afterAll(async () => {
  await engine.close();
});

const t0 = Date.UTC(2026, 10, 29, 9, 0, 0);
let sequence = 0;
const owner = `registry-test-${randomUUID().slice(0, 8)}`;

function runtime(registryUrl = process.env.SCHEMA_REGISTRY_URL!): IndexerRuntime {
  const registry = schemaRegistry(registryUrl, { backoffMs: [20, 40] });
  return testRuntime(engine, owner, { build: rangeBuilder(engine.catalog, registry) });
}

async function newTable(format: TableFormat): Promise<{ topic: string; table: TableRecord }> {
  const topic = await newTopic(engine, 1, format);
  sequence += 1;
  const table = await createTableFromTopic(engine, { name: `r${sequence}_${format.replace('-', '_')}`, topic, format, settings: resolveSettings({ file_window: '30m' }) });
  return { topic, table };
}

/** Reads everything committed and seals it into one range (one file: all records share an hour). */
async function indexAll(rt: IndexerRuntime, table: TableRecord): Promise<void> {
  const indexer = await indexerFor(rt, table, 0);
  await indexer.advance();
  await indexer.flush();
}

let at = 0;
function records(values: (Buffer | null)[], keys: (Buffer | null)[] = []): RecordToProduce[] {
  return values.map((value, i) => ({ value, key: keys[i] ?? null, timestamp: t0 + at++ * 1000 }));
}


const rowsOf = (check: Awaited<ReturnType<typeof checkTable>>): Row[] => [...check.rowsByFile.values()].flat().sort((a, b) => Number((a._offset as bigint) - (b._offset as bigint)));

/**
 * Each format: v1, then v2 with a field added, a type changed, a nested field added.
 * Avro and Protobuf widen int → long and float → double; JSON Schema's integer → number
 * cannot widen (int64 → double loses precision) and goes to `qty__double`.
 */
const evolutions = {
  avro: {
    type: 'AVRO' as const,
    v1: JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'int' }, { name: 'price', type: 'float' }, { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }] } }] }),
    v2: JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'price', type: 'double' }, { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }, { name: 'zip', type: ['null', 'string'], default: null }] } }, { name: 'note', type: ['null', 'string'], default: null }] }),
    value1: (i: number) => ({ id: i, price: 1.5, address: { city: `c${i}` } }),
    value2: (i: number) => ({ id: BigInt(2 ** 40 + i), price: 2.25, address: { city: `c${i}`, zip: { string: `z${i}` } }, note: { string: `n${i}` } }),
    columns: { id: 'int64', price: 'double', address: 'struct<city: string, zip: string>', note: 'string' },
    bigId: 2 ** 40,
  },
  protobuf: {
    type: 'PROTOBUF' as const,
    v1: 'syntax = "proto3";\nmessage Order { int32 id = 1; float price = 2; Address address = 3; }\nmessage Address { string city = 1; }\n',
    v2: 'syntax = "proto3";\nmessage Order { int64 id = 1; double price = 2; Address address = 3; optional string note = 4; }\nmessage Address { string city = 1; optional string zip = 2; }\n',
    value1: (i: number) => ({ id: i, price: 1.5, address: { city: `c${i}` } }),
    value2: (i: number) => ({ id: String(2 ** 40 + i), price: 2.25, address: { city: `c${i}`, zip: `z${i}` }, note: `n${i}` }),
    columns: { id: 'int64', price: 'double', address: 'struct<city: string, zip: string>', note: 'string' },
    bigId: 2 ** 40,
  },
  'json-schema': {
    type: 'JSON' as const,
    v1: JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { id: { type: 'integer' }, qty: { type: 'integer' }, address: { type: 'object', properties: { city: { type: 'string' } } } } }),
    v2: JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { id: { type: 'integer' }, qty: { type: 'number' }, address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string' } } }, note: { type: 'string' } } }),
    value1: (i: number) => ({ id: i, qty: 3, address: { city: `c${i}` } }),
    value2: (i: number) => ({ id: 2 ** 40 + i, qty: 2.5, address: { city: `c${i}`, zip: `z${i}` }, note: `n${i}` }),
    columns: { id: 'int64', qty: 'int64', address: 'struct<city: string, zip: string>', qty__double: 'double', note: 'string' },
    bigId: 2 ** 40,
  },
};

async function columnTypes(table: TableRecord): Promise<Record<string, string>> {
  const result = await engine.catalog.query<{ column_name: string; column_type: string }>(
    `SELECT column_name, column_type FROM offsetlake.table_column WHERE table_id = $1 AND parent_column IS NULL AND end_schema_version IS NULL AND column_name NOT LIKE '\\_%' ORDER BY column_order`,
    [table.tableId],
  );
  return Object.fromEntries(result.rows.map((r) => [r.column_name, r.column_type]));
}

describe('registry formats against the real Schema Registry and broker', () => {
  for (const format of ['avro', 'protobuf', 'json-schema'] as const) {
    it(`${format}: a schema evolving mid-stream is merged; one range holds two schema ids; bad records are rows; every file rebuilds byte-identical`, async () => {
      const spec = evolutions[format];
      const { topic, table } = await newTable(format);
      const v1 = await registerSchema(`${topic}-value`, spec.v1, spec.type);
      const rt = runtime();

      // Before the change: v1 only.
      await produce(engine.kafka, topic, records([0, 1, 2].map((i) => encodeWith(v1, spec.value1(i)))));
      await indexAll(rt, table);

      // After: v2 registered; one range holding v1 and v2 records, and three bad ones.
      const v2 = await registerSchema(`${topic}-value`, spec.v2, spec.type);
      expect(v2.id).not.toBe(v1.id);
      const good = encodeWith(v1, spec.value1(3));
      const bad = [Buffer.concat([Buffer.from([1]), good.subarray(1)]), Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), good.subarray(5)]), good.subarray(0, format === 'protobuf' ? 7 : 6)];
      await produce(engine.kafka, topic, records([encodeWith(v2, spec.value2(4)), good, encodeWith(v2, spec.value2(5)), ...bad, null]));
      await indexAll(rt, table);

      const check = await checkTable(engine, table);
      const files = await listFiles(engine.catalog, table.tableId);
      expect(files.map((f) => f.schemaVersion)).toEqual([2, 3]);
      expect(await columnTypes(table)).toEqual(spec.columns);

      const rows = rowsOf(check);
      expect(rows.map((r) => r._error)).toEqual([
        null, null, null, null, null, null,
        'value: wrong magic byte 0x01 (expected 0x00)',
        'value: schema id 2147483632 is unknown to the Schema Registry',
        expect.stringMatching(new RegExp(`^value: .*[Ss]chema ${v1.id}: `)),
        null,
      ]);
      // the old file keeps v1's types (id int32); the new one holds both ids, widened
      expect(rows[0]!.id).toBe(format === 'json-schema' ? 0n : 0);
      expect(rows.slice(3, 6).map((r) => (r.address as Row).city)).toEqual(['c4', 'c3', 'c5']);
      expect(rows.slice(3, 6).map((r) => r.id)).toEqual([BigInt(spec.bigId + 4), 3n, BigInt(spec.bigId + 5)]);
      expect(rows[3]!.note).toBe('n4');
      expect(rows[4]!.note).toBeNull();
      expect((rows[5]!.address as Row).zip).toBe('z5');
      if (format === 'json-schema') expect(rows.slice(3, 6).map((r) => [r.qty, r.qty__double])).toEqual([[null, 2.5], [3n, null], [null, 2.5]]);
      else expect(rows.slice(3, 6).map((r) => r.price)).toEqual([2.25, 1.5, 2.25]);
      // bad records keep their bytes; decoded values are null
      expect(rows.slice(6, 9).every((r) => r._value instanceof Uint8Array && r.id === null)).toBe(true);
      expect(rows[9]!._value).toBeNull();

      // Statistics of decoded leaves, nested ones included, equal what the rows say.
      for (const file of files) {
        const fileRows = check.rowsByFile.get(file.dataFileId)!;
        const stats = new Map(file.columns.map((c) => [c.columnName, c]));
        const cities = fileRows.map((r) => (r.address as Row | null)?.city).filter((c): c is string => typeof c === 'string').sort();
        expect([stats.get('address.city')!.min, stats.get('address.city')!.max, stats.get('address.city')!.nullCount]).toEqual([cities[0], cities.at(-1), BigInt(fileRows.length - cities.length)]);
        const ids = fileRows.map((r) => r.id).filter((v) => v !== null).map((v) => BigInt(v as number));
        expect([stats.get('id')!.min, stats.get('id')!.max]).toEqual([String(ids.reduce((a, b) => (b < a ? b : a))), String(ids.reduce((a, b) => (b > a ? b : a)))]);
      }

      // The catalog's column lifetimes: version 1 has Kafka's columns only; v1's schema
      // made version 2; v2's widened or added columns begin at version 3.
      const lifetimes = await engine.catalog.query<{ column_name: string; column_type: string; begin_schema_version: number; end_schema_version: number | null }>(
        `SELECT column_name, column_type, begin_schema_version, end_schema_version FROM offsetlake.table_column
         WHERE table_id = $1 AND column_name IN ('id', 'note', 'address', 'address.zip') ORDER BY column_name, begin_schema_version`,
        [table.tableId],
      );
      expect(lifetimes.rows.map((r) => `${r.column_name} ${r.column_type} [${r.begin_schema_version}, ${r.end_schema_version ?? ''})`)).toEqual(
        format === 'json-schema'
          ? ['address struct<city: string> [2, 3)', 'address struct<city: string, zip: string> [3, )', 'address.zip string [3, )', 'id int64 [2, )', 'note string [3, )']
          : ['address struct<city: string> [2, 3)', 'address struct<city: string, zip: string> [3, )', 'address.zip string [3, )', 'id int32 [2, 3)', 'id int64 [3, )', 'note string [3, )'],
      );

      const [status] = await partitionStatus(engine, table.name);
      expect(status!.errorRows).toBe(3n);
      expect(status!.waitingReason).toBeNull();
    });
  }

  it('waits while the Schema Registry cannot be reached: no file, status says why; resumes and loses nothing', async () => {
    const spec = evolutions.avro;
    const { topic, table } = await newTable('avro');
    const v1 = await registerSchema(`${topic}-value`, spec.v1, 'AVRO');
    const rt = runtime();
    await produce(engine.kafka, topic, records([0, 1].map((i) => encodeWith(v1, spec.value1(i)))));
    await indexAll(rt, table);
    expect(await listFiles(engine.catalog, table.tableId)).toHaveLength(1);

    // The registry goes away mid-stream, and a new schema id arrives.
    const v2 = await registerSchema(`${topic}-value`, spec.v2, 'AVRO');
    await produce(engine.kafka, topic, records([encodeWith(v2, spec.value2(2)), encodeWith(v1, spec.value1(3))]));
    const down = `http://127.0.0.1:${await closedPort()}/apis/ccompat/v7`;
    rt.build = rangeBuilder(engine.catalog, schemaRegistry(down, { backoffMs: [10, 20] }));
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(indexAll(rt, table)).rejects.toBeInstanceOf(RegistryUnavailableError);
    }
    expect(await listFiles(engine.catalog, table.tableId)).toHaveLength(1);
    const [waiting] = await partitionStatus(engine, table.name);
    expect(waiting!.waitingReason).toBe(`Schema Registry ${down} cannot be reached: ECONNREFUSED (3 tries)`);
    expect(waiting!.indexedEnd).toBe(2n);

    // Back: it resumes by itself from indexed_end.
    rt.build = rangeBuilder(engine.catalog, schemaRegistry(process.env.SCHEMA_REGISTRY_URL!));
    await indexAll(rt, table);
    const check = await checkTable(engine, table);
    expect(rowsOf(check).map((r) => r.id)).toEqual([0n, 1n, BigInt(spec.bigId + 2), 3n].map((v, i) => (i < 2 ? Number(v) : v)));
    const [resumed] = await partitionStatus(engine, table.name);
    expect(resumed!.waitingReason).toBeNull();
    expect(resumed!.indexedEnd).toBe(4n);
  });

  it('a registry process stopped mid-stream and started again: no file while it is down, status says why, nothing lost after', { timeout: 240_000 }, async () => {
    // A registry of its own (same broker, same schema journal), so the shared one stays up.
    const home = mkdtempSync(join(tmpdir(), 'offsetlake-registry-'));
    const config = stackConfig({ home, registryPort: await closedPort() });
    try {
      await registryService.up(config, () => {});
      const url = registryUrl(config);
      const spec = evolutions.avro;
      const { topic, table } = await newTable('avro');
      const v1 = await registerSchema(`${topic}-value`, spec.v1, 'AVRO');
      const rt = runtime(url);
      await produce(engine.kafka, topic, records([0, 1].map((i) => encodeWith(v1, spec.value1(i)))));
      await indexAll(rt, table);
      expect(await listFiles(engine.catalog, table.tableId)).toHaveLength(1);

      await registryService.down(config);
      const v2 = await registerSchema(`${topic}-value`, spec.v2, 'AVRO');
      await produce(engine.kafka, topic, records([encodeWith(v2, spec.value2(2)), encodeWith(v1, spec.value1(3))]));
      await expect(indexAll(rt, table)).rejects.toBeInstanceOf(RegistryUnavailableError);
      expect(await listFiles(engine.catalog, table.tableId)).toHaveLength(1);
      const [waiting] = await partitionStatus(engine, table.name);
      expect(waiting!.waitingReason).toMatch(new RegExp(`^Schema Registry ${url.replaceAll('.', '\\.')} cannot be reached`));

      await registryService.up(config, () => {});
      await indexAll(rt, table);
      const check = await checkTable(engine, table);
      expect(rowsOf(check)).toHaveLength(4);
      const [resumed] = await partitionStatus(engine, table.name);
      expect(resumed!.waitingReason).toBeNull();
      expect(resumed!.indexedEnd).toBe(4n);
    } finally {
      await registryService.down(config);
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('the long-lived runner waits while the registry is down and resumes by itself when it is back', async () => {
    // The runner indexes every table of its catalog: it gets a catalog of its own.
    const own = await testEngine('registry_runner');
    const stop = new AbortController();
    try {
      const topic = await newTopic(own, 1, 'runner');
      // file_window 1s: the runner's tick seals the range by age, without a flush
      const table = await createTableFromTopic(own, { name: 'runner_avro', topic, format: 'avro', settings: resolveSettings({ file_window: '1s' }) });
      const v1 = await registerSchema(`${topic}-value`, evolutions.avro.v1, 'AVRO');
      await produce(own.kafka, topic, records([0, 1, 2].map((i) => encodeWith(v1, evolutions.avro.value1(i)))));

      // One registry client whose server is down at first and back later (a closed port, then the real one).
      const down = schemaRegistry(`http://127.0.0.1:${await closedPort()}/apis/ccompat/v7`, { backoffMs: [10] });
      const up = schemaRegistry(process.env.SCHEMA_REGISTRY_URL!);
      let current = down;
      const registry: SchemaRegistry = { get url() { return current.url; }, schemaById: (id) => current.schemaById(id) };
      const runner = new LocalRunner(own, rangeBuilder(own.catalog, registry), { ...defaultRunnerOptions, pollIntervalMs: 20, emulator: { ...defaultRunnerOptions.emulator, retryDelayMs: 50, attempts: 2 } }, () => {});
      const running = runner.run(stop.signal);

      const statusWhen = async (done: (s: Awaited<ReturnType<typeof partitionStatus>>[number]) => boolean) => {
        for (let i = 0; i < 300; i++) {
          const status = (await partitionStatus(own, table.name))[0]!;
          if (done(status)) return status;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        throw new Error('the runner never got there');
      };
      const waiting = await statusWhen((s) => s.waitingReason !== null);
      expect(waiting.waitingReason).toMatch(/^Schema Registry .* cannot be reached: ECONNREFUSED/);
      expect(waiting.files).toBe(0n);

      current = up;
      const resumed = await statusWhen((s) => s.indexedEnd === 3n);
      stop.abort();
      await running;
      expect(resumed.waitingReason).toBeNull();
      const check = await checkTable(own, table);
      expect(rowsOf(check).map((r) => r.id)).toEqual([0, 1, 2]);
    } finally {
      stop.abort();
      await own.close();
    }
  });
});
