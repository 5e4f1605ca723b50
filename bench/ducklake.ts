/**
 * A DuckDB query through the DuckLake attach against `query`, on a table of 100 files
 * (on the local stack, or KAFKA_BROKERS / DATABASE_URL):
 *
 *   node --import tsx bench/ducklake.ts [files=100] [fileKiB=1024] [runs=3]
 *
 * 1. Loads a topic with JSON records of 1 KiB and indexes it as `files` files of about
 *    fileKiB each (file_bytes), one partition.
 * 2. Starts a read API in this process and, in DuckDB 1.4.4 (Python, PyPI extensions),
 *    attaches the catalog as a DuckLake through it. Each run asks for one row by its
 *    `_offset` in another file (so no cache of DuckDB's or ours helps) and times the
 *    first row. The read API's counters must show, per run, exactly one file rebuilt and
 *    one footer answered from Postgres: the other 99 files are pruned in the catalog.
 * 3. The same queries through `query` (runQuery, in-process, a fresh read service each).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
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
import { runQuery } from '../src/query/run.js';
import { libpqConnectionString } from '../src/cli/attach.js';
import { duckdbAttachScript } from './ducklake-attach.js';

const fileCount = Number(process.argv[2] ?? 100);
const fileKiB = Number(process.argv[3] ?? 1024);
const runs = Number(process.argv[4] ?? 3);
const token = randomBytes(8).toString('hex');

const duckdbScript = duckdbAttachScript(String.raw`
times = []
for offset in job["offsets"]:
    started = time.perf_counter()
    row = con.execute("SELECT _offset, length(_value) FROM lake." + job["table"] + " WHERE _offset = " + str(offset)).fetchone()
    times.append({"offset": offset, "seconds": time.perf_counter() - started, "row": [row[0], row[1]]})
print(json.dumps({"attach": attach, "runs": times}))
`);

useLocalStackDefaults();
const engine = await openEngine();
try {
  const suffix = randomBytes(4).toString('hex');
  const topic = `bench-ducklake-${suffix}`;
  const name = `bench_ducklake_${suffix}`;
  await createTopic(engine.kafka, topic, 1);
  await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: `${fileKiB}KiB`, file_window: '1h', granularity: 'day' }) });
  // records of ~1,022 bytes (key + value): a little under `files` full files, the last one flushed by --once
  const perFile = Math.ceil((fileKiB * 1024) / 1030);
  const total = perFile * fileCount;
  const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  let started = performance.now();
  for (let written = 0; written < total; ) {
    const n = Math.min(5_000, total - written);
    await produce(engine.kafka, topic, Array.from({ length: n }, (_, i) => ({
      key: `k${written + i}`, value: `{"i":${written + i},"s":"${randomBytes(500).toString('hex')}"}`, partition: 0, timestamp: base + ((written + i) % 1000),
    })));
    written += n;
  }
  console.log(`loaded ${total} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  started = performance.now();
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  const table = await findTable(engine.catalog, name);
  const files = await listFiles(engine.catalog, table.tableId);
  console.log(`indexed ${files.length} files (${(files.reduce((sum, f) => sum + Number(f.fileSizeBytes), 0) / 1024 / 1024).toFixed(1)} MiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // one offset in the middle of a file spread over the table, a different file each run
  const targets = Array.from({ length: runs }, (_, k) => files[Math.floor(((k + 0.5) * files.length) / runs)]!).map((f) => (f.startOffset + f.endOffset) / 2n);

  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
  const server = readerServer(readerHandler(service, { token })).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const answer = await new Promise<{ attach: number; runs: { offset: number; seconds: number; row: [number, number] }[] }>((resolve, reject) => {
      const child = execFile('python3', ['-c', duckdbScript], { maxBuffer: 1 << 24 }, (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(JSON.parse(stdout))));
      child.stdin!.end(JSON.stringify({ token, url, libpq: libpqConnectionString(engine.config.databaseUrl), table: name, offsets: targets.map(Number) }));
    });
    const metrics = service.metrics;
    console.log(`DuckDB attach: ${(answer.attach * 1000).toFixed(0)} ms`);
    for (const run of answer.runs) console.log(`DuckDB via DuckLake, _offset = ${run.offset}: first row in ${(run.seconds * 1000).toFixed(0)} ms`);
    console.log(`read API: ${metrics.rebuilds} files rebuilt, ${metrics.footerHits} footers from Postgres, ${metrics.requests} requests, ${metrics.mismatches} mismatches (of ${files.length} files, ${runs} queries)`);
    if (metrics.rebuilds !== runs || metrics.footerHits !== runs) throw new Error(`expected exactly ${runs} rebuilds and ${runs} footers: pruning did not hold`);
  } finally {
    server.closeAllConnections();
    server.close();
  }

  for (const offset of targets) {
    const source = kafkaSource(engine.kafka);
    const fresh = new ReaderService(engine.catalog, source);
    started = performance.now();
    const result = await runQuery({ catalog: engine.catalog, source, service: fresh }, `SELECT _offset, length(_value) FROM ${name} WHERE _offset = ${offset}`);
    console.log(`query, _offset = ${offset}: ${result.rows.length} row in ${(performance.now() - started).toFixed(0)} ms (${fresh.metrics.rebuilds} rebuilt)`);
  }
} finally {
  await engine.close();
}
