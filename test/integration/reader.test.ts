/**
 * The HTTP read API against the real broker and Postgres: an engine no one here wrote
 * (pyarrow through fsspec's HTTP filesystem, run as a child process) reads the served
 * files; HEAD, ranges, 410, 416, auth, bad input and rebuild mismatches each tested.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findGranules, listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { fileLayout } from '../../src/parquet/index.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { bodyBytes, readerHandler, type ReaderHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

const run = promisify(execFile);
const token = 'reader-test-token';
const auth = { authorization: `Bearer ${token}` };

let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
let service: ReaderService;
let handler: ReaderHandler;
let reader: ListeningReader | undefined;
let base: string;

beforeAll(async () => {
  engine = await testEngine('reader');
  const topic = await newTopic(engine, 2, 'reader');
  const created = await createTableFromTopic(engine, { name: 'events', topic, format: 'json', settings: resolveSettings({ file_window: '10m', granularity: 'hour' }) });
  const t0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;
  for (let i = 0; i < 6; i += 1) {
    const records = Array.from({ length: 25 }, (_, j) => ({
      key: j % 4 === 0 ? null : `key-${i}-${j}`,
      value: j === 3 ? 'not json' : JSON.stringify({ i, j, text: 'ü✓'.repeat(j) }),
      headers: j % 3 === 0 ? ([['h', `v${j}`]] as [string, string][]) : [],
      partition: j % 2,
      timestamp: t0 + i * 20 * 60_000 + j * 1000,
    }));
    await produce(engine.kafka, topic, records, { transactionalId: `reader-${topic}`, abort: i === 2 });
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
  files = await listFiles(engine.catalog, table.tableId);
  // The tests below change the catalog between requests (expire a file, break a checksum):
  // this service asks it every time instead of remembering records for a few seconds.
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024, records: { ttlMs: 0 } });
  handler = readerHandler(service, { token });
  reader = await listeningReader(handler);
  base = reader.url;
}, 120_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

const path = (file: CatalogFile) => `/tables/events/files/${file.dataFileId}.parquet`;
const get = (p: string, headers: Record<string, string> = {}, method = 'GET') => fetch(base + p, { method, headers: { ...auth, ...headers } });

describe('the read API over HTTP', () => {
  it('pyarrow reads every served file over HTTP and gets exactly the rows a read_committed consumer sees', async () => {
    expect(files.length).toBeGreaterThan(2);
    const script = fileURLToPath(new URL('./reader_pyarrow.py', import.meta.url));
    const { stdout } = await run('python3', [script, base, token, 'events'], { maxBuffer: 64 * 1024 * 1024 }).catch((error: Error & { stderr?: string }) => {
      throw new Error(`pyarrow reader failed (pip install pyarrow fsspec aiohttp requests): ${error.stderr ?? error.message}`);
    });
    const read = JSON.parse(stdout) as { rows: { partition: number; offset: string; timestamp: number; key: string | null; value: string | null; headers: [string, string | null][] }[]; sizes: Record<string, number> };
    for (const file of files) expect(read.sizes[file.dataFileId.toString()]).toBe(Number(file.fileSizeBytes));

    const partitions = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
      'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
    const expected: typeof read.rows = [];
    for (const p of partitions.rows) {
      const [committed] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic: table.topic, partition: p.partition_id, start: p.indexed_start, end: p.indexed_end }]);
      for (const r of committed!) {
        const text = r.value ? Buffer.from(r.value).toString('utf8') : null;
        expected.push({
          partition: p.partition_id,
          offset: r.offset.toString(),
          timestamp: r.timestamp,
          key: r.key ? Buffer.from(r.key).toString('hex') : null,
          value: text === 'not json' ? null : text,
          headers: r.headers.map(([k, v]) => [k, v ? Buffer.from(v).toString('hex') : null]),
        });
      }
    }
    expect(expected.length).toBe(125); // 5 committed transactions of 25; the aborted one is nowhere
    const sort = (rows: typeof read.rows) => rows.map(({ partition, offset, timestamp, key, value, headers }) => ({ partition, offset, timestamp, key, value, headers }))
      .sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
    expect(sort(read.rows)).toEqual(sort(expected));
  }, 120_000);

  it('HEAD gives the size, Accept-Ranges and the sha256 as ETag without reading Kafka', async () => {
    const file = files[0]!;
    const before = service.metrics;
    const response = await get(path(file), {}, 'HEAD');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(file.fileSizeBytes));
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(response.headers.get('etag')).toBe(`"${file.sha256.toString('hex')}"`);
    expect(service.metrics.rebuilds).toBe(before.rebuilds);
    expect(service.metrics.kafkaRecords).toBe(before.kafkaRecords);
  });

  it('the footer range and the 8-byte tail come from Postgres without touching Kafka', async () => {
    const file = files[1]!;
    const size = Number(file.fileSizeBytes);
    const fresh = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
    const local = readerHandler(fresh, { token: null });
    const tail = await local({ method: 'GET', path: path(file), headers: { range: 'bytes=-8' } });
    expect(tail.status).toBe(206);
    expect(tail.headers['content-range']).toBe(`bytes ${size - 8}-${size - 1}/${size}`);
    expect(Buffer.from(await bodyBytes(tail.body)).subarray(4).toString('latin1')).toBe('PAR1');
    expect(Buffer.from(await bodyBytes(tail.body)).readUInt32LE(0)).toBe(file.footer.byteLength - 8);
    const footer = await local({ method: 'GET', path: path(file), headers: { range: `bytes=${size - file.footer.byteLength}-` } });
    expect(footer.status).toBe(206);
    expect(Buffer.from(await bodyBytes(footer.body)).equals(file.footer)).toBe(true);
    expect(fresh.metrics).toMatchObject({ rebuilds: 0, kafkaRecords: 0, footerHits: 2 });
  });

  it('single, open and suffix ranges give 206 with Content-Range and the rebuilt bytes; the second read takes its chunks from the cache', async () => {
    const file = files[2]!;
    const size = Number(file.fileSizeBytes);
    const whole = (await rebuildFile(kafkaSource(engine.kafka), table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion))).bytes;
    const full = await get(path(file));
    expect(full.status).toBe(200);
    expect(Buffer.from(await full.arrayBuffer()).equals(Buffer.from(whole))).toBe(true);
    const hits = service.metrics.chunkCacheHits;
    for (const [range, start, end] of [['bytes=10-99', 10, 100], ['bytes=100-', 100, size], ['bytes=-300', size - 300, size], [`bytes=0-${size + 50}`, 0, size]] as const) {
      const response = await get(path(file), { range });
      expect(response.status, range).toBe(206);
      expect(response.headers.get('content-range')).toBe(`bytes ${start}-${end - 1}/${size}`);
      expect(response.headers.get('content-length')).toBe(String(end - start));
      expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(whole.subarray(start, end))), range).toBe(true);
    }
    expect(service.metrics.chunkCacheHits).toBeGreaterThan(hits);
  });


  it('reads of different columns of one row group, at once or one after the other, read its offsets from Kafka once, and give the rebuilt bytes', async () => {
    const file = files[1]!;
    const whole = (await rebuildFile(kafkaSource(engine.kafka), table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion))).bytes;
    const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
    if ('problem' in layout) throw new Error(layout.problem);
    const chunk = (path: string) => layout.rowGroups[0]!.chunks.find((c) => c.path === path)!;
    const granule = (await findGranules(engine.catalog, file.dataFileId))!.granules[0]!;
    const fresh = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
    const read = async (service: ReaderService, place: { start: number; end: number }) => {
      const bytes = await bodyBytes(service.producer.range(table, file, place.start, place.end));
      expect(Buffer.from(bytes).equals(Buffer.from(whole.subarray(place.start, place.end)))).toBe(true);
    };
    await Promise.all([read(fresh, chunk('_offset')), read(fresh, chunk('_value'))]);
    await read(fresh, chunk('_timestamp'));
    expect(fresh.metrics.kafkaBytes).toBe(granule.kafkaBytes);
    expect(fresh.metrics.partialGranuleRebuilds).toBe(3);
    // one read joined the other's Kafka read, the third took the kept records
    expect(fresh.metrics.granuleRecordHits).toBe(2);
    // Without room for the records, each read goes to Kafka: the budget bounds what is kept.
    const small = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 0 });
    for (const path of ['_offset', '_value']) await read(small, chunk(path));
    expect(small.metrics.kafkaBytes).toBe(2 * granule.kafkaBytes);
    expect(small.metrics.granuleRecordHits).toBe(0);
  });
  it('416 for unsatisfiable ranges, with Content-Range: bytes */size and a reason', async () => {
    const file = files[0]!;
    const size = Number(file.fileSizeBytes);
    for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=-0', 'bytes=9-2']) {
      const response = await get(path(file), { range });
      expect(response.status, range).toBe(416);
      expect(response.headers.get('content-range')).toBe(`bytes */${size}`);
      expect(((await response.json()) as { error: string }).error).toMatch(/Range/);
    }
  });

  it('a Range of another unit, one that cannot be parsed, or several ranges is ignored: 200 with the whole file (RFC 9110 §14.2)', async () => {
    const file = files[0]!;
    for (const range of ['items=0-9', 'bytes=a-b', 'bytes=-', 'bytes=0-1,5-9']) {
      const response = await get(path(file), { range });
      expect(response.status, range).toBe(200);
      expect(response.headers.get('content-range'), range).toBeNull();
      expect((await response.arrayBuffer()).byteLength, range).toBe(Number(file.fileSizeBytes));
    }
  });

  it('remembers table and file records for their ttl: an engine\'s footer and chunk requests of every file take four catalog queries in all, and an expiry is seen once the ttl has passed', async () => {
    let queries = 0;
    const counted = new Proxy(engine.catalog, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return (...args: Parameters<typeof target.query>) => {
          queries += 1;
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      },
    });
    const ttlMs = 1_500;
    const own = readerHandler(new ReaderService(counted, kafkaSource(engine.kafka), { records: { ttlMs }, publishEveryMs: 0 }), { token: null });
    const ask = (file: CatalogFile, range: string) => own({ method: 'GET', path: path(file), headers: { range } });
    const withGranules = files.filter((f) => f.hasGranules).sort((a, b) => (a.dataFileId < b.dataFileId ? -1 : 1));
    expect(withGranules.length).toBeGreaterThan(2);
    expect(new Set(withGranules.map((f) => f.schemaVersion)).size).toBe(1);
    for (const file of withGranules) {
      // as DuckDB reads a file: its footer, then a column chunk of its first row group
      const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
      if ('problem' in layout) throw new Error(layout.problem);
      const chunk = layout.rowGroups[0]!.chunks[0]!;
      const footer = await ask(file, `bytes=-${file.footer.byteLength + 8}`);
      const bytes = await ask(file, `bytes=${chunk.start}-${chunk.end - 1}`);
      expect([footer.status, bytes.status], `file ${file.dataFileId}`).toEqual([206, 206]);
      expect((await bodyBytes(bytes.body)).byteLength).toBe(chunk.end - chunk.start);
    }
    // the table; the files (one batch); their page indexes and granules (one batch, one
    // query); the schema version. Asked each time, it was five per file.
    expect(queries).toBe(4);
    const last = withGranules.at(-1)!;
    await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = now() WHERE data_file_id = $1', [last.dataFileId]);
    try {
      await new Promise((resolve) => setTimeout(resolve, ttlMs + 200));
      expect((await ask(last, 'bytes=-8')).status).toBe(410);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = NULL WHERE data_file_id = $1', [last.dataFileId]);
    }
  });

  it('an expired file is 410 Gone, for HEAD and GET', async () => {
    const file = files[files.length - 1]!;
    await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = now() WHERE data_file_id = $1', [file.dataFileId]);
    try {
      const response = await get(path(file));
      expect(response.status).toBe(410);
      expect(((await response.json()) as { error: string }).error).toMatch(/expired at .*Kafka no longer holds its offsets/);
      expect((await get(path(file), {}, 'HEAD')).status).toBe(410);
      expect((await get(path(file), { range: 'bytes=-8' })).status).toBe(410);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.data_file SET expired_at = NULL WHERE data_file_id = $1', [file.dataFileId]);
    }
  });

  it('a file without granules whose rebuild does not match the catalog is a 500 naming the difference, counted, and no bytes', async () => {
    const file = files[3]!;
    const original = file.sha256;
    // A file indexed before granules existed is rebuilt whole and checked against size, footer and sha256.
    const pageIndex = (await engine.catalog.query<{ page_index: Buffer }>('SELECT page_index FROM offsetlake.data_file WHERE data_file_id = $1', [file.dataFileId])).rows[0]!.page_index;
    await engine.catalog.query('UPDATE offsetlake.data_file SET sha256 = $2, page_index = NULL WHERE data_file_id = $1', [file.dataFileId, Buffer.alloc(32, 7)]);
    try {
      const before = service.metrics.mismatches;
      const response = await get(path(file), { range: 'bytes=0-3' });
      expect(response.status).toBe(500);
      const body = (await response.json()) as { error: string };
      expect(body.error).toMatch(new RegExp(`file ${file.dataFileId} rebuilt from Kafka does not match the catalog: sha256 ${original.toString('hex')}, the catalog has 0707`));
      expect(body.error).toMatch(/the bytes were not served/);
      expect(service.metrics.mismatches).toBe(before + 1);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.data_file SET sha256 = $2, page_index = $3 WHERE data_file_id = $1', [file.dataFileId, original, pageIndex]);
    }
  });

  it('a column chunk whose rebuild does not match its checksum is a 500 naming the file, row group and column, counted, and no bytes', async () => {
    const file = files[4]!;
    const fresh = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
    const local = readerHandler(fresh, { token: null });
    const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
    if ('problem' in layout) throw new Error(layout.problem);
    const leaf = layout.rowGroups[0]!.chunks.findIndex((chunk) => chunk.path === '_key');
    const chunk = layout.rowGroups[0]!.chunks[leaf]!;
    const granule = await engine.catalog.query<{ chunk_sha256: Buffer }>('SELECT chunk_sha256 FROM offsetlake.granule WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId]);
    const original = granule.rows[0]!.chunk_sha256;
    const corrupt = Buffer.from(original);
    corrupt.fill(7, leaf * 32, leaf * 32 + 32);
    await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = $2 WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId, corrupt]);
    try {
      const response = await local({ method: 'GET', path: path(file), headers: { range: `bytes=${chunk.start}-${chunk.end - 1}` } });
      expect(response.status).toBe(500);
      const body = JSON.parse(Buffer.from(await bodyBytes(response.body)).toString()) as { error: string };
      expect(body.error).toBe(`file ${file.dataFileId}, row group 0, column _key: rebuilt from Kafka, it does not match the catalog (sha256 differs); the bytes were not served`);
      expect(fresh.metrics.chunkMismatches).toBe(1);
      expect(fresh.metrics.bytesServed).toBe(0);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = $2 WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId, original]);
    }
  });

  it('a bearer token is required unless authentication is turned off', async () => {
    const noHeader = await fetch(`${base}/tables`);
    expect(noHeader.status).toBe(401);
    expect(noHeader.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await noHeader.json()) as { error: string }).error).toMatch(/bearer token/);
    expect((await fetch(`${base}/tables`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${base}/tables`, { headers: { authorization: `Basic ${token}` } })).status).toBe(401);
    const ok = await get('/tables');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ tables: [{ name: 'events', topic: table.topic, format: 'json', files: '/tables/events/files' }] });
    const open = readerHandler(service, { token: null });
    expect((await open({ method: 'GET', path: '/tables', headers: {} })).status).toBe(200);
  });

  it('the manifest lists offsets (decimal strings), bucket and times (RFC 3339), sizes and counts (numbers) and statistics for planners', async () => {
    const response = await get('/tables/events/files');
    const manifest = (await response.json()) as { files: { id: string; startOffset: string; endOffset: string; bucket: string; sizeBytes: number; footerBytes: number; records: number; columns: { name: string; min: string | null; max: string | null }[] }[] };
    expect(manifest.files.map((f) => f.id)).toEqual(files.map((f) => f.dataFileId.toString()));
    const first = manifest.files[0]!;
    expect(first).toMatchObject({ startOffset: files[0]!.startOffset.toString(), endOffset: files[0]!.endOffset.toString(), bucket: files[0]!.bucket.toISOString(), sizeBytes: Number(files[0]!.fileSizeBytes), footerBytes: files[0]!.footer.byteLength, records: Number(files[0]!.recordCount) });
    const offsets = files[0]!.columns.find((c) => c.columnName === '_offset')!;
    expect(first.columns.find((c) => c.name === '_offset')).toEqual({ name: '_offset', valueCount: Number(offsets.valueCount), nullCount: 0, nanCount: 0, min: offsets.min, max: offsets.max });
    expect(first).toMatchObject({ createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) });
  });

  it('bad paths, ids, methods and invalid ranges get 4xx with a reason', async () => {
    const file = files[0]!;
    const cases: [string, Record<string, string>, string, number, RegExp][] = [
      ['/tables/Bad!Name/files', {}, 'GET', 400, /^table name "Bad!Name" must start with a lowercase letter or _/],
      ['/tables/nope/files', {}, 'GET', 404, /no table named "nope"/],
      ['/tables/events/files/abc.parquet', {}, 'GET', 400, /not a file name/],
      ['/tables/events/files/12.csv', {}, 'GET', 400, /not a file name/],
      ['/tables/events/files/99999999.parquet', {}, 'GET', 404, /has no file 99999999/],
      [path(file), { range: 'bytes=9-3' }, 'GET', 416, /ends \(3\) before it starts \(9\)/],
      [path(file), {}, 'DELETE', 405, /DELETE is not allowed/],
      ['/tables', {}, 'POST', 405, /POST is not allowed on \/tables; use GET, HEAD/],
      ['/nothing/here', {}, 'GET', 404, /no such path: \/nothing\/here \(paths: .*\/metrics\)/],
      ['/tables/%E0%A4%A/files', {}, 'GET', 400, /percent-encoding/],
    ];
    for (const [p, headers, method, status, reason] of cases) {
      const response = await get(p, headers, method);
      expect(response.status, `${method} ${p} ${JSON.stringify(headers)}`).toBe(status);
      expect(((await response.json()) as { error: string }).error).toMatch(reason);
    }
  });

  it('behind a Lambda function URL in BUFFERED mode: same answers, base64 bodies, reads larger than one response refused with a reason to use ranges, and Iceberg locations named by the function URL\'s domain, not the Host sent', async () => {
    const limited = readerHandler(service, { token, maxBodyBytes: 100 });
    const file = files[0]!;
    const whole = await limited({ method: 'GET', path: path(file), headers: auth });
    expect(whole.status).toBe(413);
    expect(JSON.parse(Buffer.from(await bodyBytes(whole.body)).toString()).error).toMatch(/more than the 100 .*read it with Range requests/);
    expect((await limited({ method: 'GET', path: path(file), headers: { ...auth, range: 'bytes=0-199' } })).status).toBe(413);
    expect((await limited({ method: 'GET', path: path(file), headers: { ...auth, range: 'bytes=0-99' } })).status).toBe(206);

    const saved = { DATABASE_URL: process.env.DATABASE_URL, KAFKA_BROKERS: process.env.KAFKA_BROKERS, OFFSETLAKE_TOKEN: process.env.OFFSETLAKE_TOKEN };
    process.env.DATABASE_URL = engine.config.databaseUrl;
    process.env.KAFKA_BROKERS = engine.config.kafkaBrokers.join(',');
    process.env.OFFSETLAKE_TOKEN = token;
    const { bufferedHandler: lambda } = await import('../../functions/reader/index.js');
    const { lambdaServices } = await import('../../functions/runtime.js');
    try {
      const result = await lambda({ rawPath: path(file), headers: { ...auth, range: 'bytes=-8' }, requestContext: { http: { method: 'GET' } } });
      expect(result).toMatchObject({ statusCode: 206, isBase64Encoded: true });
      expect(Buffer.from(result.body, 'base64').subarray(4).toString('latin1')).toBe('PAR1');
      const denied = await lambda({ rawPath: '/tables', requestContext: { http: { method: 'GET' } } });
      expect(denied.statusCode).toBe(401);
      // The Iceberg catalog names files by the function URL's domain (AWS routed the request by it), never by the Host sent.
      const domainName = 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws';
      const loaded = await lambda({ rawPath: `/iceberg/v1/offsetlake/namespaces/main/tables/${table.name}`, headers: { ...auth, host: 'evil.example', 'x-forwarded-proto': 'http' }, requestContext: { http: { method: 'GET' }, domainName } });
      expect(loaded.statusCode).toBe(200);
      const answer = Buffer.from(loaded.body, 'base64').toString();
      expect((JSON.parse(answer) as { metadata: { location: string } }).metadata.location).toBe(`https://${domainName}/tables/${table.name}`);
      expect(answer).not.toContain('evil.example');
    } finally {
      const { catalog, kafka } = await lambdaServices();
      await Promise.allSettled([catalog.end(), kafka.close()]);
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
