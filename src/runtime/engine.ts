import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { openCatalog, type Catalog } from '../catalog/db.js';
import { migrateCatalog } from '../catalog/migrate.js';
import { engineConfig, type EngineConfig, type EngineFlags } from './config.js';
import { kafkaConnectOptions, type KafkaConnectOptions } from '../kafka/connect-options.js';
import type { KafkaConnection } from '../kafka/connect.js';

/** What a command that reads and writes only the catalog needs: the catalog, migrated. */
export interface CatalogEngine {
  config: EngineConfig;
  catalog: Catalog;
  close(): Promise<void>;
}

/** What every command that touches data needs: the catalog (migrated) and Kafka (connected on first use). */
export interface Engine extends CatalogEngine {
  kafka: KafkaConnection;
}

/** The catalog without Kafka: the Kafka client is never loaded (a wrong broker list is refused all the same). */
export async function openCatalogEngine(flags: EngineFlags = {}): Promise<CatalogEngine> {
  const { config, catalog } = await openCatalogChecked(flags);
  return { config, catalog, close: () => catalog.end() };
}

export async function openEngine(flags: EngineFlags = {}): Promise<Engine> {
  const { config, catalog, kafkaOptions } = await openCatalogChecked(flags);
  // loaded here, not at import: commands that use only the catalog never pay for the Kafka client
  const { KafkaConnection } = await import('../kafka/connect.js');
  const kafka = new KafkaConnection(kafkaOptions);
  return {
    config,
    catalog,
    kafka,
    async close() {
      await Promise.allSettled([kafka.close(), catalog.end()]);
    },
  };
}

/** The configuration, the catalog opened and migrated, and Kafka's connect options checked (in that order: the errors say the first problem). */
async function openCatalogChecked(flags: EngineFlags): Promise<{ config: EngineConfig; catalog: Catalog; kafkaOptions: KafkaConnectOptions }> {
  const config = engineConfig(flags);
  let url: URL | undefined;
  try {
    url = new URL(config.databaseUrl);
  } catch {
    // said below
  }
  if (!url || !/^postgres(ql)?:$/.test(url.protocol)) {
    throw new Error(`the catalog's address "${redact(config.databaseUrl)}" is not a postgres:// URL (DATABASE_URL or --database-url), e.g. postgres://user:password@host:5432/db`);
  }
  const catalog = openCatalog(config.databaseUrl);
  try {
    await migrateCatalog(catalog);
  } catch (error) {
    await catalog.end();
    throw new Error(`cannot open the catalog at ${redact(config.databaseUrl)}: ${catalogProblem(error as Error & { code?: string })}`, { cause: error });
  }
  try {
    return { config, catalog, kafkaOptions: kafkaConnectOptions({ brokers: config.kafkaBrokers }) };
  } catch (error) {
    await catalog.end();
    throw error;
  }
}

/** What a failed catalog connection means to the user, and what to do. */
function catalogProblem(error: Error & { code?: string }): string {
  if (error.code === 'ECONNREFUSED') return 'nothing answers there; `offsetlake stack up` starts the local catalog, or set DATABASE_URL to yours';
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') return 'its host name is not known; check DATABASE_URL';
  if (error.code === '28P01' || error.code === '28000') return 'the user name or password is refused; check DATABASE_URL';
  if (error.code === '3D000') return 'that database does not exist; create it or check DATABASE_URL';
  return error.message;
}

export function redact(url: string): string {
  // to the last @ before the query: a password with an unencoded @ is hidden whole
  return url.replace(/\/\/([^:/@]+):[^?]*@/, '//$1:***@');
}

/** A lease owner name unique to this process: host, pid and a random part. */
export function ownerName(role: string): string {
  return `${role}@${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
