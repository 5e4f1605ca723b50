/**
 * The index backfill state machine's definition (the one that deploys), executed locally with
 * aws-local-stepfunctions against the real broker and Postgres: its Step state runs the
 * Lambda's task code, ContinueAsNew starts the next local execution.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/catalog/db.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { insertIndex } from '../../src/catalog/indexes.js';
import { claimIndexBackfill, releaseIndexBackfill } from '../../src/catalog/index-backfill.js';
import { indexReports } from '../../src/catalog/indexes.js';
import type { TableRecord } from '../../src/table/record.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { produce } from '../../src/kafka/produce.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { IndexBackfillTaskError, type IndexBackfillStart, type IndexBackfillTaskResult } from '../../src/index-backfill/tasks.js';
import { scheduledCheck } from '../../src/retention/scheduled.js';
import type { Engine } from '../../src/runtime/engine.js';
import { runIndexBackfillStateMachine } from '../../src/index-backfill/local-execution.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('indexmachine');
  process.env.DATABASE_URL = engine.config.databaseUrl;
  process.env.KAFKA_BROKERS = engine.config.kafkaBrokers.join(',');
});
afterAll(() => engine.close());

const t0 = Date.now() - 30 * 60_000;

/** A table over a new 2-partition topic with `rounds` committed transactions (and an aborted one each), every round indexed into one file per partition. */
async function tableWithFiles(rounds: number): Promise<TableRecord> {
  const topic = await newTopic(engine, 2, 'ism');
  const table = await testTable(engine, topic, { row_group_rows: '10', file_window: '1h' });
  const runtime = testRuntime(engine, `live-${topic}`);
  for (let round = 0; round < rounds; round += 1) {
    const records = (user: string) => Array.from({ length: 30 }, (_, i) => ({ partition: i % 2, key: null, value: JSON.stringify({ user: `${user}${i % 7}` }), timestamp: t0 + round * 1000 + i }));
    await produce(engine.kafka, topic, records('gone'), { transactionalId: `ism-a-${topic}-${round}`, abort: true });
    await produce(engine.kafka, topic, records('u'), { transactionalId: `ism-c-${topic}-${round}` });
    for (const partition of [0, 1]) {
      const indexer = await indexerFor(runtime, table, partition);
      await indexer.advance();
      await indexer.flush();
      await indexer.release();
    }
  }
  return table;
}

function declaredIndex(table: TableRecord) {
  return inTransaction(engine.catalog, (client) => insertIndex(client, table.name, {
    tableId: table.tableId, name: 'by_user', kind: 'bloom', columns: [{ kind: 'json', path: ['user'] }], scope: 'history', granuleRows: 10,
    falsePositiveRate: 0.01, postingBuckets: null, state: 'declared',
  }));
}

describe('the index backfill state machine, executed locally', () => {
  it('drives a declared index to active one step per Lambda task, in executions of 3 steps each started by the last (ContinueAsNew); a step whose answer is lost is retried and counts nothing twice', async () => {
    const table = await tableWithFiles(4);
    const files = (await listFiles(engine.catalog, table.tableId)).length;
    const index = await declaredIndex(table);
    const steps: IndexBackfillTaskResult[] = [];
    let lost = false;
    const summary = await runIndexBackfillStateMachine({ catalog: engine.catalog, source: kafkaSource(engine.kafka), options: { chunkFiles: 2 } }, index.indexId, {
      stepsPerExecution: 3,
      retryIntervalOverrides: { Step: 0 },
      onStep: (_event, result) => steps.push(result),
      afterStep: (_event, result) => {
        // The first chunk's work is committed, its answer never arrives: the Retry runs the step again.
        if (result.outcome === 'chunk' && !lost) {
          lost = true;
          throw new Error('the answer of the Lambda was lost');
        }
      },
    });

    // 2 moves, ⌈8 files / 2⌉ chunks (the lost answer's retry runs the next chunk: the first one is committed), 2 moves: 8 steps in executions of 3, 3 and 2.
    expect(files).toBe(8);
    expect(steps.map((step) => step.outcome)).toEqual(['moved', 'moved', 'chunk', 'chunk', 'chunk', 'chunk', 'moved', 'moved']);
    expect(steps.map((step) => step.state)).toEqual(['building', 'backfilling', 'backfilling', 'backfilling', 'backfilling', 'backfilling', 'catching_up', 'active']);
    expect(steps.map((step) => step.files)).toEqual([0, 0, 2, 2, 2, 2, 0, 0]);
    expect(summary.executionNames).toEqual([1, 2, 3].map((n) => `index-${index.indexId}-${n}`));
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.state, progress!.filesDone, progress!.filesTotal, progress!.filesWithout, progress!.owner]).toEqual(['active', files, files, 0, null]);
  });

  it('waits while another driver holds the lease, then goes on once it is given back', async () => {
    const table = await tableWithFiles(1);
    const index = await declaredIndex(table);
    const other = { indexId: index.indexId, owner: 'local-runner', ttlMs: 600_000 };
    expect((await claimIndexBackfill(engine.catalog, other)).claimed).toBe(true);
    const steps: IndexBackfillTaskResult[] = [];
    await runIndexBackfillStateMachine({ catalog: engine.catalog, source: kafkaSource(engine.kafka) }, index.indexId, {
      waitTimeOverrides: { WaitForLease: 0 },
      onStep: (_event, result) => steps.push(result),
      afterStep: async (_event, result) => {
        if (result.held && steps.filter((step) => step.held).length === 2) await releaseIndexBackfill(engine.catalog, other);
      },
    });
    expect(steps.map((step) => step.outcome)).toEqual(['held', 'held', 'moved', 'moved', 'chunk', 'moved', 'moved']);
    expect(steps.at(-1)!.state).toBe('active');
  });

  it('the scheduled check starts execution 1 for a declared index; once that execution failed and its lease lapsed, execution 2, which finishes it; nothing while a lease is live or once the index is active', async () => {
    const table = await tableWithFiles(2);
    const index = await declaredIndex(table);
    const deps = { catalog: engine.catalog, source: kafkaSource(engine.kafka), options: { chunkFiles: 1 } };
    const started: IndexBackfillStart[] = [];
    const check = async () => {
      const result = await scheduledCheck(engine.catalog, engine.kafka, { table: table.name, startIndexBackfill: async (start) => { started.push(start); return 'started'; } });
      return result.indexBackfills.filter((resumed) => resumed.indexId === String(index.indexId)).map((resumed) => `${resumed.execution} ${resumed.outcome}`);
    };
    expect(await check()).toEqual([`index-${index.indexId}-1 started`]);

    // Execution 1 fails at its third step (an error its Retry does not retry): the index is left backfilling, its lease live.
    let steps = 0;
    await expect(runIndexBackfillStateMachine(deps, index.indexId, {
      start: started[0]!,
      afterStep: () => {
        steps += 1;
        if (steps === 3) throw new IndexBackfillTaskError('a request that cannot succeed');
      },
    })).rejects.toThrow();
    expect(steps).toBe(3);
    const [dead] = await indexReports(engine.catalog, table.tableId);
    expect([dead!.state, dead!.owner]).toEqual(['backfilling', `stepfunctions:index-${index.indexId}`]);
    expect(await check()).toEqual([]);

    await engine.catalog.query("UPDATE offsetlake.secondary_index SET backfill_expires_at = now() - interval '1 second' WHERE index_id = $1", [index.indexId]);
    expect(await check()).toEqual([`index-${index.indexId}-2 started`]);
    expect(started[1]!.input).toEqual({ indexId: String(index.indexId), execution: 2, stepsPerExecution: 1500 });
    await runIndexBackfillStateMachine(deps, index.indexId, { start: started[1]! });
    const [progress] = await indexReports(engine.catalog, table.tableId);
    expect([progress!.state, progress!.filesDone, progress!.filesTotal, progress!.filesWithout]).toEqual(['active', 4, 4, 0]);
    expect(await check()).toEqual([]);
  });

  it('the Lambda entry answers a step and names a bad request', async () => {
    const { handler } = await import('../../functions/index-backfill/index.js');
    const table = await tableWithFiles(1);
    const index = await declaredIndex(table);
    const result = await handler({ action: 'step', indexId: String(index.indexId), execution: 1, step: 0 });
    expect([result.outcome, result.state, result.done, result.continuation]).toEqual(['moved', 'building', false, { execution: 2, name: `index-${index.indexId}-2` }]);
    await expect(handler({ action: 'step', indexId: 'x', execution: 1, step: 0 })).rejects.toThrow('index backfill: indexId must be a decimal string such as "42", got "x"');
    await expect(handler({ action: 'plan' })).rejects.toThrow('index backfill: "action" must be "step", got "plan"');
  });
});
