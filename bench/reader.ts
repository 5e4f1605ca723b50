/**
 * The read path's costs, on the local stack (or KAFKA_BROKERS / DATABASE_URL):
 *
 *   node --import tsx bench/reader.ts [fileMiB=128] [serveSeconds=10]
 *   BENCH_TABLE=bench_reader_… node --import tsx bench/reader.ts   (reuse a loaded table)
 *   OFFSETLAKE_BENCH_ENCODER=<encoder version> …                    (index with another encoder)
 *
 * 1. Loads a new topic with JSON records (1 KiB of random hex each, so the Parquet file
 *    is about as large as its input), enough for a file of ~fileMiB, indexed as one file.
 * 2. Rebuild vs a plain committed fetch of the same offsets (readCommittedRange), each
 *    the best of 3 runs: the rebuild adds decoding into columns, the Parquet encode, and
 *    the size/footer/sha256 check. Goal (issue 13): rebuild ≤ 3 × fetch.
 * 3. Cache-hit serving: the file once rebuilt, 4 MiB range GETs (what a Lambda function
 *    URL allows) and whole-file GETs over node:http on loopback, for serveSeconds each.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { listFiles } from '../src/catalog/file-reads.js';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/build/files.js';
import { indexerFor } from '../src/indexer/handler.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { readCommittedRange } from '../src/kafka/read.js';
import { createTopic } from '../src/kafka/topics.js';
import { bodyBytes, readerHandler } from '../src/reader/http.js';
import { readerServer } from '../src/reader/node-server.js';
import { ReaderService } from '../src/reader/service.js';
import { rebuildFile } from '../src/reader/rebuild.js';
import { encodeParquet, kafkaColumnArrays } from '../src/parquet/index.js';
import { fieldIds } from '../src/schema/table-schema.js';
import { schemaVersion } from '../src/schema/versions.js';
import { resolveSettings } from '../src/catalog/settings.js';
import { createTableFromTopic } from '../src/catalog/create-table.js';

const fileMiB = Number(process.argv[2] ?? 128);
const serveSeconds = Number(process.argv[3] ?? 10);
const MiB = 1024 * 1024;
const recordValueBytes = 1024;

useLocalStackDefaults();
const engine = await openEngine();
try {
  // BENCH_TABLE reuses a table an earlier run loaded and indexed.
  const name = process.env.BENCH_TABLE ?? (await loadAndIndex());
  const table = await findTable(engine.catalog, name);
  const topic = table.topic;
  const source = kafkaSource(engine.kafka);

  async function loadAndIndex(): Promise<string> {
    const suffix = randomBytes(4).toString('hex');
    const topic = `bench-reader-${suffix}`;
    await createTopic(engine.kafka, topic, 1);
    const name = `bench_reader_${suffix}`;
    await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: `${2 * fileMiB}MiB`, file_window: '1h', granularity: 'day' }) });

    // 1. Load and index.
    const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    // The Parquet file is ~93% of its records' bytes: load a little more, then flush it as one file.
    const total = Math.ceil((fileMiB * MiB) / 0.93 / (recordValueBytes + 20));
    let started = performance.now();
    for (let written = 0; written < total; ) {
      const n = Math.min(10_000, total - written);
      const records = Array.from({ length: n }, (_, i) => ({
        key: `k${written + i}`,
        value: `{"i":${written + i},"s":"${randomBytes((recordValueBytes - 20) / 2).toString('hex')}"}`,
        partition: 0,
        timestamp: base + ((written + i) % 1000),
      }));
      await produce(engine.kafka, topic, records, { transactionalId: `bench-${topic}` });
      written += n;
    }
    console.log(`loaded ${total} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const table = await findTable(engine.catalog, name);
    const source = kafkaSource(engine.kafka);
    started = performance.now();
    const indexer = await indexerFor({ catalog: engine.catalog, source, build: rangeBuilder(engine.catalog, undefined, process.env.OFFSETLAKE_BENCH_ENCODER), owner: `bench-${suffix}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false }, table, 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    console.log(`indexed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return name;
  }
  const files = await listFiles(engine.catalog, table.tableId);
  const file = files.reduce((a, b) => (b.fileSizeBytes > a.fileSizeBytes ? b : a));
  const size = Number(file.fileSizeBytes);
  console.log(`${files.length} file(s); largest: ${(size / MiB).toFixed(1)} MiB, ${file.recordCount} records, offsets [${file.startOffset}, ${file.endOffset})`);

  // 2. Rebuild vs fetch, best of 3 each, alternating.
  const best = { fetch: Infinity, rebuild: Infinity };
  for (let round = 0; round < 3; round += 1) {
    let t = performance.now();
    const fetched = await readCommittedRange(engine.kafka, topic, 0, file.startOffset, file.endOffset);
    best.fetch = Math.min(best.fetch, performance.now() - t);
    if (BigInt(fetched.records.length) < file.recordCount) throw new Error('the fetch read fewer records than the file holds');
    t = performance.now();
    await rebuildFile(engine.catalog, source, table, file);
    best.rebuild = Math.min(best.rebuild, performance.now() - t);
  }
  console.log(`committed fetch of the file's offsets: ${(best.fetch / 1000).toFixed(2)} s (${(size / MiB / (best.fetch / 1000)).toFixed(1)} MiB/s of file)`);
  console.log(`rebuild (fetch + encode + verify):     ${(best.rebuild / 1000).toFixed(2)} s (${(size / MiB / (best.rebuild / 1000)).toFixed(1)} MiB/s); ratio ${(best.rebuild / best.fetch).toFixed(2)}× (goal ≤ 3×, issue 13)`);

  // Where a rebuild's time goes: the same records, turned into columns, then encoded.
  const records = await readCommittedRange(engine.kafka, topic, 0, file.startOffset, file.endOffset);
  const schema = await schemaVersion(engine.catalog, table.tableId, file.schemaVersion);
  let t = performance.now();
  const columns = kafkaColumnArrays(0, records.records, table.format);
  const columnsMs = performance.now() - t;
  t = performance.now();
  encodeParquet(schema.columns, columns, { rowGroupRows: table.settings.row_group_rows, encoderVersion: file.encoderVersion, fieldIds: fieldIds(schema) });
  console.log(`  of which: records → columns ${(columnsMs / 1000).toFixed(2)} s, Parquet encode (${file.encoderVersion}) ${((performance.now() - t) / 1000).toFixed(2)} s`);

  // 3. Cache-hit serving: the handler alone, then over node:http on loopback (keep-alive).
  const service = new ReaderService(engine.catalog, source, { cacheBytes: 2 * size });
  const handler = readerHandler(service, { token: 'bench' });
  const path = `/tables/${name}/files/${file.dataFileId}.parquet`;
  const headers = { authorization: 'Bearer bench' };
  await handler({ method: 'GET', path, headers }); // warm the cache
  const rangeBytes = 4 * MiB;
  const rangeOf = (i: number) => {
    const first = (i * rangeBytes) % Math.max(1, size - rangeBytes);
    return `bytes=${first}-${first + rangeBytes - 1}`;
  };
  const measure = async (label: string, parallel: number, one: (i: number) => Promise<number>) => {
    let bytes = 0;
    let requests = 0;
    const until = performance.now() + serveSeconds * 1000;
    const begun = performance.now();
    await Promise.all(Array.from({ length: parallel }, async () => {
      while (performance.now() < until) {
        const n = await one(requests++); // not `bytes += await …`: that reads `bytes` before the await
        bytes += n;
      }
    }));
    const s = (performance.now() - begun) / 1000;
    console.log(`cache-hit serving, ${label}: ${(requests / s).toFixed(0)} requests/s, ${(bytes / MiB / s).toFixed(0)} MiB/s`);
  };
  await measure('handler only, 4 MiB ranges', 1, async (i) => (await bodyBytes((await handler({ method: 'GET', path, headers: { ...headers, range: rangeOf(i) } })).body)).byteLength);
  const server = readerServer(handler).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const agent = new Agent({ keepAlive: true });
  const port = (server.address() as AddressInfo).port;
  const httpGet = (range?: string) =>
    new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path, agent, headers: range ? { ...headers, range } : headers }, (response) => {
        if (response.statusCode !== (range ? 206 : 200)) reject(new Error(`GET ${path} ${range ?? ''}: status ${response.statusCode}`));
        let n = 0;
        response.on('data', (chunk: Buffer) => (n += chunk.length));
        response.on('end', () => resolve(n));
        response.on('error', reject);
      }).on('error', reject).end();
    });
  await measure('HTTP, 4 MiB ranges, 4 clients', 4, (i) => httpGet(rangeOf(i)));
  await measure('HTTP, whole file, 1 client', 1, () => httpGet());
  console.log(`metrics: ${JSON.stringify(service.metrics)}`);
  agent.destroy();
  server.closeAllConnections();
  server.close();
} finally {
  await engine.close();
}
