import { stackPaths } from './process.js';
import type { StackConfig } from './types.js';

/** Loopback ports of the local stack; each can be moved with its environment variable or flag. */
export const defaultPorts = {
  kafkaPort: 29092,
  controllerPort: 29093,
  registryPort: 28081,
  postgresPort: 25432,
} as const;

const portEnv: Record<keyof typeof defaultPorts, string> = {
  kafkaPort: 'OFFSETLAKE_KAFKA_PORT',
  controllerPort: 'OFFSETLAKE_CONTROLLER_PORT',
  registryPort: 'OFFSETLAKE_REGISTRY_PORT',
  postgresPort: 'OFFSETLAKE_POSTGRES_PORT',
};

/** Brokers 2 and 3 of `stack up --brokers 3` (OFFSETLAKE_BROKER_PORTS moves them). */
export const defaultBrokerPorts = [29094, 29095] as const;

/** The broker counts `--brokers` takes: one combined node, or a cluster that can lose a broker and keep min.insync.replicas=2. */
export const brokerCounts = [1, 3] as const;

export type PortOverrides = Partial<Record<keyof typeof defaultPorts, number>>;

function parsePort(name: string, text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name} must be a port number from 1 to 65535, got "${text}"`);
  return port;
}

export function parseBrokerCount(name: string, text: string): number {
  const count = Number(text);
  if (!(brokerCounts as readonly number[]).includes(count)) throw new Error(`${name} must be ${brokerCounts.join(' or ')} (one broker, or a cluster of three), got "${text}"`);
  return count;
}

/** `N,N,…`: one port per broker after the first. */
export function parseBrokerPorts(name: string, text: string): number[] {
  return text.split(',').map((part) => parsePort(name, part.trim()));
}

/** Flags, then environment, then defaults. */
export function stackConfig(flags: PortOverrides & { home?: string; brokers?: number; brokerPorts?: number[] } = {}, env: NodeJS.ProcessEnv = process.env): StackConfig {
  const port = (key: keyof typeof defaultPorts): number => {
    const flag = flags[key];
    if (flag !== undefined) return flag;
    const fromEnv = env[portEnv[key]];
    return fromEnv ? parsePort(portEnv[key], fromEnv) : defaultPorts[key];
  };
  const brokers = flags.brokers ?? (env.OFFSETLAKE_BROKERS ? parseBrokerCount('OFFSETLAKE_BROKERS', env.OFFSETLAKE_BROKERS) : 1);
  const brokerPorts = flags.brokerPorts ?? (env.OFFSETLAKE_BROKER_PORTS ? parseBrokerPorts('OFFSETLAKE_BROKER_PORTS', env.OFFSETLAKE_BROKER_PORTS) : [...defaultBrokerPorts]);
  if (brokers > 1 && brokerPorts.length !== brokers - 1) {
    throw new Error(`${brokers} brokers need ${brokers - 1} ports besides the Kafka port (OFFSETLAKE_BROKER_PORTS or --broker-ports N,N), got ${brokerPorts.length}: ${brokerPorts.join(',') || 'none'}`);
  }
  return {
    paths: stackPaths(flags.home ?? env.OFFSETLAKE_HOME),
    host: '127.0.0.1',
    kafkaPort: port('kafkaPort'),
    controllerPort: port('controllerPort'),
    brokers,
    brokerPorts: brokers > 1 ? brokerPorts : [],
    registryPort: port('registryPort'),
    postgresPort: port('postgresPort'),
    databaseUrl: env.DATABASE_URL || undefined,
  };
}

export { parsePort };
