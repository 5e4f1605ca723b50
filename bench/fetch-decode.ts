/**
 * Our Fetch decoding (src/kafka/fetch-response.ts + record-batch.ts + committed.ts) against
 * the one it replaced (@platformatic/kafka's `fetchV*.parseResponse` from one contiguous copy
 * + the old committed filter, bench/legacy-committed.ts), on the same Fetch requests, in one
 * process, alternating:
 *
 *   KAFKA_BROKERS=127.0.0.1:29092 node --import tsx bench/fetch-decode.ts [MB=200] [rounds=2]
 *
 * 1. Loads two topics of 3 partitions with ~575-byte JSON records (MB megabytes of values
 *    each), one produced with lz4 compression, one with none. BENCH_TOPICS=lz4,none reuses them.
 * 2. End to end: reads each topic whole, its 3 partitions at once (sequential read_committed
 *    Fetches of 4 MiB each per partition, as read.ts sends them), decoding with each decoder
 *    in turn (library, ours, library, ours, …): wall time, CPU time of this process (user +
 *    system: socket, copies, decoding, GC), MiB/s of key + value + header bytes per wall and
 *    per CPU second, the GC's pauses (PerformanceObserver 'gc' entries, summed: wall time, so
 *    they swell on a loaded machine) over the CPU time, and how many scavenges and mark-sweeps ran.
 * 3. Decoding alone: the first 48 Fetch response bodies of partition 0 held in memory,
 *    decoded by each decoder in turn: CPU MiB/s, GC share.
 */
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import * as lib from '@platformatic/kafka';
import { fetchSender, type FetchSender } from './fetch-raw.js';
import { legacyCommittedSlice } from './legacy-committed.js';
import { committedSlice, type CommittedSlice } from '../src/kafka/committed.js';
import { connectKafka, type KafkaConnection } from '../src/kafka/connect.js';
import { parseFetchResponse } from '../src/kafka/fetch-response.js';
import { highWatermark } from '../src/kafka/offsets.js';
import { produce } from '../src/kafka/produce.js';
import { parseRecordBatches } from '../src/kafka/batch-header.js';
import { createTopic } from '../src/kafka/topics.js';
import { crc32cImplementation } from '../src/kafka/crc32c.js';

const megabytes = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 2);
const partitions = 3;
const maxBytes = 4 << 20;
const MiB = 1024 * 1024;

let gcMs = 0;
let minorGcs = 0;
let majorGcs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcMs += entry.duration;
    const kind = ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail)?.kind;
    if (kind === 1) minorGcs++; // NODE_PERFORMANCE_GC_MINOR (scavenge)
    else if (kind === 4) majorGcs++; // NODE_PERFORMANCE_GC_MAJOR (mark-sweep-compact)
  }
}).observe({ entryTypes: ['gc'] });

/** ~575-byte JSON events: an id, a type, a user, a timestamp, an amount, items, a note of words. */
function* events(count: number): Generator<{ key: string; value: string; partition: number; headers: [string, string][] }> {
  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const words = ['alpha', 'beta', 'gamma', 'delta', 'checkout', 'cart', 'view', 'click', 'search', 'login', 'shipping', 'payment', 'ünïcødé'];
  const t0 = 1_700_000_000_000;
  for (let i = 0; i < count; i++) {
    const user = Math.floor(rnd() * 50_000);
    const value = JSON.stringify({
      id: `evt-${i}-${Math.floor(rnd() * 1e9)}`, type: words[Math.floor(rnd() * 10)], user: { id: user, tier: ['free', 'pro', 'ent'][user % 3], country: ['DE', 'US', 'JP', 'BR'][user % 4] },
      ts: new Date(t0 + i * 10).toISOString(), amount: Math.round(rnd() * 100_000) / 100,
      items: Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, k) => ({ sku: `SKU-${Math.floor(rnd() * 10_000)}`, qty: 1 + (k % 3), price: Math.round(rnd() * 10_000) / 100 })),
      note: Array.from({ length: 40 + Math.floor(rnd() * 20) }, () => words[Math.floor(rnd() * words.length)]).join(' '),
    });
    yield { key: `user-${user}`, value, partition: i % partitions, headers: [['trace-id', Math.floor(rnd() * 1e12).toString(16)]] };
  }
}

async function load(kafka: KafkaConnection, topic: string, compression: 'lz4' | 'none'): Promise<void> {
  await createTopic(kafka, topic, partitions);
  const started = performance.now();
  let bytes = 0;
  let chunk: ReturnType<typeof events> extends Generator<infer T> ? T[] : never = [];
  const target = megabytes * 1e6;
  for (const record of events(Number.MAX_SAFE_INTEGER)) {
    chunk.push(record);
    bytes += record.value.length;
    if (chunk.length === 20_000 || bytes >= target) {
      await produce(kafka, topic, chunk, { compression });
      chunk = [];
      if (bytes >= target) break;
    }
  }
  console.log(`loaded ${topic} (${compression}): ${(bytes / 1e6).toFixed(0)} MB of values in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

type Decoder = 'library' | 'offsetlake';
const decoders: Decoder[] = ['library', 'offsetlake'];

/** One response body, decoded by `decoder`, to the committed slice of [from, until). */
function decode(decoder: Decoder, version: number, body: Buffer, topic: string, partition: number, from: bigint, until: bigint): CommittedSlice {
  if (decoder === 'library') {
    const codec = (lib as unknown as Record<string, { parseResponse: (c: number, k: number, v: number, r: lib.Reader) => lib.fetchV17.FetchResponse }>)[`fetchV${version}`]!;
    const response = codec.parseResponse(0, 1, version, lib.Reader.from(body));
    const part = response.responses[0]!.partitions[0]!;
    return legacyCommittedSlice(part.records ?? [], part.abortedTransactions, from, until, { topic, partition });
  }
  const part = parseFetchResponse(body, version).responses[0]!.partitions[0]!;
  return committedSlice(part.records ? parseRecordBatches(part.records, { topic, partition }) : [], part.abortedTransactions, from, until, { topic, partition });
}

/** The response body as one contiguous copy (what old and new read.ts both decode from). */
const contiguous = (_c: number, _k: number, _v: number, reader: lib.Reader): Buffer => reader.buffer.slice(reader.position, reader.length);

interface Measure { wallMs: number; cpuMs: number; gcMs: number; minorGcs: number; majorGcs: number; bytes: number; records: number; fetches: number }

async function measure(run: () => Promise<{ bytes: number; records: number; fetches: number }>): Promise<Measure> {
  (globalThis as { gc?: () => void }).gc?.(); // with --expose-gc: each run starts from a clean heap
  await new Promise((resolve) => setTimeout(resolve, 50)); // its gc entry arrives before the count starts
  const gc0 = gcMs;
  const minor0 = minorGcs;
  const major0 = majorGcs;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const counts = await run();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await new Promise((resolve) => setTimeout(resolve, 50)); // let the last gc entries arrive
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, gcMs: gcMs - gc0, minorGcs: minorGcs - minor0, majorGcs: majorGcs - major0, ...counts };
}

async function readTopic(senders: FetchSender[], topic: string, ends: bigint[], decoder: Decoder) {
  let bytes = 0;
  let records = 0;
  let fetches = 0;
  await Promise.all(senders.map(async (sender, partition) => {
    let position = 0n;
    const end = ends[partition]!;
    while (position < end) {
      const body = await sender.send(position, maxBytes, contiguous);
      const slice = decode(decoder, sender.version, body, topic, partition, position, end);
      fetches++;
      if (slice.nextOffset === position) throw new Error(`no progress at ${topic}-${partition} offset ${position}`);
      bytes += slice.bytes;
      records += slice.records.length;
      position = slice.nextOffset;
    }
  }));
  return { bytes, records, fetches };
}

const line = (label: string, m: Measure) =>
  `${label.padEnd(34)} ${(m.wallMs / 1000).toFixed(2).padStart(6)} s wall ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s cpu  ${(m.bytes / MiB / (m.wallMs / 1000)).toFixed(0).padStart(4)} MiB/s wall ${(m.bytes / MiB / (m.cpuMs / 1000)).toFixed(0).padStart(4)} MiB/s cpu  GC ${((100 * m.gcMs) / m.cpuMs).toFixed(0).padStart(2)} % of cpu, ${m.minorGcs} scavenges + ${m.majorGcs} mark-sweeps  (${m.records} records, ${(m.bytes / MiB).toFixed(0)} MiB, ${m.fetches} fetches)`;

function summary(label: string, runs: Record<Decoder, Measure[]>) {
  const total = (d: Decoder, k: keyof Measure) => runs[d].reduce((s, m) => s + m[k], 0);
  const cpuRatio = total('library', 'cpuMs') / total('offsetlake', 'cpuMs');
  const wallRatio = total('library', 'wallMs') / total('offsetlake', 'wallMs');
  const gc = (d: Decoder) => ((100 * total(d, 'gcMs')) / total(d, 'cpuMs')).toFixed(0);
  const count = (d: Decoder) => `${(total(d, 'minorGcs') / runs[d].length).toFixed(0)}+${(total(d, 'majorGcs') / runs[d].length).toFixed(0)}`;
  console.log(`  ${label}: library / offsetlake CPU time ${cpuRatio.toFixed(2)}x, wall ${wallRatio.toFixed(2)}x; GC ${gc('library')} % → ${gc('offsetlake')} % of CPU, scavenges+mark-sweeps per run ${count('library')} → ${count('offsetlake')}`);
}

async function main(): Promise<void> {
  const kafka = connectKafka({ clientId: 'offsetlake-bench' });
  try {
    console.log(`crc32c: ${crc32cImplementation}; Node ${process.version}; ${rounds} rounds of each decoder, alternating`);
    const run = randomUUID().slice(0, 6);
    const named = process.env.BENCH_TOPICS?.split(',');
    const topics = { lz4: named?.[0] ?? `bench-decode-${run}-lz4`, none: named?.[1] ?? `bench-decode-${run}-none` };
    if (!named) {
      await load(kafka, topics.lz4, 'lz4');
      await load(kafka, topics.none, 'none');
    }
    for (const [compression, topic] of Object.entries(topics)) {
      const senders = await Promise.all(Array.from({ length: partitions }, (_, p) => fetchSender(kafka, topic, p)));
      const ends = await Promise.all(senders.map((_, p) => highWatermark(kafka, topic, p)));
      console.log(`\n${topic} (${compression} producer compression), Fetch v${senders[0]!.version}, ${partitions} partitions read at once:`);
      await readTopic(senders, topic, ends, 'offsetlake'); // warm-up: JIT, page cache, connections
      await readTopic(senders, topic, ends, 'library');
      const endToEnd: Record<Decoder, Measure[]> = { library: [], offsetlake: [] };
      for (let r = 0; r < rounds; r++) {
        for (const decoder of decoders) {
          const m = await measure(() => readTopic(senders, topic, ends, decoder));
          endToEnd[decoder].push(m);
          console.log(`  ${line(`end to end, ${decoder}`, m)}`);
        }
      }
      summary('end to end', endToEnd);

      // Decoding alone: bodies held in memory, no socket.
      const bodies: { body: Buffer; from: bigint }[] = [];
      let position = 0n;
      while (position < ends[0]! && bodies.length < 48) {
        const body = Buffer.from(await senders[0]!.send(position, maxBytes, contiguous));
        bodies.push({ body, from: position });
        position = decode('offsetlake', senders[0]!.version, body, topic, 0, position, ends[0]!).nextOffset;
      }
      const decodeAll = (decoder: Decoder) => async () => {
        let bytes = 0;
        let records = 0;
        for (const { body, from } of bodies) {
          const slice = decode(decoder, senders[0]!.version, body, topic, 0, from, ends[0]!);
          bytes += slice.bytes;
          records += slice.records.length;
        }
        return { bytes, records, fetches: bodies.length };
      };
      const alone: Record<Decoder, Measure[]> = { library: [], offsetlake: [] };
      for (let r = 0; r < rounds; r++) {
        for (const decoder of decoders) {
          const m = await measure(decodeAll(decoder));
          alone[decoder].push(m);
          console.log(`  ${line(`decoding alone, ${decoder}`, m)}`);
        }
      }
      summary('decoding alone', alone);
    }
  } finally {
    await kafka.close();
  }
}

await main();
