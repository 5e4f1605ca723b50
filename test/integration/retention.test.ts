import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillChunk, planBackfill, runBackfill } from '../../src/backfill/index.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { discoverPartitions } from '../../src/retention/discovery.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { lastStableOffset } from '../../src/kafka/offsets.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { deleteRecords, deleteTopic } from '../../src/kafka/topics.js';
import { FileExpiredError, rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import { checkRetention, type TableFailure } from '../../src/retention/check.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { growTopic, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import type { ChunkResult } from '../../src/backfill/index.js';
import { backfillStates } from '../../src/catalog/backfill.js';
import { pause } from '../../src/common/retry.js';
import { scheduledCheck, type ScheduledCheckResult } from '../../src/retention/scheduled.js';
import { localBackfillMachine } from '../../src/backfill/definition.js';
import { localBackfillStarter, runBackfillStateMachine, type LocalBackfillSummary } from '../../src/backfill/local-execution.js';
import { LocalExecutions } from '../../src/state-machines/local-executions.js';
import { checkTable } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('retention');
});
afterAll(async () => {
  await engine.close();
});

const t0 = Date.UTC(2026, 10, 29, 9, 30, 0);

const table = (topic: string, settings: Record<string, string>) => testTable(engine, topic, settings);

function records(count: number, from: number, partition = 0): RecordToProduce[] {
  return Array.from({ length: count }, (_, i) => ({ key: null, value: `{"n":${from + i}}`, partition, timestamp: t0 + (from + i) * 10 }));
}


const runtime = (owner: string) => testRuntime(engine, owner);

describe('retention', () => {
  it('after DeleteRecords exactly the files below the new earliest offset expire; indexed_start follows; backfill indexes again what Kafka still holds', async () => {
    const topic = await newTopic(engine, 1, 'retention');
    await produce(engine.kafka, topic, records(1000, 0));
    // Files of about 100 records each (values are 10-12 bytes).
    const indexed = await table(topic, { file_bytes: '1100' });
    const untouched = await table(topic, { history: 'none' });
    await runBackfill(engine, indexed.name);
    const before = await listFiles(engine.catalog, indexed.tableId);
    expect(before.length).toBeGreaterThan(8);

    expect(await deleteRecords(engine.kafka, topic, 0, 437n)).toBe(437n);
    const result = await checkRetention(engine.catalog, engine.kafka);

    const below = before.filter((f) => f.startOffset < 437n);
    const kept = before.filter((f) => f.startOffset >= 437n);
    const firstKept = kept[0]!.startOffset;
    expect(result.expiredFiles).toBe(below.length);
    expect(result.partitions).toEqual([
      {
        table: indexed.name, partition: 0, earliest: '437', expiredFiles: below.length, indexedStart: String(firstKept), backfillTarget: '437', backfillCursor: String(firstKept), backfillDue: true,
        before: { indexedStart: '0', backfillTarget: '0', backfillCursor: '0' },
      },
      {
        table: untouched.name, partition: 0, earliest: '437', expiredFiles: 0, indexedStart: '1000', backfillTarget: null, backfillCursor: null, backfillDue: false,
        before: { indexedStart: '1000', backfillTarget: null, backfillCursor: null },
      },
    ]);
    const all = await listFiles(engine.catalog, indexed.tableId, { includeExpired: true });
    expect(all.filter((f) => f.expiredAt !== null).map((f) => f.dataFileId)).toEqual(below.map((f) => f.dataFileId));
    expect((await listFiles(engine.catalog, indexed.tableId)).map((f) => f.dataFileId)).toEqual(kept.map((f) => f.dataFileId));
    await expect(rebuildFile(kafkaSource(engine.kafka), indexed, all[0]!, await schemaVersion(engine.catalog, indexed.tableId, all[0]!.schemaVersion))).rejects.toThrow(FileExpiredError);

    const status = (await partitionStatus(engine, indexed.name))[0]!;
    expect([status.indexedStart, status.expiredFiles, status.files, status.earliestOffset, status.backfillTarget]).toEqual([firstKept, BigInt(below.length), BigInt(kept.length), 437n, 437n]);
    await checkTable(engine, indexed);

    // A second check changes nothing; the schedule's mode skips partitions checked less than retention_check (5m) ago.
    expect((await checkRetention(engine.catalog, engine.kafka, { table: indexed.name })).expiredFiles).toBe(0);
    expect((await checkRetention(engine.catalog, engine.kafka, { table: indexed.name, dueOnly: true })).partitions).toEqual([]);

    // What Kafka still holds of the straddling file, [437, firstKept), is backfilled again.
    expect((await planBackfill(engine.catalog, engine.kafka, indexed.name)).partitions.map((p) => [p.cursor, p.target])).toEqual([[String(firstKept), '437']]);
    await runBackfill(engine, indexed.name);
    const check = await checkTable(engine, await findTable(engine.catalog, indexed.name));
    expect(check.committedOffsets.get(0)![0]).toBe(437n);
    expect(check.committedOffsets.get(0)!.length).toBe(563);
  });

  it('a chunk that meets the new earliest offset raises its target instead of reading below it', async () => {
    const topic = await newTopic(engine, 1, 'retention-chunk');
    await produce(engine.kafka, topic, records(300, 0));
    const created = await table(topic, { backfill_offsets: '100' });
    await planBackfill(engine.catalog, engine.kafka, created.name);
    await deleteRecords(engine.kafka, topic, 0, 250n);
    const summary = await runBackfill(engine, created.name);
    expect(summary.partitions.map((p) => [p.target, p.cursor, p.indexedStart, p.done])).toEqual([['250', '250', '250', true]]);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)!.length).toBe(50);
  });

  it('a chunk whose plan moves while it runs (retention raised the target) commits nothing; the next chunk reads from the new target', async () => {
    const topic = await newTopic(engine, 1, 'retention-stale');
    await produce(engine.kafka, topic, records(300, 0));
    const created = await table(topic, { backfill_offsets: '1000' });
    await planBackfill(engine.catalog, engine.kafka, created.name);
    const build = rangeBuilder(engine.catalog);
    let moved = false;
    // Retention runs while the chunk builds its files.
    const racing = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: '300' }, {
      build: async (...args) => {
        if (!moved) {
          moved = true;
          await deleteRecords(engine.kafka, topic, 0, 100n);
          await checkRetention(engine.catalog, engine.kafka, { table: created.name });
        }
        return build(...args);
      },
    });
    expect([racing.outcome, racing.files, racing.target, racing.cursor, racing.indexedStart]).toEqual(['stale', 0, '100', '300', '300']);
    expect(await listFiles(engine.catalog, created.tableId)).toEqual([]);
    const next = await backfillChunk(engine.catalog, engine.kafka, { tableId: String(created.tableId), partition: 0, end: racing.cursor });
    expect([next.outcome, next.chunk, next.done]).toEqual(['committed', { start: '100', end: '300' }, true]);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)!.length).toBe(200);
  });
});

describe('partition discovery', () => {
  it('a partition added to the topic gets a catalog row at its LSO, is indexed from there, and its history is backfilled', async () => {
    const topic = await newTopic(engine, 1, 'discovery');
    await produce(engine.kafka, topic, records(20, 0));
    const created = await table(topic, {});
    // The table's own partition has history and no plan yet: discovery plans it and says a backfill is due.
    expect(await discoverPartitions(engine.catalog, engine.kafka)).toEqual([{ table: created.name, topic, partition: 0, start: '20', found: 'catalog', backfill: true }]);
    expect(await discoverPartitions(engine.catalog, engine.kafka)).toEqual([]);

    await growTopic(engine, topic, 2);
    await produce(engine.kafka, topic, records(30, 100, 1));
    const lso = await lastStableOffset(engine.kafka, topic, 1);
    expect(lso).toBe(30n);
    const found = await discoverPartitions(engine.catalog, engine.kafka);
    expect(found).toEqual([{ table: created.name, topic, partition: 1, start: '30', found: 'topic', backfill: true }]);
    expect(await discoverPartitions(engine.catalog, engine.kafka)).toEqual([]);

    // Live indexing goes on from the LSO; backfill reads what came before.
    await produce(engine.kafka, topic, records(5, 200, 1));
    const live = await indexerFor(runtime(`discovery-${topic}`), created, 1);
    await live.advance();
    await live.flush();
    expect((await listFiles(engine.catalog, created.tableId)).map((f) => [f.partition, f.startOffset, f.endOffset, f.source])).toEqual([[1, 30n, 35n, 'live']]);
    const plan = await planBackfill(engine.catalog, engine.kafka, created.name);
    expect(plan.partitions.map((p) => [p.partition, p.cursor, p.target])).toEqual([[0, '20', '0'], [1, '30', '0']]);
    await runBackfill(engine, created.name);
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)!.length).toBe(20);
    expect(check.committedOffsets.get(1)!.length).toBe(35);
  });

  it('history none: a new partition is added at its LSO with nothing to backfill', async () => {
    const topic = await newTopic(engine, 1, 'discovery-none');
    const created = await table(topic, { history: 'none' });
    await growTopic(engine, topic, 3);
    await produce(engine.kafka, topic, [...records(7, 0, 1), ...records(4, 0, 2)]);
    expect(await discoverPartitions(engine.catalog, engine.kafka, { table: created.name })).toEqual([
      { table: created.name, topic, partition: 1, start: '7', found: 'topic', backfill: false },
      { table: created.name, topic, partition: 2, start: '4', found: 'topic', backfill: false },
    ]);
    expect((await planBackfill(engine.catalog, engine.kafka, created.name)).partitions).toEqual([]);
  });
});

describe('the scheduled check resumes a backfill no execution is working on', () => {
  it('an execution that died mid-way is resumed under the name it would have continued as, once its claim expired; the backfill ends tiled exactly', async () => {
    const topic = await newTopic(engine, 1, 'resume');
    await produce(engine.kafka, topic, records(900, 0));
    // lease_ttl is also how long a backfill claim lives unrenewed: how long a dead execution keeps its partitions.
    const created = await table(topic, { backfill_offsets: '300', lease_ttl: '5s' });
    const executions = new LocalExecutions(localBackfillMachine().stateMachineArn);
    const runs: Promise<LocalBackfillSummary>[] = [];
    const resumedChunks: ChunkResult[] = [];
    const startBackfill = localBackfillStarter(engine, (_start, run) => runs.push(run()), { executions, progress: (chunk) => resumedChunks.push(chunk) });
    const scheduled = () => scheduledCheck(engine.catalog, engine.kafka, { table: created.name, startBackfill });

    // While a chunk runs its slot holds a live claim: the check leaves the backfill to that execution.
    const build = rangeBuilder(engine.catalog);
    let whileRunning: ScheduledCheckResult | undefined;
    const chunk = { build: async (...args: Parameters<typeof build>) => {
      whileRunning ??= await scheduled();
      return build(...args);
    } };
    // The first execution dies in its second step: the step commits its chunk, then every
    // answer is lost (say the function times out each time) until the retries run out.
    let steps = 0;
    const died = runBackfillStateMachine(engine, created.name, undefined, {
      executions,
      chunk,
      retryIntervalOverrides: { Chunk: 0 },
      afterTask: (state) => {
        if (state === 'Chunk' && (steps += 1) >= 2) throw new Error('Lambda.Unknown: the function timed out');
      },
    });
    await expect(died).rejects.toThrow('the function timed out');
    expect(whileRunning!.backfills).toEqual([]);
    expect(steps).toBe(10); // the second step and its 8 retries, which found it done and changed nothing
    const [left] = await backfillStates(engine.catalog, created.tableId);
    expect([left!.indexedStart, left!.cursor, left!.target]).toEqual([300n, 300n, 0n]);

    // Its slot's claim expires after lease_ttl; until then each check leaves the backfill alone.
    let resumed = await scheduled();
    for (let checks = 1; resumed.backfills.length === 0; checks += 1) {
      expect(checks, 'checks until the dead execution\'s claim expired').toBeLessThan(600);
      await pause(100);
      resumed = await scheduled();
    }
    expect(resumed.backfills).toEqual([{ table: created.name, execution: `${created.name}-${created.tableId}-2`, outcome: 'started' }]);
    const summary = await runs[0]!;
    expect(summary.executionNames).toEqual([`${created.name}-${created.tableId}-2`]);
    expect(resumedChunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end, c.done])).toEqual([['committed', '0', '300', true]]);
    expect((await scheduled()).backfills).toEqual([]);

    // Exactly tiled: the files cover [0, 900) once, with every committed record the independent reader sees.
    const check = await checkTable(engine, await findTable(engine.catalog, created.name));
    expect(check.committedOffsets.get(0)!.length).toBe(900);
    expect(check.files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(900);
    const ranges = [...new Set(check.files.map((f) => `${f.startOffset}-${f.endOffset}`))].map((r) => r.split('-').map(BigInt)).sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
    expect(ranges[0]![0]).toBe(0n);
    expect(ranges.at(-1)![1]).toBe(900n);
    ranges.slice(1).forEach((range, i) => expect(range[0]).toBe(ranges[i]![1]));
  }, 300_000);
});

describe('the backfill and retention commands', () => {
  async function offsetlake(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['bin/offsetlake.js', ...args, '--database-url', engine.config.databaseUrl], { timeout: 90_000 });
      return { stdout, stderr, code: 0 };
    } catch (error) {
      const failed = error as { stdout: string; stderr: string; code: number };
      return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
    }
  }

  it('backfill NAME indexes the history with progress on stderr; retention expires, reports, and says what it expired and planned; a bad name is a clear error', async () => {
    const topic = await newTopic(engine, 1, 'cli-backfill');
    await produce(engine.kafka, topic, records(250, 0));
    const created = await table(topic, { backfill_offsets: '100', file_bytes: '600' });
    const backfill = await offsetlake('backfill', created.name, '--json');
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(JSON.parse(backfill.stdout)).toMatchObject({ table: created.name, records: 250 });
    expect(backfill.stderr).toMatch(/partition 0 \[150, 250\): committed, 100 records/);
    await checkTable(engine, created);

    await deleteRecords(engine.kafka, topic, 0, 120n);
    const retention = await offsetlake('retention', created.name, '--json');
    expect(retention.code).toBe(0);
    const expired = (await listFiles(engine.catalog, created.tableId, { includeExpired: true })).filter((f) => f.expiredAt !== null);
    expect(expired.length).toBeGreaterThan(0);
    expect(expired.every((f) => f.startOffset < 120n)).toBe(true);
    expect(JSON.parse(retention.stdout)).toMatchObject({ expiredFiles: expired.length, discovered: [] });

    // Without --json, retention says in sentences what it expired and what it planned.
    const liveBefore = await listFiles(engine.catalog, created.tableId);
    const cut = liveBefore[1]!.startOffset + 1n;
    await deleteRecords(engine.kafka, topic, 0, cut);
    const told = await offsetlake('retention', created.name);
    expect(told.code, told.stderr).toBe(0);
    const liveAfter = await listFiles(engine.catalog, created.tableId);
    expect(liveAfter[0]!.startOffset).toBe(liveBefore[2]!.startOffset);
    expect(told.stdout).toContain(`${created.name} partition 0: 2 files expired (Kafka now starts at offset ${cut}); its live files now start at ${liveAfter[0]!.startOffset} (were from ${liveBefore[0]!.startOffset})`);
    expect(told.stdout).toContain(`${created.name} partition 0: offsets ${cut} to ${liveAfter[0]!.startOffset} are planned for backfill: run \`offsetlake backfill ${created.name}\``);
    expect(told.stdout).toMatch(/2 files expired, 0 partitions discovered\n$/);

    const missing = await offsetlake('backfill', 'no_such_table');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no table named "no_such_table"/);
    const usage = await offsetlake('backfill');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/backfill needs a table NAME/);
  }, 300_000);

  it('a table whose topic was deleted does not stop retention, discovery or the scheduled check of the others: each is done, the gone one is named, and the command exits 1', async () => {
    const healthyTopic = await newTopic(engine, 1, 'healthy');
    const goneTopic = await newTopic(engine, 1, 'gone');
    await produce(engine.kafka, healthyTopic, records(40, 0));
    await produce(engine.kafka, goneTopic, records(10, 0));
    const gone = await table(goneTopic, {});
    const healthy = await table(healthyTopic, { file_bytes: '100' });
    await runBackfill(engine, healthy.name);
    await deleteTopic(engine.kafka, goneTopic);
    await deleteRecords(engine.kafka, healthyTopic, 0, 25n);
    // the healthy table is created after the gone one, so a loop that stops at the first failure never reaches it
    await growTopic(engine, healthyTopic, 2);

    const result = await checkRetention(engine.catalog, engine.kafka);
    expect(result.partitions.filter((p) => p.table === healthy.name).map((p) => p.earliest)).toEqual(['25']);
    expect(result.expiredFiles).toBeGreaterThan(0);
    expect(result.failedTables.map((f) => [f.table, f.topic])).toEqual([[gone.name, goneTopic]]);
    expect(result.failedTables[0]!.reason).toMatch(new RegExp(goneTopic));

    const failed: TableFailure[] = [];
    const discovered = await discoverPartitions(engine.catalog, engine.kafka, { failed });
    expect(discovered.filter((d) => d.table === healthy.name).map((d) => d.partition)).toEqual([1]);
    expect(failed.map((f) => f.table)).toEqual([gone.name]);
    await expect(discoverPartitions(engine.catalog, engine.kafka)).rejects.toThrow(`partition discovery failed for table ${gone.name} (topic ${goneTopic})`);

    const scheduled = await scheduledCheck(engine.catalog, engine.kafka);
    expect(scheduled.failedTables.map((f) => [f.table, f.step])).toEqual([[gone.name, 'retention'], [gone.name, 'discovery']]);

    const told = await offsetlake('retention');
    expect(told.code).toBe(1);
    expect(told.stderr).toContain(`table ${gone.name} (topic ${goneTopic}): retention was not checked: `);
    expect(told.stderr).toContain(`table ${gone.name} (topic ${goneTopic}): partition discovery was not done: `);
    expect(told.stdout).toMatch(/files expired, 0 partitions discovered; 1 table\(s\) could not be checked \(named above\)\n$/);
    const asJson = await offsetlake('retention', '--json');
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout).failedTables.map((f: TableFailure) => [f.table, f.step])).toEqual([[gone.name, 'retention'], [gone.name, 'discovery']]);
  }, 300_000);
});
