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

export type PortOverrides = Partial<Record<keyof typeof defaultPorts, number>>;

function parsePort(name: string, text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name} must be a port number from 1 to 65535, got "${text}"`);
  return port;
}

/** Flags, then environment, then defaults. */
export function stackConfig(flags: PortOverrides & { home?: string } = {}, env: NodeJS.ProcessEnv = process.env): StackConfig {
  const port = (key: keyof typeof defaultPorts): number => {
    const flag = flags[key];
    if (flag !== undefined) return flag;
    const fromEnv = env[portEnv[key]];
    return fromEnv ? parsePort(portEnv[key], fromEnv) : defaultPorts[key];
  };
  return {
    paths: stackPaths(flags.home ?? env.OFFSETLAKE_HOME),
    host: '127.0.0.1',
    kafkaPort: port('kafkaPort'),
    controllerPort: port('controllerPort'),
    registryPort: port('registryPort'),
    postgresPort: port('postgresPort'),
    databaseUrl: env.DATABASE_URL || undefined,
  };
}

export { parsePort };
