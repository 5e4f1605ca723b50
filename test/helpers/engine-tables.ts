/**
 * The engine tables: one fixture every engine test reads (issue 47's engine matrix).
 *
 * Four topics (json, avro, protobuf, json-schema; two partitions each) written by
 * confluent-kafka from Python (test/helpers/engine_tables.py: schemas registered in the
 * registry, values in the Confluent wire format encoded by fastavro / Google's protobuf /
 * json), with a struct in a struct (`addr.geo.lat`), lists of records, lists of lists, maps,
 * enums, decimals, bytes, nulls, error rows, tombstones and every time type, over four hours
 * of record timestamps, an aborted transaction among them. Each is a table with DEFAULT
 * settings (created before anything is produced), indexed by the local runner in two steps
 * with an Iceberg snapshot cut after the first (so that time travel has an older snapshot),
 * and served on a loopback port with the S3 face and the Iceberg REST catalog. The expected
 * rows come from a read_committed consumer and the same independent decoders, in
 * test/helpers/engine_rows.py's canonical form: `compare(expected, rows)` there says where an
 * engine's rows differ.
 *
 * Expected file (JSON): {"tables": {NAME: {"format", "topic", "columns": [Iceberg names],
 * "maps": [paths of map columns], "rows": [{column: canonical value}], "firstSnapshotRows": n}}}
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { findTable } from '../../src/catalog/tables.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { cutSnapshotIfChanged } from '../../src/iceberg/snapshots.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import type { Engine } from '../../src/runtime/engine.js';
import { schemaRegistry } from '../../src/schema/registry.js';
import { resolveSettings, type TableFormat } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from './engine.js';
import { listeningReader } from './reader-server.js';

/** The four formats, and each one's table name. */
export const engineTableNames = { json: 'eng_json', avro: 'eng_avro', protobuf: 'eng_protobuf', 'json-schema': 'eng_json_schema' } as const;
export type EngineFormat = keyof typeof engineTableNames;

/** The first hour of record timestamps (records fill it and the three after it). */
export const engineT0 = Date.UTC(2026, 10, 2, 9, 0);
const hour = 3_600_000;

export interface EngineTables {
  engine: Engine;
  /** The Iceberg REST catalog's URI (`http://127.0.0.1:PORT/iceberg`), warehouse `offsetlake`, namespace `main`. */
  catalogUri: string;
  /** The bearer token of the catalog and the HTTP face. */
  token: string;
  /** The S3 face: endpoint `http://127.0.0.1:PORT` (path style), its bucket, region and key pair. */
  s3: { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string };
  /** Table name by format. */
  tables: Record<EngineFormat, string>;
  /** The expected rows (the opening of this module says its shape). */
  expectedFile: string;
  /** A window inside one hour (the third): [from, to) in epoch ms, for a filtered read. */
  window: { from: number; to: number };
  /** Stops the server, drops the catalog, removes the expected file. */
  stop(): Promise<void>;
}

const script = fileURLToPath(new URL('./engine_tables.py', import.meta.url));

function python(command: string, job: unknown, timeoutMs = 180_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [script, command], { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs }, (error, stdout, stderr) =>
      (error ? reject(new Error(`engine_tables.py ${command} failed: ${stderr.slice(-4000) || error.message}`)) : resolve(stdout)));
    child.stdin!.end(JSON.stringify(job));
  });
}

/**
 * Makes, indexes and serves the engine tables; writes the expected rows. `credentials`: the
 * token and S3 key pair serve takes (a test that runs a documented configuration as written
 * gives the documentation's).
 */
export async function startEngineTables(credentials: { token?: string; accessKeyId?: string; secretAccessKey?: string } = {}): Promise<EngineTables> {
  const engine = await testEngine('engines');
  const work = mkdtempSync(join(tmpdir(), 'offsetlake-engines-'));
  const token = credentials.token ?? 'engines-token';
  const s3 = { bucket: 'offsetlake', region: 'us-east-1', accessKeyId: credentials.accessKeyId ?? 'engines-reader', secretAccessKey: credentials.secretAccessKey ?? 'engines/s3cret+key' };
  try {
    const formats = Object.keys(engineTableNames) as EngineFormat[];
    const topics = {} as Record<EngineFormat, string>;
    const tableIds = {} as Record<EngineFormat, bigint>;
    for (const format of formats) {
      topics[format] = await newTopic(engine, 2, `engines-${format}`);
      // default settings: what a user gets (only the format named)
      const created = await createTableFromTopic(engine, { name: engineTableNames[format], topic: topics[format], format: format as TableFormat, settings: resolveSettings({}) });
      tableIds[format] = created.tableId;
    }
    const brokers = engine.config.kafkaBrokers.join(',');
    const registry = engine.config.schemaRegistryUrl;
    const job = { brokers, registry, topics, t0: engineT0, state: join(work, 'schema-ids.json') };
    const index = () => new LocalRunner(engine, rangeBuilder(engine.catalog, schemaRegistry(registry)), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    const ends = async (format: EngineFormat) => {
      const rows = await engine.catalog.query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [tableIds[format]]);
      return Object.fromEntries(rows.rows.map((r) => [r.partition_id, String(r.indexed_end)]));
    };
    // part 1 (hours 0 and 1, and an aborted transaction), indexed, a snapshot cut; then part 2 (hours 2 and 3)
    await python('produce', { ...job, part: 1 });
    await index();
    const firstEnds = {} as Record<EngineFormat, Record<string, string>>;
    for (const format of formats) {
      firstEnds[format] = await ends(format);
      await cutSnapshotIfChanged(engine.catalog, tableIds[format], { intervalMs: 0, maxSnapshots: 100 });
    }
    await python('produce', { ...job, part: 2 });
    await index();
    const expectedFile = join(work, 'expected.json');
    const tables = {} as Record<string, unknown>;
    for (const format of formats) {
      const table = await findTable(engine.catalog, engineTableNames[format]);
      tables[table.name] = { format, topic: topics[format], ends: await ends(format), firstEnds: firstEnds[format] };
    }
    await python('dump', { brokers, registry, tables, out: expectedFile });

    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
    const face = { bucket: s3.bucket, region: s3.region, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } };
    const reader = await listeningReader(readerHandler(service, { token, s3: { bucket: s3.bucket, credentials: face.credentials }, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, face) }));
    return {
      engine,
      catalogUri: `${reader.url}/iceberg`,
      token,
      s3: { ...s3, endpoint: reader.url },
      tables: { ...engineTableNames },
      expectedFile,
      window: { from: engineT0 + 2 * hour + 10 * 60_000, to: engineT0 + 2 * hour + 40 * 60_000 },
      async stop() {
        await reader.stop();
        await engine.close();
        rmSync(work, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await engine.close();
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}
