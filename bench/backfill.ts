/**
 * Backfill throughput: a topic of small (or given-size) records is backfilled chunk by
 * chunk, in process, as `offsetlake backfill` runs it; per chunk the wall time, offsets/s
 * and MiB/s of record bytes, then the total and CPU seconds per core.
 *
 *   node --import tsx bench/backfill.ts [records=350000] [valueBytes=30] [backfill_offsets=100000]
 *
 * Needs the local stack (`npx offsetlake stack up`). The table is dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { runBackfill } from '../src/backfill/index.js';
import { dropTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic, deleteTopic } from '../src/kafka/topics.js';
import { resolveSettings } from '../src/table/settings.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

const total = Number(process.argv[2] ?? 350_000);
const valueBytes = Number(process.argv[3] ?? 30);
const chunkOffsets = String(process.argv[4] ?? 100_000);
const MiB = 1024 * 1024;

useLocalStackDefaults();
const engine = await openEngine();
const topic = `bench-backfill-${randomUUID().slice(0, 8)}`;
const tableName = `bench_backfill_${randomUUID().slice(0, 6)}`;
try {
  await createTopic(engine.kafka, topic, 1);
  const t0 = Date.now() - total * 10;
  const loadStarted = performance.now();
  for (let sent = 0; sent < total; sent += 50_000) {
    const records = Array.from({ length: Math.min(50_000, total - sent) }, (_, i) => {
      const n = sent + i;
      const value = `{"n":${n}}`;
      return { key: null, value: value + ' '.repeat(Math.max(0, valueBytes - value.length)), timestamp: t0 + n * 10 };
    });
    await produce(engine.kafka, topic, records);
  }
  const loadMs = performance.now() - loadStarted;
  process.stdout.write(`loaded ${total} records of ${valueBytes} B in ${Math.round(loadMs)} ms (${Math.round(total / (loadMs / 1000))} records/s)\n`);

  await createTableFromTopic(engine, { name: tableName, topic, format: 'json', settings: resolveSettings({ backfill_offsets: chunkOffsets }) });
  const cpu = process.cpuUsage();
  const summary = await runBackfill(engine, tableName, (chunk) => {
    if (!chunk.chunk) return;
    const offsets = Number(BigInt(chunk.chunk.end) - BigInt(chunk.chunk.start));
    const seconds = chunk.elapsedMs / 1000;
    process.stdout.write(
      `chunk [${chunk.chunk.start}, ${chunk.chunk.end}): ${chunk.elapsedMs} ms, ${Math.round(offsets / seconds)} offsets/s, ` +
        `${(chunk.bytes / MiB / seconds).toFixed(1)} MiB/s, ${chunk.files} files\n`,
    );
  });
  const used = process.cpuUsage(cpu);
  const cpuSeconds = (used.user + used.system) / 1e6;
  const seconds = summary.elapsedMs / 1000;
  process.stdout.write(
    `total: ${summary.records} records in ${summary.chunks} chunks, ${summary.elapsedMs} ms: ${Math.round(summary.records / seconds)} offsets/s, ` +
      `${(summary.bytes / MiB / seconds).toFixed(1)} MiB/s wall, ${(summary.bytes / MiB / cpuSeconds).toFixed(1)} MiB/s per core (${cpuSeconds.toFixed(2)} CPU s)\n`,
  );
} finally {
  await dropTable(engine.catalog, tableName, { ifExists: true }).catch(() => {});
  await deleteTopic(engine.kafka, topic).catch(() => {});
  await engine.close();
}
