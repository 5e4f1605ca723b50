/**
 * Our committed read (read.ts with fetch-response.ts and record-batch.ts) against a real
 * broker, on records written by producers we did not write, compared record by record with
 * what confluent-kafka's read_committed consumer returns: every codec from confluent-kafka,
 * snappy and lz4 from the Java client, and transactional producers with aborted
 * transactions. Small Fetch sizes make the broker cut batches, which the reader drops and
 * fetches again.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectKafka, createTopic, highWatermark, type KafkaConnection, lastStableOffset, readCommittedRange } from '../../src/kafka/index.js';
import { defaultPorts } from '../../src/stack/config.js';
import { fixtureRecords, javaRecords, transactions } from '../fixtures/kafka/records.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { produceTransactionsWithLibrdkafka, produceWithJavaClient, produceWithLibrdkafka, type Codec } from '../helpers/independent-producers.js';

const brokers = (process.env.KAFKA_BROKERS || `127.0.0.1:${process.env.OFFSETLAKE_KAFKA_PORT || defaultPorts.kafkaPort}`).split(',');
const timeout = 180_000;
let kafka: KafkaConnection;
const run = randomUUID().slice(0, 8);

beforeAll(async () => {
  kafka = connectKafka({ brokers, clientId: 'offsetlake-test' });
  await kafka.admin().metadata({ topics: [] });
}, timeout);

afterAll(async () => {
  await kafka?.close();
});

const view = (r: { offset: bigint; timestamp: number; key: Buffer | null; value: Buffer | null; headers: [string, Buffer | null][] }) =>
  ({ offset: r.offset, timestamp: r.timestamp, key: r.key?.toString('hex') ?? null, value: r.value?.toString('hex') ?? null, headers: r.headers.map(([k, v]) => [k, v?.toString('hex') ?? null]) });

/**
 * The partition's end once the last transaction's marker is written. A producer's commit
 * returns when the coordinator has logged it; the marker reaches the partition a moment
 * later, so until then the high watermark is one short of the end and the LSO behind it.
 */
async function settledEnd(topic: string): Promise<bigint> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const end = await highWatermark(kafka, topic, 0);
    const stable = await lastStableOffset(kafka, topic, 0);
    if (stable === end && (await highWatermark(kafka, topic, 0)) === end) return end;
    if (Date.now() > deadline) throw new Error(`${topic}: LSO ${stable} never reached the high watermark ${end} in 30 s (an open transaction?)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Reads the whole topic with our reader at each Fetch size, and with confluent-kafka; they must agree. */
async function expectSameAsIndependent(topic: string, options: { aborted?: boolean } = {}): Promise<void> {
  const end = await settledEnd(topic);
  const [independent] = await readCommittedIndependently(brokers, [{ topic, partition: 0, start: 0n, end }]);
  expect(independent!.length).toBeGreaterThan(0);
  for (const maxBytes of [4 << 20, 10_000]) {
    const ours = await readCommittedRange(kafka, topic, 0, 0n, end, { maxBytes });
    expect(ours.nextOffset).toBe(end);
    expect(ours.records.map(view)).toEqual(independent!.map(view));
    if (options.aborted) expect(ours.abortedRecords).toBeGreaterThan(0);
  }
}

/** 3,000 records in batches of up to 200 (the independent producer decides where batches end). */
const many = () => fixtureRecords(3_000, Date.now() - 3_600_000);

describe('records written by confluent-kafka (librdkafka), read by our decoder, equal what its read_committed consumer reads', () => {
  test.each(['none', 'gzip', 'snappy', 'lz4', 'zstd'] as Codec[])('%s', async (codec) => {
    const topic = `decoding-${run}-librdkafka-${codec}`;
    await createTopic(kafka, topic, 1);
    await produceWithLibrdkafka(brokers, topic, 0, codec, many(), 200);
    await expectSameAsIndependent(topic);
  }, timeout);

  test.each(['none', 'lz4', 'zstd'] as Codec[])('a transactional producer %s, with aborted transactions', async (codec) => {
    const topic = `decoding-${run}-transactions-${codec}`;
    await createTopic(kafka, topic, 1);
    const rounds = Array.from({ length: 8 }, () => transactions()).flat();
    await produceTransactionsWithLibrdkafka(brokers, topic, 0, codec, rounds);
    await expectSameAsIndependent(topic, { aborted: true });
  }, timeout);
});

describe('records written by the Java client (Kafka\'s ConsoleProducer), read by our decoder, equal what confluent-kafka\'s read_committed consumer reads', () => {
  test.each(['snappy', 'lz4', 'gzip', 'zstd'] as Codec[])('%s', async (codec) => {
    const topic = `decoding-${run}-java-${codec}`;
    await createTopic(kafka, topic, 1);
    await produceWithJavaClient(brokers, topic, codec, javaRecords(500));
    await expectSameAsIndependent(topic);
  }, timeout);
});
