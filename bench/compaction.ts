/**
 * Compaction's cost against indexing's (issue 49), in one process on the local stack:
 * CPU seconds per GiB of key + value + header bytes to index a topic into small files, and
 * to merge those files again (re-encoded from Kafka: the merged file's records read with
 * read_committed, decoded and encoded, as a rebuild does). Then the engine's side of the
 * other choice, concatenating the sources' row groups: the merged file is written again
 * by pyarrow with row groups of the sources' sizes, and DuckDB's `count(*)` and a full
 * scan over it are timed against the file as the merge builds it (bench/row_groups.py).
 *
 *   node --import tsx bench/compaction.ts [--mb 64] [--small-bytes 1MiB] [--rounds 3]
 *
 * Needs the local stack (`offsetlake stack up`; the `OFFSETLAKE_*_PORT` variables move it).
 * One partition of JSON records of ~575 bytes, timestamps in one past hour. Each round: a
 * fresh catalog, a table with `file_bytes` --small-bytes (so indexing seals many small
 * files), indexed whole (CPU taken), then `file_bytes` set to 128 MiB in the catalog and
 * the partition compacted (CPU taken): one merge per 128 MiB, aged. Rounds alternate the
 * merge's build on this thread and on a build worker (what `run` does), and the event
 * loop's delay during the merge is taken: how long the thread that reads Kafka and commits
 * for every partition of `run` is held by a merge.
 */
import { writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openEngine } from '../src/runtime/engine.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { kafkaSource } from '../src/kafka/source.js';
import { createTableFromTopic } from '../src/tables/create-table.js';
import { parseBytes, resolveSettings } from '../src/table/settings.js';
import { findTable } from '../src/catalog/tables.js';
import { listFiles } from '../src/catalog/file-reads.js';
import { rangeBuilder } from '../src/files/files.js';
import { indexerFor, type IndexerRuntime } from '../src/indexer/handler.js';
import { compactPartition } from '../src/compaction/compact.js';
import { rebuildFile } from '../src/files/rebuild.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { BuildPool } from '../src/files/pool.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '64' }, 'small-bytes': { type: 'string', default: '1MiB' }, rounds: { type: 'string', default: '3' } } });
const GiB = 1024 ** 3;
useLocalStackDefaults();
const engine = await openEngine();
const topic = `compaction-bench-${randomUUID().slice(0, 8)}`;
await createTopic(engine.kafka, topic, 1);
const t0 = Date.UTC(2026, 10, 29, 9, 0, 0);
let produced = 0;
let bytes = 0;
for (let chunk = 0; bytes < Number(values.mb) * 1e6; chunk += 1) {
  const records = Array.from({ length: 2000 }, (_, j) => {
    const i = chunk * 2000 + j;
    const value = JSON.stringify({ id: i, name: `customer-${i % 977}`, amount: (i * 7919) % 100_000 / 100, tags: ['a', 'b', String(i % 13)], nested: { x: i % 31, y: 'y'.repeat(i % 200) }, note: 'n'.repeat(200 + (i % 100)) });
    bytes += value.length + 10 + 4 + 8;
    return { key: `key-${i % 10_000}`, value, headers: [['source', 'bench']] as [string, string][], partition: 0, timestamp: t0 + Math.floor(i / 100) };
  });
  produced += records.length;
  await produce(engine.kafka, topic, records);
}
process.stderr.write(`${topic}: ${produced} records, ~${(bytes / 1e6).toFixed(0)} MB\n`);

const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
await admin.connect();
const cpu = (): number => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const pool = new BuildPool(1);
interface Round { onWorker: boolean; loopP99: number; loopMax: number; files: number; merged: number; recordBytes: number; indexCpu: number; mergeCpu: number; mergedPath: string; sourceRows: number[] }
const rounds: Round[] = [];
for (let round = 0; round < Number(values.rounds); round += 1) {
  const name = `compbench_${randomUUID().slice(0, 8)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  const own = await openEngine({ databaseUrl: url.toString() });
  try {
    const created = await createTableFromTopic(own, { name: 'bench', topic, format: 'json', settings: resolveSettings({ file_window: '1h', file_bytes: values['small-bytes']!, merge_files: '10', merge_after: '1m' }) });
    await own.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [created.tableId]);
    const table = await findTable(own.catalog, 'bench');
    const runtime: IndexerRuntime = { catalog: own.catalog, source: kafkaSource(own.kafka), build: rangeBuilder(own.catalog), owner: `bench-${round}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false };
    const before = cpu();
    const indexer = await indexerFor(runtime, table, 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    const indexCpu = cpu() - before;
    const sources = await listFiles(own.catalog, table.tableId);
    await own.catalog.query(`UPDATE offsetlake.lake_table SET settings = jsonb_set(settings, '{file_bytes}', to_jsonb($2::bigint)) WHERE table_id = $1`, [table.tableId, parseBytes('file_bytes', '128MiB')]);
    const big = await findTable(own.catalog, 'bench');
    const onWorker = round % 2 === 1;
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const start = cpu();
    const result = await compactPartition({ catalog: own.catalog, source: kafkaSource(own.kafka), ...(onWorker ? { build: pool.range } : {}) }, big, 0, { owner: `bench-merge-${round}` });
    const mergeCpu = cpu() - start;
    loop.disable();
    const loopP99 = loop.percentile(99) / 1e6;
    const loopMax = loop.max / 1e6;
    const recordBytes = result.merges.reduce((sum, merge) => sum + merge.bytesRead, 0);
    const merged = (await listFiles(own.catalog, table.tableId)).filter((file) => file.sealReason === 'merge');
    const mergedPath = `/tmp/compaction-bench-merged-${round}.parquet`;
    writeFileSync(mergedPath, (await rebuildFile(own.catalog, kafkaSource(own.kafka), big, merged[0]!)).bytes);
    const firstSources = new Set(result.merges[0]!.sources);
    rounds.push({ onWorker, loopP99, loopMax, files: sources.length, merged: merged.length, recordBytes, indexCpu, mergeCpu, mergedPath, sourceRows: sources.filter((f) => firstSources.has(f.dataFileId)).map((f) => Number(f.recordCount)) });
    process.stderr.write(`round ${round}: ${sources.length} files indexed in ${indexCpu.toFixed(2)} CPU s; ${result.merges.length} merges (${merged.length} live merged files) in ${mergeCpu.toFixed(2)} CPU s over ${(recordBytes / 1e6).toFixed(1)} MB\n`);
  } finally {
    await own.close();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  }
}
await admin.end();
await engine.close();
await pool.close();
for (const r of rounds) {
  const perGiB = (seconds: number) => (seconds / (r.recordBytes / GiB)).toFixed(1);
  process.stdout.write(`indexing ${perGiB(r.indexCpu)} CPU s/GiB (${r.files} files); merging ${perGiB(r.mergeCpu)} CPU s/GiB (${r.merged} files) on ${r.onWorker ? 'a build worker' : 'this thread'}; ratio ${(r.mergeCpu / r.indexCpu).toFixed(2)}; event loop delay during the merge p99 ${r.loopP99.toFixed(0)} ms, max ${r.loopMax.toFixed(0)} ms\n`);
}
// The engine's side: the first merged file as built (full row groups) against the same rows in the sources' row groups.
const last = rounds.at(-1)!;
const rowsPerSource = Math.round(last.sourceRows.reduce((a, b) => a + b, 0) / last.sourceRows.length);
const python = spawnSync('python3', ['bench/row_groups.py', last.mergedPath, String(rowsPerSource), '60'], { stdio: 'inherit' });
process.exitCode = python.status ?? 1;
