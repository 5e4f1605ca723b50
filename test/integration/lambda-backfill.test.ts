/**
 * functions/backfill and functions/retention: the Lambda entries, configured from the
 * environment as on AWS, against the real broker and a catalog of their own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import type { BackfillPlanState } from '../../src/backfill/tasks.js';
import type { SlotStepResult } from '../../src/backfill/slot.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('lambdabackfill');
  process.env.DATABASE_URL = engine.config.databaseUrl;
  process.env.KAFKA_BROKERS = engine.config.kafkaBrokers.join(',');
  delete process.env.BACKFILL_STATE_MACHINE_ARN;
});
afterAll(() => engine.close());

describe('functions/backfill and functions/retention: the Lambda entries', () => {
  it('plans, runs chunks to the target, and names a bad request', async () => {
    const { handler } = await import('../../functions/backfill/index.js');
    const topic = await newTopic(engine, 1, 'lambda-backfill');
    await produce(engine.kafka, topic, Array.from({ length: 250 }, (_, i) => ({ value: `{"i":${i}}` })));
    await createTableFromTopic(engine, { name: 'lambda_history', topic, format: 'json', settings: resolveSettings({ backfill_offsets: '100' }) });

    const plan = (await handler({ action: 'plan', table: 'lambda_history', input: { table: 'lambda_history', chunksPerExecution: 10 }, slots: 10 })) as BackfillPlanState;
    expect([plan.left, plan.claimable, plan.finished, plan.slots, plan.chunksPerSlot, plan.execution]).toEqual([1, 1, 0, [0], 10, 1]);
    expect(plan.continuation).toEqual({ execution: 2, name: `lambda_history-${plan.tableId}-2` });

    // One slot's steps, as the Map's loop sends them: each claims the partition and runs its next chunk, until nothing is left.
    const chunks: string[] = [];
    for (let step = 0; step < plan.chunksPerSlot; step += 1) {
      const result = (await handler({ action: 'chunk', table: 'lambda_history', tableId: plan.tableId, executionName: 'lambda_history-1', slot: 0, step, budget: plan.chunksPerSlot })) as SlotStepResult;
      if (result.idle) break;
      chunks.push(`${result.result!.outcome} ${result.result!.chunk?.start}-${result.result!.chunk?.end}`);
    }
    expect(chunks).toEqual(['committed 150-250', 'committed 50-150', 'committed 0-50']);
    await expect(handler({ action: 'chunk', table: 'lambda_history', tableId: plan.tableId, executionName: 'lambda_history-1', slot: 0, step: -1, budget: 1 }))
      .rejects.toThrow('backfill slot step: step must be a whole number ≥ 0, got -1');

    await expect(handler({ action: 'merge', table: 'lambda_history' })).rejects.toThrow('backfill: "action" must be "plan" or "chunk", got "merge"');
    await expect(handler({ action: 'plan', table: 'lambda_history', input: { chunksPerExecution: 0 } })).rejects.toThrow('chunksPerExecution must be a whole number from 1 to 1800, got 0');
  });

  it('retention expires the files below Kafka\'s earliest offset and discovers nothing new', async () => {
    const backfill = (await import('../../functions/backfill/index.js')).handler;
    const { handler } = await import('../../functions/retention/index.js');
    const topic = await newTopic(engine, 1, 'lambda-retention');
    await produce(engine.kafka, topic, Array.from({ length: 200 }, (_, i) => ({ value: `{"i":${i}}` })));
    await createTableFromTopic(engine, { name: 'lambda_retention', topic, format: 'json', settings: resolveSettings({ backfill_offsets: '100' }) });
    const plan = (await backfill({ action: 'plan', table: 'lambda_retention', input: {} })) as BackfillPlanState;
    const step = (n: number) => backfill({ action: 'chunk', table: 'lambda_retention', tableId: plan.tableId, executionName: 'lambda_retention-1', slot: 0, step: n, budget: 10 }) as Promise<SlotStepResult>;
    for (let n = 0; !(await step(n)).idle; n += 1) expect(n).toBeLessThan(10);
    await deleteRecords(engine.kafka, topic, 0, 150n);

    const result = await handler();
    const mine = result.partitions.filter((p) => p.table === 'lambda_retention');
    expect(mine.map((p) => [p.earliest, p.expiredFiles, p.indexedStart])).toEqual([['150', 2, '200']]);
    expect([result.discovered, result.backfills]).toEqual([[], []]);
  });
});
