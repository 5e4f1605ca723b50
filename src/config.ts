import { stackEnvironment } from './stack/index.js';
import { stackConfig } from './stack/config.js';

/** Where the engine finds its services: flags, then environment, then the local stack. */
export interface EngineConfig {
  databaseUrl: string;
  kafkaBrokers: string[];
  schemaRegistryUrl: string;
}

export interface EngineFlags {
  databaseUrl?: string | undefined;
  kafkaBrokers?: string | undefined;
  schemaRegistryUrl?: string | undefined;
}

export function engineConfig(flags: EngineFlags = {}, env: NodeJS.ProcessEnv = process.env): EngineConfig {
  const local = stackEnvironment(stackConfig({}, env));
  const pick = (flag: string | undefined, name: keyof typeof local): string => flag || env[name] || local[name];
  return {
    databaseUrl: pick(flags.databaseUrl, 'DATABASE_URL'),
    kafkaBrokers: pick(flags.kafkaBrokers, 'KAFKA_BROKERS').split(',').map((broker) => broker.trim()).filter(Boolean),
    schemaRegistryUrl: pick(flags.schemaRegistryUrl, 'SCHEMA_REGISTRY_URL'),
  };
}
