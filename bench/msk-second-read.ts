/**
 * What the MSK handler's second read costs per batch (issue 13): the handler takes an
 * event, then reads the same offsets again from Kafka with read_committed, because the
 * event cannot tell aborted records from committed ones. Per event of 100 and of 1,000
 * JSON records of ~1 KiB, in one run:
 *
 *   node_modules/.bin/node --import tsx bench/msk-second-read.ts [events of 100=120] [events of 1,000=24]
 *
 * Variants, each over a topic of its own holding the same records (the handler indexes
 * every table of an event's topic), driven by the same events in turn:
 * - handler     handleKafkaEvent as the Lambda runs it (lease taken and handed back per
 *               event, warm indexers) on an event already JSON-parsed. Within it: the
 *               committed re-read (Fetches sized from the event, decoding, filter), the
 *               LSO look-up (none now, when the event gives the end), and the builds of
 *               the ranges that sealed (`file_bytes` 8 MiB: a build every ~8 events of
 *               1,000, so each event carries its share).
 * - before      the same handler with the Kafka requests it made before this change:
 *               an LSO look-up (Metadata + ListOffsets), then Fetches of read.ts's 4 MiB.
 * - event only  the same handler with a source that hands back the event's own records
 *               instead of reading Kafka: NOT exact (bench only), the most that any use
 *               of the event's records could save.
 * Measured beside them, same events:
 * - undecoded   the handler's Fetches sent again, their answers counted and dropped: the
 *               least that any check of the span against Kafka costs, since only a Fetch
 *               of the span's bytes says which of its batches are transactional and which
 *               transactions aborted.
 * - parse       parseKafkaEvent on the parsed JSON (part of the handler already).
 *
 * Two situations: `behind`, Kafka holds 8 MiB more after each event (an event source
 * catching up), and `head`, each event's records were just written and nothing follows.
 * Figures are per event; the ratios are what to compare (timings swing with the load of
 * the machine). Needs the local stack (`npx offsetlake stack up`).
 */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { fetchSender } from './fetch-raw.js';
import { timedBuild, timedSource } from './timing.js';
import { openEngine, type Engine } from '../src/runtime/engine.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { handleKafkaEvent, type IndexerRuntime } from '../src/indexer/handler.js';
import { parseKafkaEvent, toKafkaEvent } from '../src/indexer/kafka-event.js';
import { kafkaSource, type CommittedSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { defaultMaxBytes, readCommittedRange } from '../src/kafka/read.js';
import { createTopic } from '../src/kafka/topics.js';
import { recordBytes, type KafkaRecord } from '../src/kafka/record.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { dropTable } from '../src/catalog/tables.js';
import { useLocalStackDefaults } from '../src/stack/index.js';

const eventsOf = new Map([[100, Number(process.argv[2] ?? 120)], [1000, Number(process.argv[3] ?? 24)]]);
const MiB = 1024 * 1024;

useLocalStackDefaults();
const engine: Engine = await openEngine();
const brokers = engine.config.kafkaBrokers.join(',');
const settings = resolveSettings({ file_bytes: '8MiB', file_window: '1h' });

/** 1 KiB JSON values, keys from a thousand customers, as bench/indexing.ts writes them. */
function records(from: number, count: number, t0: number) {
  const pad = 'x'.repeat(1024 - 120);
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    return { key: `customer-${n % 1000}`, value: JSON.stringify({ order: n, customer: n % 1000, total: (n % 9973) / 100, pad }), partition: 0, timestamp: t0 + n };
  });
}

async function writeAll(topics: readonly string[], from: number, count: number, t0: number): Promise<void> {
  for (let sent = 0; sent < count; sent += 2000) {
    const chunk = records(from + sent, Math.min(2000, count - sent), t0);
    for (const topic of topics) await produce(engine.kafka, topic, chunk);
  }
}

interface Fetch {
  from: bigint;
  fetchBytes: number | undefined;
}

interface Variant {
  name: 'handler' | 'before' | 'event only';
  topic: string;
  table: string;
  runtime: IndexerRuntime;
  stages: { read: number; lso: number; build: number };
  /** The Fetches of the current event's read. */
  fetches: Fetch[];
  /** Per event: the handler's wall ms less its builds', its re-read's (LSO look-up included), its builds', its CPU ms, the undecoded Fetches'. */
  samples: { handler: number[]; read: number[]; build: number[]; cpu: number[]; undecoded: number[] };
  wireBytes: number;
  fetchCount: number;
}

const timed = async (work: () => Promise<unknown>): Promise<{ ms: number; cpu: number }> => {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpu: (used.user + used.system) / 1000 };
};

async function pass(situation: 'behind' | 'head', size: number, events: number) {
  const kafka = kafkaSource(engine.kafka);
  // Bench only, not exact: the records of the event being handled, as if they were the committed ones.
  let eventRecords: KafkaRecord[] = [];
  const sources: Record<Variant['name'], CommittedSource> = {
    handler: kafka,
    before: {
      lastStableOffset: kafka.lastStableOffset,
      async *read(topic, partition, from, until) {
        const lso = await kafka.lastStableOffset(topic, partition);
        yield* kafka.read(topic, partition, from, until < lso ? until : lso);
      },
    },
    'event only': {
      lastStableOffset: kafka.lastStableOffset,
      async *read(_topic, _partition, from, until) {
        yield { records: eventRecords.filter((r) => r.offset >= from && r.offset < until), nextOffset: until };
      },
    },
  };
  const variants: Variant[] = [];
  for (const name of ['handler', 'before', 'event only'] as const) {
    const topic = `bench-msk-${randomUUID().slice(0, 8)}`;
    await createTopic(engine.kafka, topic, 1);
    const table = await createTableFromTopic(engine, { name: `bench_msk_${randomUUID().slice(0, 8)}`, topic, format: 'json', settings });
    const stages = { read: 0, lso: 0, build: 0 };
    const variant: Variant = { name, topic, table: table.name, stages, fetches: [], samples: { handler: [], read: [], build: [], cpu: [], undecoded: [] }, wireBytes: 0, fetchCount: 0, runtime: undefined! };
    variant.runtime = {
      catalog: engine.catalog,
      // The Fetches to send again undecoded: the handler's as sized, before's of 4 MiB; event only makes none.
      source: timedSource(sources[name], stages, name === 'event only' ? undefined : (fetch) => variant.fetches.push(name === 'before' ? { ...fetch, fetchBytes: defaultMaxBytes } : fetch)),
      build: timedBuild(rangeBuilder(engine.catalog), stages),
      owner: `bench-msk-${process.pid}-${randomUUID().slice(0, 6)}`,
      clock: Date.now,
      indexers: new Map(),
      releaseAfterEvent: true,
    };
    variants.push(variant);
  }
  const t0 = Date.now();
  // Behind: everything written first, and 8 MiB more than the events cover. Tables start at 0.
  if (situation === 'behind') await writeAll(variants.map((v) => v.topic), 0, size * events + 8192, t0);
  for (const v of variants) await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = (SELECT table_id FROM offsetlake.lake_table WHERE table_name = $1)', [v.table]);
  const senders = await Promise.all(variants.map((v) => fetchSender(engine.kafka, v.topic, 0)));

  let records = 0;
  let spanBytes = 0;
  const parseMs: number[] = [];
  for (let i = 0; i < events; i += 1) {
    const from = BigInt(i * size);
    if (situation === 'head') await writeAll(variants.map((v) => v.topic), i * size, size, t0);
    const payloads = await Promise.all(variants.map(async (v) => {
      const span = await readCommittedRange(engine.kafka, v.topic, 0, from, from + BigInt(size));
      return JSON.stringify(toKafkaEvent([{ topic: v.topic, partition: 0, records: span.records }], brokers));
    }));
    eventRecords = parseKafkaEvent(JSON.parse(payloads[2]!))[0]!.records;
    records += eventRecords.length;
    spanBytes += eventRecords.reduce((sum, r) => sum + recordBytes(r), 0);
    const parsed = JSON.parse(payloads[0]!);
    parseMs.push((await timed(async () => parseKafkaEvent(parsed))).ms);
    // The Lambda runtime parses the payload before the handler runs: not counted. The
    // variants take turns at going first, so that none always runs on a warmer machine.
    for (let k = 0; k < variants.length; k += 1) {
      const v = variants[(i + k) % variants.length]!;
      const event = JSON.parse(payloads[variants.indexOf(v)]!);
      v.fetches = [];
      const { read, lso, build } = v.stages;
      const t = await timed(() => handleKafkaEvent(event, v.runtime));
      const built = v.stages.build - build;
      v.samples.handler.push(t.ms - built);
      v.samples.read.push(v.stages.read - read + v.stages.lso - lso);
      v.samples.build.push(built);
      v.samples.cpu.push(t.cpu);
    }
    for (const [k, v] of variants.entries()) {
      const replay = await timed(async () => {
        for (const fetch of v.fetches) await senders[k]!.send(fetch.from, fetch.fetchBytes ?? defaultMaxBytes, (_c, _k, _v, reader) => (v.wireBytes += reader.remaining));
      });
      v.samples.undecoded.push(replay.ms);
      v.fetchCount += v.fetches.length;
    }
  }

  // Every table holds every record of the events once its open range is flushed (that build is no event's).
  for (const v of variants) {
    for (const indexer of v.runtime.indexers.values()) await indexer.flush();
    const rows = await engine.catalog.query<{ rows: bigint | null }>('SELECT sum(record_count) AS rows FROM offsetlake.data_file f JOIN offsetlake.lake_table t USING (table_id) WHERE t.table_name = $1', [v.table]);
    if (Number(rows.rows[0]!.rows) !== records) throw new Error(`${situation}, events of ${size}, ${v.name}: ${rows.rows[0]!.rows} rows indexed, the events held ${records}`);
    await dropTable(engine.catalog, v.table);
  }
  return { events, records, spanBytes, parseMs, variants };
}

/** Medians: the machine is shared, and a pause of the collector or of a neighbour lands on some event or other. */
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const ms = (value: number) => value.toFixed(2);
const pct = (part: number, whole: number) => `${Math.round((100 * part) / whole)} %`;

try {
  const times: string[] = [];
  const ratios: string[] = [];
  for (const situation of ['behind', 'head'] as const) {
    for (const [size, events] of eventsOf) {
      process.stderr.write(`${situation}: ${events} events of ${size} records…\n`);
      const { records, spanBytes, parseMs, variants } = await pass(situation, size, events);
      if (records !== size * events) throw new Error(`${situation}: ${records} records in events of ${size}`);
      const [now, before, eventOnly] = variants as [Variant, Variant, Variant];
      // Per event: the median handler less its builds, plus the builds' mean share.
      const handler = (v: Variant) => median(v.samples.handler);
      const withBuilds = (v: Variant) => handler(v) + mean(v.samples.build);
      const read = (v: Variant) => median(v.samples.read);
      const undecoded = median(now.samples.undecoded);
      times.push(
        `| ${situation} | ${size} | ${(spanBytes / events / MiB).toFixed(2)} | ${ms(handler(now))} | ${ms(read(now))} | ${ms(mean(now.samples.build))} | ` +
          `${ms(handler(before))} | ${ms(read(before))} | ${ms(handler(eventOnly))} | ${ms(undecoded)} | ${ms(median(parseMs))} | ` +
          `${(now.wireBytes / events / MiB).toFixed(2)} in ${(now.fetchCount / events).toFixed(1)} / ${(before.wireBytes / events / MiB).toFixed(2)} in ${(before.fetchCount / events).toFixed(1)} | ` +
          `${ms(median(now.samples.cpu))} / ${ms(median(before.samples.cpu))} / ${ms(median(eventOnly.samples.cpu))} |`,
      );
      ratios.push(
        `| ${situation} | ${size} | ${pct(read(before), handler(before))} / ${pct(read(before), withBuilds(before))} | ${pct(read(now), handler(now))} / ${pct(read(now), withBuilds(now))} | ` +
          `×${(handler(before) / handler(now)).toFixed(2)} | ×${(handler(now) / handler(eventOnly)).toFixed(2)} | ${pct(undecoded, read(now))} | ${pct(read(now) - undecoded, withBuilds(now))} |`,
      );
    }
  }
  process.stdout.write(
    [
      'Per event, median wall ms (handler: without builds; builds: their mean share per event; re-read: the Fetches with their decoding and filter, and the LSO look-up where there is one):',
      '',
      '| situation | records | MiB | handler | its re-read | builds | before | its re-read | event only | undecoded Fetches | parse | MiB fetched in Fetches, handler / before | CPU ms handler / before / event only |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...times,
      '',
      'Ratios (of medians):',
      '',
      '| situation | records | re-read of the handler before, without / with builds | now | before ÷ handler | handler ÷ event only | undecoded Fetches of the re-read | most a check could save, of the handler with builds |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
      ...ratios,
    ].join('\n') + '\n',
  );
} finally {
  await engine.close();
}
