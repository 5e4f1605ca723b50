/**
 * The read path's costs, on the local stack (or KAFKA_BROKERS / DATABASE_URL):
 *
 *   npm run bench:reader -- [fileMiB=128] [serveSeconds=10] [avroRecords=400000] [bigMiB=1024]
 *   BENCH_TABLE=… BENCH_AVRO_TABLE=… BENCH_BIG_TABLE=… npm run bench:reader   (reuse loaded tables)
 *   OFFSETLAKE_BENCH_ENCODER=<encoder version> …      (index with another encoder)
 *   BENCH_PROFILE=1 …                                 (where the scans' and rebuilds' CPU goes, 4c)
 *   BENCH_PARTS=abcd …                                (some sections only: 2 3 a b c d)
 *   bigMiB=0 skips the 1 GiB file; serveSeconds=0 skips cache-hit serving.
 *
 * 1. Loads a new topic with JSON records (1 KiB of random hex each, so the Parquet file
 *    is about as large as its input), enough for a file of ~fileMiB, indexed as one file;
 *    an Avro topic of ten fields (avroRecords records); and, for the memory figure, a
 *    JSON file of ~bigMiB.
 * 2. Rebuild vs a plain committed fetch of the same offsets (readCommittedRange), each
 *    the best of 3 runs: the rebuild adds decoding into columns, the Parquet encode, and
 *    the size/footer/sha256 check. Goal (issue 13): rebuild ≤ 3 × fetch.
 * 3. Cache-hit serving: the file once rebuilt, 4 MiB range GETs (what a Lambda function
 *    URL allows) and whole-file GETs over node:http on loopback, for serveSeconds each.
 * 4. Issue 14's figures, in the same run:
 *    a. one column chunk of one row group, cold (a new ReaderService, no cache), vs the
 *       committed fetch of that row group's offsets (CommittedSource.read); goal ≤ 1.5×;
 *    b. DuckDB (httpfs) and pyarrow (fsspec HTTP) over a `serve` process, selecting the
 *       rows of one row group with `_offset BETWEEN`: the server's /metrics kafkaBytes vs
 *       that row group's record bytes (the catalog's granule kafka_bytes); goal ≤ 1.2×;
 *    c. a one-column full scan of the Avro file (every row group's chunk of one column,
 *       through the service) vs its whole-file rebuild (rebuildFile); goal ≤ 1/3;
 *    d. peak RSS of a `serve` process (cache 16 MiB) answering one whole-file GET of the
 *       big file, above its RSS before the GET; goal ≤ 4 row groups' bytes.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, get, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { findGranules, listFiles, type CatalogFile } from '../src/catalog/file-reads.js';
import { findTable } from '../src/catalog/tables.js';
import { type TableRecord } from '../src/table/record.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { indexerFor } from '../src/indexer/handler.js';
import { kafkaSource, type CommittedSource, type SourceReadOptions } from '../src/kafka/source.js';
import { fetchBytesForSpan } from '../src/kafka/fetch-size.js';
import { produce } from '../src/kafka/produce.js';
import { readCommittedRange } from '../src/kafka/read.js';
import { createTopic } from '../src/kafka/topics.js';
import { bodyBytes, readerHandler } from '../src/reader/http.js';
import { readerServer } from '../src/reader/node-server.js';
import { ReaderService } from '../src/reader/service.js';
import { rebuildFile } from '../src/files/rebuild.js';
import { encodeParquet, fileLayout, kafkaColumnArrays, type FileLayout } from '../src/parquet/index.js';
import { fieldIds } from '../src/schema/table-schema.js';
import { schemaVersion } from '../src/catalog/schema-versions.js';
import { avroType } from '../src/schema/decode-avro.js';
import { wireHeader } from '../src/schema/wire.js';
import { resolveSettings, type TableFormat } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { profiled } from './profile.js';
import { startServe } from './serve-process.js';

const fileMiB = Number(process.argv[2] ?? 128);
const serveSeconds = Number(process.argv[3] ?? 10);
const avroRecords = Number(process.argv[4] ?? 400_000);
const bigMiB = Number(process.argv[5] ?? 1024);
/** BENCH_PARTS picks sections (default all): 2, 3 (issue 13's), a, b, c, d (issue 14's). */
const parts = process.env.BENCH_PARTS ?? '23abcd';
const MiB = 1024 * 1024;
const recordValueBytes = 1024;
/** Ports of the `serve` processes this bench starts: OFFSETLAKE_CHAOS_PORTS's block when set (a machine's own), else 8650. */
const servePort = Number(process.env.OFFSETLAKE_CHAOS_PORTS ?? 8650) + 1;

const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const figures: string[] = [];

useLocalStackDefaults();
const engine = await openEngine();
const source = kafkaSource(engine.kafka);
try {
  // BENCH_TABLE reuses a table an earlier run loaded and indexed.
  const name = process.env.BENCH_TABLE ?? (await loadJson(fileMiB, 'bench_reader'));
  const table = await findTable(engine.catalog, name);
  const topic = table.topic;
  const file = await largestFile(table);
  const size = Number(file.fileSizeBytes);

  // 2. Rebuild vs fetch, best of 3 each, alternating.
  if (parts.includes('2')) {
    const best = { fetch: Infinity, rebuild: Infinity };
    for (let round = 0; round < 3; round += 1) {
      let t = performance.now();
      const fetched = await readCommittedRange(engine.kafka, topic, 0, file.startOffset, file.endOffset);
      best.fetch = Math.min(best.fetch, performance.now() - t);
      if (BigInt(fetched.records.length) < file.recordCount) throw new Error('the fetch read fewer records than the file holds');
      t = performance.now();
      await rebuildFile(source, table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion));
      best.rebuild = Math.min(best.rebuild, performance.now() - t);
    }
    console.log(`committed fetch of the file's offsets: ${(best.fetch / 1000).toFixed(2)} s (${(size / MiB / (best.fetch / 1000)).toFixed(1)} MiB/s of file)`);
    console.log(`rebuild (fetch + encode + verify):     ${(best.rebuild / 1000).toFixed(2)} s (${(size / MiB / (best.rebuild / 1000)).toFixed(1)} MiB/s); ratio ${(best.rebuild / best.fetch).toFixed(2)}× (goal ≤ 3×, issue 13)`);

    // Where a rebuild's time goes: the same records, turned into columns, then encoded.
    {
      const records = await readCommittedRange(engine.kafka, topic, 0, file.startOffset, file.endOffset);
      const schema = await schemaVersion(engine.catalog, table.tableId, file.schemaVersion);
      const t = performance.now();
      const columns = kafkaColumnArrays(0, records.records, table.format);
      const columnsMs = performance.now() - t;
      const e = performance.now();
      encodeParquet(schema.columns, columns, { rowGroupRows: table.settings.row_group_rows, encoderVersion: file.encoderVersion, fieldIds: fieldIds(schema) });
      console.log(`  of which: records → columns ${(columnsMs / 1000).toFixed(2)} s, Parquet encode (${file.encoderVersion}) ${((performance.now() - e) / 1000).toFixed(2)} s`);
    }
  }

  // 3. Cache-hit serving: the handler alone, then over node:http on loopback (keep-alive).
  if (serveSeconds > 0 && parts.includes('3')) await cacheHitServing(table, file);

  // 4a. One column chunk of one row group, cold, vs the committed fetch of its offsets.
  if (parts.includes('a')) await chunkVsFetch(table, file, ['_value', '_offset']);
  const avroName = process.env.BENCH_AVRO_TABLE ?? (await loadAvro(avroRecords));
  const avroTable = await findTable(engine.catalog, avroName);
  const avroFile = await largestFile(avroTable);
  if (parts.includes('a')) await chunkVsFetch(avroTable, avroFile, ['id', '_offset']);

  // 4b. Engines over `serve`, selecting one row group's rows by _offset.
  if (parts.includes('b')) await enginesOverServe(table, file);

  // 4c. One-column full scan of the Avro file vs its whole-file rebuild: a value column
  // (decoded) and a record column (no decoding); the JSON file's for comparison.
  if (parts.includes('c')) {
    await columnScanVsRebuild(avroTable, avroFile, ['amount', '_timestamp']);
    await columnScanVsRebuild(table, file, ['_value', '_timestamp']);
  }

  // 4d. Peak memory of a whole-file GET of the big file.
  if (bigMiB > 0 && parts.includes('d')) {
    const bigName = process.env.BENCH_BIG_TABLE ?? (await loadJson(bigMiB, 'bench_big'));
    // A table loaded by a run that stopped before its file was committed is indexed now.
    if ((await listFiles(engine.catalog, (await findTable(engine.catalog, bigName)).tableId)).length === 0) await indexAll(bigName);
    await wholeFileMemory(await findTable(engine.catalog, bigName));
  }

  console.log(`\nissue 14 figures (tables: BENCH_TABLE=${name} BENCH_AVRO_TABLE=${avroName}${bigMiB > 0 ? ` BENCH_BIG_TABLE=${process.env.BENCH_BIG_TABLE ?? '(new)'}` : ''})`);
  for (const line of figures) console.log(`  ${line}`);
} finally {
  await engine.close();
}

async function largestFile(table: TableRecord): Promise<CatalogFile> {
  const files = await listFiles(engine.catalog, table.tableId);
  if (files.length === 0) throw new Error(`table ${table.name} has no files`);
  const file = files.reduce((a, b) => (b.fileSizeBytes > a.fileSizeBytes ? b : a));
  console.log(`${table.name}: ${files.length} file(s); largest ${file.dataFileId}: ${mib(Number(file.fileSizeBytes))}, ${file.recordCount} records, offsets [${file.startOffset}, ${file.endOffset}), granules: ${file.hasGranules}`);
  return file;
}

/** A new topic and table, its records produced in transactions of 10,000 and indexed as one file (a flush). */
async function loadAndIndex(prefix: string, format: TableFormat, total: number, record: (n: number) => { key: string; value: string | Buffer; timestamp: number }): Promise<string> {
  const suffix = randomBytes(4).toString('hex');
  const topic = `${prefix.replaceAll('_', '-')}-${suffix}`;
  await createTopic(engine.kafka, topic, 1);
  const name = `${prefix}_${suffix}`;
  // The table starts at the topic's LSO, 0 here: created before anything is produced.
  // lease_ttl: this indexer does not renew its lease, and a 1 GiB range takes longer than 30 s.
  await createTableFromTopic(engine, { name, topic, format, settings: resolveSettings({ file_bytes: '4GiB', file_window: '1h', granularity: 'day', lease_ttl: '1h' }) });
  const started = performance.now();
  for (let written = 0; written < total; ) {
    const n = Math.min(10_000, total - written);
    const records = Array.from({ length: n }, (_, i) => ({ ...record(written + i), partition: 0 }));
    await produce(engine.kafka, topic, records, { transactionalId: `bench-${topic}` });
    written += n;
  }
  console.log(`${name}: loaded ${total} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await indexAll(name);
  return name;
}

/** Indexes what the table's partition 0 holds as one file (a flush at the end). */
async function indexAll(name: string): Promise<void> {
  const table = await findTable(engine.catalog, name);
  const suffix = randomBytes(4).toString('hex');
  const started = performance.now();
  const indexer = await indexerFor({ catalog: engine.catalog, source, build: rangeBuilder(engine.catalog, undefined, process.env.OFFSETLAKE_BENCH_ENCODER), owner: `bench-${suffix}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false }, table, 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
  console.log(`${name}: indexed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** JSON records of 1 KiB random hex, enough for a file of ~mebibytes. */
function loadJson(mebibytes: number, prefix: string): Promise<string> {
  const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  // The Parquet file is ~93% of its records' bytes: load a little more.
  const total = Math.ceil((mebibytes * MiB) / 0.93 / (recordValueBytes + 20));
  return loadAndIndex(prefix, 'json', total, (n) => ({
    key: `k${n}`,
    value: `{"i":${n},"s":"${randomBytes((recordValueBytes - 20) / 2).toString('hex')}"}`,
    timestamp: base + (n % 1000),
  }));
}

/** Avro records of ten fields (~150 B), Confluent wire format, schema registered first. */
async function loadAvro(total: number): Promise<string> {
  const schema = {
    type: 'record', name: 'Order', namespace: 'bench',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'customer', type: 'int' },
      { name: 'amount', type: 'double' },
      { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID', 'SHIPPED'] } },
      { name: 'placed', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 'city', type: 'string' },
      { name: 'zip', type: ['null', 'string'], default: null },
      { name: 'paid', type: 'boolean' },
      { name: 'tags', type: { type: 'array', items: 'string' } },
      { name: 'note', type: 'string' },
    ],
  };
  const subjectTopic = `bench-avro-subject-${randomBytes(4).toString('hex')}`;
  const response = await fetch(`${process.env.SCHEMA_REGISTRY_URL}/subjects/${subjectTopic}-value/versions`, {
    method: 'POST', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ schema: JSON.stringify(schema) }),
  });
  const { id } = (await response.json()) as { id: number };
  const type = avroType({ id, type: 'AVRO', schema: JSON.stringify(schema), references: [] });
  const header = wireHeader(id);
  const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  return loadAndIndex('bench_avro', 'avro', total, (n) => ({
    key: `customer-${n % 1000}`,
    value: Buffer.concat([header, type.toBuffer({
      id: BigInt(n), customer: n % 1000, amount: (n % 9973) / 100, status: ['NEW', 'PAID', 'SHIPPED'][n % 3], placed: BigInt(base + n),
      city: `city-${n % 50}`, zip: n % 3 ? { string: String(10000 + (n % 90000)) } : null, paid: n % 2 === 0, tags: ['a', `t${n % 7}`],
      note: randomBytes(30).toString('hex'),
    })]),
    timestamp: base + (n % 1000),
  }));
}

/** The file's layout; throws for a file that is not served by granules. */
function layoutOf(file: CatalogFile): FileLayout {
  const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
  if ('problem' in layout) throw new Error(`file ${file.dataFileId}: ${layout.problem}`);
  return layout;
}

async function drain(pieces: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const piece of pieces) n += piece.byteLength;
  return n;
}

async function drainRead(read: CommittedSource['read'], topic: string, from: bigint, until: bigint, options?: SourceReadOptions): Promise<number> {
  let n = 0;
  for await (const batch of read(topic, 0, from, until, options)) n += batch.records.length;
  return n;
}

/**
 * 4a. A cold read of one chunk: a new service (no cache), its file's layout and granules
 * looked up first (a footer read, as an engine makes before any chunk), then the chunk's
 * bytes timed; vs the committed fetch of the row group's offsets. Best of 5, alternating.
 */
async function chunkVsFetch(table: TableRecord, file: CatalogFile, columns: readonly string[]): Promise<void> {
  const layout = layoutOf(file);
  const granules = await findGranules(engine.catalog, file.dataFileId);
  if (!granules) throw new Error(`file ${file.dataFileId} has no granules`);
  const rowGroup = Math.floor(layout.rowGroups.length / 2);
  const granule = granules.granules[rowGroup]!;
  const size = Number(file.fileSizeBytes);
  // The committed fetch at its best: read.ts's Fetches of 4 MiB, or ones of the span's size
  // (what a granule read asks for), whichever was faster.
  const sized = { fetchBytes: fetchBytesForSpan(granule.kafkaBytes, granule.startOffset, granule.endOffset) };
  const fetchOnce = async () => {
    let best = Infinity;
    for (const options of [undefined, sized]) {
      const t = performance.now();
      const n = await drainRead(source.read.bind(source), table.topic, granule.startOffset, granule.endOffset, options);
      best = Math.min(best, performance.now() - t);
      if (n !== granule.rowCount) throw new Error(`the fetch read ${n} records, the granule has ${granule.rowCount}`);
    }
    return best;
  };
  let fetch = Infinity;
  for (let round = 0; round < 5; round++) fetch = Math.min(fetch, await fetchOnce());
  for (const column of columns) {
    const leaf = layout.rowGroups[rowGroup]!.chunks.findIndex((chunk) => chunk.path === column);
    if (leaf < 0) throw new Error(`no column ${column} in file ${file.dataFileId}`);
    const chunk = layout.rowGroups[rowGroup]!.chunks[leaf]!;
    let cold = Infinity;
    for (let round = 0; round < 5; round++) {
      const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
      await drain(service.producer.range(table, file, size - 8, size));
      const t = performance.now();
      const n = await drain(service.producer.range(table, file, chunk.start, chunk.end));
      cold = Math.min(cold, performance.now() - t);
      if (n !== chunk.end - chunk.start) throw new Error(`read ${n} bytes of the chunk, it has ${chunk.end - chunk.start}`);
      if (round === 0) fetch = Math.min(fetch, await fetchOnce());
    }
    const line = `a. ${table.format} row group ${rowGroup} (${granule.rowCount} rows, ${mib(granule.kafkaBytes)} of records), chunk ${column} (${mib(chunk.end - chunk.start)}) cold: ${s(cold)} vs committed fetch ${s(fetch)} = ${(cold / fetch).toFixed(2)}× (goal ≤ 1.5×)`;
    console.log(line);
    figures.push(line);
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await work();
  return performance.now() - t;
}

function getJson<T>(url: string): Promise<T> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { accept: 'application/json' } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(text) as T) : reject(new Error(`${url}: ${response.statusCode} ${text}`))));
    }).on('error', reject);
  });
}

function runPython(args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [fileURLToPath(new URL('engine_read.py', import.meta.url)), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Record<string, unknown>) : reject(new Error(`engine_read.py ${args[0]}: exit ${code}: ${err.slice(-2000)}`))));
  });
}

/**
 * 4b. Each engine, in a fresh `serve` (cold cache), selects the rows of one row group by
 * _offset, then (same server) those of another: the Kafka bytes the server read for each
 * query (its /metrics) vs that row group's record bytes. The first query of a file also
 * pays for the engine's speculative read of the file's tail (pyarrow 64 KiB, DuckDB 256
 * KiB), which reaches into the last row group's chunks when the page index and footer
 * are shorter than that; the second finds those in the cache (serve's default, 512 MiB).
 */
async function enginesOverServe(table: TableRecord, file: CatalogFile): Promise<void> {
  const granules = await findGranules(engine.catalog, file.dataFileId);
  if (!granules) throw new Error(`file ${file.dataFileId} has no granules`);
  const layout = layoutOf(file);
  const middle = Math.floor(layout.rowGroups.length / 2);
  type Metrics = { kafkaBytes: number; bytesServed: number; requests: number; granuleRebuilds: number; partialGranuleRebuilds: number; granuleRecordHits: number; rebuilds: number };
  for (const engineName of ['duckdb', 'pyarrow']) {
    const serve = await startServe({ port: servePort, args: ['--cache', '512MiB'] }); // serve's default cache
    try {
      const base = `http://127.0.0.1:${servePort}`;
      const url = `${base}/tables/${table.name}/files/${file.dataFileId}.parquet`;
      for (const [query, rowGroup] of [['first query of the file', middle], ['next query, another row group', middle - 1]] as const) {
        const granule = granules.granules[rowGroup]!;
        // The row group's rows: its span holds them and no other row group's.
        const low = granule.startOffset;
        const high = granule.endOffset - 1n;
        const before = await getJson<Metrics>(`${base}/metrics`);
        const answer = await runPython([engineName, url, String(low), String(high)]);
        const after = await getJson<Metrics>(`${base}/metrics`);
        if (answer.rows !== granule.rowCount) throw new Error(`${engineName} selected ${String(answer.rows)} rows, the row group has ${granule.rowCount}`);
        const kafkaBytes = after.kafkaBytes - before.kafkaBytes;
        const delta = (key: keyof Metrics) => after[key] - before[key];
        const line = `b. ${engineName} over serve, ${query}: _offset BETWEEN ${low} AND ${high} (row group ${rowGroup} of ${layout.rowGroups.length}, ${answer.rows} rows, ${(answer.seconds as number).toFixed(2)} s): ` +
          `Kafka bytes ${mib(kafkaBytes)} vs the row group's ${mib(granule.kafkaBytes)} = ${(kafkaBytes / granule.kafkaBytes).toFixed(2)}× (goal ≤ 1.2×; whole file ${mib(Number(file.fileSizeBytes))}); ` +
          `served ${mib(delta('bytesServed'))} in ${delta('requests') - 1} requests, granule rebuilds ${delta('granuleRebuilds')} full + ${delta('partialGranuleRebuilds')} partial (${delta('granuleRecordHits')} from kept records), whole-file ${delta('rebuilds')}`;
        console.log(line);
        figures.push(line);
      }
    } finally {
      await serve.stop();
    }
  }
}

/**
 * 4c. Every row group's chunk of one column, one after the other through a new service
 * (no cache), vs rebuildFile of the same file (what a file without granules costs).
 * Best of 3 each, alternating.
 */
async function columnScanVsRebuild(table: TableRecord, file: CatalogFile, columns: readonly string[]): Promise<void> {
  const layout = layoutOf(file);
  const size = Number(file.fileSizeBytes);
  const best = { rebuild: Infinity, scans: columns.map(() => Infinity) };
  for (let round = 0; round < 3; round++) {
    // Profiled in the last round only, so the profile does not slow the timed rounds before it.
    const profile = round === 2 ? profiled : <T>(_label: string, work: () => Promise<T>) => work();
    for (const [c, column] of columns.entries()) {
      const leaf = layout.rowGroups[0]!.chunks.findIndex((chunk) => chunk.path === column);
      if (leaf < 0) throw new Error(`no column ${column} in file ${file.dataFileId}`);
      const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
      await drain(service.producer.range(table, file, size - 8, size));
      best.scans[c] = Math.min(best.scans[c]!, await timed(() => profile(`one-column scan (${column}), ${table.format}`, async () => {
        for (const group of layout.rowGroups) await drain(service.producer.range(table, file, group.chunks[leaf]!.start, group.chunks[leaf]!.end));
      })));
    }
    const schema = await schemaVersion(engine.catalog, table.tableId, file.schemaVersion);
    best.rebuild = Math.min(best.rebuild, await timed(() => profile(`whole-file rebuild, ${table.format}`, () => rebuildFile(source, table, file, schema))));
  }
  for (const [c, column] of columns.entries()) {
    const line = `c. ${table.format} file (${mib(size)}, ${layout.rowGroups.length} row groups, ${file.recordCount} rows): one-column scan (${column}) ${s(best.scans[c]!)} vs whole-file rebuild ${s(best.rebuild)} = ${(best.scans[c]! / best.rebuild).toFixed(2)} (goal ≤ 0.33)`;
    console.log(line);
    figures.push(line);
  }
}

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/**
 * 4d. A `serve` process with a 16 MiB cache answers one whole-file GET of the big file:
 * its peak RSS (VmHWM, reset with clear_refs 5 just before) above its RSS before the GET
 * (its base). Twice, each in a new process: the base taken once it answered a footer
 * read (cold: V8's heap has not grown yet, so the peak also holds the heap's own growth),
 * and once it also streamed the file's first two row groups (warm: the base holds a heap
 * grown by the same work, so the difference is what the rest of the file adds).
 */
async function wholeFileMemory(table: TableRecord): Promise<void> {
  const file = await largestFile(table);
  const layout = layoutOf(file);
  const size = Number(file.fileSizeBytes);
  const groupBytes = Math.max(...layout.rowGroups.map((group) => group.chunks.at(-1)!.end - group.chunks[0]!.start));
  for (const warm of [false, true]) {
    const port = servePort + 1;
    const serve = await startServe({ port, args: ['--cache', '16MiB'] });
    try {
      const url = `http://127.0.0.1:${port}/tables/${table.name}/files/${file.dataFileId}.parquet`;
      const fetchRange = (range?: string) =>
        new Promise<number>((resolve, reject) => {
          get(url, { headers: range ? { range } : {} }, (response) => {
            let n = 0;
            response.on('data', (chunk: Buffer) => (n += chunk.length));
            response.on('end', () => resolve(n));
            response.on('error', reject);
          }).on('error', reject);
        });
      await fetchRange(`bytes=${size - 8}-${size - 1}`);
      if (warm) await fetchRange(`bytes=0-${layout.rowGroups[1]!.chunks.at(-1)!.end - 1}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const base = status(serve.child.pid!, 'VmRSS');
      writeFileSync(`/proc/${serve.child.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
      const t = performance.now();
      const got = await fetchRange();
      const ms = performance.now() - t;
      const peak = status(serve.child.pid!, 'VmHWM');
      if (got !== size) throw new Error(`the whole-file GET gave ${got} bytes, the file has ${size}`);
      const line = `d. whole-file GET of ${mib(size)} (${layout.rowGroups.length} row groups of ≤ ${mib(groupBytes)}) in ${s(ms)} (${(size / MiB / (ms / 1000)).toFixed(0)} MiB/s), base ${warm ? 'warm' : 'cold'}: ` +
        `serve's peak RSS ${mib(peak)}, base ${mib(base)}, peak − base ${mib(peak - base)} = ${((peak - base) / groupBytes).toFixed(1)} row groups (goal ≤ 4)`;
      console.log(line);
      figures.push(line);
    } finally {
      await serve.stop();
    }
  }
}

/** 3. Cache-hit serving: the handler alone, then over node:http on loopback (keep-alive). */
async function cacheHitServing(table: TableRecord, file: CatalogFile): Promise<void> {
  const size = Number(file.fileSizeBytes);
  const service = new ReaderService(engine.catalog, source, { cacheBytes: 2 * size });
  const handler = readerHandler(service, { token: 'bench' });
  const path = `/tables/${table.name}/files/${file.dataFileId}.parquet`;
  const headers = { authorization: 'Bearer bench' };
  await bodyBytes((await handler({ method: 'GET', path, headers })).body); // warm the cache
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
    const seconds = (performance.now() - begun) / 1000;
    console.log(`cache-hit serving, ${label}: ${(requests / seconds).toFixed(0)} requests/s, ${(bytes / MiB / seconds).toFixed(0)} MiB/s`);
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
}
