import { randomUUID } from 'node:crypto';
import { openEngine, type Engine } from '../../src/runtime/engine.js';
import { indexerFor, type IndexerRuntime } from '../../src/indexer/handler.js';
import type { TableRecord } from '../../src/table/record.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { createTopic, topicPartitions } from '../../src/kafka/topics.js';
import { resolveSettings, type TableFormat } from '../../src/table/settings.js';
import { createTableFromTopic, type CreatedTable } from '../../src/table-topic/create-table.js';
import { freshDatabase } from './database.js';

/** An engine on a catalog of its own (a fresh database) and the test broker; `close()` drops the database. */
export async function testEngine(prefix = 'engine'): Promise<Engine> {
  const db = await freshDatabase(prefix);
  const engine = await openEngine({ databaseUrl: db.url });
  return {
    ...engine,
    async close() {
      await engine.close();
      await db.drop();
    },
  };
}

/** A new topic with a unique name. */
export async function newTopic(engine: Engine, partitions = 1, name = 'topic'): Promise<string> {
  const topic = `${name}-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, partitions);
  return topic;
}

let tables = 0;

/** A table over `topic` (settings by their specification names), under a name no other test uses. */
export async function testTable(engine: Engine, topic: string, settings: Record<string, string> = {}, format: TableFormat = 'json'): Promise<CreatedTable> {
  tables += 1;
  const name = `t${tables}_${randomUUID().slice(0, 6)}_${topic.replace(/\W/g, '_')}`.toLowerCase().slice(0, 60);
  return createTableFromTopic(engine, { name, topic, format, settings: resolveSettings(settings) });
}

/** An indexer runtime on the engine's catalog and broker, as the local runner makes one. */
export function testRuntime(engine: Engine, owner: string, overrides: Partial<IndexerRuntime> = {}): IndexerRuntime {
  return {
    catalog: engine.catalog,
    source: kafkaSource(engine.kafka),
    build: rangeBuilder(engine.catalog),
    owner,
    clock: Date.now,
    indexers: new Map(),
    releaseAfterEvent: false,
    ...overrides,
  };
}

/** Indexes what partition `partition` of `table` holds now, under a lease of `runtime`'s owner, flushed and handed back. */
export async function indexPartition(runtime: IndexerRuntime, table: TableRecord, partition = 0): Promise<void> {
  const indexer = await indexerFor(runtime, table, partition);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
}

/** Grows the topic to `count` partitions and waits until the broker's metadata lists them (it lags the request). */
export async function growTopic(engine: Engine, topic: string, count: number): Promise<void> {
  await engine.kafka.admin().createPartitions({ topics: [{ name: topic, count }] });
  for (let i = 0; (await topicPartitions(engine.kafka, topic)).length < count; i += 1) {
    if (i > 100) throw new Error(`topic ${topic} still lacks its new partitions`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
