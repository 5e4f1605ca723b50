/**
 * The backfill state machine that CDK synthesizes, executed locally with
 * aws-local-stepfunctions against the real broker and Postgres: its Task states run the
 * Lambda's task code, ContinueAsNew starts the next local execution.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChunkResult } from '../../src/backfill/index.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/build/files.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { StateMachine } from 'aws-local-stepfunctions';
import { synthesizeBackfillDefinition } from '../../infra/definition.js';
import { runBackfillStateMachine } from '../../infra/local-execution.js';
import { chunkTask, planTask } from '../../src/backfill/tasks.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { checkTable } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('statemachine');
});
afterAll(async () => {
  await engine.close();
});

const t0 = Date.UTC(2026, 10, 29, 12, 0, 0);

/** `count` small JSON records per partition, timestamps 10 ms apart. */
function records(partitions: number, count: number, from = 0): RecordToProduce[] {
  return Array.from({ length: partitions * count }, (_, i) => ({
    partition: i % partitions,
    key: null,
    value: `{"n":${from + i}}`,
    timestamp: t0 + (from + i) * 10,
  }));
}

const tableOf = (topic: string, settings: Record<string, string>) => testTable(engine, topic, settings);

async function fileRanges(tableId: bigint): Promise<string[]> {
  return (await listFiles(engine.catalog, tableId)).map((f) => `${f.partition}:${f.startOffset}-${f.endOffset}/${f.recordCount}/${f.source}`).sort();
}

describe('the synthesized backfill state machine, executed locally', () => {
  it('backfills two partitions in 500-offset chunks to Kafka\'s earliest, continuing in new executions, while live indexing goes on', async () => {
    // Prepare: 1,500 records in each of two partitions, then the table (its indexed ranges start at the LSO, 1,500).
    const topic = await newTopic(engine, 2, 'sm-backfill');
    await produce(engine.kafka, topic, records(2, 1_500));
    const table = await tableOf(topic, { backfill_offsets: '500', file_window: '10m' });
    // Live indexing after the table was made: 100 more per partition, indexed at indexed_end.
    await produce(engine.kafka, topic, records(2, 100, 10_000));
    const runtime = { catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: 'live-sm', clock: Date.now, indexers: new Map(), releaseAfterEvent: false };
    for (const partition of [0, 1]) {
      const live = await indexerFor(runtime, table, partition);
      await live.advance();
      await live.flush();
      await live.release();
    }

    // Act: a budget of 4 chunks per execution over 2 partitions = 2 chunks each; each partition needs 3.
    const chunks: ChunkResult[] = [];
    const executions: unknown[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk), {
      chunksPerExecution: 4,
      onExecution: (_, input) => executions.push(input),
    });

    // Assess: two executions; the second was started by the first with its cursors, and picked up where it stopped.
    expect(summary.executions).toBe(2);
    expect(executions[0]).toEqual({ table: table.name, chunksPerExecution: 4 });
    expect(executions[1]).toMatchObject({ table: table.name, chunksPerExecution: 4, execution: 2 });
    const cursors = (executions[1] as { cursors: { partition: number; cursor: string; target: string }[] }).cursors;
    expect(cursors.map((c) => [c.partition, c.cursor, c.target])).toEqual([[0, '500', '0'], [1, '500', '0']]);
    expect(executions[1]).toHaveProperty('AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID');

    const byPartition = (partition: number) => chunks.filter((c) => c.partition === partition).map((c) => [c.outcome, c.chunk?.start, c.chunk?.end]);
    for (const partition of [0, 1]) {
      expect(byPartition(partition)).toEqual([
        ['committed', '1000', '1500'],
        ['committed', '500', '1000'],
        ['committed', '0', '500'],
      ]);
    }
    expect(summary.chunks).toBe(6);
    expect(summary.records).toBe(3_000);
    expect(summary.partitions.map((p) => [p.partition, p.indexedStart, p.done])).toEqual([[0, '0', true], [1, '0', true]]);

    // The ranges tile [0, 1,600) in both partitions; every record is in exactly one file; every file rebuilds.
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)!.length).toBe(1_600);
    expect(check.committedOffsets.get(1)!.length).toBe(1_600);
    const backfilled = check.files.filter((f) => f.source === 'backfill');
    expect(backfilled.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(3_000);
    expect(new Set(backfilled.map((f) => f.sealReason))).toEqual(new Set(['chunk']));

    // A second backfill finds nothing to do: one execution, no chunk, the same files.
    const filesBefore = await fileRanges(table.tableId);
    const again = await runBackfillStateMachine(engine, table.name);
    expect([again.executions, again.chunks]).toEqual([1, 0]);
    expect(await fileRanges(table.tableId)).toEqual(filesBefore);
  });

  it('an unknown table fails the execution with the engine\'s message, after one attempt (a bad request is not retried)', async () => {
    await expect(runBackfillStateMachine(engine, 'no_such_table')).rejects.toThrow('no table named "no_such_table"');
    const { definition, stateMachineArn } = synthesizeBackfillDefinition();
    let attempts = 0;
    const execution = new StateMachine(definition as never).run({ table: 'no_such_table' } as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: async (event) => {
            attempts += 1;
            return (await planTask({ catalog: engine.catalog, kafka: engine.kafka }, event)) as never;
          },
        },
        retryIntervalOverrides: { Plan: 0 },
      },
      context: { StateMachine: { Id: stateMachineArn }, Execution: { Id: 'local' } } as never,
    });
    await expect(execution.result).rejects.toThrow('no table named');
    expect(attempts).toBe(1);
  });

  it('history = none: the plan has no partition and the execution ends at once', async () => {
    const topic = await newTopic(engine, 1, 'sm-none');
    await produce(engine.kafka, topic, records(1, 300));
    const table = await tableOf(topic, { history: 'none', backfill_offsets: '100' });
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk));
    expect([summary.executions, summary.chunks, chunks.length]).toEqual([1, 0, 0]);
    expect(await fileRanges(table.tableId)).toEqual([]);
  });

  it('since: the first execution starts at the first offset at or after the time', async () => {
    const topic = await newTopic(engine, 1, 'sm-since');
    await produce(engine.kafka, topic, records(1, 1_000));
    // Offset 250 is the first record at or after t0 + 2,495 ms (records are 10 ms apart).
    const table = await tableOf(topic, { history: `since=${new Date(t0 + 2_495).toISOString()}`, backfill_offsets: '400' });
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk));
    expect(chunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end])).toEqual([
      ['committed', '600', '1000'],
      ['committed', '250', '600'],
    ]);
    expect([summary.executions, summary.records]).toEqual([1, 750]);
  });

  it('a chunk whose success was lost is retried by the definition\'s Retry and changes nothing', async () => {
    const topic = await newTopic(engine, 1, 'sm-retry');
    await produce(engine.kafka, topic, records(1, 900));
    const table = await tableOf(topic, { backfill_offsets: '300' });
    const { definition, stateMachineArn } = synthesizeBackfillDefinition();
    const deps = { catalog: engine.catalog, kafka: engine.kafka };
    const results: ChunkResult[] = [];
    let calls = 0;
    const machine = new StateMachine(definition as never);
    const execution = machine.run({ table: table.name } as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: async (event) => (await planTask(deps, event)) as never,
          Replan: async (event) => (await planTask(deps, event)) as never,
          Chunk: async (event) => {
            calls += 1;
            const result = await chunkTask(deps, event);
            results.push(result);
            // The second chunk commits, then its response is lost: Lambda reports a failure.
            if (calls === 2) throw new Error('Lambda.SdkClientException: response lost after the chunk committed');
            return result as never;
          },
        },
        retryIntervalOverrides: { Chunk: 0 },
      },
      context: { StateMachine: { Id: stateMachineArn }, Execution: { Id: 'local' } } as never,
    });
    await execution.result;
    expect(results.map((r) => [r.outcome, r.chunk?.start, r.chunk?.end, r.cursor])).toEqual([
      ['committed', '600', '900', '600'],
      ['committed', '300', '600', '300'],
      ['skipped', undefined, undefined, '300'],
      ['committed', '0', '300', '0'],
    ]);
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)!.length).toBe(900);
    expect(check.files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(900);
  });
});
