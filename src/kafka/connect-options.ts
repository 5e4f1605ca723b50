/**
 * How offsetlake is told where Kafka is: brokers from flags, then KAFKA_BROKERS, checked
 * without loading the Kafka client, so that a command that never talks to Kafka still
 * refuses a wrong broker list the way one that does would.
 */
import type { ConnectionOptions } from '@platformatic/kafka';

export interface KafkaConnectOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: string[];
  /** Kafka's client.id, shown in broker logs and quotas. */
  clientId: string;
  /** Per-request timeout (ms). */
  requestTimeoutMs?: number;
  /** Connection timeout (ms). */
  connectTimeoutMs?: number;
  /** How often a retriable failure is retried by the library. */
  retries?: number;
  /** TLS and SASL, passed to every client unchanged. */
  tls?: ConnectionOptions['tls'];
  sasl?: ConnectionOptions['sasl'];
}

export const defaultClientId = 'offsetlake';

/** `a:9092,b:9092` → `['a:9092', 'b:9092']`; a broker without a port gets 9092. */
export function parseBrokers(text: string, source = 'KAFKA_BROKERS'): string[] {
  const brokers = text.split(',').map((b) => b.trim()).filter((b) => b !== '');
  if (brokers.length === 0) throw new Error(`${source} names no broker; expected host:port[,host:port…], got "${text}"`);
  return brokers.map((broker) => {
    const match = /^(\[[0-9a-fA-F:]+\]|[^:\s[\]]+)(?::(\d+))?$/.exec(broker);
    if (!match) throw new Error(`${source}: "${broker}" is not host:port`);
    const port = match[2] === undefined ? 9092 : Number(match[2]);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${source}: "${broker}" has no valid port (1-65535)`);
    return `${match[1]}:${port}`;
  });
}

export type KafkaConnectFlags = Partial<Omit<KafkaConnectOptions, 'brokers'>> & { brokers?: string | string[] };

/** Flags, then environment (KAFKA_BROKERS, KAFKA_CLIENT_ID), then defaults. There is no default broker. */
export function kafkaConnectOptions(flags: KafkaConnectFlags = {}, env: NodeJS.ProcessEnv = process.env): KafkaConnectOptions {
  let brokers: string[];
  if (Array.isArray(flags.brokers)) brokers = parseBrokers(flags.brokers.join(','), '--brokers');
  else if (flags.brokers !== undefined) brokers = parseBrokers(flags.brokers, '--brokers');
  else if (env.KAFKA_BROKERS) brokers = parseBrokers(env.KAFKA_BROKERS);
  else throw new Error('no Kafka broker given: set KAFKA_BROKERS (host:port[,host:port…]) or pass --brokers');
  return { ...flags, brokers, clientId: flags.clientId ?? env.KAFKA_CLIENT_ID ?? defaultClientId };
}
