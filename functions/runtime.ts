/**
 * What every Lambda entry shares: the catalog (its version checked once per instance;
 * the deploy migrates it, functions/migrate), Kafka, and the warm indexers. Kept at module
 * scope across invocations of one instance.
 */
import { openCatalog } from '../src/catalog/db.js';
import { requireCatalogVersion } from '../src/catalog/migrate.js';
import { ownerName } from '../src/runtime/engine.js';
import type { IndexerRuntime } from '../src/indexer/handler.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { kafkaSource } from '../src/kafka/source.js';
import type { Catalog } from '../src/catalog/db.js';
import { connectKafka, type KafkaConnection } from '../src/kafka/connect.js';
import { catalogConnection, kafkaSecurity } from './connections.js';
import { recordCommit } from './observability.js';

let runtime: Promise<IndexerRuntime> | undefined;
let services: Promise<LambdaServices> | undefined;

/** The catalog (at this code's version) and Kafka, shared by every entry of one instance. */
export interface LambdaServices {
  catalog: Catalog;
  kafka: KafkaConnection;
}

async function connect(bootstrapServers: string | undefined): Promise<LambdaServices> {
  const connection = await catalogConnection();
  const catalog = openCatalog(connection.url, 2, connection.password);
  await requireCatalogVersion(catalog).catch(async (error: unknown) => {
    await catalog.end();
    throw error;
  });
  const brokers = process.env.KAFKA_BROKERS ?? bootstrapServers;
  if (!brokers) throw new Error('KAFKA_BROKERS is not set and the event names no bootstrap servers');
  return { catalog, kafka: connectKafka({ brokers, ...(await kafkaSecurity()) }) };
}

/** The instance's catalog and Kafka, made on first use; a failed start is retried by the next invocation. */
export function lambdaServices(bootstrapServers?: string): Promise<LambdaServices> {
  services ??= connect(bootstrapServers).catch((error: unknown) => {
    services = undefined;
    throw error;
  });
  return services;
}

async function start(bootstrapServers: string | undefined): Promise<IndexerRuntime> {
  const { catalog, kafka } = await lambdaServices(bootstrapServers);
  return {
    catalog,
    source: kafkaSource(kafka),
    build: rangeBuilder(catalog),
    owner: ownerName('lambda'),
    clock: Date.now,
    indexers: new Map(),
    // Any instance may get the next batch of a partition: leases are handed back after each event.
    releaseAfterEvent: true,
    onCommit: recordCommit,
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
