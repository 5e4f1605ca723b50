/**
 * A simulated month, compacted, against the same data as day files (issue 49's figures),
 * in one run on the local stack (the `OFFSETLAKE_*_PORT` variables move it):
 *
 *   node --import tsx bench/month.ts [--partitions 30] [--days 30] [--every 600] [--runs 3]
 *
 * Scaled down to run in minutes on this machine: `--partitions` partitions of one topic
 * (`retention.ms` -1), each with one JSON record of ~300 bytes every `--every` seconds of
 * record time (jittered inside its slot) over the `--days` days before today: sparse
 * records, so every file of the small table holds what its `file_window` spans.
 *
 * 1. Table `hours`: the settings of a fresh table under the freshness design (granularity
 *    hour, `file_window` 60 s, `file_age` 2 s), merges off while indexing. Indexed by
 *    `run --once` in this process (CPU taken): live files before compaction.
 * 2. `merge_files` 10 set on it (the default `merge_after`, 10 min), then every partition
 *    compacted with `compactPartition` until its plan is empty: first at the real clock
 *    (the young merges: every file was just committed), then with the clock moved past
 *    `merge_after` (the aged merges, as the month's buckets would be by the time a
 *    compactor running beside the indexer saw them). CPU per GiB of records read, against
 *    indexing's. Live files after, against partitions × the hour buckets that hold records.
 * 3. Table `days` over the same topic: granularity day, `file_window` and `file_age` 1 d.
 * 4. For each table and each of `--runs` runs, a fresh read API (no cache) and a fresh
 *    DuckDB 1.4.4 attach per query: `count(*)`, a full scan (`sum(length(_value))`) and a
 *    one-hour query (an hour in the middle of the month); the Iceberg LoadTable (the first,
 *    which cuts the snapshot, and a second). Ratios hours / days, min–max over the runs.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { listFiles } from '../src/catalog/file-reads.js';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { readerHandler } from '../src/reader/http.js';
import { readerServer } from '../src/reader/node-server.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { defaultRunnerOptions, LocalRunner } from '../src/local/runner.js';
import { libpqConnectionString } from '../src/cli/attach.js';
import { duckdbAttachScript } from './ducklake-attach.js';
import { IcebergCatalog } from '../src/iceberg/rest.js';
import { compactPartition } from '../src/compaction/compact.js';
import { useProjectPython } from '../test/helpers/project-python.js';

const { values } = parseArgs({ options: { partitions: { type: 'string', default: '30' }, days: { type: 'string', default: '30' }, every: { type: 'string', default: '600' }, runs: { type: 'string', default: '3' } } });
const partitions = Number(values.partitions);
const days = Number(values.days);
const everyMs = Number(values.every) * 1000;
const runs = Number(values.runs);
const GiB = 1024 ** 3;
const hourMs = 3_600_000;
const token = randomBytes(8).toString('hex');

const duckdbScript = duckdbAttachScript(String.raw`
con.execute("SET enable_progress_bar = false")
started = time.perf_counter()
row = con.execute(job["sql"]).fetchone()
print(json.dumps({"seconds": time.perf_counter() - started, "row": [str(v) for v in row]}))
`);

const cpu = (): number => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

useLocalStackDefaults();
useProjectPython();
const engine = await openEngine();
const suffix = randomBytes(3).toString('hex');
const topic = `bench-month-${suffix}`;
const names = { hours: `month_hours_${suffix}`, days: `month_days_${suffix}` };
try {
  await createTopic(engine.kafka, topic, partitions, { configs: { 'retention.ms': '-1' } });
  const end = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const start = end - days * 86_400_000;
  const slots = Math.floor((end - start) / everyMs);
  let recordBytes = 0;
  let produced = 0;
  const hoursWithRecords = new Set<string>();
  let loadStarted = performance.now();
  for (let partition = 0; partition < partitions; partition += 1) {
    for (let slot = 0; slot < slots; slot += 5000) {
      const records = Array.from({ length: Math.min(5000, slots - slot) }, (_, j) => {
        const i = slot + j;
        const timestamp = start + i * everyMs + Math.floor(Math.random() * everyMs);
        hoursWithRecords.add(`${partition}/${Math.floor(timestamp / hourMs)}`);
        const key = `device-${partition}-${i % 97}`;
        const value = JSON.stringify({ device: key, reading: (i * 7919) % 100_000 / 100, status: ['ok', 'warn', 'fail'][i % 3], note: 'n'.repeat(200 + (i % 50)) });
        recordBytes += key.length + value.length;
        return { key, value, partition, timestamp };
      });
      produced += records.length;
      await produce(engine.kafka, topic, records);
    }
  }
  const buckets = hoursWithRecords.size;
  console.log(`loaded ${produced} records (${(recordBytes / 1e6).toFixed(1)} MB of key + value) over ${partitions} partitions × ${days} days, one per ${everyMs / 1000} s per partition, in ${((performance.now() - loadStarted) / 1000).toFixed(0)} s; ${buckets} partition-hours hold records`);

  // A table created now starts at the topic's end (history comes by backfill): index the month live, from offset 0, as bench/compaction.ts does.
  const index = async (name: string): Promise<{ seconds: number; cpu: number }> => {
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [(await findTable(engine.catalog, name)).tableId]);
    const began = performance.now();
    const before = cpu();
    await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    return { seconds: (performance.now() - began) / 1000, cpu: cpu() - before };
  };

  // 1. the small files a fresh table seals under the freshness design
  await createTableFromTopic(engine, { name: names.hours, topic, format: 'json', settings: resolveSettings({ granularity: 'hour', file_window: '60s', file_age: '2s'}) });
  const hoursIndexing = await index(names.hours);
  let hours = await findTable(engine.catalog, names.hours);
  const filesBefore = (await listFiles(engine.catalog, hours.tableId)).length;
  console.log(`hours: ${filesBefore} live files indexed in ${hoursIndexing.seconds.toFixed(0)} s, ${hoursIndexing.cpu.toFixed(1)} CPU s (${(hoursIndexing.cpu / (recordBytes / GiB)).toFixed(0)} CPU s/GiB)`);

  // 2. compaction: merge_files 10, the default merge_after
  await engine.catalog.query(`UPDATE offsetlake.lake_table SET settings = jsonb_set(settings, '{merge_files}', to_jsonb(10)) WHERE table_id = $1`, [hours.tableId]);
  hours = await findTable(engine.catalog, names.hours);
  const compact = async (clock: () => number): Promise<{ merges: number; bytes: number; cpu: number; seconds: number }> => {
    const began = performance.now();
    const before = cpu();
    let merges = 0;
    let bytes = 0;
    for (let partition = 0; partition < partitions; partition += 1) {
      for (;;) {
        const result = await compactPartition({ catalog: engine.catalog, source: kafkaSource(engine.kafka), clock }, hours, partition, { owner: `bench-month-${partition}` });
        if (result.busy) throw new Error(`partition ${partition}: its lease is held: nothing else should run on this table`);
        merges += result.merges.length;
        bytes += result.merges.reduce((sum, merge) => sum + merge.bytesRead, 0);
        if (result.merges.length === 0) break;
      }
    }
    return { merges, bytes, cpu: cpu() - before, seconds: (performance.now() - began) / 1000 };
  };
  const young = await compact(Date.now);
  const filesYoung = (await listFiles(engine.catalog, hours.tableId)).length;
  const aged = await compact(() => Date.now() + hours.settings.merge_after + hourMs);
  const filesAfter = (await listFiles(engine.catalog, hours.tableId)).length;
  const mergeCpu = young.cpu + aged.cpu;
  const mergeBytes = young.bytes + aged.bytes;
  console.log(`hours: young merges ${young.merges} (${young.seconds.toFixed(0)} s, ${young.cpu.toFixed(1)} CPU s) → ${filesYoung} live files; aged merges ${aged.merges} (${aged.seconds.toFixed(0)} s, ${aged.cpu.toFixed(1)} CPU s) → ${filesAfter} live files`);
  console.log(`live files after compaction ${filesAfter} against ${buckets} partition-hours: ${(filesAfter / buckets).toFixed(3)}× (goal ≤ 1.2×); before ${filesBefore} (${(filesBefore / buckets).toFixed(1)}×)`);
  console.log(`CPU per GiB of records: indexing ${(hoursIndexing.cpu / (recordBytes / GiB)).toFixed(0)} s/GiB, compaction ${(mergeCpu / (mergeBytes / GiB)).toFixed(0)} s/GiB of records read (${(mergeBytes / recordBytes).toFixed(2)}× the topic read again); compaction / indexing per GiB ${((mergeCpu / mergeBytes) / (hoursIndexing.cpu / recordBytes)).toFixed(2)}, in total ${(mergeCpu / hoursIndexing.cpu).toFixed(2)}`);

  // 3. the same records as day files
  await createTableFromTopic(engine, { name: names.days, topic, format: 'json', settings: resolveSettings({ granularity: 'day', file_window: '1d', file_age: '1d'}) });
  const daysIndexing = await index(names.days);
  const days_ = await findTable(engine.catalog, names.days);
  const dayFiles = (await listFiles(engine.catalog, days_.tableId)).length;
  console.log(`days: ${dayFiles} live files indexed in ${daysIndexing.seconds.toFixed(0)} s, ${daysIndexing.cpu.toFixed(1)} CPU s`);

  // 4. the engines' side, each query on a fresh read API and a fresh DuckDB
  const hour = new Date(start + Math.floor(days / 2) * 86_400_000 + 12 * hourMs).toISOString().slice(0, 19).replace('T', ' ');
  const queries = {
    count: (table: string) => `SELECT count(*) FROM lake.${table}`,
    scan: (table: string) => `SELECT count(*), sum(length(_value)) FROM lake.${table}`,
    hour: (table: string) => `SELECT count(*), sum(length(_value)) FROM lake.${table} WHERE _timestamp >= TIMESTAMPTZ '${hour}+00' AND _timestamp < TIMESTAMPTZ '${hour}+00' + INTERVAL 1 HOUR`,
  };
  type Query = keyof typeof queries | 'loadTableFirst' | 'loadTableAgain';
  const times: Record<'hours' | 'days', Record<Query, number[]>> = {
    hours: { count: [], scan: [], hour: [], loadTableFirst: [], loadTableAgain: [] },
    days: { count: [], scan: [], hour: [], loadTableFirst: [], loadTableAgain: [] },
  };
  const answers: Record<string, string> = {};
  const serve = async <T>(use: (url: string) => Promise<T>): Promise<T> => {
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
    const server = readerServer(readerHandler(service, { token, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }) })).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      return await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      server.closeAllConnections();
      server.close();
      await service.close();
    }
  };
  const duckdb = (url: string, sql: string) => new Promise<{ seconds: number; row: string[] }>((resolve, reject) => {
    const child = execFile('python3', ['-c', duckdbScript], { maxBuffer: 1 << 24 }, (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(JSON.parse(stdout))));
    child.stdin!.end(JSON.stringify({ token, url, libpq: libpqConnectionString(engine.config.databaseUrl), sql }));
  });
  const get = async (url: string): Promise<number> => {
    const began = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${body.slice(0, 300)}`);
    return (performance.now() - began) / 1000;
  };
  for (let run = 0; run < runs; run += 1) {
    for (const layout of ['hours', 'days'] as const) {
      for (const [query, sql] of Object.entries(queries) as [keyof typeof queries, (table: string) => string][]) {
        const answer = await serve((url) => duckdb(url, sql(names[layout])));
        times[layout][query].push(answer.seconds);
        const seen = answers[query];
        if (seen !== undefined && seen !== answer.row.join(',')) throw new Error(`${query}: ${layout} answers ${answer.row.join(',')}, the other layout ${seen}`);
        answers[query] = answer.row.join(',');
      }
      await serve(async (url) => {
        const path = `${url}/iceberg/v1/offsetlake/namespaces/main/tables/${names[layout]}`;
        times[layout].loadTableFirst.push(await get(path));
        times[layout].loadTableAgain.push(await get(path));
      });
    }
  }
  const range = (list: number[]) => `${Math.min(...list).toFixed(3)}–${Math.max(...list).toFixed(3)} s`;
  const ratio = (a: number[], b: number[]) => {
    const ratios = a.map((x, i) => x / b[i]!);
    return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
  };
  console.log(`answers (equal for both layouts): count ${answers.count}; scan ${answers.scan}; hour ${hour} ${answers.hour}`);
  for (const query of Object.keys(times.hours) as Query[]) {
    console.log(`${query}: compacted hours ${range(times.hours[query])} (${filesAfter} files), days ${range(times.days[query])} (${dayFiles} files): ${ratio(times.hours[query], times.days[query])} (goal ≤ 1.5×)`);
  }
} finally {
  await engine.close();
}
