/**
 * The MSK-triggered Lambda: parses its event, calls the engine, returns. Warm state
 * (catalog pool, Kafka connection, open ranges) lives at module scope, across
 * invocations of one instance. A thrown error makes the event source mapping retry the
 * whole batch: that is what happens when another instance holds a partition's lease or
 * the catalog cannot be reached.
 */
import { openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { ownerName } from '../../src/engine.js';
import { handleKafkaEvent, type IndexerRuntime, type PartitionOutcome } from '../../src/indexer/handler.js';
import { rangeBuilder } from '../../src/indexer/build.js';
import { kafkaSource } from '../../src/indexer/source.js';
import { connectKafka } from '../../src/kafka/connect.js';

let runtime: Promise<IndexerRuntime> | undefined;

async function start(bootstrapServers: string | undefined): Promise<IndexerRuntime> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set: the indexer needs the catalog');
  const catalog = openCatalog(databaseUrl, 2);
  await migrateCatalog(catalog);
  const brokers = process.env.KAFKA_BROKERS ?? bootstrapServers;
  const kafka = connectKafka(brokers ? { brokers } : {});
  return {
    catalog,
    source: kafkaSource(kafka),
    build: rangeBuilder(catalog),
    owner: ownerName('lambda'),
    clock: Date.now,
    indexers: new Map(),
    // Any instance may get the next batch of a partition: leases are handed back after each event.
    releaseAfterEvent: true,
  };
}

export async function handler(event: { bootstrapServers?: string }): Promise<{ partitions: PartitionOutcome[] }> {
  runtime ??= start(event?.bootstrapServers).catch((error) => {
    runtime = undefined;
    throw error;
  });
  return { partitions: await handleKafkaEvent(event, await runtime) };
}
