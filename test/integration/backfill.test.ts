import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillChunk, planBackfill, runBackfill, type ChunkResult } from '../../src/backfill/index.js';
import { BackfillClaimedError, claimBackfill, releaseBackfillClaim } from '../../src/catalog/backfill.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { insertRange } from '../../src/catalog/file-writes.js';
import { findTable } from '../../src/catalog/tables.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { earliestOffset, lastStableOffset, offsetForTime } from '../../src/kafka/offsets.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { sealRange } from '../../src/ranges/sealer.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { checkTable } from '../helpers/verify.js';
import { runBackfillStateMachine } from '../../src/backfill/local-execution.js';
import { backfillSlotStep } from '../../src/backfill/slot.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('backfill');
});
afterAll(async () => {
  await engine.close();
});

const t0 = Date.UTC(2026, 10, 29, 9, 30, 0);

const table = (topic: string, settings: Record<string, string>) => testTable(engine, topic, settings);
const runtime = (owner: string) => testRuntime(engine, owner);

/** `count` small JSON records (about 30 bytes), timestamps 10 ms apart from `first`. */
function records(count: number, first: number, from = 0): RecordToProduce[] {
  return Array.from({ length: count }, (_, i) => ({ key: null, value: `{"n":${from + i},"k":${(from + i) % 97}}`, timestamp: t0 + (first + i) * 10 }));
}

async function fileRanges(tableId: bigint): Promise<string[]> {
  return (await listFiles(engine.catalog, tableId)).map((f) => `${f.partition}:${f.startOffset}-${f.endOffset}@${f.bucket.toISOString()}/${f.recordCount}/${f.source}`);
}

describe('backfill against the real broker and Postgres', () => {
  it('the state machine that deploys, run locally: 350,000 offsets in 100,000-offset chunks tile from Kafka\'s earliest up to where live indexing started, while live indexing goes on', async () => {
    const topic = await newTopic(engine, 1, 'backfill-big');
    const loadStarted = performance.now();
    // 249,990 plain records, an aborted transaction of 30 (+ its marker) across the chunk boundary at 250,000, then the rest.
    await produce(engine.kafka, topic, records(249_990, 0));
    const aborted = await produce(engine.kafka, topic, records(30, 249_990, 1_000_000), { transactionalId: `abort-${topic}`, abort: true });
    const lso = await lastStableOffset(engine.kafka, topic, 0);
    await produce(engine.kafka, topic, records(Number(350_000n - lso), 250_021));
    const loadMs = performance.now() - loadStarted;
    const start = await lastStableOffset(engine.kafka, topic, 0);
    expect(start).toBe(350_000n);
    expect(aborted[0]!.firstOffset).toBe(249_990n);

    const created = await table(topic, { file_window: '10m', granularity: 'hour' });
    expect(created.settings.backfill_offsets).toBe(100_000);

    // Live indexing goes on while the backfill runs: batches produced and committed at indexed_end.
    const live = await indexerFor(runtime(`live-${topic}`), created, 0);
    let stopLive = false;
    let liveRecords = 0;
    const liveLoop = (async () => {
      for (let round = 0; !stopLive || round < 3; round += 1) {
        await produce(engine.kafka, topic, records(200, 400_000 + round * 200, 2_000_000 + round * 200));
        liveRecords += 200;
        await live.advance();
        await live.flush();
      }
    })();

    // The state machine's definition, executed locally, its tasks mapped to the same engine.
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, created.name, (chunk) => chunks.push(chunk));
    stopLive = true;
    await liveLoop;

    expect(chunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end])).toEqual([
      ['committed', '250000', '350000'],
      ['committed', '150000', '250000'],
      ['committed', '50000', '150000'],
      ['committed', '0', '50000'],
    ]);
    expect(chunks.at(-1)!.done).toBe(true);
    expect(summary.records).toBe(350_000 - 31);

    const after = await findTable(engine.catalog, created.name);
    const checkStarted = performance.now();
    const check = await checkTable(engine, after);
    const checkMs = performance.now() - checkStarted;
    const partition = await engine.catalog.query<{ indexed_start: bigint; indexed_end: bigint; backfill_cursor: bigint; backfill_target: bigint }>(
      'SELECT indexed_start, indexed_end, backfill_cursor, backfill_target FROM offsetlake.lake_partition WHERE table_id = $1', [created.tableId]);
    expect(partition.rows[0]).toMatchObject({ indexed_start: 0n, backfill_cursor: 0n, backfill_target: 0n });
    expect(partition.rows[0]!.indexed_end).toBe(350_000n + BigInt(liveRecords));
    expect(check.committedOffsets.get(0)!.length).toBe(350_000 - 31 + liveRecords);

    // Backfill files end exactly where live indexing started; the aborted offsets (and the marker) belong to the range before them.
    const backfilled = check.files.filter((f) => f.source === 'backfill');
    const liveFiles = check.files.filter((f) => f.source === 'live');
    expect(backfilled.map((f) => f.endOffset).reduce((a, b) => (a > b ? a : b))).toBe(350_000n);
    expect(liveFiles.map((f) => f.startOffset).reduce((a, b) => (a < b ? a : b))).toBe(350_000n);
    const holder = backfilled.find((f) => f.startOffset <= 250_000n && 250_000n < f.endOffset)!;
    expect(holder.startOffset < 249_990n && holder.endOffset === 250_021n, `aborted offsets 249,990..250,020 lie in [${holder.startOffset}, ${holder.endOffset})`).toBe(true);
    expect(backfilled.some((f) => f.sealReason === 'chunk')).toBe(true);
    expect(new Set(backfilled.map((f) => f.sealReason))).toEqual(new Set(['chunk', 'span', 'bucket']));

    const committedChunks = chunks.filter((c) => c.chunk);
    const chunkMs = committedChunks.map((c) => c.elapsedMs);
    const offsetsPerSecond = Math.round(350_000 / (committedChunks.reduce((n, c) => n + c.elapsedMs, 0) / 1000));
    console.log(`backfill: loaded 350,000 offsets in ${Math.round(loadMs)} ms; chunks ${chunkMs.join(', ')} ms; ${offsetsPerSecond} offsets/s; ${backfilled.length} backfill files, ${liveFiles.length} live files; checkTable ${Math.round(checkMs)} ms`);
    // checkTable re-reads and rebuilds all 350,000 records; on a loaded machine that alone can take a minute.
  }, 300_000);

  it('since: starts at the first offset at or after the time; a chunk retried after success changes nothing', async () => {
    const topic = await newTopic(engine, 1, 'backfill-since');
    await produce(engine.kafka, topic, records(1000, 0));
    // Offset 501 (t0 + 5,010 ms) is the first record at or after t0 + 5,005 ms.
    const since = new Date(t0 + 5005).toISOString();
    const created = await table(topic, { history: `since=${since}`, backfill_offsets: '300' });
    expect(await offsetForTime(engine.kafka, topic, 0, t0 + 5005)).toBe(501n);

    const plan = await planBackfill(engine.catalog, engine.kafka, created.name);
    expect(plan.partitions).toEqual([{ table: created.name, tableId: String(created.tableId), partition: 0, cursor: '1000', target: '501', indexedStart: '1000', done: false }]);

    const first = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: '1000' });
    expect([first.outcome, first.chunk, first.cursor, first.indexedStart, first.records]).toEqual(['committed', { start: '700', end: '1000' }, '700', '700', 300]);
    const filesAfterFirst = await fileRanges(created.tableId);

    // The same step again (a state machine retry after success): nothing changes.
    const retried = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: '1000' });
    expect([retried.outcome, retried.cursor, retried.indexedStart, retried.files]).toEqual(['skipped', '700', '700', 0]);
    expect(await fileRanges(created.tableId)).toEqual(filesAfterFirst);

    const second = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: '700' });
    expect([second.outcome, second.chunk, second.done]).toEqual(['committed', { start: '501', end: '700' }, true]);
    const third = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: '501' });
    expect([third.outcome, third.done]).toEqual(['done', true]);

    const after = await findTable(engine.catalog, created.name);
    const check = await checkTable(engine, after);
    expect(check.committedOffsets.get(0)![0]).toBe(501n);
    expect(check.committedOffsets.get(0)!.length).toBe(499);
    expect((await planBackfill(engine.catalog, engine.kafka, created.name)).partitions).toEqual([]);
  });

  it('none: plans nothing and backfills nothing', async () => {
    const topic = await newTopic(engine, 2, 'backfill-none');
    await produce(engine.kafka, topic, [...records(50, 0).map((r) => ({ ...r, partition: 0 })), ...records(40, 0).map((r) => ({ ...r, partition: 1 }))]);
    const created = await table(topic, { history: 'none' });
    expect(await planBackfill(engine.catalog, engine.kafka, created.name)).toEqual({ partitions: [], finished: 2 });
    const summary = await runBackfill(engine, created.name);
    expect(summary.chunks).toBe(0);
    const chunk = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 1 });
    expect([chunk.outcome, chunk.done, chunk.files]).toEqual(['done', true, 0]);
    expect(await listFiles(engine.catalog, created.tableId)).toEqual([]);
    const rows = await engine.catalog.query('SELECT partition_id, indexed_start, backfill_cursor, backfill_target FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [created.tableId]);
    expect(rows.rows).toEqual([
      { partition_id: 0, indexed_start: 50n, backfill_cursor: null, backfill_target: null },
      { partition_id: 1, indexed_start: 40n, backfill_cursor: null, backfill_target: null },
    ]);
  });

  it('a chunk needs its claim: while another run holds it, nothing is read or committed', async () => {
    const topic = await newTopic(engine, 1, 'backfill-claim');
    await produce(engine.kafka, topic, records(100, 0));
    const created = await table(topic, {});
    await planBackfill(engine.catalog, engine.kafka, created.name);
    const other = await claimBackfill(engine.catalog, created.tableId, 0, 'other-run', 30_000);
    await expect(backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0 })).rejects.toThrow(BackfillClaimedError);
    expect(await listFiles(engine.catalog, created.tableId)).toEqual([]);
    await releaseBackfillClaim(engine.catalog, other.claim);
    const chunk = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0 });
    expect([chunk.outcome, chunk.indexedStart, chunk.done]).toEqual(['committed', '0', true]);
    await checkTable(engine, await findTable(engine.catalog, created.name));
  });

  it('a state machine slot\'s step that fails hands its claim back; its retry claims the partition again and commits the chunk once', async () => {
    const topic = await newTopic(engine, 1, 'backfill-slot-fail');
    await produce(engine.kafka, topic, records(100, 0));
    const created = await table(topic, {});
    await planBackfill(engine.catalog, engine.kafka, created.name);
    const step = { tableId: String(created.tableId), executionName: `${created.name}-1`, slot: 0, step: 0, budget: 5 };
    const claimOf = async () => (await engine.catalog.query<{ backfill_owner: string; live: boolean }>(
      'SELECT backfill_owner, backfill_expires_at > now() AS live FROM offsetlake.lake_partition WHERE table_id = $1', [created.tableId])).rows[0];
    const build = rangeBuilder(engine.catalog);
    await expect(backfillSlotStep(engine.catalog, engine.kafka, step, { build: async () => { throw new Error('the registry went away'); } })).rejects.toThrow('the registry went away');
    expect(await claimOf()).toEqual({ backfill_owner: `${created.name}-1/0`, live: false });
    expect(await listFiles(engine.catalog, created.tableId)).toEqual([]);

    const retried = await backfillSlotStep(engine.catalog, engine.kafka, step, { build });
    expect([retried.idle, retried.result?.outcome, retried.result?.chunk, retried.result?.done]).toEqual([false, 'committed', { start: '0', end: '100' }, true]);
    // The partition is done: the claim is handed back. The same step again (a lost answer) changes nothing.
    expect(await claimOf()).toEqual({ backfill_owner: `${created.name}-1/0`, live: false });
    const again = await backfillSlotStep(engine.catalog, engine.kafka, step, { build });
    expect([again.result?.outcome, again.result?.files]).toEqual(['skipped', 0]);
    expect((await backfillSlotStep(engine.catalog, engine.kafka, { ...step, step: 1 }, { build })).idle).toBe(true);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)!.length).toBe(100);
  });

  it('rejects a malformed chunk request with a message naming the field', async () => {
    await expect(backfillChunk(engine.catalog, engine.kafka, { tableId: 'x1', partition: 0 })).rejects.toThrow(/tableId must be a decimal string/);
    await expect(backfillChunk(engine.catalog, engine.kafka, { tableId: '1', partition: -1 })).rejects.toThrow(/partition must be a whole number/);
  });

  it('an empty chunk (only aborted records) moves the cursor alone; the chunk below extends its last range up to indexed_start', async () => {
    const topic = await newTopic(engine, 1, 'backfill-gap');
    await produce(engine.kafka, topic, records(40, 0));
    await produce(engine.kafka, topic, records(100, 40, 500), { transactionalId: `gap-${topic}`, abort: true }); // offsets 40..139, marker at 140
    await produce(engine.kafka, topic, records(10, 200, 900)); // 141..150
    const created = await table(topic, { backfill_offsets: '50' });
    expect(await earliestOffset(engine.kafka, topic, 0)).toBe(0n);
    const chunks: ChunkResult[] = [];
    await runBackfill(engine, created.name, (c) => chunks.push(c));
    expect(chunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end, c.indexedStart, c.cursor])).toEqual([
      ['committed', '101', '151', '141', '101'],
      ['empty', '51', '101', '141', '51'],
      ['committed', '1', '51', '1', '1'],
      ['committed', '0', '1', '0', '0'],
    ]);
    // No live indexing here: the table's indexed range ends where it started.
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.files.map((f) => [f.startOffset, f.endOffset, f.sealReason])).toEqual([[0n, 1n, 'chunk'], [1n, 141n, 'chunk'], [141n, 151n, 'chunk']]);
  });

  it('a live commit does not wait for a backfill transaction that is inserting files of the same partition', async () => {
    const topic = await newTopic(engine, 1, 'backfill-locks');
    await produce(engine.kafka, topic, records(10, 0));
    const created = await table(topic, {});
    // A backfill chunk's transaction, stopped between inserting its files and moving indexed_start.
    const history = (await readCommittedRange(engine.kafka, topic, 0, 0n, 10n)).records;
    const range = await rangeBuilder(engine.catalog)(created, 0, sealRange(0n, 10n, 'chunk', history, 'hour'));
    const client = await engine.catalog.connect();
    try {
      await client.query('BEGIN');
      await insertRange(client, { tableId: created.tableId, partition: 0, epoch: 1n }, range, 'backfill');
      // Meanwhile live indexing commits at indexed_end.
      await produce(engine.kafka, topic, records(5, 100));
      const live = await indexerFor(runtime(`locks-${topic}`), created, 0);
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<'blocked'>((resolve) => { timer = setTimeout(() => resolve('blocked'), 15_000); });
      const committed = (async () => { await live.advance(); await live.flush(); return 'committed' as const; })();
      expect(await Promise.race([committed, waited])).toBe('committed');
      clearTimeout(timer);
      await live.release();
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    expect((await listFiles(engine.catalog, created.tableId)).map((f) => [f.startOffset, f.endOffset, f.source])).toEqual([[10n, 15n, 'live']]);
  });
});
