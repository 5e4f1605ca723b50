/**
 * One run of the scheduled compactor (functions/compact, src/compaction/scheduled.ts) on a
 * topic of many small files: `partitions` partitions, each with an hour that has aged
 * (yesterday) indexed at `file_window` 60 s into about `files` files of `perFile` records.
 * Reports the CPU of indexing them and of the compaction run (per MiB of Kafka bytes), its
 * wall time, the live files before and after, and what finding the partitions costs: the
 * one query per table (src/catalog/merges-due.ts) and planning one partition from its live
 * files, each timed over 20 calls.
 *
 *   node --import tsx bench/scheduled-compaction.ts [partitions=30] [files=60] [perFile=60] [valueBytes=200]
 *
 * Needs the local stack (`npx offsetlake stack up`). The table and topic are dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { compactorOwner } from '../src/catalog/leases.js';
import { listFiles } from '../src/catalog/file-reads.js';
import { mergeCandidates } from '../src/catalog/merges.js';
import { partitionsWithMergesDue } from '../src/catalog/merges-due.js';
import { dropTable, findTable } from '../src/catalog/tables.js';
import { compactDuePartitions } from '../src/compaction/scheduled.js';
import { indexerFor } from '../src/indexer/handler.js';
import { openEngine, ownerName } from '../src/runtime/engine.js';
import { produce } from '../src/kafka/produce.js';
import { kafkaSource } from '../src/kafka/source.js';
import { createTopic, deleteTopic } from '../src/kafka/topics.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { resolveSettings } from '../src/table/settings.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

const partitions = Number(process.argv[2] ?? 30);
const files = Number(process.argv[3] ?? 60);
const perFile = Number(process.argv[4] ?? 60);
const valueBytes = Number(process.argv[5] ?? 200);
const MiB = 1024 * 1024;

const cpuSince = (start: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
};

useLocalStackDefaults();
const engine = await openEngine();
const topic = `bench-compact-${randomUUID().slice(0, 8)}`;
const tableName = `bench_compact_${randomUUID().slice(0, 6)}`;
try {
  await createTopic(engine.kafka, topic, partitions);
  // Made before the records: its partitions are indexed from offset 0, no backfill needed.
  await createTableFromTopic(engine, { name: tableName, topic, format: 'json', settings: resolveSettings({ file_window: '60s', merge_files: '10' }) });
  const table = await findTable(engine.catalog, tableName);
  // Yesterday's 10:00 hour: aged, so each partition's files make one merge.
  const hour = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000 + 10 * 3_600_000;
  const perPartition = files * perFile;
  let bytes = 0;
  for (let p = 0; p < partitions; p += 1) {
    const records = Array.from({ length: perPartition }, (_, i) => {
      const value = JSON.stringify({ p, i, pad: 'x'.repeat(Math.max(0, valueBytes - 40)) });
      bytes += value.length + 4;
      return { key: `k${i % 50}`, value, partition: p, timestamp: hour + Math.floor((i * 3_600_000) / perPartition) };
    });
    await produce(engine.kafka, topic, records);
  }

  const indexCpu = process.cpuUsage();
  const runtime = { catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: ownerName('bench'), clock: Date.now, indexers: new Map(), releaseAfterEvent: true };
  for (let p = 0; p < partitions; p += 1) {
    const indexer = await indexerFor(runtime, table, p);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
  }
  const indexSeconds = cpuSince(indexCpu);
  const before = (await listFiles(engine.catalog, table.tableId)).length;
  process.stdout.write(`${partitions} partitions × ${perPartition} records (${(bytes / MiB).toFixed(1)} MiB of values): ${before} live files; indexing them: ${indexSeconds.toFixed(2)} CPU s, ${(bytes / MiB / indexSeconds).toFixed(1)} MiB per CPU s\n`);

  const time = async (what: string, call: () => Promise<unknown>): Promise<void> => {
    await call();
    const started = performance.now();
    for (let i = 0; i < 20; i += 1) await call();
    process.stdout.write(`${what}: ${((performance.now() - started) / 20).toFixed(2)} ms a call\n`);
  };
  const agedFrom = Date.now() - 3_600_000 - 10 * 60_000;
  await time(`the partitions with merges due (one query, ${before} live files)`, () => partitionsWithMergesDue(engine.catalog, table.tableId, { mergeFiles: 10, agedFrom }));
  await time(`one partition's live files for its plan (${Math.round(before / partitions)} files)`, () => mergeCandidates(engine.catalog, table.tableId, 0));

  const compactCpu = process.cpuUsage();
  const started = performance.now();
  const result = await compactDuePartitions({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, { owner: compactorOwner(`bench-${randomUUID().slice(0, 8)}`) });
  const wall = (performance.now() - started) / 1000;
  const compactSeconds = cpuSince(compactCpu);
  const after = (await listFiles(engine.catalog, table.tableId)).length;
  process.stdout.write(
    `compaction run: ${result.merges} merges, ${result.failures.length} failures, live files ${before} → ${after}; ${wall.toFixed(2)} s wall, ` +
      `${compactSeconds.toFixed(2)} CPU s, ${(bytes / MiB / compactSeconds).toFixed(1)} MiB per CPU s (indexing's ${(bytes / MiB / indexSeconds).toFixed(1)}); ` +
      `the handoff pauses (${result.merges} merges over ${partitions} partitions) are in the wall time\n`,
  );
} finally {
  await dropTable(engine.catalog, tableName, { ifExists: true }).catch(() => {});
  await deleteTopic(engine.kafka, topic).catch(() => {});
  await engine.close();
}
