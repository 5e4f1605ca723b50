/**
 * Throughput of a committed read (src/kafka/read.ts) of ~200k 1 KB records from one
 * partition, in one process, and where the time goes:
 *
 *   KAFKA_BROKERS=127.0.0.1:9092 node --import tsx bench/kafka-read.ts [records] [recordBytes]
 *
 * 1. Loads a new topic with `records` records of `recordBytes` (value) in committed
 *    transactions of 10,000 records (so the read passes markers), plus one aborted
 *    transaction of 1,000 records in the middle.
 * 2. Reads it back with readCommitted at several fetch sizes, with and without prefetch.
 * 3. Splits one read into: waiting for Kafka (request → whole response received), the
 *    library's response decoding (fetchV*.parseResponse: record batches into objects),
 *    and offsetlake's filtering (committed.ts), using the same Fetch requests.
 * Set BENCH_TOPIC to reuse a loaded topic.
 */
import { performance } from 'node:perf_hooks';
import * as lib from '@platformatic/kafka';
import { fetchSender } from './fetch-raw.js';
import { legacyCommittedSlice as committedSlice } from './legacy-committed.js';
import { connectKafka, type KafkaConnection } from '../src/kafka/connect.js';
import { highWatermark, lastStableOffset } from '../src/kafka/offsets.js';
import { produce } from '../src/kafka/produce.js';
import { readCommitted } from '../src/kafka/read.js';
import { createTopic } from '../src/kafka/topics.js';

const total = Number(process.argv[2] ?? 200_000);
const recordBytes = Number(process.argv[3] ?? 1024);
const txRecords = 10_000;
const MB = 1e6;

async function load(kafka: KafkaConnection, topic: string): Promise<void> {
  await createTopic(kafka, topic, 1);
  const value = Buffer.alloc(recordBytes, 'x');
  const started = performance.now();
  let written = 0;
  let txn = 0;
  while (written < total) {
    const n = Math.min(txRecords, total - written);
    const records = Array.from({ length: n }, (_, i) => ({ key: `k${written + i}`, value, headers: [['h', 'v']] as [string, string][] }));
    await produce(kafka, topic, records, { transactionalId: `bench-${topic}` });
    written += n;
    if (++txn === Math.ceil(total / txRecords / 2)) {
      await produce(kafka, topic, Array.from({ length: 1_000 }, () => ({ value })), { transactionalId: `bench-${topic}`, abort: true });
    }
  }
  const s = (performance.now() - started) / 1000;
  console.log(`loaded ${total} records of ${recordBytes} B in ${s.toFixed(1)} s (${(total / s).toFixed(0)} records/s, ${((total * recordBytes) / MB / s).toFixed(1)} MB/s)`);
}

async function timedRead(kafka: KafkaConnection, topic: string, until: bigint, options: { maxBytes: number; prefetch: boolean }) {
  const started = performance.now();
  const reader = readCommitted(kafka, topic, 0, 0n, until, options);
  let records = 0;
  let bytes = 0;
  let fetches = 0;
  for await (const batch of reader) {
    records += batch.records.length;
    bytes += batch.bytes;
    fetches++;
  }
  const s = (performance.now() - started) / 1000;
  return { records, bytes, fetches, s, position: reader.position };
}

/**
 * The same Fetch requests as read.ts, sent by hand to time their parts. `contiguous`
 * decodes one copy of the response, as read.ts does; `in place` decodes it from the
 * socket's chunks, as the library's own api.async and Consumer.fetch do.
 */
async function breakdown(kafka: KafkaConnection, topic: string, until: bigint, maxBytes: number, contiguous: boolean) {
  const { version, parseResponse, send } = await fetchSender(kafka, topic, 0);
  let parseMs = 0;
  let filterMs = 0;
  let wireBytes = 0;
  const froms: bigint[] = [];
  const started = performance.now();
  let position = 0n;
  while (position < until) {
    froms.push(position);
    const response = await send(position, maxBytes, (c, k, v, reader) => {
      wireBytes += reader.remaining;
      const t = performance.now();
      const input = contiguous && reader.buffer.buffers.length > 1 ? lib.Reader.from(reader.buffer.slice(reader.position, reader.length)) : reader;
      const parsed = parseResponse(c, k, v, input);
      parseMs += performance.now() - t;
      return parsed;
    });
    const part = response.responses[0]!.partitions[0]!;
    const t = performance.now();
    const slice = committedSlice(part.records ?? [], part.abortedTransactions, position, until);
    filterMs += performance.now() - t;
    if (slice.nextOffset === position) break;
    position = slice.nextOffset;
  }
  const fullMs = performance.now() - started;

  // Kafka alone: the same requests, the response bytes counted and dropped.
  const rawStarted = performance.now();
  for (const from of froms) await send(from, maxBytes, (_c, _k, _v, reader) => reader.remaining);
  const rawMs = performance.now() - rawStarted;
  return { fullMs, rawMs, parseMs, filterMs, wireBytes, fetches: froms.length, version };
}

async function main(): Promise<void> {
  const kafka = connectKafka({ clientId: 'offsetlake-bench' });
  try {
    const topic = process.env.BENCH_TOPIC ?? `bench-read-${Date.now()}`;
    if (!process.env.BENCH_TOPIC) await load(kafka, topic);
    const lso = await lastStableOffset(kafka, topic, 0);
    console.log(`topic ${topic}: LSO ${lso}, high watermark ${await highWatermark(kafka, topic, 0)}`);

    await timedRead(kafka, topic, lso, { maxBytes: 8 << 20, prefetch: true }); // warm-up: JIT, page cache, connections
    for (const [maxBytes, prefetch] of [[1 << 20, true], [1 << 20, false], [4 << 20, true], [8 << 20, true], [32 << 20, true]] as const) {
      const runs = [];
      for (let i = 0; i < 3; i++) runs.push(await timedRead(kafka, topic, lso, { maxBytes, prefetch }));
      const best = runs.reduce((a, b) => (a.s < b.s ? a : b));
      console.log(
        `readCommitted maxBytes ${maxBytes >> 20} MiB prefetch ${prefetch ? 'on ' : 'off'}: ${best.records} records, ${best.fetches} fetches, best of 3 ${best.s.toFixed(2)} s → ` +
          `${(best.records / best.s).toFixed(0)} records/s, ${(best.bytes / MB / best.s).toFixed(1)} MB/s of key+value+headers (runs: ${runs.map((r) => r.s.toFixed(2)).join(', ')} s)`,
      );
      if (best.records !== total && !process.env.BENCH_TOPIC) {
        throw new Error(`read ${best.records} records; expected ${total}`);
      }
    }

    for (const maxBytes of [1 << 20, 8 << 20, 32 << 20]) {
      for (const contiguous of [true, false]) {
        const b = await breakdown(kafka, topic, lso, maxBytes, contiguous);
        console.log(
          `breakdown, ${maxBytes >> 20} MiB per Fetch v${b.version}, decoded ${contiguous ? 'from one copy (read.ts)' : 'in place (library default)'}, no prefetch: ` +
            `${b.fetches} fetches, ${(b.wireBytes / MB).toFixed(1)} MB on the wire\n` +
            `  total ${b.fullMs.toFixed(0)} ms = Kafka + socket ${(b.fullMs - b.parseMs - b.filterMs).toFixed(0)} ms + library decoding ${b.parseMs.toFixed(0)} ms + offsetlake filtering ${b.filterMs.toFixed(0)} ms; ` +
            `the same Fetches undecoded: ${b.rawMs.toFixed(0)} ms (${(b.wireBytes / MB / (b.rawMs / 1000)).toFixed(0)} MB/s)`,
        );
      }
    }
  } finally {
    await kafka.close();
  }
}

await main();
