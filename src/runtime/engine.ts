import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { openCatalog, type Catalog } from '../catalog/db.js';
import { migrateCatalog } from '../catalog/migrate.js';
import { engineConfig, type EngineConfig, type EngineFlags } from './config.js';
import { connectKafka, type KafkaConnection } from '../kafka/connect.js';

/** What every command that touches data needs: the catalog (migrated) and Kafka (connected on first use). */
export interface Engine {
  config: EngineConfig;
  catalog: Catalog;
  kafka: KafkaConnection;
  close(): Promise<void>;
}

export async function openEngine(flags: EngineFlags = {}): Promise<Engine> {
  const config = engineConfig(flags);
  const catalog = openCatalog(config.databaseUrl);
  try {
    await migrateCatalog(catalog);
  } catch (error) {
    await catalog.end();
    throw new Error(`cannot open the catalog at ${redact(config.databaseUrl)}: ${(error as Error).message}`, { cause: error });
  }
  const kafka = connectKafka({ brokers: config.kafkaBrokers });
  return {
    config,
    catalog,
    kafka,
    async close() {
      await Promise.allSettled([kafka.close(), catalog.end()]);
    },
  };
}

export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/** A lease owner name unique to this process: host, pid and a random part. */
export function ownerName(role: string): string {
  return `${role}@${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
