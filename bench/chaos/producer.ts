/**
 * The load of every fault scenario: one transactional producer writing, until stopped,
 * transactions of 1–30 records over every partition of a topic, a quarter of them
 * aborted; values that are JSON, now and then one that is not, or Avro in the wire
 * format; one record in 20 late (up to 5 minutes old, so that, by the minute, it
 * falls in an earlier time bucket). Seeded: the same seed makes the same records and decisions.
 *
 * It outlives the faults it meets: a transaction that fails (the broker restarting)
 * closes the producer, and a new one with the same transactional id fences it and aborts
 * whatever it left open. Its own counts are only for the report; what was committed is
 * what an independent read_committed reader finds.
 */
import type { KafkaConnection } from '../../src/kafka/connect.js';
import { transactionalProducer, type ProducedPartition, type RecordToProduce, type TransactionalProducer } from '../../src/kafka/produce.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { sleep } from '../../src/stack/process.js';
import { encodeWith } from '../../test/helpers/registry.js';

export interface ChaosProducerOptions {
  topic: string;
  partitions: number;
  random: () => number;
  /** Longest pause between two transactions (a random share of it is taken each time). */
  maxPauseMs: number;
  /** Avro and Protobuf tables: the schema each value is written with, asked for per record (a scenario switches it). */
  avroSchema?: () => RegistrySchema;
}

export interface ProducerCounts {
  committedTransactions: number;
  abortedTransactions: number;
  /** Transactions that failed part-way: their outcome is Kafka's (usually aborted by the next producer). */
  failedTransactions: number;
  /** Records of transactions whose commit returned. */
  committedRecords: number;
}

const transactionalIdOf = (topic: string) => `${topic}-chaos-producer`;

export class ChaosProducer {
  readonly counts: ProducerCounts = { committedTransactions: 0, abortedTransactions: 0, failedTransactions: 0, committedRecords: 0 };
  private producer: TransactionalProducer;
  private sequence = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly errors: string[] = [];

  constructor(private readonly kafka: KafkaConnection, private readonly options: ChaosProducerOptions) {
    this.producer = transactionalProducer(kafka, transactionalIdOf(options.topic));
  }

  /** Writes over `partitions` partitions from the next transaction on (the topic grew). */
  grow(partitions: number): void {
    this.options.partitions = partitions;
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopping) {
        const abort = this.options.random() < 0.25;
        const count = 1 + Math.floor(this.options.random() * 30);
        await this.transaction(Array.from({ length: count }, () => this.record(Math.floor(this.options.random() * this.options.partitions))), abort);
        await sleep(Math.floor(this.options.random() * this.options.maxPauseMs));
      }
    })();
    // A record that cannot be made is the scenario's bug: said by stop(), never an unhandled rejection.
    this.loop.catch(() => {});
  }

  /**
   * Stops producing, then commits one last transaction holding a record on every
   * partition (tried until it commits), and returns per partition the offset after it:
   * every committed record lies below, and an indexer that reached it has read them all.
   */
  async stop(timeoutMs = 120_000): Promise<Map<number, bigint>> {
    this.stopping = true;
    await this.loop;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const records = Array.from({ length: this.options.partitions }, (_, partition) => this.record(partition, false));
      const produced = await this.transaction(records, false);
      if (produced) {
        await this.producer.close().catch(() => {});
        return new Map(produced.map((p) => [p.partition, p.lastOffset + 1n]));
      }
      if (Date.now() > deadline) throw new Error(`the producer's last transaction did not commit within ${timeoutMs} ms: ${this.errors.slice(-3).join('; ')}`);
      await sleep(250);
    }
  }

  /** Stops producing without a last transaction (a scenario that failed). */
  async halt(): Promise<void> {
    this.stopping = true;
    await this.loop?.catch(() => {});
    await this.producer.close().catch(() => {});
  }

  private record(partition: number, mayBeLate = true): RecordToProduce {
    this.sequence += 1;
    const n = this.sequence;
    const late = mayBeLate && this.options.random() < 0.05;
    const timestamp = Date.now() - (late ? Math.floor(this.options.random() * 5 * 60_000) : 0);
    const schema = this.options.avroSchema?.();
    const value = schema
      ? encodeWith(schema, orderOf(schema, n, late))
      : this.options.random() < 0.05
        ? `not json ${n}`
        : JSON.stringify({ seq: n, partition, customer: `customer-${n % 97}`, total: (n % 9973) / 100, late });
    return { partition, key: `k${n % 17}`, value, timestamp, headers: n % 7 === 0 ? [['source', 'chaos']] : [] };
  }

  /** One transaction; the partitions it wrote, or undefined when it failed (the producer is then replaced). */
  private async transaction(records: RecordToProduce[], abort: boolean): Promise<ProducedPartition[] | undefined> {
    try {
      const transaction = await this.producer.begin();
      const produced = await transaction.send(this.options.topic, records);
      if (abort) {
        await transaction.abort();
        this.counts.abortedTransactions += 1;
      } else {
        await transaction.commit();
        this.counts.committedTransactions += 1;
        this.counts.committedRecords += records.length;
      }
      return produced;
    } catch (error) {
      this.counts.failedTransactions += 1;
      this.errors.push((error as Error).message);
      await this.producer.close().catch(() => {});
      this.producer = transactionalProducer(this.kafka, transactionalIdOf(this.options.topic));
      await sleep(200);
      return undefined;
    }
  }
}

/** The order record of sequence `n` in the shape its schema's format takes: Avro's union form, Protobuf's strings for int64. */
function orderOf(schema: RegistrySchema, n: number, late: boolean): Record<string, unknown> {
  const name = `customer-${n % 97}`;
  const hasNote = /\bnote\b/.test(schema.schema);
  if (schema.type === 'PROTOBUF') return { id: String(n), name, ...(hasNote && late ? { note: 'late' } : {}) };
  return { id: BigInt(n), name, ...(hasNote ? { note: late ? { string: 'late' } : null } : {}) };
}
