/**
 * The Iceberg catalog's metadata work for a table of many files (issue 28's figures), on
 * the local stack (or KAFKA_BROKERS / DATABASE_URL), in a database of its own:
 *
 *   node --import tsx bench/iceberg.ts [files=10000] [filesPerHour=100]
 *
 * 1. Indexes one real JSON file (100 records), then copies its catalog row (footer,
 *    statistics) `files - 1` times over later offsets, `filesPerHour` per hour: the
 *    catalog of a large table. The copies are never read (their offsets hold no records):
 *    only metadata is measured.
 * 2. Through the read API in this process: the first LoadTable (it cuts the first
 *    snapshot: every file's membership is written), a second one (nothing to cut), the
 *    manifest list (every hour's manifest built, Avro-encoded and hashed: the cold cost),
 *    the list again (manifests from the cache), and one manifest; time and bytes of each.
 *    Then the S3 face's ListObjectsV2 below the table's metadata/, first and again (the
 *    manifests are built by then: the first listing builds the metadata files and hashes).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
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
import { IcebergCatalog } from '../src/iceberg/rest.js';

const fileCount = Number(process.argv[2] ?? 10_000);
const filesPerHour = Number(process.argv[3] ?? 100);
const token = 'bench';

useLocalStackDefaults();
const base = process.env.DATABASE_URL;
if (!base) throw new Error('no catalog: start the local stack (offsetlake stack up) or set DATABASE_URL');
const database = `bench_iceberg_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = new URL(base);
url.pathname = `/${database}`;
const engine = await openEngine({ databaseUrl: url.toString() });
try {
  const topic = `bench-iceberg-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, 1);
  const table = await createTableFromTopic(engine, { name: 'many', topic, format: 'json', settings: resolveSettings({}) });
  const t0 = Date.UTC(2026, 0, 1);
  await produce(engine.kafka, topic, Array.from({ length: 100 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i, text: 'x'.repeat(i) }), timestamp: t0 + i })));
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  // the copies: later offsets (100 per file, as the real one), filesPerHour per hour
  const copied = performance.now();
  await engine.catalog.query(
    `WITH original AS (SELECT * FROM offsetlake.data_file WHERE table_id = $1 LIMIT 1),
     copies AS (
       INSERT INTO offsetlake.data_file (table_id, partition_id, start_offset, end_offset, time_bucket, record_count, file_size_bytes,
         footer_size, footer, sha256, seal_reason, schema_version, encoder_version, source, lease_epoch, page_index)
       SELECT o.table_id, o.partition_id, o.end_offset + (n - 1) * 100, o.end_offset + n * 100, o.time_bucket + ((n / $3) * interval '1 hour'),
              o.record_count, o.file_size_bytes, o.footer_size, o.footer, o.sha256, o.seal_reason, o.schema_version, o.encoder_version, o.source, o.lease_epoch, o.page_index
       FROM original o, generate_series(1, $2::int - 1) AS n
       RETURNING data_file_id)
     INSERT INTO offsetlake.file_column_stats (data_file_id, table_id, column_id, value_count, null_count, nan_count, min_value, max_value, min_value_utf8, max_value_utf8)
     SELECT c.data_file_id, s.table_id, s.column_id, s.value_count, s.null_count, s.nan_count, s.min_value, s.max_value, s.min_value_utf8, s.max_value_utf8
     FROM copies c, offsetlake.file_column_stats s WHERE s.data_file_id = (SELECT data_file_id FROM original)`,
    [table.tableId, fileCount, filesPerHour],
  );
  process.stderr.write(`catalog: ${fileCount} files over ${Math.ceil(fileCount / filesPerHour)} hours in ${Math.round(performance.now() - copied)} ms\n`);

  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 1024 * 1024 * 1024, publishEveryMs: 0 });
  const server = readerServer(readerHandler(service, { token, s3: { bucket: 'offsetlake', credentials: null }, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }) })).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = async (path: string): Promise<{ ms: number; bytes: Buffer }> => {
    const started = performance.now();
    const response = await fetch(`${address}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const bytes = Buffer.from(await response.arrayBuffer());
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${bytes.toString().slice(0, 500)}`);
    return { ms: performance.now() - started, bytes };
  };
  try {
    const loadPath = '/iceberg/v1/offsetlake/namespaces/main/tables/many';
    const first = await get(loadPath);
    const second = await get(loadPath);
    const metadata = JSON.parse(second.bytes.toString()) as { metadata: { snapshots: { 'manifest-list': string }[] } };
    const listPath = new URL(metadata.metadata.snapshots.at(-1)!['manifest-list']).pathname;
    const coldList = await get(listPath);
    const warmList = await get(listPath);
    // one manifest: its path is in the list's records (Avro); find the first m-….avro name in the bytes
    const manifestName = /m--?\d+-\d+-[0-9a-f]{16}\.avro/.exec(warmList.bytes.toString('latin1'))![0];
    const manifest = await get(`/tables/many/metadata/${manifestName}`);
    // the S3 face's ListObjectsV2 below metadata/ (unsigned: this face runs as with --no-auth)
    const listingPath = '/offsetlake?list-type=2&prefix=tables/many/metadata/';
    const listingCold = await get(listingPath);
    const listingWarm = await get(listingPath);
    const figures = {
      files: fileCount,
      hours: Math.ceil(fileCount / filesPerHour),
      loadTableFirst: { ms: Math.round(first.ms), bytes: first.bytes.byteLength, note: 'cuts the first snapshot' },
      loadTableAgain: { ms: Math.round(second.ms), bytes: second.bytes.byteLength },
      manifestListCold: { ms: Math.round(coldList.ms), bytes: coldList.bytes.byteLength, note: 'builds every manifest' },
      manifestListWarm: { ms: Math.round(warmList.ms), bytes: warmList.bytes.byteLength },
      oneManifest: { ms: Math.round(manifest.ms), bytes: manifest.bytes.byteLength, files: filesPerHour },
      metadataListingFirst: { ms: Math.round(listingCold.ms), keys: (listingCold.bytes.toString().match(/<Key>/g) ?? []).length, note: 'builds the metadata files once' },
      metadataListingAgain: { ms: Math.round(listingWarm.ms) },
      manifestsTotalBytes: service.cache.size.bytes,
    };
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    server.closeAllConnections();
    server.close();
    await service.close();
  }
} finally {
  await engine.close();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
