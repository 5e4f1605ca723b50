/**
 * A standalone index's backfill (src/index-backfill) against the real broker and
 * Postgres: states in order while records keep being produced and indexed, entries
 * byte-identical to those indexing gives when the index existed from the start, a driver
 * SIGKILLed mid-backfill resumed by another, two drivers at once, a file Kafka no longer
 * holds skipped, and the local runner driving indexes that are not active.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/catalog/db.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { deleteIndex, insertIndex, indexById } from '../../src/catalog/indexes.js';
import type { TableRecord } from '../../src/table/record.js';
import type { IndexDefinition, IndexState } from '../../src/indexes/definition.js';
import { runIndexBackfill, type IndexBackfillStep } from '../../src/index-backfill/index.js';
import { indexReports } from '../../src/catalog/indexes.js';
import { indexerFor, type IndexerRuntime } from '../../src/indexer/handler.js';
import { produce } from '../../src/kafka/produce.js';
import { kafkaSource, type CommittedSource } from '../../src/kafka/source.js';
import { claimIndexBackfill, IndexBackfillLeaseLostError, lockOwnedIndex } from '../../src/catalog/index-backfill.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { checkFiles } from '../../src/cli/check.js';
import type { Engine } from '../../src/runtime/engine.js';
import { pause } from '../../src/common/retry.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';

let engine: Engine;
let runtime: IndexerRuntime;
beforeAll(async () => {
  engine = await testEngine('indexbackfill');
  runtime = testRuntime(engine, 'live-index-backfill');
});
afterAll(async () => {
  for (const indexer of runtime.indexers.values()) await indexer.release().catch(() => {});
  await engine.close();
});

const t0 = Date.now() - 30 * 60_000;
const settings = { row_group_rows: '10', file_window: '1h', lease_ttl: '2s' };
let produced = 0;
let transactions = 0;

/** One committed transaction of `n` records over both partitions, and an aborted one beside it (its records must never be indexed). */
async function produceRound(topic: string, n: number): Promise<void> {
  const records = (user: string) => Array.from({ length: n }, (_, i) => ({
    partition: (produced + i) % 2, key: `k${produced + i}`, value: JSON.stringify({ user: `${user}${(produced + i) % 13}`, n: produced + i }), timestamp: t0 + (produced + i) * 10,
  }));
  transactions += 1;
  await produce(engine.kafka, topic, records('aborted'), { transactionalId: `ib-abort-${transactions}`, abort: true });
  await produce(engine.kafka, topic, records('u'), { transactionalId: `ib-commit-${transactions}` });
  produced += n;
}

/** Indexes what is committed of every partition of each table and commits it (one range per partition and table). */
async function indexRound(...tables: TableRecord[]): Promise<void> {
  for (const table of tables) {
    for (const partition of [0, 1]) {
      const indexer = await indexerFor(runtime, table, partition);
      await indexer.advance();
      await indexer.flush();
    }
  }
}

function postings(table: TableRecord, name: string, state: IndexState): Promise<IndexDefinition> {
  return inTransaction(engine.catalog, (client) => insertIndex(client, table.name, {
    tableId: table.tableId, name, kind: 'postings', columns: [{ kind: 'json', path: ['user'] }], scope: 'history', granuleRows: 20,
    falsePositiveRate: null, postingBuckets: 16, state,
  }));
}

/** Each live file's index entries, keyed by what identifies the file's contents in either table. */
async function entriesByFile(table: TableRecord, indexId: bigint): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const file of await listFiles(engine.catalog, table.tableId)) {
    const rows = await engine.catalog.query<{ scope: string; part: number; payload: Buffer }>(
      'SELECT scope, part, payload FROM offsetlake.index_entry WHERE index_id = $1 AND data_file_id = $2 ORDER BY scope, part',
      [indexId, file.dataFileId],
    );
    const key = `${file.partition}:${file.startOffset}-${file.endOffset}@${file.bucket.toISOString()} ${Buffer.from(file.sha256).toString('hex')}`;
    out.set(key, rows.rows.map((row) => `${row.scope}/${row.part}/${row.payload.toString('hex')}`).join(' '));
  }
  return out;
}

async function liveFilesWithoutHeader(table: TableRecord, indexId: bigint): Promise<bigint[]> {
  const rows = await engine.catalog.query<{ data_file_id: bigint }>(
    `SELECT data_file_id FROM offsetlake.data_file f WHERE table_id = $1 AND expired_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM offsetlake.index_entry e WHERE e.index_id = $2 AND e.part = -1 AND e.data_file_id = f.data_file_id)`,
    [table.tableId, indexId],
  );
  return rows.rows.map((row) => BigInt(row.data_file_id));
}

/** A table over a new topic with `rounds` rounds of 40 records indexed (one file per partition each), and a declared index on it. */
async function declaredOnIndexedTable(name: string, rounds: number): Promise<{ topic: string; table: TableRecord; files: number; index: IndexDefinition }> {
  const topic = await newTopic(engine, 2, name);
  const table = await testTable(engine, topic, settings);
  for (let round = 0; round < rounds; round += 1) {
    await produceRound(topic, 40);
    await indexRound(table);
  }
  const files = (await listFiles(engine.catalog, table.tableId)).length;
  return { topic, table, files, index: await postings(table, 'by_user', 'declared') };
}

const source = () => kafkaSource(engine.kafka);

describe('a standalone index backfill', () => {
  it('moves declared → building → backfilling → catching_up → active one step at a time while a transactional producer (aborts too) writes and live indexing commits after every step; every file of the table rebuilds meanwhile; every live file ends with entries byte-identical to those of a twin table whose index was active from the start', async () => {
    const topic = await newTopic(engine, 2, 'ib-states');
    const table = await testTable(engine, topic, settings);
    const twin = await testTable(engine, topic, settings);
    const twinIndex = await postings(twin, 'by_user', 'active');
    for (let round = 0; round < 6; round += 1) {
      await produceRound(topic, 60);
      await indexRound(table, twin);
    }
    const index = await postings(table, 'by_user', 'declared');

    const states: (IndexState | null)[] = [];
    const steps: IndexBackfillStep[] = [];
    let liveRounds = 0;
    for (let i = 0; i < 100; i += 1) {
      const run = await runIndexBackfill({ catalog: engine.catalog, source: source(), owner: 'driver-states', progress: (step) => steps.push(step) }, index.indexId, { chunkFiles: 2, maxSteps: 1 });
      states.push(run.state);
      if (run.done) break;
      // The table stays writable and readable: new records are indexed (their files carry
      // entries from `building` on), and every live file rebuilds from Kafka as the catalog has it.
      await produceRound(topic, 20);
      await indexRound(table, twin);
      liveRounds += 1;
      const checks = await checkFiles(engine.catalog, source(), [table], (t) => listFiles(engine.catalog, t.tableId));
      expect(checks.filter((check) => check.problem !== null)).toEqual([]);
    }

    // States in order, each one held for at least one step, live rounds between all of them.
    const order = states.filter((state, i) => state !== states[i - 1]);
    expect(order).toEqual(['building', 'backfilling', 'catching_up', 'active']);
    expect(steps.filter((step) => step.outcome === 'chunk').length).toBeGreaterThan(3);
    expect(liveRounds).toBe(states.length - 1);
    expect(await liveFilesWithoutHeader(table, index.indexId)).toEqual([]);

    // Byte-identical: the same files (offsets, bucket, sha256) with the same entries in both tables.
    const backfilled = await entriesByFile(table, index.indexId);
    const fromTheStart = await entriesByFile(twin, twinIndex.indexId);
    expect([...backfilled.keys()]).toEqual([...fromTheStart.keys()]);
    for (const [file, entries] of backfilled) expect(entries, file).toBe(fromTheStart.get(file));

    // Progress: the files done are the files that existed before building, each counted once.
    const [progress] = await indexReports(engine.catalog, table.tableId);
    const chunked = steps.filter((step) => step.outcome === 'chunk');
    expect(progress!.state).toBe('active');
    expect(progress!.filesDone).toBe(chunked.reduce((sum, step) => sum + step.files, 0));
    expect(progress!.filesDone).toBe(progress!.filesTotal);
    expect(progress!.granulesDone).toBe(chunked.reduce((sum, step) => sum + step.granules, 0));
    expect(progress!.bytesRead).toBe(chunked.reduce((sum, step) => sum + step.bytesRead, 0));
    expect([progress!.filesSkipped, progress!.filesWithout, progress!.owner, progress!.lastError]).toEqual([[], 0, null, null]);
    // The files live indexing committed from `building` on carried their entries themselves.
    expect((await listFiles(engine.catalog, table.tableId)).length).toBeGreaterThan(progress!.filesTotal);
  });

  it('two drivers started at once: one drives while the other waits for the lease; every file is given entries once and counted once', async () => {
    const { table, files, index } = await declaredOnIndexedTable('ib-two', 4);
    const drive = (owner: string) => runIndexBackfill({ catalog: engine.catalog, source: source(), owner }, index.indexId, { chunkFiles: 1, waitForLease: true, leasePollMs: 50 });
    const [one, two] = await Promise.all([drive('driver-one'), drive('driver-two')]);

    expect([one.done, two.done]).toEqual([true, true]);
    expect(one.files + two.files).toBe(files);
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.state, progress!.filesDone, progress!.filesTotal, progress!.filesWithout]).toEqual(['active', files, files, 0]);
    const headers = await engine.catalog.query<{ n: bigint }>('SELECT count(*) AS n FROM offsetlake.index_entry WHERE index_id = $1 AND part = -1', [index.indexId]);
    expect(Number(headers.rows[0]!.n)).toBe(files);
  });

  it('a driver whose lease lapsed while it read a chunk, and which another driver took over and finished meanwhile, commits nothing of that chunk: every file counted once', async () => {
    const { table, files, index } = await declaredOnIndexedTable('ib-race', 3);
    const kafka = source();
    let tookOver: Awaited<ReturnType<typeof runIndexBackfill>> | undefined;
    // Driver A's first read of a file: its lease lapses there, and driver B drives the whole backfill before A's read goes on.
    const lapsing: CommittedSource = {
      ...kafka,
      async *read(...args) {
        if (!tookOver) {
          await engine.catalog.query("UPDATE offsetlake.secondary_index SET backfill_expires_at = now() - interval '1 second' WHERE index_id = $1", [index.indexId]);
          tookOver = await runIndexBackfill({ catalog: engine.catalog, source: kafka, owner: 'driver-b' }, index.indexId);
        }
        yield* kafka.read(...args);
      },
    };
    await expect(runIndexBackfill({ catalog: engine.catalog, source: lapsing, owner: 'driver-a' }, index.indexId, { chunkFiles: 2 })).rejects.toThrow(IndexBackfillLeaseLostError);

    expect([tookOver!.state, tookOver!.files]).toEqual(['active', files]);
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.state, progress!.filesDone, progress!.filesTotal, progress!.filesWithout, progress!.owner]).toEqual(['active', files, files, 0, null]);
  });

  it('live indexing commits files with the index\'s entries while a driver\'s chunk transaction holds the index row (FOR NO KEY UPDATE leaves their foreign-key locks free)', async () => {
    const { topic, table, index } = await declaredOnIndexedTable('ib-nowait', 1);
    const owner = 'driver-holding';
    const moved = await runIndexBackfill({ catalog: engine.catalog, source: source(), owner }, index.indexId, { maxSteps: 2 });
    expect(moved.moves).toEqual(['building', 'backfilling']);
    const client = await engine.catalog.connect();
    try {
      await client.query('BEGIN');
      expect((await claimIndexBackfill(client, { indexId: index.indexId, owner, ttlMs: 60_000 })).claimed).toBe(true);
      expect(await lockOwnedIndex(client, { indexId: index.indexId, owner, ttlMs: 60_000 })).toBe('backfilling');
      // The chunk transaction is open and holds the row: a live round commits beside it.
      const before = new Set((await listFiles(engine.catalog, table.tableId)).map((file) => file.dataFileId));
      await produceRound(topic, 20);
      await indexRound(table);
      const added = (await listFiles(engine.catalog, table.tableId)).map((file) => file.dataFileId).filter((id) => !before.has(id));
      expect(added).toHaveLength(2);
      const withEntries = await engine.catalog.query<{ n: bigint }>('SELECT count(DISTINCT data_file_id) AS n FROM offsetlake.index_entry WHERE index_id = $1 AND data_file_id = ANY($2::bigint[])', [index.indexId, added]);
      expect(Number(withEntries.rows[0]!.n)).toBe(2);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('an index dropped while its backfill runs: the next step finds it gone and the driver stops, done', async () => {
    const { table, index } = await declaredOnIndexedTable('ib-drop', 2);
    const deps = { catalog: engine.catalog, source: source(), owner: 'driver-drop' };
    expect((await runIndexBackfill(deps, index.indexId, { chunkFiles: 1, maxSteps: 3 })).state).toBe('backfilling');
    expect(await deleteIndex(engine.catalog, table.tableId, 'by_user')).toBe(true);
    const after = await runIndexBackfill(deps, index.indexId, { chunkFiles: 1 });
    expect([after.state, after.done, after.steps, after.files]).toEqual([null, true, 1, 0]);
    expect(await indexReports(engine.catalog, table.tableId)).toEqual([]);
  });

  it('a file whose offsets Kafka deleted before retention expired it is skipped with the reason, and the index still becomes active', async () => {
    const { topic, table, index } = await declaredOnIndexedTable('ib-gone', 3);
    const [first] = (await listFiles(engine.catalog, table.tableId)).filter((file) => file.partition === 0);
    await deleteRecords(engine.kafka, topic, 0, first!.endOffset);
    const steps: IndexBackfillStep[] = [];
    const run = await runIndexBackfill({ catalog: engine.catalog, source: source(), owner: 'driver-gone', progress: (step) => steps.push(step) }, index.indexId, { chunkFiles: 2 });

    expect(run.state).toBe('active');
    expect(steps.flatMap((step) => step.skipped.map((skip) => skip.file))).toEqual([String(first!.dataFileId)]);
    expect(steps.flatMap((step) => step.skipped)[0]!.reason).toMatch(/offset|earliest/i);
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.filesSkipped, progress!.filesWithout]).toEqual([[first!.dataFileId], 1]);
    expect(progress!.lastError).toContain(`could not be rebuilt from Kafka and have no entries (${first!.dataFileId})`);
    expect(await liveFilesWithoutHeader(table, index.indexId)).toEqual([first!.dataFileId]);
  });

  it('a driver SIGKILLed right after its second chunk commit leaves the index backfilling; a new driver takes the lapsed lease and finishes it, every file given entries once', async () => {
    const { table, files, index } = await declaredOnIndexedTable('ib-kill', 4);
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/index-backfill-child.ts', String(index.indexId)], {
      env: { ...process.env, DATABASE_URL: engine.config.databaseUrl, KAFKA_BROKERS: engine.config.kafkaBrokers.join(','), OFFSETLAKE_FAULT: 'after-index-chunk:2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    expect(signal, stderr).toBe('SIGKILL');

    const [killed] = await indexReports(engine.catalog, table.tableId);
    expect([killed!.state, killed!.filesDone, killed!.owner]).toEqual(['backfilling', 2, 'child-driver']);
    const run = await runIndexBackfill({ catalog: engine.catalog, source: source(), owner: 'driver-after-kill' }, index.indexId, { chunkFiles: 1, waitForLease: true, leasePollMs: 100 });
    expect(run.heldBy).toBe('child-driver');
    expect([run.state, run.files]).toEqual(['active', files - 2]);
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.filesDone, progress!.filesTotal, progress!.filesWithout]).toEqual([files, files, 0]);
  });
});

describe('the local runner and indexes that are not active', () => {
  it('run --once indexes the new records and drives a declared index to active', async () => {
    const topic = await newTopic(engine, 2, 'ib-once');
    const table = await testTable(engine, topic, settings);
    await produceRound(topic, 40);
    await indexRound(table);
    const index = await postings(table, 'by_user', 'declared');
    await produceRound(topic, 40);
    const summary = await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();

    expect([summary.failed, summary.indexesFailed]).toEqual([[], []]);
    expect((await indexById(engine.catalog, index.indexId))!.state).toBe('active');
    expect(await liveFilesWithoutHeader(table, index.indexId)).toEqual([]);
  });

  it('the long-lived runner drives a declared index to active in the background while it goes on indexing new records', async () => {
    const topic = await newTopic(engine, 2, 'ib-run');
    // Ranges seal after a second: the runner commits files while the index moves through its states.
    const table = await testTable(engine, topic, { ...settings, file_window: '1s' });
    await produceRound(topic, 40);
    await indexRound(table);
    const index = await postings(table, 'by_user', 'declared');
    const stop = new AbortController();
    const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, pollIntervalMs: 50 }, () => {});
    const running = runner.run(stop.signal);
    try {
      while ((await indexById(engine.catalog, index.indexId))!.state !== 'active') {
        await produceRound(topic, 10);
        await pause(200);
      }
      // New records after it became active are indexed with entries too.
      const before = runner.progress.records;
      await produceRound(topic, 10);
      while (runner.progress.records < before + 10) await pause(100);
    } finally {
      stop.abort();
      await running;
    }
    expect(await liveFilesWithoutHeader(table, index.indexId)).toEqual([]);
  });
});
