/**
 * Where the engine finds its services: flags, then the environment. The engine has no
 * defaults of its own: on one machine the CLI, tests and benchmarks fill the
 * environment with the local stack's (src/stack `useLocalStackDefaults`); on AWS the
 * functions' environment names every service.
 */
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
  const pick = (flag: string | undefined, name: 'DATABASE_URL' | 'KAFKA_BROKERS' | 'SCHEMA_REGISTRY_URL'): string => {
    const value = flag || env[name];
    if (!value) {
      if (name === 'DATABASE_URL') throw new Error('no catalog: DATABASE_URL is not set and the local stack\'s Postgres is not initialised; run `offsetlake stack up` or set DATABASE_URL');
      throw new Error(`${name} is not set: name the service in the environment (or with its flag)`);
    }
    return value;
  };
  return {
    databaseUrl: pick(flags.databaseUrl, 'DATABASE_URL'),
    kafkaBrokers: pick(flags.kafkaBrokers, 'KAFKA_BROKERS').split(',').map((broker) => broker.trim()).filter(Boolean),
    schemaRegistryUrl: pick(flags.schemaRegistryUrl, 'SCHEMA_REGISTRY_URL'),
  };
}
