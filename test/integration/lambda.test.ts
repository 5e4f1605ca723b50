import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { toKafkaEvent } from '../../src/indexer/kafka-event.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommittedRange } from '../../src/kafka/read.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { DeliveryFailedError } from '../../src/indexer/handler.js';
import { checkTable, rebuiltRows } from '../helpers/verify.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { findTable } from '../../src/catalog/tables.js';

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

  it('indexes and commits every table of an event but a broken one, names it in its error, and indexes it on the retry without a duplicate', async () => {
    const { handler } = await import('../../functions/indexer/index.js');
    const goodTopic = await newTopic(engine, 1, 'lambda-good');
    const brokenTopic = await newTopic(engine, 1, 'lambda-broken');
    const settings = resolveSettings({ file_bytes: '100B' });
    await createTableFromTopic(engine, { name: 'lambda_good', topic: goodTopic, format: 'json', settings });
    const brokenTable = await createTableFromTopic(engine, { name: 'lambda_broken', topic: brokenTopic, format: 'json', settings });
    for (const topic of [goodTopic, brokenTopic]) {
      await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ key: null, value: JSON.stringify({ topic, i, pad: 'x'.repeat(60) }), partition: 0 })));
    }
    // The broken table's catalog row: a lease_ttl that is no duration, as a hand edit could leave it.
    await engine.catalog.query(`UPDATE offsetlake.lake_table SET settings = jsonb_set(settings::jsonb, '{lease_ttl}', '"broken"') WHERE table_id = $1`, [brokenTable.tableId]);
    // The broken table's topic first: the event's order must not decide who is indexed.
    const batches = [];
    for (const topic of [brokenTopic, goodTopic]) batches.push({ topic, partition: 0, records: (await readCommittedRange(engine.kafka, topic, 0, 0n, 10n)).records });
    const event = JSON.parse(JSON.stringify(toKafkaEvent(batches, engine.config.kafkaBrokers.join(','))));

    const failed = await handler(event).then(() => undefined, (error: unknown) => error);
    expect(failed).toBeInstanceOf(DeliveryFailedError);
    const { failures, outcomes, message } = failed as DeliveryFailedError;
    // The broken row refused where it is read, by setting, under the table's name.
    const refusal = 'table "lambda_broken": its stored setting lease_ttl is "broken", not a positive whole number of milliseconds';
    expect(failures).toEqual([{ table: 'lambda_broken', topic: brokenTopic, partition: 0, error: expect.stringContaining(refusal) }]);
    expect(message).toContain(`table lambda_broken (topic ${brokenTopic} partition 0): ${refusal}`);
    expect(outcomes.map((o) => [o.table, o.indexedEnd, o.filesCommitted])).toEqual([['lambda_good', '4', 4]]);

    // The good table's files hold exactly what an independent read_committed consumer reads.
    const good = await findTable(engine.catalog, 'lambda_good');
    const check = await checkTable(engine, good);
    const [committed] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic: goodTopic, partition: 0, start: 0n, end: 4n }]);
    const rows = (await Promise.all(check.files.map((file) => rebuiltRows(engine, good, file)))).flat();
    expect(rows.map((row) => [BigInt(row._offset as bigint), Buffer.from(row._value as string).toString()])).toEqual(committed!.map((r) => [r.offset, r.value!.toString()]));
    expect(committed).toHaveLength(4);
    // The broken table wrote nothing, and its partition says why it waits.
    expect(await listFiles(engine.catalog, brokenTable.tableId)).toEqual([]);
    const waiting = await engine.catalog.query('SELECT waiting_reason FROM offsetlake.lake_partition WHERE table_id = $1', [brokenTable.tableId]);
    expect(waiting.rows[0].waiting_reason).toContain(refusal);

    // Repaired, the batch delivered again (as the event source mapping does after a failed
    // invocation): the good table reads nothing new and commits nothing twice.
    await engine.catalog.query(`UPDATE offsetlake.lake_table SET settings = jsonb_set(settings::jsonb, '{lease_ttl}', to_jsonb(30000)) WHERE table_id = $1`, [brokenTable.tableId]);
    const retried = await handler(event);
    expect(retried.partitions.map((o) => [o.table, o.indexedEnd, o.filesCommitted])).toEqual([['lambda_broken', '4', 4], ['lambda_good', '4', 0]]);
    expect((await checkTable(engine, good)).files).toHaveLength(4);
    expect((await checkTable(engine, await findTable(engine.catalog, 'lambda_broken'))).files).toHaveLength(4);
  });
});
