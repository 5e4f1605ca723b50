/**
 * End-to-end indexing throughput: 1 KB JSON records from the local broker to files in the
 * catalog, in MB/s of record bytes (key + value + headers, what `file_bytes` counts) per
 * core (CPU seconds of this process), and the share of time per stage.
 *
 *   npm run bench -- [records=100000] [recordBytes=1024]
 *
 * Two passes over the same topic, each into a table of its own:
 *   engine   PartitionIndexer.advance: committed read → seal → build → commit
 *   run      the local runner: emulator (a notice: records up to the LSO) → handler (the committed read) → …
 * Needs the local stack (`npx offsetlake stack up`). BENCH_PROFILE=1 prints where each pass's CPU goes.
 */
import { performance } from 'node:perf_hooks';
import { timedBuild, timedSource } from './timing.js';
import { profiled } from './profile.js';
import { randomUUID } from 'node:crypto';
import { openEngine } from '../src/runtime/engine.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { encoderOf } from '../src/parquet/index.js';
import { indexerFor, type IndexerRuntime } from '../src/indexer/handler.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../src/local/runner.js';
import { recordBytes } from '../src/kafka/record.js';
import { resolveSettings, defaultSettings } from '../src/table/settings.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { dropTable, findTable } from '../src/catalog/tables.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const total = Number(process.argv[2] ?? 100_000);
const valueBytes = Number(process.argv[3] ?? 1024);
const MiB = 1024 * 1024;

useLocalStackDefaults();
const engine = await openEngine();

/** Where the time goes: each stage's wall time, measured around the calls the indexer makes. */
const stages = { read: 0, build: 0, other: 0 };

try {
  const topic = `bench-index-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, 1);
  const pad = 'x'.repeat(Math.max(0, valueBytes - 120));
  const t0 = Date.now();
  let bytes = 0;
  process.stderr.write(`loading ${total} records of ~${valueBytes} B into ${topic}…\n`);
  for (let sent = 0; sent < total; sent += 10_000) {
    const records = Array.from({ length: Math.min(10_000, total - sent) }, (_, i) => {
      const n = sent + i;
      return { key: `customer-${n % 1000}`, value: JSON.stringify({ order: n, customer: n % 1000, total: (n % 9973) / 100, pad }), partition: 0, timestamp: t0 + Math.floor(n / 100) };
    });
    await produce(engine.kafka, topic, records, { transactionalId: `${topic}-tx` });
  }
  const settings = resolveSettings({ file_bytes: '32MiB', file_window: '1h' });

  async function pass(name: string, index: (table: Awaited<ReturnType<typeof createTableFromTopic>>) => Promise<void>) {
    const tableName = `bench_${name}_${randomUUID().slice(0, 6)}`;
    // Tables start at the LSO; this one must see the loaded history, so its start is moved to 0.
    const table = await createTableFromTopic(engine, { name: tableName, topic, format: 'json', settings });
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [table.tableId]);
    stages.read = stages.build = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await profiled(name, () => index(table));
    const wall = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    const files = await engine.catalog.query<{ n: bigint; rows: bigint }>('SELECT count(*) AS n, sum(record_count) AS rows FROM offsetlake.data_file WHERE table_id = $1', [table.tableId]);
    const rows = Number(files.rows[0]!.rows);
    if (rows !== total) throw new Error(`${name}: ${rows} rows indexed, ${total} produced`);
    const mb = bytes / MiB;
    const other = wall * 1000 - stages.read - stages.build;
    const share = (ms: number) => `${Math.round((100 * ms) / (wall * 1000))}%`;
    process.stdout.write(
      `${name.padEnd(7)} ${rows} records, ${mb.toFixed(1)} MiB in ${files.rows[0]!.n} files: ` +
        `${(mb / wall).toFixed(1)} MiB/s wall, ${(mb / cpuSeconds).toFixed(1)} MiB/s per core (${cpuSeconds.toFixed(2)} CPU s); ` +
        `read ${share(stages.read)}, build ${share(stages.build)}, seal+commit+other ${share(other)}\n`,
    );
    await dropTable(engine.catalog, tableName);
  }

  // Record bytes as file_bytes counts them.
  const sample = { offset: 0n, timestamp: 0, key: Buffer.from('customer-000'), value: Buffer.from(JSON.stringify({ order: 0, customer: 0, total: 0, pad })), headers: [] };
  bytes = recordBytes(sample) * total;

  await pass('engine', async (table) => {
    const runtime: IndexerRuntime = {
      catalog: engine.catalog,
      source: timedSource(kafkaSource(engine.kafka), stages),
      build: timedBuild(rangeBuilder(engine.catalog, undefined, process.env.OFFSETLAKE_BENCH_ENCODER ?? encoderVersion), stages),
      owner: `bench-${process.pid}`,
      clock: Date.now,
      indexers: new Map(),
      releaseAfterEvent: false,
    };
    const indexer = await indexerFor(runtime, await findTable(engine.catalog, table.name), 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
  });

  await pass('run', async () => {
    const runner = new LocalRunner(engine, timedBuild(rangeBuilder(engine.catalog, undefined, process.env.OFFSETLAKE_BENCH_ENCODER ?? encoderVersion), stages), { ...defaultRunnerOptions, once: true }, () => {});
    await runner.run();
  });
} finally {
  await engine.close();
}
