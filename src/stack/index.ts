import { kafkaBootstrap, kafkaService, localKafkaBootstrap } from './kafka.js';
import { catalogDatabaseUrl, postgresService } from './postgres.js';
import { registryService, registryUrl } from './registry.js';
import type { ServiceStatus, StackConfig } from './types.js';
import { stackConfig } from './config.js';

// Kafka first: the registry keeps its schemas in the broker.
const services = [kafkaService, registryService, postgresService] as const;

export async function stackUp(config: StackConfig, progress: (line: string) => void): Promise<ServiceStatus[]> {
  const statuses: ServiceStatus[] = [];
  for (const service of services) statuses.push(...(await service.up(config, progress)));
  return statuses;
}

/** Stops in reverse order; a service that was not started by this checkout is left alone. */
export async function stackDown(config: StackConfig): Promise<ServiceStatus[]> {
  const statuses: ServiceStatus[] = [];
  for (const service of [...services].reverse()) statuses.unshift(...(await service.down(config)));
  return statuses;
}

export async function stackStatus(config: StackConfig): Promise<ServiceStatus[]> {
  return (await Promise.all(services.map((service) => service.status(config)))).flat();
}

/** How the engine reaches the stack's services, as environment variables. */
export interface StackEnvironment {
  KAFKA_BROKERS: string;
  SCHEMA_REGISTRY_URL: string;
  DATABASE_URL: string;
}

export function stackEnvironment(config: StackConfig): StackEnvironment {
  return {
    KAFKA_BROKERS: kafkaBootstrap(config),
    SCHEMA_REGISTRY_URL: registryUrl(config),
    DATABASE_URL: catalogDatabaseUrl(config),
  };
}

/**
 * The defaults of a process on one machine (the CLI, tests, benchmarks): every service
 * the environment does not name is the local stack's. The engine itself has no defaults,
 * so a Lambda bundle never carries the stack manager.
 */
export function useLocalStackDefaults(env: NodeJS.ProcessEnv = process.env): void {
  const config = stackConfig({}, env);
  env.KAFKA_BROKERS ??= localKafkaBootstrap(config);
  env.SCHEMA_REGISTRY_URL ??= registryUrl(config);
  // the local catalog has a URL only once `stack up` has initialised Postgres
  if (env.DATABASE_URL === undefined) {
    try {
      env.DATABASE_URL = catalogDatabaseUrl(config);
    } catch {
      // left unset: the engine then says how to get a catalog
    }
  }
}
