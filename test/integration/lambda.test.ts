import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { toKafkaEvent } from '../../src/events/msk.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/tables/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('lambda');
  // The Lambda entry reads its configuration from the environment, as it would on AWS.
  process.env.DATABASE_URL = engine.config.databaseUrl;
});
afterAll(() => engine.close());

describe('functions/indexer: the Lambda entry', () => {
  it('indexes an MSK event, hands the lease back, and refuses a malformed event', async () => {
    const { handler } = await import('../../functions/indexer/index.js');
    const topic = await newTopic(engine, 1, 'lambda');
    const table = await createTableFromTopic(engine, { name: 'lambda_orders', topic, format: 'json', settings: resolveSettings({ file_bytes: '100B' }) });
    await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ key: null, value: JSON.stringify({ i, pad: 'x'.repeat(60) }), partition: 0 })));
    const records = (await readCommittedRange(engine.kafka, topic, 0, 0n, 10n)).records;
    const event = toKafkaEvent([{ topic, partition: 0, records }], engine.config.kafkaBrokers.join(','));

    const result = await handler(JSON.parse(JSON.stringify(event)));
    expect(result.partitions).toEqual([{ table: 'lambda_orders', topic, partition: 0, indexedEnd: '4', position: '4', rangesCommitted: 2, filesCommitted: 2 }]);
    expect((await listFiles(engine.catalog, table.tableId)).map((f) => [f.startOffset, f.endOffset, f.sealReason])).toEqual([[0n, 2n, 'bytes'], [2n, 4n, 'bytes']]);
    const lease = await engine.catalog.query('SELECT lease_expires_at <= now() AS free FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId]);
    expect(lease.rows[0]).toEqual({ free: true });

    await expect(handler({ eventSource: 'aws:kafka', records: 'none' } as never)).rejects.toThrow('malformed Kafka event: records: expected an object');
  });
});
