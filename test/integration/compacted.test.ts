/**
 * Compacted topics: compaction deletes records inside a partition, so a file over it
 * could not be rebuilt byte for byte. A table over one is refused; a topic whose policy
 * changes later is named in status, and a read that then fails says why.
 */
import { ConfigResourceTypes, IncrementalAlterConfigOperationTypes } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { TableError } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { createTopic } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { bodyBytes, readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { resolveSettings } from '../../src/table/settings.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('compacted');
});
afterAll(() => engine.close());

describe('compacted topics', () => {
  it('table create refuses a topic with cleanup.policy compact (or compact,delete), saying why', async () => {
    for (const policy of ['compact', 'compact,delete']) {
      const topic = `compacted-${policy.replace(',', '-')}-${Date.now()}`;
      await createTopic(engine.kafka, topic, 1, { configs: { 'cleanup.policy': policy } });
      const created = createTableFromTopic(engine, { name: 'over_compacted', topic, format: 'json', settings: resolveSettings({}) });
      await expect(created).rejects.toThrow(TableError);
      await expect(created).rejects.toThrow(`cannot create table over_compacted: topic "${topic}" has cleanup.policy=${policy}: compaction deletes records inside a partition`);
    }
  });

  it('a topic made compacted later is named in status, and a read whose rebuild then differs names compaction as the reason', async () => {
    const topic = await newTopic(engine, 1, 'later-compacted');
    const table = await testTable(engine, topic, { file_window: '30m' });
    await produce(engine.kafka, topic, [{ key: 'k', value: '{"a":1}' }, { key: 'k', value: '{"a":2}' }]);
    await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    await engine.kafka.admin().incrementalAlterConfigs({
      resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configs: [{ name: 'cleanup.policy', configOperation: IncrementalAlterConfigOperationTypes.SET, value: 'compact' }] }],
    });
    const [status] = await partitionStatus(engine, table.name);
    expect(status!.topicProblem).toMatch(new RegExp(`^topic "${topic}" has cleanup.policy=compact: compaction deletes records`));

    // What compaction does to a file (the log cleaner runs on its own schedule): a record of it is gone.
    const [file] = await listFiles(engine.catalog, table.tableId);
    await engine.catalog.query('UPDATE offsetlake.granule SET row_count = row_count + 1 WHERE data_file_id = $1', [file!.dataFileId]);
    const handler = readerHandler(new ReaderService(engine.catalog, kafkaSource(engine.kafka)), { token: null });
    const response = await handler({ method: 'GET', path: `/tables/${table.name}/files/${file!.dataFileId}.parquet`, headers: {} });
    expect(response.status).toBe(500);
    expect(JSON.parse(Buffer.from(await bodyBytes(response.body)).toString()).error).toContain(
      `file ${file!.dataFileId}, row group 0: rebuilt from Kafka, it does not match the catalog (topic "${topic}" has cleanup.policy=compact: compaction deletes records`,
    );
    // A file without granules is rebuilt whole and names compaction too.
    await engine.catalog.query('UPDATE offsetlake.data_file SET sha256 = $2, page_index = NULL WHERE data_file_id = $1', [file!.dataFileId, Buffer.alloc(32)]);
    const [whole] = await listFiles(engine.catalog, table.tableId);
    expect(whole!.hasGranules).toBe(false);
    const again = await readerHandler(new ReaderService(engine.catalog, kafkaSource(engine.kafka)), { token: null })({ method: 'GET', path: `/tables/${table.name}/files/${file!.dataFileId}.parquet`, headers: {} });
    expect(again.status).toBe(500);
    expect(JSON.parse(Buffer.from(await bodyBytes(again.body)).toString()).error).toContain(`does not match the catalog: topic "${topic}" has cleanup.policy=compact`);
  });
});
