/**
 * What every Lambda entry shares: the catalog (migrated once per instance), Kafka, and
 * the warm indexers. Kept at module scope across invocations of one instance.
 */
import { openCatalog } from '../src/catalog/db.js';
import { migrateCatalog } from '../src/catalog/migrate.js';
import { ownerName } from '../src/engine.js';
import type { IndexerRuntime } from '../src/indexer/handler.js';
import { rangeBuilder } from '../src/indexer/build.js';
import { kafkaSource } from '../src/indexer/source.js';
import { connectKafka } from '../src/kafka/connect.js';

let runtime: Promise<IndexerRuntime> | undefined;

async function start(bootstrapServers: string | undefined): Promise<IndexerRuntime> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set: the indexer needs the catalog');
  const catalog = openCatalog(databaseUrl, 2);
  await migrateCatalog(catalog);
  const brokers = process.env.KAFKA_BROKERS ?? bootstrapServers;
  if (!brokers) throw new Error('KAFKA_BROKERS is not set and the event names no bootstrap servers');
  return {
    catalog,
    source: kafkaSource(connectKafka({ brokers })),
    build: rangeBuilder(catalog),
    owner: ownerName('lambda'),
    clock: Date.now,
    indexers: new Map(),
    // Any instance may get the next batch of a partition: leases are handed back after each event.
    releaseAfterEvent: true,
  };
}

/** The instance's runtime, made on first use; a failed start is retried by the next invocation. */
export function lambdaRuntime(bootstrapServers?: string): Promise<IndexerRuntime> {
  runtime ??= start(bootstrapServers).catch((error: unknown) => {
    runtime = undefined;
    throw error;
  });
  return runtime;
}
