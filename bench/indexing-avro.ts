/**
 * End-to-end indexing throughput with Avro records (Confluent wire format, schema in the
 * stack's Schema Registry): the JSON benchmark's shape (bench/indexing.ts), decoded into
 * columns. MiB/s of record bytes per core (CPU seconds of this process), and the share
 * of time per stage; plus decoding alone (wire header → avsc → column values).
 *
 *   node --import tsx bench/indexing-avro.ts [records=100000] [recordBytes=1024]
 *
 * Needs the local stack (`npx offsetlake stack up`).
 */
import { performance } from 'node:perf_hooks';
import { timedBuild } from './timing.js';
import { randomUUID } from 'node:crypto';
import { dropTable, findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { encoderOf } from '../src/parquet/index.js';
import { indexerFor, type IndexerRuntime } from '../src/indexer/handler.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { recordBytes, type KafkaRecord } from '../src/kafka/record.js';
import { avroType } from '../src/schema/decode-avro.js';
import { tableDecoder } from '../src/schema/decode.js';
import { currentSchema } from '../src/catalog/schema-versions.js';
import { wireHeader } from '../src/schema/wire.js';
import { resolveSettings, defaultSettings } from '../src/table/settings.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const total = Number(process.argv[2] ?? 100_000);
const valueBytes = Number(process.argv[3] ?? 1024);
const MiB = 1024 * 1024;

useLocalStackDefaults();
const engine = await openEngine();

const schema = {
  type: 'record',
  name: 'Order',
  namespace: 'bench',
  fields: [
    { name: 'order', type: 'long' },
    { name: 'customer', type: 'int' },
    { name: 'total', type: 'double' },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID', 'SHIPPED'] } },
    { name: 'placed', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'address', type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }, { name: 'zip', type: ['null', 'string'], default: null }] } },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'pad', type: 'string' },
  ],
};

const timing = { build: 0 };

try {
  const topic = `bench-avro-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, 1);
  const response = await fetch(`${process.env.SCHEMA_REGISTRY_URL}/subjects/${topic}-value/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schema: JSON.stringify(schema) }),
  });
  const { id } = (await response.json()) as { id: number };
  const type = avroType({ id, type: 'AVRO', schema: JSON.stringify(schema), references: [] });
  const header = wireHeader(id);
  const pad = 'x'.repeat(Math.max(0, valueBytes - 80));
  const t0 = Date.now();
  const valueOf = (n: number) =>
    Buffer.concat([header, type.toBuffer({ order: BigInt(n), customer: n % 1000, total: (n % 9973) / 100, status: 'PAID', placed: BigInt(t0 + n), address: { city: `city-${n % 50}`, zip: n % 3 ? { string: String(10000 + (n % 90000)) } : null }, tags: ['a', `t${n % 7}`], pad })]);
  let bytes = 0;
  process.stderr.write(`loading ${total} Avro records of ~${valueBytes} B into ${topic}…\n`);
  for (let sent = 0; sent < total; sent += 10_000) {
    const records = Array.from({ length: Math.min(10_000, total - sent) }, (_, i) => {
      const n = sent + i;
      const value = valueOf(n);
      bytes += recordBytes({ offset: 0n, timestamp: 0, key: Buffer.from(`customer-${n % 1000}`), value, headers: [] });
      return { key: `customer-${n % 1000}`, value, partition: 0, timestamp: t0 + Math.floor(n / 100) };
    });
    await produce(engine.kafka, topic, records, { transactionalId: `${topic}-tx` });
  }

  const tableName = `bench_avro_${randomUUID().slice(0, 6)}`;
  const table = await createTableFromTopic(engine, { name: tableName, topic, format: 'avro', settings: resolveSettings({ file_bytes: '32MiB', file_window: '1h' }) });
  await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [table.tableId]);
  const runtime: IndexerRuntime = {
    catalog: engine.catalog,
    source: kafkaSource(engine.kafka),
    build: timedBuild(rangeBuilder(engine.catalog, undefined, process.env.OFFSETLAKE_BENCH_ENCODER ?? encoderVersion), timing),
    owner: `bench-${process.pid}`,
    clock: Date.now,
    indexers: new Map(),
    releaseAfterEvent: false,
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const indexer = await indexerFor(runtime, await findTable(engine.catalog, tableName), 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const cpuSeconds = (used.user + used.system) / 1e6;
  const files = await engine.catalog.query<{ n: bigint; rows: bigint; errors: bigint }>('SELECT count(*) AS n, sum(record_count) AS rows FROM offsetlake.data_file WHERE table_id = $1', [table.tableId]);
  const rows = Number(files.rows[0]!.rows);
  if (rows !== total) throw new Error(`${rows} rows indexed, ${total} produced`);
  const mb = bytes / MiB;
  process.stdout.write(
    `avro    ${rows} records, ${mb.toFixed(1)} MiB in ${files.rows[0]!.n} files: ${(mb / wall).toFixed(1)} MiB/s wall, ` +
      `${(mb / cpuSeconds).toFixed(1)} MiB/s per core (${cpuSeconds.toFixed(2)} CPU s); build ${Math.round((100 * timing.build) / (wall * 1000))}%\n`,
  );

  // Decoding alone, on the same records, with the table's merged schema.
  const { schema: tableSchema } = await currentSchema(engine.catalog, table.tableId);
  const sample: KafkaRecord[] = Array.from({ length: Math.min(total, 50_000) }, (_, n) => ({ offset: BigInt(n), timestamp: t0, key: null, value: valueOf(n), headers: [] }));
  const sampleMb = sample.reduce((sum, r) => sum + r.value!.byteLength, 0) / MiB;
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const before = process.cpuUsage();
    tableDecoder('avro', { ...tableSchema }).decode(sample);
    const spent = process.cpuUsage(before);
    best = Math.min(best, (spent.user + spent.system) / 1e6);
  }
  process.stdout.write(`decode  ${sample.length} values, ${sampleMb.toFixed(1)} MiB: ${(sampleMb / best).toFixed(0)} MiB/s per core, ${Math.round(sample.length / best / 1000)}k records/s\n`);
  await dropTable(engine.catalog, tableName);
} finally {
  await engine.close();
}
