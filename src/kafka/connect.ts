/**
 * How offsetlake reaches Kafka: the one place that creates @platformatic/kafka clients,
 * from the connect options of connect-options.ts.
 *
 * A KafkaConnection owns two long-lived clients, created on first use:
 * - `admin()`: metadata, ListOffsets, CreateTopics, DeleteRecords;
 * - `reader()`: committed reads (Fetch), on connections of its own, so that a fetch
 *   never queues behind an admin request on the same socket (Kafka answers the
 *   requests of one connection one at a time).
 * Producers and consumers are created per use and closed by their user.
 */
import { Admin, Consumer, Producer, type ProducerOptions } from '@platformatic/kafka';
import { kafkaConnectOptions, type KafkaConnectFlags, type KafkaConnectOptions } from './connect-options.js';

export class KafkaConnection {
  #admin: Admin | undefined;
  #reader: Admin | undefined;
  #closed = false;
  readonly #others = new Set<{ close(): Promise<void> }>();
  /**
   * Told of every request this code retries itself (a Fetch after a leader moved or a
   * broker went away), in words: what failed, where, and which try comes next. A process
   * with a log sets it (`run`, `serve`), so a retry is never silent; unset, retries are only
   * counted in the error that ends them.
   */
  onRetry: ((line: string) => void) | undefined;

  constructor(readonly options: KafkaConnectOptions) {}

  /** Options every client shares. */
  baseOptions(clientIdSuffix?: string) {
    const { brokers, clientId, requestTimeoutMs, connectTimeoutMs, retries, tls, sasl } = this.options;
    return {
      clientId: clientIdSuffix ? `${clientId}-${clientIdSuffix}` : clientId,
      bootstrapBrokers: brokers,
      ...(requestTimeoutMs !== undefined ? { timeout: requestTimeoutMs, requestTimeout: requestTimeoutMs } : {}),
      ...(connectTimeoutMs !== undefined ? { connectTimeout: connectTimeoutMs } : {}),
      ...(retries !== undefined ? { retries } : {}),
      ...(tls !== undefined ? { tls } : {}),
      ...(sasl !== undefined ? { sasl } : {}),
      // The library's default is 1 s between attempts; an unknown topic alone then costs 3 s.
      retryDelay: 250,
      autocreateTopics: false,
    };
  }

  #checkOpen(): void {
    if (this.#closed) throw new Error('this Kafka connection is closed');
  }

  /** The shared admin client: metadata, offsets, topics. */
  admin(): Admin {
    this.#checkOpen();
    this.#admin ??= new Admin(this.baseOptions());
    return this.#admin;
  }

  /** The shared client whose connections carry committed reads (Fetch requests). */
  reader(): Admin {
    this.#checkOpen();
    this.#reader ??= new Admin(this.baseOptions('reader'));
    return this.#reader;
  }

  /** A new producer; closed by the caller, or by `close()`. */
  producer(options: Partial<ProducerOptions<Buffer, Buffer, Buffer, Buffer>> = {}): Producer {
    this.#checkOpen();
    const producer = new Producer({ ...this.baseOptions('producer'), ...options });
    this.#track(producer);
    return producer;
  }

  /**
   * A new consumer. offsetlake reads without a group (see read.ts); this exists for the
   * event-source emulation and tools that need a group consumer. It joins nothing until
   * asked to.
   */
  consumer(groupId: string): Consumer {
    this.#checkOpen();
    const consumer = new Consumer({ ...this.baseOptions('consumer'), groupId });
    this.#track(consumer);
    return consumer;
  }

  #track(client: { close(): Promise<void>; once(event: 'client:close', listener: () => void): unknown }): void {
    this.#others.add(client);
    client.once('client:close', () => this.#others.delete(client));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const clients = [this.#admin, this.#reader, ...this.#others].filter((c) => c !== undefined);
    this.#admin = undefined;
    this.#reader = undefined;
    this.#others.clear();
    await Promise.allSettled(clients.map((c) => c.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** A connection from flags, then the environment (see `kafkaConnectOptions`). Connects lazily, on first use. */
export function connectKafka(flags: KafkaConnectFlags = {}, env: NodeJS.ProcessEnv = process.env): KafkaConnection {
  return new KafkaConnection(kafkaConnectOptions(flags, env));
}
