/**
 * Issue 16's figures, in one run on one topic (the local stack up):
 *
 *   node --import tsx bench/indexes.ts [records=1000000] [valueBytes=1024]
 *
 * A topic of JSON records of ~valueBytes, each with a unique `order` and a unique `sku`,
 * is indexed twice, into two tables with the same settings (8 MiB files, row groups of
 * 1,000 rows: 100+ files, ~1,000 granules): `plain` without indexes, `indexed` with a
 * POSTINGS index on `_value.order` and a BLOOM index (1 % false positives) on
 * `_value.sku`, built with each file. Then, in the same run:
 *   - indexing throughput of `indexed` over `plain` (CPU seconds of this process);
 *   - point lookups by `order` (POSTINGS) and `sku` (BLOOM) on `indexed` against the
 *     same lookups on `plain`: wall time, row groups and Kafka bytes read, answers equal;
 *   - a CREATE INDEX on `plain` (POSTINGS on `_value.order`), backfilled from Kafka:
 *     its rate in MiB/s per core (record bytes of the files it read);
 *   - each index's size in the catalog per million rows.
 * BENCH_PROFILE=1 prints where the indexed pass's CPU goes.
 */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { openEngine, type Engine } from '../src/runtime/engine.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { indexerFor, type IndexerRuntime } from '../src/indexer/handler.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { recordBytes } from '../src/kafka/record.js';
import { resolveSettings } from '../src/table/settings.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { dropTable, findTable } from '../src/catalog/tables.js';
import { indexReports } from '../src/catalog/indexes.js';
import { parseInlineIndex } from '../src/indexes/ddl.js';
import { createIndex } from '../src/catalog/index-ddl.js';
import { runIndexBackfill } from '../src/index-backfill/index.js';
import { ReaderService } from '../src/reader/service.js';
import { runQuery, type QueryResult } from '../src/query/run.js';
import { profiled } from './profile.js';

const total = Number(process.argv[2] ?? 1_000_000);
const valueBytes = Number(process.argv[3] ?? 1024);
const MiB = 1024 * 1024;

useLocalStackDefaults();
const engine = await openEngine();
const say = (line: string): void => void process.stderr.write(`${line}\n`);
const out = (line: string): void => void process.stdout.write(`${line}\n`);

/** The sku of order n: unique, not in order of n (a hash-like permutation of it). */
const skuOf = (n: number): string => `S-${((n * 2654435761) % 4294967296).toString(36)}`;

function cpuSeconds(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

async function indexTable(e: Engine, name: string): Promise<void> {
  const runtime: IndexerRuntime = {
    catalog: e.catalog, source: kafkaSource(e.kafka), build: rangeBuilder(e.catalog), owner: `bench-${process.pid}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false,
  };
  const indexer = await indexerFor(runtime, await findTable(e.catalog, name), 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
}

/** The middle value; of an even count, the mean of the two middle ones (two scans must not be judged by the slower). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const tables: string[] = [];
try {
  const topic = `bench-indexes-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, 1);
  const pad = 'x'.repeat(Math.max(0, valueBytes - 90));
  const t0 = Date.now() - total;
  say(`loading ${total} records of ~${valueBytes} B into ${topic}…`);
  let bytes = 0;
  for (let sent = 0; sent < total; sent += 10_000) {
    const records = Array.from({ length: Math.min(10_000, total - sent) }, (_, i) => {
      const n = sent + i;
      return { key: `customer-${n % 5000}`, value: JSON.stringify({ order: n, sku: skuOf(n), customer: n % 5000, pad }), partition: 0, timestamp: t0 + n };
    });
    for (const r of records) bytes += recordBytes({ offset: 0n, timestamp: 0, key: Buffer.from(r.key), value: Buffer.from(r.value), headers: [] });
    await produce(engine.kafka, topic, records, { transactionalId: `${topic}-tx` });
    if (sent % 100_000 === 0) say(`  ${sent + records.length} records`);
  }
  const mib = bytes / MiB;
  const settings = resolveSettings({ file_bytes: '8MiB', file_window: '24h', granularity: 'day', row_group_rows: '1000' });

  async function pass(label: string, indexes: string[]): Promise<{ name: string; cpu: number; wall: number; files: number; granules: number }> {
    const name = `bench_${label}_${randomUUID().slice(0, 6)}`;
    tables.push(name);
    const table = await createTableFromTopic(engine, { name, topic, format: 'json', settings, indexes: indexes.map(parseInlineIndex) });
    // Tables start at the LSO; these must see the loaded records, so their start is moved to 0.
    await engine.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [table.tableId]);
    const cpu = process.cpuUsage();
    const started = performance.now();
    await profiled(label, () => indexTable(engine, name));
    const wall = (performance.now() - started) / 1000;
    const used = cpuSeconds(cpu);
    const counts = await engine.catalog.query<{ files: bigint; rows: bigint; granules: bigint }>(
      'SELECT count(*) AS files, sum(record_count) AS rows, (SELECT count(*) FROM offsetlake.granule g JOIN offsetlake.data_file f USING (data_file_id) WHERE f.table_id = $1) AS granules FROM offsetlake.data_file WHERE table_id = $1',
      [table.tableId],
    );
    if (Number(counts.rows[0]!.rows) !== total) throw new Error(`${label}: ${counts.rows[0]!.rows} rows indexed, ${total} produced`);
    out(`${label.padEnd(8)} ${total} records, ${mib.toFixed(1)} MiB, ${counts.rows[0]!.files} files, ${counts.rows[0]!.granules} row groups: ${(mib / wall).toFixed(1)} MiB/s wall, ${(mib / used).toFixed(1)} MiB/s per core (${used.toFixed(1)} CPU s)`);
    return { name, cpu: used, wall, files: Number(counts.rows[0]!.files), granules: Number(counts.rows[0]!.granules) };
  }

  // Alternated (plain, indexed, plain, indexed) so that warm-up and the machine's other load
  // fall on both sides; the kept tables are the second pair's.
  const indexSpecs = ['by_order (_value.order) USING POSTINGS', 'by_sku (_value.sku) USING BLOOM WITH (false_positive_rate = 0.01)'];
  const first = await pass('plain', []);
  const second = await pass('indexed', indexSpecs);
  const plain = await pass('plain', []);
  const indexed = await pass('indexed', indexSpecs);
  for (const [a, b] of [[first, second], [plain, indexed]] as const) {
    out(`indexing with one POSTINGS and one BLOOM index: ${(100 * a.cpu / b.cpu).toFixed(1)} % of the throughput without (per core; wall ${(100 * a.wall / b.wall).toFixed(1)} %)`);
  }
  out(`both pairs: ${(100 * (first.cpu + plain.cpu) / (second.cpu + indexed.cpu)).toFixed(1)} % per core`);
  for (const name of [first.name, second.name]) await dropTable(engine.catalog, name);

  const source = kafkaSource(engine.kafka);
  async function lookup(table: string, sql: string): Promise<{ ms: number; result: QueryResult }> {
    // A fresh service per query: nothing cached from the one before.
    const service = new ReaderService(engine.catalog, source, { publishEveryMs: 0 });
    const started = performance.now();
    const result = await runQuery({ catalog: engine.catalog, source, service }, sql.replaceAll('$T', table));
    return { ms: performance.now() - started, result };
  }
  const rowGroupsRead = (result: QueryResult): number => result.plan.reduce((n, p) => n + p.rowGroups.read, 0);
  const kafkaRead = (result: QueryResult): number => result.plan.reduce((n, p) => n + p.kafkaBytes, 0);

  const orders = [Math.floor(total * 0.37), Math.floor(total * 0.81), 7];
  const postings: { ms: number; rowGroups: number }[] = [];
  const scans: number[] = [];
  for (const [i, n] of orders.entries()) {
    const sql = `SELECT _offset, _value->>'$.sku' AS sku FROM $T WHERE _value->>'$.order' = '${n}'`;
    const fast = await lookup(indexed.name, sql);
    if (fast.result.rows.length !== 1 || fast.result.rows[0]!.sku !== skuOf(n)) throw new Error(`order ${n}: the indexed lookup answered ${JSON.stringify(fast.result.rows)}`);
    postings.push({ ms: fast.ms, rowGroups: rowGroupsRead(fast.result) });
    if (i < 2) {
      const slow = await lookup(plain.name, sql);
      if (JSON.stringify(slow.result.rows) !== JSON.stringify(fast.result.rows)) throw new Error(`order ${n}: answers differ with and without the index`);
      scans.push(slow.ms);
      out(`order ${n}: without the index ${(slow.ms / 1000).toFixed(2)} s, ${rowGroupsRead(slow.result)} row groups, ${(kafkaRead(slow.result) / MiB).toFixed(1)} MiB from Kafka; with POSTINGS ${fast.ms.toFixed(0)} ms, ${rowGroupsRead(fast.result)} row group(s), ${(kafkaRead(fast.result) / MiB).toFixed(2)} MiB`);
    }
  }
  out(`POSTINGS point lookup: ${Math.max(...postings.map((p) => p.rowGroups))} row group(s) at most; ${(median(scans) / median(postings.map((p) => p.ms))).toFixed(0)}× faster than without the index (medians ${median(scans).toFixed(0)} ms vs ${median(postings.map((p) => p.ms)).toFixed(0)} ms)`);

  const blooms: number[] = [];
  for (let i = 0; i < 20; i++) {
    const n = Math.floor(((i + 0.5) / 20) * total);
    const { result } = await lookup(indexed.name, `SELECT _offset FROM $T WHERE _value->>'$.sku' = '${skuOf(n)}'`);
    if (result.rows.length !== 1) throw new Error(`sku of ${n}: ${result.rows.length} rows`);
    blooms.push(rowGroupsRead(result));
  }
  const granules = indexed.granules;
  out(`BLOOM (1 %) point lookup over ${granules} granules: ${(blooms.reduce((a, b) => a + b, 0) / blooms.length).toFixed(2)} row groups on average, ${Math.max(...blooms)} at most (the figure to reach: ≤ ${(1 + 0.01 * granules).toFixed(1)})`);

  // CREATE INDEX on the table indexed without one: its backfill rebuilds every file from Kafka.
  const created = await createIndex(engine.catalog, plain.name, parseInlineIndex('by_order (_value.order) USING POSTINGS'));
  const backfillCpu = process.cpuUsage();
  const backfillStarted = performance.now();
  const summary = await runIndexBackfill({ catalog: engine.catalog, source, owner: `bench-${process.pid}` }, created.index.indexId);
  const backfillWall = (performance.now() - backfillStarted) / 1000;
  const backfillSeconds = cpuSeconds(backfillCpu);
  if (summary.state !== 'active' || summary.files !== plain.files) throw new Error(`CREATE INDEX backfill ended ${summary.state} after ${summary.files} of ${plain.files} files`);
  out(`CREATE INDEX (POSTINGS) backfill: ${summary.files} files, ${(summary.bytesRead / MiB).toFixed(1)} MiB read from Kafka in ${backfillWall.toFixed(1)} s: ${(summary.bytesRead / MiB / backfillWall).toFixed(1)} MiB/s wall, ${(summary.bytesRead / MiB / backfillSeconds).toFixed(1)} MiB/s per core (${backfillSeconds.toFixed(1)} CPU s)`);
  const [backfilled] = await indexReports(engine.catalog, (await findTable(engine.catalog, plain.name)).tableId);
  const [built] = (await indexReports(engine.catalog, (await findTable(engine.catalog, indexed.name)).tableId)).filter((r) => r.name === 'by_order');
  out(`its entries: ${backfilled!.entryBytes} bytes, as many as the same index built with each file: ${built!.entryBytes} bytes`);

  for (const report of await indexReports(engine.catalog, (await findTable(engine.catalog, indexed.name)).tableId)) {
    out(`index ${report.name} (${report.kind.toUpperCase()}): ${(report.entryBytes / MiB).toFixed(2)} MiB in the catalog for ${total} rows = ${((report.entryBytes / MiB) * (1e6 / total)).toFixed(2)} MiB per million rows (${report.entryRows} entry rows)`);
  }
} finally {
  for (const name of tables) await dropTable(engine.catalog, name).catch(() => {});
  await engine.close();
}
