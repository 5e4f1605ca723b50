/**
 * src/kafka against a real Apache Kafka broker (KAFKA_BROKERS; default: the local stack's
 * 127.0.0.1:29092). Every topic is new, so offsets are exact.
 *
 * Offsets in a transaction: each transaction's records, then one control batch (the
 * COMMIT or ABORT marker) that takes one offset.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  connectKafka,
  createTopic,
  deleteRecords,
  deleteTopic,
  earliestOffset,
  earliestOffsets,
  highWatermark,
  highWatermarks,
  KafkaConnection,
  lastStableOffset,
  lastStableOffsets,
  offsetForTime,
  offsetsForTimes,
  OffsetOutOfRangeError,
  openTransaction,
  produce,
  readCommitted,
  transactionalProducer,
  readCommittedRange,
  topicPartitions,
  TopicRecreatedError,
  UnknownPartitionError,
  UnknownTopicError,
} from '../../src/kafka/index.js';
import { fetchBytesFor } from '../../src/kafka/fetch-size.js';
import { defaultPorts } from '../../src/stack/config.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';

const brokers = process.env.KAFKA_BROKERS || `127.0.0.1:${process.env.OFFSETLAKE_KAFKA_PORT || defaultPorts.kafkaPort}`;
const timeout = 60_000;
let kafka: KafkaConnection;

const run = randomUUID().slice(0, 8);
let topicCount = 0;
async function newTopic(partitions = 1, configs?: Record<string, string>): Promise<string> {
  const topic = `kafka-test-${run}-${++topicCount}`;
  await createTopic(kafka, topic, partitions, configs ? { configs } : {});
  return topic;
}
const txId = (name: string) => `kafka-test-${run}-${name}`;
const values = (records: { value: Buffer | null }[]) => records.map((r) => r.value?.toString() ?? null);

beforeAll(async () => {
  kafka = connectKafka({ brokers, clientId: 'offsetlake-test' });
  // A clear failure when no broker answers, instead of every test timing out.
  await kafka.admin().metadata({ topics: [] });
}, timeout);

afterAll(async () => {
  await kafka?.close();
});

describe('topics and offsets', () => {
  test('topicPartitions lists every partition; an unknown topic or partition is named', { timeout }, async () => {
    const topic = await newTopic(3);
    expect(await topicPartitions(kafka, topic)).toEqual([0, 1, 2]);

    const missing = `kafka-test-${run}-missing`;
    const error = await topicPartitions(kafka, missing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownTopicError);
    expect((error as Error).message).toContain(missing);

    const noPartition = await earliestOffset(kafka, topic, 3).catch((e: unknown) => e);
    expect(noPartition).toBeInstanceOf(UnknownPartitionError);
    expect((noPartition as Error).message).toBe(`Kafka topic "${topic}" has no partition 3: it has 3 partitions (0 to 2)`);
  });

  test('earliest, LSO and high watermark of many partitions in one call', { timeout }, async () => {
    const topic = await newTopic(3);
    await produce(kafka, topic, [{ partition: 0, value: 'a' }, { partition: 0, value: 'b' }, { partition: 2, value: 'c' }]);
    const partitions = [0, 1, 2].map((partition) => ({ topic, partition }));
    expect(await earliestOffsets(kafka, partitions)).toEqual([0n, 0n, 0n]);
    expect(await highWatermarks(kafka, partitions)).toEqual([2n, 0n, 1n]);
    // No transaction: the LSO is the high watermark.
    expect(await lastStableOffsets(kafka, partitions)).toEqual([2n, 0n, 1n]);
  });

  test('a long-lived transactional producer writes to a partition added to the topic after its first send, not to partition % its old count (chaos grow-partitions)', { timeout }, async () => {
    const topic = await newTopic(1);
    const producer = transactionalProducer(kafka, txId('grown'));
    try {
      const first = await producer.begin();
      await first.send(topic, [{ partition: 0, value: 'before' }]);
      await first.commit();
      // Grown, and the broker's metadata says so; the producer's own (cached 5 s) still says 1 partition.
      await kafka.admin().createPartitions({ topics: [{ name: topic, count: 2 }] });
      while ((await topicPartitions(kafka, topic)).length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await producer.begin();
      const produced = await second.send(topic, [{ partition: 1, value: 'after' }]);
      await second.commit();
      expect(produced.map((p) => p.partition)).toEqual([1]);
      // A record and its commit marker on each partition (before the fix: 4 offsets on partition 0, none on 1).
      expect(await highWatermarks(kafka, [{ topic, partition: 0 }, { topic, partition: 1 }])).toEqual([2n, 2n]);
    } finally {
      await producer.close();
    }
  });
});

describe('committed reads', () => {
  test('a read_committed read returns the committed record, not the aborted one', { timeout }, async () => {
    const topic = await newTopic();
    const timestamp = Date.now() - 5_000;
    const committed = await produce(kafka, topic, [{ key: 'k1', value: 'committed', headers: [['h', 'x'], ['h', null], ['n', '']], timestamp }], { transactionalId: txId('one') });
    const aborted = await produce(kafka, topic, [{ key: 'k2', value: 'aborted' }], { transactionalId: txId('one'), abort: true });
    // committed @0, COMMIT marker @1, aborted @2, ABORT marker @3.
    expect(committed).toEqual([{ partition: 0, firstOffset: 0n, count: 1, lastOffset: 0n }]);
    expect(aborted).toEqual([{ partition: 0, firstOffset: 2n, count: 1, lastOffset: 2n }]);
    expect(await lastStableOffset(kafka, topic, 0)).toBe(4n);
    expect(await highWatermark(kafka, topic, 0)).toBe(4n);

    const read = await readCommittedRange(kafka, topic, 0, 0n, 1_000n);
    expect(read.records).toHaveLength(1);
    const [record] = read.records;
    expect(record!.offset).toBe(0n);
    expect(record!.timestamp).toBe(timestamp);
    expect(record!.key?.toString()).toBe('k1');
    expect(record!.value?.toString()).toBe('committed');
    expect(record!.headers.map(([name, value]) => [name, value?.toString() ?? null])).toEqual([['h', 'x'], ['h', null], ['n', '']]);
    expect(read.abortedRecords).toBe(1);
    expect(read.controlBatches).toBe(2);
    // Past the aborted record and both markers, to the LSO (= high watermark), not to 0 + 1.
    expect(read.nextOffset).toBe(4n);
    expect(read.end).toBe('lso');
    expect(read.bytes).toBe(2 + 9 + 1 + 1 + 1 + 1); // key, value, header names and values
  });

  test('while a transaction is open the LSO stays at its first offset, the high watermark moves on, and a read stops at the LSO', { timeout }, async () => {
    const topic = await newTopic();
    await produce(kafka, topic, [{ value: 'before' }], { transactionalId: txId('before') }); // @0, marker @1
    const open = await openTransaction(kafka, txId('open'));
    try {
      await open.send(topic, [{ value: 'open-1' }, { value: 'open-2' }]); // @2, @3
      await produce(kafka, topic, [{ value: 'plain' }]); // @4, not transactional
      expect(await lastStableOffset(kafka, topic, 0)).toBe(2n);
      expect(await highWatermark(kafka, topic, 0)).toBe(5n);

      const reader = readCommitted(kafka, topic, 0, 0n, 1_000n);
      const first = [];
      for await (const batch of reader) first.push(...batch.records);
      expect(values(first)).toEqual(['before']);
      expect(reader.position).toBe(2n);
      expect(reader.end).toBe('lso');

      await open.commit(); // marker @5
    } finally {
      await open.close();
    }
    expect(await lastStableOffset(kafka, topic, 0)).toBe(6n);
    expect(await highWatermark(kafka, topic, 0)).toBe(6n);
    const rest = await readCommittedRange(kafka, topic, 0, 2n, 1_000n);
    expect(values(rest.records)).toEqual(['open-1', 'open-2', 'plain']);
    expect(rest.records.map((r) => r.offset)).toEqual([2n, 3n, 4n]);
    expect(rest.nextOffset).toBe(6n);
  });

  test('the next fetch position after aborted records and markers is the LSO, also one batch per fetch', { timeout }, async () => {
    const topic = await newTopic();
    const id = txId('interleaved');
    // One producer aborting twice around commits: A1 @0-1, marker @2; C1 @3, marker @4;
    // A2 @5, marker @6; C2 @7, marker @8; A3 @9-11, marker @12.
    await produce(kafka, topic, [{ value: 'A1a' }, { value: 'A1b' }], { transactionalId: id, abort: true });
    await produce(kafka, topic, [{ value: 'C1' }], { transactionalId: id });
    await produce(kafka, topic, [{ value: 'A2' }], { transactionalId: id, abort: true });
    await produce(kafka, topic, [{ value: 'C2' }], { transactionalId: id });
    await produce(kafka, topic, [{ value: 'A3a' }, { value: 'A3b' }, { value: 'A3c' }], { transactionalId: id, abort: true });
    const lso = await lastStableOffset(kafka, topic, 0);
    expect(lso).toBe(13n);
    expect(await highWatermark(kafka, topic, 0)).toBe(13n);

    for (const maxBytes of [8 * 1024 * 1024, 1]) {
      const reader = readCommitted(kafka, topic, 0, 0n, 1_000n, { maxBytes });
      const records = [];
      const positions = [];
      for await (const batch of reader) {
        records.push(...batch.records);
        positions.push(batch.nextOffset);
      }
      expect(values(records)).toEqual(['C1', 'C2']);
      expect(records.map((r) => r.offset)).toEqual([3n, 7n]);
      expect(reader.position).toBe(lso);
      expect(reader.end).toBe('lso');
      // Positions only grow, and the last one is the LSO even though the last committed record is @7.
      expect(positions.at(-1)).toBe(13n);
      expect([...positions].sort((a, b) => (a < b ? -1 : 1))).toEqual(positions);
      if (maxBytes === 1) expect(positions).toEqual([2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 12n, 13n]);
    }

    // Starting inside an aborted transaction still drops the rest of it.
    const fromInside = await readCommittedRange(kafka, topic, 0, 1n, 1_000n, { maxBytes: 1 });
    expect(values(fromInside.records)).toEqual(['C1', 'C2']);
    const tail = await readCommittedRange(kafka, topic, 0, 10n, 1_000n);
    expect(tail.records).toEqual([]);
    expect(tail.nextOffset).toBe(13n);
  });

  test('a read with Fetches sized by fetchBytesFor from an event\'s records covers the event\'s span in one Fetch, with 4 MiB more behind it, and returns what the independent read_committed consumer reads', { timeout }, async () => {
    const topic = await newTopic();
    const records = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ key: `k${from + i}`, value: JSON.stringify({ i: from + i, pad: 'x'.repeat(1000) }), headers: [['h', 'v']] as [string, string][] }));
    // Batches of 16 KiB as a Java producer makes them; plain @0-299, aborted @300-349 and
    // its marker @350, committed @351-400 and its marker @401, then 4 MiB more.
    const small = { chunkBytes: 16 * 1024 };
    await produce(kafka, topic, records(0, 300), small);
    await produce(kafka, topic, records(300, 50), { ...small, transactionalId: txId('sized'), abort: true });
    await produce(kafka, topic, records(350, 50), { ...small, transactionalId: txId('sized') });
    await produce(kafka, topic, records(400, 4200));

    // The event of [100, 402) as an event source that reads committed delivers it.
    const [event] = await readCommittedIndependently([brokers], [{ topic, partition: 0, start: 100n, end: 402n }]);
    const maxBytes = fetchBytesFor(event!, 100n, 402n);
    expect(maxBytes).toBeLessThan(1024 * 1024);
    const reader = readCommitted(kafka, topic, 0, 100n, 402n, { maxBytes });
    const batches = [];
    for await (const batch of reader) batches.push(batch);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.records.map((r) => [r.offset, r.key?.toString(), r.value?.toString()])).toEqual(event!.map((r) => [r.offset, r.key?.toString(), r.value?.toString()]));
    expect(reader.position).toBe(402n);
  });

  test('a read stops at untilOffset exactly, also inside a batch', { timeout }, async () => {
    const topic = await newTopic();
    await produce(kafka, topic, ['r0', 'r1', 'r2', 'r3', 'r4'].map((value) => ({ value })), { transactionalId: txId('until') }); // @0-4 in one batch, marker @5
    const middle = await readCommittedRange(kafka, topic, 0, 1n, 3n);
    expect(middle.records.map((r) => r.offset)).toEqual([1n, 2n]);
    expect(middle.nextOffset).toBe(3n);
    expect(middle.end).toBe('until');

    const toMarker = await readCommittedRange(kafka, topic, 0, 3n, 5n);
    expect(values(toMarker.records)).toEqual(['r3', 'r4']);
    expect(toMarker.nextOffset).toBe(5n);

    const pastMarker = await readCommittedRange(kafka, topic, 0, 5n, 6n);
    expect(pastMarker.records).toEqual([]);
    expect(pastMarker.nextOffset).toBe(6n);
    expect(pastMarker.end).toBe('until');

    const empty = await readCommittedRange(kafka, topic, 0, 2n, 2n);
    expect(empty.records).toEqual([]);
    expect(empty.nextOffset).toBe(2n);
  });

  test('null keys and values, and LogAppendTime topics take the broker time', { timeout }, async () => {
    const topic = await newTopic(1, { 'message.timestamp.type': 'LogAppendTime' });
    const before = Date.now();
    await produce(kafka, topic, [{ key: null, value: null, timestamp: 1_000 }, { key: '', value: '' }]);
    const after = Date.now();
    const read = await readCommittedRange(kafka, topic, 0, 0n, 10n);
    expect(read.records.map((r) => [r.key, r.value])).toEqual([[null, null], [Buffer.alloc(0), Buffer.alloc(0)]]);
    for (const r of read.records) {
      expect(r.timestamp).toBeGreaterThanOrEqual(before - 1_000);
      expect(r.timestamp).toBeLessThanOrEqual(after + 1_000);
    }
  });

  test('offsets deleted by retention are a typed error naming both offsets', { timeout }, async () => {
    const topic = await newTopic();
    await produce(kafka, topic, Array.from({ length: 6 }, (_, i) => ({ value: `v${i}` })));
    expect(await deleteRecords(kafka, topic, 0, 4n)).toBe(4n);
    expect(await earliestOffset(kafka, topic, 0)).toBe(4n);

    const below = await readCommittedRange(kafka, topic, 0, 1n, 6n).catch((e: unknown) => e);
    expect(below).toBeInstanceOf(OffsetOutOfRangeError);
    expect(below).toMatchObject({ topic, partition: 0, offset: 1n, earliest: 4n, end: 6n, bound: 'below-earliest' });
    expect((below as Error).message).toContain(`fetch from offset 1 is below the earliest offset 4 of ${topic}-0`);

    const beyond = await readCommittedRange(kafka, topic, 0, 9n, 20n).catch((e: unknown) => e);
    expect(beyond).toMatchObject({ name: 'OffsetOutOfRangeError', offset: 9n, end: 6n, bound: 'beyond-end' });

    expect(values((await readCommittedRange(kafka, topic, 0, 4n, 6n)).records)).toEqual(['v4', 'v5']);
  });
  test('a topic deleted and created again under a read is an error, not a silent restart', { timeout }, async () => {
    const topic = await newTopic();
    for (const value of ['a', 'b', 'c']) await produce(kafka, topic, [{ value }]); // three batches
    const reader = readCommitted(kafka, topic, 0, 0n, 1_000n, { maxBytes: 1, prefetch: false });
    const first = await reader.next();
    expect(values(first!.records)).toEqual(['a']); // one batch per fetch
    expect(reader.done).toBe(false);
    const topicId = reader.topicId;
    expect(topicId).toMatch(/^[0-9a-f-]{36}$/);

    await deleteTopic(kafka, topic);
    for (let attempt = 0; ; attempt++) {
      try {
        await createTopic(kafka, topic, 1);
        break;
      } catch (error) {
        if (attempt > 50) throw error; // the old topic may still be being deleted
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await produce(kafka, topic, ['x', 'y', 'z', 'w'].map((value) => ({ value })));
    const error = await reader.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TopicRecreatedError);
    expect(error).toMatchObject({ topic, topicId });
  });
});

describe('offset for time', () => {
  test('the first offset whose timestamp is at or after the time; the LSO when there is none', { timeout }, async () => {
    const topic = await newTopic(2);
    const t0 = Date.now() - 60_000;
    // Partition 0: @0 t0, @1 t0+1000, @2 t0+2000, @3 t0+1500 (CreateTime need not grow), @4 t0+3000.
    await produce(kafka, topic, [0, 1000, 2000, 1500, 3000].map((dt, i) => ({ value: `v${i}`, timestamp: t0 + dt })));
    expect(await offsetForTime(kafka, topic, 0, t0 - 1)).toBe(0n);
    expect(await offsetForTime(kafka, topic, 0, t0)).toBe(0n);
    expect(await offsetForTime(kafka, topic, 0, t0 + 1)).toBe(1n);
    expect(await offsetForTime(kafka, topic, 0, t0 + 1000)).toBe(1n);
    expect(await offsetForTime(kafka, topic, 0, t0 + 1200)).toBe(2n);
    expect(await offsetForTime(kafka, topic, 0, t0 + 2500)).toBe(4n);
    expect(await offsetForTime(kafka, topic, 0, t0 + 3001)).toBe(5n); // none: the LSO

    // Batched, one request per leader; an empty partition answers its LSO (0).
    expect(await offsetsForTimes(kafka, [
      { topic, partition: 0, timestampMs: t0 + 1500 },
      { topic, partition: 1, timestampMs: t0 },
    ])).toEqual([{ offset: 2n, timestamp: BigInt(t0 + 2000) }, { offset: 0n, timestamp: null }]);
  });

  test('transaction markers and aborted records count, records of an open transaction do not', { timeout }, async () => {
    const topic = await newTopic();
    const t0 = Date.now() - 30_000;
    const future = Date.now() + 60_000;
    await produce(kafka, topic, [{ value: 'old', timestamp: t0 }], { transactionalId: txId('time') }); // @0 at t0, COMMIT marker @1 at about now
    const open = await openTransaction(kafka, txId('time-open'));
    try {
      await open.send(topic, [{ value: 'new', timestamp: future }]); // @2, open
      expect(await highWatermark(kafka, topic, 0)).toBe(3n);
      // The marker's timestamp is when the transaction committed, later than t0 + 5 s.
      const [atMarker] = await offsetsForTimes(kafka, [{ topic, partition: 0, timestampMs: t0 + 5_000 }]);
      expect(atMarker!.offset).toBe(1n);
      expect(atMarker!.timestamp).toBeGreaterThanOrEqual(BigInt(t0 + 5_000));
      // Only the open transaction's record is that late: the answer is the LSO.
      expect(await offsetsForTimes(kafka, [{ topic, partition: 0, timestampMs: future - 1_000 }])).toEqual([{ offset: 2n, timestamp: null }]);
      await open.abort(); // ABORT marker @3 at about now
    } finally {
      await open.close();
    }
    // Aborted records are in the time index: the answer is @2, which a committed read then skips.
    expect(await offsetsForTimes(kafka, [{ topic, partition: 0, timestampMs: future - 1_000 }])).toEqual([{ offset: 2n, timestamp: BigInt(future) }]);
    expect(await offsetForTime(kafka, topic, 0, future + 60_000)).toBe(4n);
  });
});
