/**
 * How many files and row groups `query` reads for each form of a key lookup and for
 * three OR queries, on the local stack (or KAFKA_BROKERS / DATABASE_URL):
 *
 *   npm run bench:predicates [-- hours=44]
 *
 * Loads one partition with 100 JSON records an hour for `hours` hours (one file an hour,
 * row groups of 10 records, each row group with its own key `k<hour>-<group>`), a
 * POSTINGS index on `_key`, then runs each statement once and prints the files and row
 * groups it read, and its rows (every form of one lookup must return the same rows).
 */
import { randomBytes } from 'node:crypto';
import { inTransaction } from '../src/catalog/db.js';
import { insertIndex } from '../src/catalog/indexes.js';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { indexerFor } from '../src/indexer/handler.js';
import { parseIndexColumn } from '../src/indexes/definition.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { runQuery } from '../src/query/run.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

const hours = Number(process.argv[2] ?? 44);
const hour = 3_600_000;

useLocalStackDefaults();
const engine = await openEngine();
try {
  const suffix = randomBytes(4).toString('hex');
  const topic = `bench-predicates-${suffix}`;
  const name = `bench_predicates_${suffix}`;
  await createTopic(engine.kafka, topic, 1);
  await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ granularity: 'hour', file_window: '2h', row_group_rows: '10' }) });
  const table = await findTable(engine.catalog, name);
  await inTransaction(engine.catalog, (client) =>
    insertIndex(client, name, { tableId: table.tableId, name: 'by_key', kind: 'postings', columns: [parseIndexColumn('_key')], scope: 'history', granuleRows: 10, falsePositiveRate: null, postingBuckets: 16, state: 'active' }),
  );
  const t0 = Math.floor(Date.now() / hour) * hour - (hours + 1) * hour;
  const records = Array.from({ length: hours * 100 }, (_, i) => ({
    key: `k${Math.floor(i / 100)}-${Math.floor((i % 100) / 10)}`,
    value: JSON.stringify({ i }),
    partition: 0,
    timestamp: t0 + Math.floor(i / 100) * hour + (i % 100) * 1000,
  }));
  await produce(engine.kafka, topic, records, { transactionalId: `bench-${topic}` });
  const indexer = await indexerFor({ catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: `bench-${suffix}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false }, table, 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();

  const key = 'k7-2';
  const statements: [string, string][] = [
    ["_key = 'k7-2'", `_key = '${key}'`],
    ["_key = 'k7-2'::BLOB", `_key = '${key}'::BLOB`],
    ["_key = CAST('k7-2' AS BLOB)", `_key = CAST('${key}' AS BLOB)`],
    ["_key = encode('k7-2')", `_key = encode('${key}')`],
    ["_key = 'k7-2'::VARCHAR", `_key = '${key}'::VARCHAR`],
    ['OR of two keys', `_key = '${key}' OR _key = 'k30-5'`],
    ['OR of a key and an _offset range', `_key = '${key}' OR _offset BETWEEN 4000 AND 4005`],
    ['OR of two _offset ranges', '_offset < 5 OR _offset BETWEEN 4000 AND 4005'],
  ];
  for (const [label, where] of statements) {
    const source = kafkaSource(engine.kafka);
    const service = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
    const result = await runQuery({ catalog: engine.catalog, source, service }, `SELECT _offset FROM ${name} WHERE ${where} ORDER BY 1`);
    const [plan] = result.plan;
    console.log(`${label}: files ${plan!.reads.length} of ${plan!.files}, row groups ${plan!.rowGroups.read} of ${plan!.rowGroups.of}, ${result.rows.length} rows (offsets ${result.rows.at(0)?._offset}…${result.rows.at(-1)?._offset})`);
  }
} finally {
  await engine.close();
}
