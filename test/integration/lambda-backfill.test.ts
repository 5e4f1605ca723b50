/**
 * functions/backfill and functions/retention: the Lambda entries, configured from the
 * environment as on AWS, against the real broker and a catalog of their own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { resolveSettings } from '../../src/catalog/settings.js';
import { createTableFromTopic } from '../../src/catalog/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';

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

    const plan = (await handler({ action: 'plan', table: 'lambda_history', input: { table: 'lambda_history', chunksPerExecution: 10 } })) as { partitions: { cursor: string; target: string }[]; chunksPerPartition: number; execution: number };
    expect(plan.partitions.map((p) => [p.cursor, p.target])).toEqual([['250', '0']]);
    expect([plan.chunksPerPartition, plan.execution]).toEqual([10, 1]);

    let cursor: unknown = plan.partitions[0];
    const chunks: string[] = [];
    for (let i = 0; i < 5 && !(cursor as { done: boolean }).done; i += 1) {
      cursor = await handler({ action: 'chunk', table: 'lambda_history', cursor });
      const c = cursor as { outcome: string; chunk: { start: string; end: string } | null };
      chunks.push(`${c.outcome} ${c.chunk?.start}-${c.chunk?.end}`);
    }
    expect(chunks).toEqual(['committed 150-250', 'committed 50-150', 'committed 0-50']);

    await expect(handler({ action: 'merge', table: 'lambda_history' })).rejects.toThrow('backfill: "action" must be "plan" or "chunk", got "merge"');
    await expect(handler({ action: 'plan', table: 'lambda_history', input: { chunksPerExecution: 0 } })).rejects.toThrow('chunksPerExecution must be a whole number from 1 to 1800, got 0');
  });

  it('retention expires the files below Kafka\'s earliest offset and discovers nothing new', async () => {
    const backfill = (await import('../../functions/backfill/index.js')).handler;
    const { handler } = await import('../../functions/retention/index.js');
    const topic = await newTopic(engine, 1, 'lambda-retention');
    await produce(engine.kafka, topic, Array.from({ length: 200 }, (_, i) => ({ value: `{"i":${i}}` })));
    await createTableFromTopic(engine, { name: 'lambda_retention', topic, format: 'json', settings: resolveSettings({ backfill_offsets: '100' }) });
    const plan = (await backfill({ action: 'plan', table: 'lambda_retention', input: {} })) as { partitions: unknown[] };
    let cursor = plan.partitions[0] as { done: boolean };
    while (!cursor.done) cursor = (await backfill({ action: 'chunk', table: 'lambda_retention', cursor })) as { done: boolean };
    await deleteRecords(engine.kafka, topic, 0, 150n);

    const result = await handler();
    const mine = result.partitions.filter((p) => p.table === 'lambda_retention');
    expect(mine.map((p) => [p.earliest, p.expiredFiles, p.indexedStart])).toEqual([['150', 2, '200']]);
    expect([result.discovered, result.backfills]).toEqual([[], []]);
  });
});
