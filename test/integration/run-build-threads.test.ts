/**
 * `run --build-threads N` builds each sealed range's files on worker threads (the CLI's
 * bundle, as a user runs it). The same topic indexed into two catalogs, once on the
 * thread that reads Kafka and once on two workers, must give the same files: offsets,
 * buckets, statistics, footers, checksums, granules and index entries; and the workers'
 * table passes the audit against an independent read_committed consumer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { findGranulesOf, listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { runCli } from '../helpers/cli.js';
import { auditTable } from '../helpers/table-audit.js';

let onThread: Engine;
let onWorkers: Engine;
let topic: string;
const records = 6_000;

beforeAll(async () => {
  [onThread, onWorkers] = await Promise.all([testEngine('thread'), testEngine('workers')]);
  topic = await newTopic(onThread, 2, 'buildthreads');
  // before any record: a new table starts at the LSO, so `run` indexes all of them
  for (const engine of [onThread, onWorkers]) {
    const create = await runCli(engine.config.databaseUrl, ['table', 'create', 'clicks', '--topic', topic, '--file_window', '1h', '--row_group_rows', '500', '--index', 'by_key (_key) USING BLOOM']);
    expect(create.code, create.stderr).toBe(0);
  }
  // three hours of timestamps jittered across the boundaries, values that are JSON and some that are not, headers
  const hour = Date.UTC(2026, 10, 30, 9);
  const values = Array.from({ length: records }, (_, i) => ({
    key: `k${i % 97}`,
    value: i % 41 === 0 ? `not json ${i}` : JSON.stringify({ i, page: `/p/${i % 13}`, ms: (i * 7) % 1000, tags: [i % 3, i % 5] }),
    headers: i % 4 === 0 ? ([['source', `s${i % 3}`]] as [string, string][]) : [],
    partition: i % 2,
    timestamp: hour + Math.floor((i / records) * 3 * 3_600_000) + ((i * 7919) % 4_000) - 2_000,
  }));
  await produce(onThread.kafka, topic, values, { transactionalId: `buildthreads-${topic}` });
}, 120_000);

afterAll(async () => {
  await Promise.all([onThread?.close(), onWorkers?.close()]);
});

/** Every file of the catalog's one table, as the catalog holds it, in offset order. */
async function catalogFiles(engine: Engine) {
  const table = await findTable(engine.catalog, 'clicks');
  const files = await listFiles(engine.catalog, table.tableId);
  const granules = await findGranulesOf(engine.catalog, files.map((f) => f.dataFileId));
  const entries = await engine.catalog.query<{ data_file_id: string; scope: string; part: number; payload: Buffer }>(
    'SELECT data_file_id::text, scope::text, part, payload FROM offsetlake.index_entry ORDER BY data_file_id, scope, part',
  );
  return files
    .map((f) => ({
      partition: f.partition, startOffset: f.startOffset, endOffset: f.endOffset, bucket: f.bucket.toISOString(), records: f.recordCount, size: f.fileSizeBytes,
      sealReason: f.sealReason, encoder: f.encoderVersion, sha256: f.sha256.toString('hex'), footer: f.footer.toString('hex'),
      columns: f.columns.map((c) => [c.columnName, c.valueCount, c.nullCount, c.nanCount, c.min, c.max]),
      granules: granules.get(f.dataFileId)?.granules.map((g) => [g.startOffset, g.endOffset, g.rowCount, g.kafkaBytes, Buffer.from(g.chunkSha256).toString('hex')]),
      entries: entries.rows.filter((e) => e.data_file_id === f.dataFileId.toString()).map((e) => [e.scope, e.part, e.payload.toString('hex')]),
    }))
    .sort((a, b) => a.partition - b.partition || Number(a.startOffset - b.startOffset) || a.bucket.localeCompare(b.bucket));
}

describe('run --build-threads', () => {
  it('two build workers make the same files as the thread that reads Kafka (offsets, buckets, statistics, footers, checksums, granules, index entries), and every committed record is in exactly one of them', async () => {
    for (const [engine, threads] of [[onThread, '0'], [onWorkers, '2']] as const) {
      const run = await runCli(engine.config.databaseUrl, ['run', '--once', '--build-threads', threads, '--json']);
      expect(run.code, run.stderr).toBe(0);
    }
    const [thread, workers] = await Promise.all([catalogFiles(onThread), catalogFiles(onWorkers)]);
    expect(thread.length).toBeGreaterThan(4);
    expect(new Set(thread.map((f) => f.bucket)).size).toBeGreaterThanOrEqual(3);
    expect(thread.every((f) => f.entries.length > 0)).toBe(true);
    expect(workers).toEqual(thread);
    const audit = await auditTable(onWorkers, await findTable(onWorkers.catalog, 'clicks'));
    expect(audit.problems).toEqual([]);
    expect([audit.committed, audit.indexed, audit.lost, audit.duplicated]).toEqual([records, records, 0, 0]);
    expect(audit.filesRebuilt).toBe(thread.length);
  }, 240_000);

  it('a --build-threads that is not a whole number from 0 to 256 is refused, naming the flag', async () => {
    const run = await runCli(onThread.config.databaseUrl, ['run', '--once', '--build-threads', 'many']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--build-threads must be a whole number from 0 \(build on the thread that reads Kafka\) to 256, got "many"/);
  });
});
