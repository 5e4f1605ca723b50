/**
 * What `query` costs when it reads granules, against reading whole files, on the local
 * stack (or KAFKA_BROKERS / DATABASE_URL):
 *
 *   node --import tsx bench/query-granules.ts [records=200000]
 *   BENCH_TABLE=bench_query_… node --import tsx bench/query-granules.ts   (reuse a loaded table)
 *
 * Loads one partition with JSON records (~300 bytes each), indexed as one file of
 * 10,000-row row groups, then runs a few statements both ways (granules, and
 * `wholeFiles: true`: every candidate file rebuilt whole with every column), best of 2
 * wall times each, with what the reader counted: Kafka bytes fetched for the files, the
 * Parquet bytes handed to DuckDB, row groups rebuilt (for some columns / every column),
 * whole files rebuilt. The answers of both ways are compared.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { indexerFor } from '../src/indexer/handler.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { runQuery } from '../src/query/run.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

const total = Number(process.argv[2] ?? 200_000);

useLocalStackDefaults();
const engine = await openEngine();
try {
  const name = process.env.BENCH_TABLE ?? (await loadAndIndex());

  async function loadAndIndex(): Promise<string> {
    const suffix = randomBytes(4).toString('hex');
    const topic = `bench-query-${suffix}`;
    await createTopic(engine.kafka, topic, 1);
    const name = `bench_query_${suffix}`;
    await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: '1GiB', file_window: '1h', granularity: 'day' }) });
    const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    let started = performance.now();
    for (let written = 0; written < total; ) {
      const n = Math.min(10_000, total - written);
      const records = Array.from({ length: n }, (_, i) => ({
        key: `user-${(written + i) % 997}`,
        value: JSON.stringify({ i: written + i, page: `/p/${(written + i) % 50}`, ms: (written + i) % 1000, s: randomBytes(110).toString('hex') }),
        partition: 0,
        timestamp: base + (written + i) * 10,
      }));
      await produce(engine.kafka, topic, records, { transactionalId: `bench-${topic}` });
      written += n;
    }
    console.log(`loaded ${total} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const table = await findTable(engine.catalog, name);
    started = performance.now();
    const indexer = await indexerFor({ catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: `bench-${suffix}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false }, table, 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    console.log(`indexed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return name;
  }

  // Inside a row group: 10,000 rows each, plus a commit marker per 10,000 records produced.
  const middle = BigInt(Math.floor(total / 2) + 5_000);
  const statements = [
    ['an _offset range inside one row group', `SELECT count(*) AS n, max(_value->>'page') AS page FROM ${name} WHERE _offset BETWEEN ${middle} AND ${middle + 100n}`],
    ['one column of every row', `SELECT max(_timestamp) AS latest FROM ${name}`],
    ['a JSON field of every row', `SELECT _value->>'page' AS page, count(*) AS n FROM ${name} GROUP BY 1 ORDER BY 1 LIMIT 3`],
    ['every column of one row group', `SELECT * FROM ${name} WHERE _offset BETWEEN ${middle} AND ${middle + 100n} ORDER BY _offset LIMIT 1`],
  ] as const;
  const MiB = 1024 * 1024;
  for (const [label, sql] of statements) {
    const line: string[] = [];
    const answers: string[] = [];
    for (const wholeFiles of [false, true]) {
      let best = Infinity;
      let metrics: ReaderService['metrics'] | undefined;
      for (let round = 0; round < 2; round += 1) {
        const source = kafkaSource(engine.kafka);
        const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
        const started = performance.now();
        const result = await runQuery({ catalog: engine.catalog, source, service, wholeFiles }, sql);
        best = Math.min(best, performance.now() - started);
        metrics = service.metrics;
        if (round === 0) answers.push(JSON.stringify(result.rows));
      }
      const m = metrics!;
      line.push(
        `${wholeFiles ? 'whole files' : 'granules'}: ${(best / 1000).toFixed(2)} s, Kafka ${(m.kafkaBytes / MiB).toFixed(2)} MiB for ${(m.bytesServed / MiB).toFixed(2)} MiB of Parquet` +
          ` (${(m.kafkaBytes / Math.max(1, m.bytesServed)).toFixed(2)} per byte), row groups ${m.partialGranuleRebuilds} partial + ${m.granuleRebuilds} whole, files whole ${m.rebuilds}`,
      );
    }
    if (answers[0] !== answers[1]) throw new Error(`${label}: the answers differ: ${answers[0]} vs ${answers[1]}`);
    console.log(`${label}:\n  ${line.join('\n  ')}`);
  }
} finally {
  await engine.close();
}
