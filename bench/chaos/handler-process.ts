/**
 * A stand-in for Lambda's Kafka event source mapping and the indexer function, in one
 * process the msk-handler scenario SIGKILLs (a Lambda timeout ends the sandbox in the
 * middle of whatever the handler was doing). It delivers events of the topic to
 * handleKafkaEvent as the mapping could on a bad day: redelivered, overlapping an
 * earlier one, with a gap (its first records left out), two partitions in one event,
 * held back and delivered after the next one (reordered), and now and then a cold start
 * (a new runtime: no warm state). A failed delivery (a partition leased by an instance
 * that died) is delivered again. Once a partition is caught up, its last record is
 * delivered again now and then, which is how the handler's age seal gets its chance.
 *
 *   node --import tsx bench/chaos/handler-process.ts <topic> <seed>
 * with KAFKA_BROKERS and DATABASE_URL of the chaos stack. Positions start a little below
 * each partition's indexed_end (the mapping's committed offsets lag the catalog).
 */
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { toKafkaEvent, type MskEvent } from '../../src/indexer/kafka-event.js';
import { handleKafkaEvent, type IndexerRuntime } from '../../src/indexer/handler.js';
import { tablesOfTopic } from '../../src/catalog/tables.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { topicPartitions } from '../../src/kafka/topics.js';
import { openEngine, ownerName } from '../../src/runtime/engine.js';
import { sleep } from '../../src/stack/process.js';
import { seededRandom } from '../../test/helpers/random.js';

const [topic, seedText] = process.argv.slice(2);
const random = seededRandom(Number(seedText));
const engine = await openEngine({ databaseUrl: process.env.DATABASE_URL!, kafkaBrokers: process.env.KAFKA_BROKERS! });
const source = kafkaSource(engine.kafka);
const fresh = (): IndexerRuntime => ({ catalog: engine.catalog, source, build: rangeBuilder(engine.catalog), owner: ownerName('lambda'), clock: Date.now, indexers: new Map(), releaseAfterEvent: true });
let runtime = fresh();
const say = (line: string) => process.stderr.write(`${line}\n`);

const partitions = await topicPartitions(engine.kafka, topic!);
const [table] = await tablesOfTopic(engine.catalog, topic!);
const ends = await engine.catalog.query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [table!.tableId]);
/** Per partition: where the mapping's next event starts, and the records it delivered lately (for overlaps and redeliveries). */
const position = new Map(partitions.map((p) => [p, 0n]));
for (const row of ends.rows) {
  const start = row.indexed_end - BigInt(Math.floor(random() * 40));
  position.set(row.partition_id, start > 0n ? start : 0n);
}
const recent = new Map<number, KafkaRecord[]>(partitions.map((p) => [p, []]));
const counts = { events: 0, redelivered: 0, overlapping: 0, gapped: 0, reordered: 0, twoPartitions: 0, coldStarts: 0, failed: 0 };

/** Up to `max` committed records of a partition from its position (none if caught up). */
async function next(partition: number, max: number): Promise<KafkaRecord[]> {
  const from = position.get(partition)!;
  const lso = await source.lastStableOffset(topic!, partition);
  if (from >= lso) return [];
  const records: KafkaRecord[] = [];
  for await (const batch of source.read(topic!, partition, from, lso)) {
    records.push(...batch.records);
    if (records.length >= max) break;
  }
  const taken = records.slice(0, max);
  if (taken.length > 0) {
    position.set(partition, taken.at(-1)!.offset + 1n);
    recent.set(partition, [...recent.get(partition)!, ...taken].slice(-400));
  }
  return taken;
}

async function deliver(event: MskEvent): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      counts.events += 1;
      await handleKafkaEvent(event, runtime);
      return;
    } catch (error) {
      counts.failed += 1;
      if (attempt % 10 === 0) say(`delivery failed, again: ${(error as Error).message}`);
      await sleep(200);
    }
  }
}

const event = (batches: { partition: number; records: KafkaRecord[] }[]) => toKafkaEvent(batches.map((b) => ({ topic: topic!, ...b })), process.env.KAFKA_BROKERS!);
let held: MskEvent | undefined;
let lastReport = Date.now();

for (;;) {
  if (random() < 0.05) {
    runtime = fresh();
    counts.coldStarts += 1;
  }
  const partition = partitions[Math.floor(random() * partitions.length)]!;
  const size = 1 + Math.floor(random() * 150);
  const records = await next(partition, size);
  if (records.length === 0) {
    // Caught up: the last record again (a redelivery), so that an old open range seals by age.
    const last = recent.get(partition)!.at(-1);
    if (last) await deliver(event([{ partition, records: [last] }]));
    await sleep(100);
    continue;
  }
  const roll = random();
  if (roll < 0.15) {
    const batch = event([{ partition, records }]);
    await deliver(batch);
    await deliver(batch);
    counts.redelivered += 1;
  } else if (roll < 0.3) {
    const earlier = recent.get(partition)!.filter((r) => r.offset < records[0]!.offset).slice(-1 - Math.floor(random() * 100));
    await deliver(event([{ partition, records: [...earlier, ...records] }]));
    counts.overlapping += 1;
  } else if (roll < 0.45 && records.length > 1) {
    await deliver(event([{ partition, records: records.slice(1 + Math.floor(random() * (records.length - 1))) }]));
    counts.gapped += 1;
  } else if (roll < 0.6) {
    const other = partitions[(partitions.indexOf(partition) + 1) % partitions.length]!;
    const more = await next(other, size);
    await deliver(event(more.length > 0 && other !== partition ? [{ partition, records }, { partition: other, records: more }] : [{ partition, records }]));
    counts.twoPartitions += 1;
  } else if (roll < 0.75 && !held) {
    held = event([{ partition, records }]);
    continue;
  } else {
    await deliver(event([{ partition, records }]));
  }
  if (held) {
    await deliver(held);
    held = undefined;
    counts.reordered += 1;
  }
  if (Date.now() - lastReport > 1000) {
    lastReport = Date.now();
    say(`events ${JSON.stringify(counts)}`);
  }
}
