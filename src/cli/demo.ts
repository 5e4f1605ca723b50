/**
 * `npm run demo`: from nothing, the local stack with embedded defaults; a topic written
 * by a transactional producer (commits and aborts interleaved, timestamps over three
 * hours, late records, a few values that are not JSON); a table over it; indexing until
 * caught up; every file rebuilt from Kafka and verified; the catalog, status and a query printed.
 */
import { listFiles } from '../catalog/file-reads.js';
import { dropTable, findTable, listTables } from '../catalog/tables.js';
import { openEngine } from '../runtime/engine.js';
import { rangeBuilder } from '../indexer/range-builder.js';
import { kafkaSource } from '../kafka/source.js';
import { produce } from '../kafka/produce.js';
import { createTopic, deleteTopic } from '../kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../local/runner.js';
import { rebuildFile } from '../files/rebuild.js';
import { schemaVersion } from '../catalog/schema-versions.js';
import { resolveSettings } from '../table/settings.js';
import { stackConfig } from '../stack/config.js';
import { stackUp, useLocalStackDefaults } from '../stack/index.js';
import { ensureStackReaderLogin } from '../stack/postgres.js';
import { createTableFromTopic } from '../table-topic/create-table.js';
import { filesCommand, statusCommand } from './inspect.js';
import { queryCommand } from './query.js';
import { progress } from './output.js';

const partitions = 3;
const transactions = 36;
const recordsPerTransaction = 60;

export async function demoCommand(_args: string[]): Promise<number> {
  const config = stackConfig();
  await stackUp(config, progress);
  useLocalStackDefaults();
  const engine = await openEngine();
  try {
    // the login `offsetlake attach` hands out, as `stack up` makes it
    await ensureStackReaderLogin(config, engine.catalog);
    const topic = `demo-orders-${Date.now()}`;
    // an earlier demo's table and topic go: a demo leaves one topic behind, not one per run
    const earlier = (await listTables(engine.catalog)).find((t) => t.name === 'demo_orders');
    await dropTable(engine.catalog, 'demo_orders', { ifExists: true });
    if (earlier?.topic.startsWith('demo-orders-')) await deleteTopic(engine.kafka, earlier.topic).catch(() => {});
    await createTopic(engine.kafka, topic, partitions);
    const table = await createTableFromTopic(engine, {
      name: 'demo_orders',
      topic,
      format: 'json',
      settings: resolveSettings({ file_window: '15m', granularity: 'hour' }),
    });
    progress(`table demo_orders over topic ${topic} (${partitions} partitions), indexing from each partition's LSO`);

    // Three hours of orders, ending now; every fourth transaction aborted.
    const start = Date.now() - 3 * 3_600_000;
    const step = (3 * 3_600_000) / (transactions * recordsPerTransaction);
    let committed = 0;
    let aborted = 0;
    for (let t = 0; t < transactions; t += 1) {
      const abort = t % 4 === 3;
      const records = Array.from({ length: recordsPerTransaction }, (_, i) => {
        const n = t * recordsPerTransaction + i;
        const late = n % 37 === 0 ? 4 * 60_000 : 0; // some records arrive 4 minutes late
        return {
          key: `customer-${n % 50}`,
          value: n % 211 === 5 ? `{"order": ${n}, "total": ` : JSON.stringify({ order: n, customer: n % 50, total: Math.round(((n * 7919) % 10_000) / 3) / 100, note: n % 13 === 0 ? 'café ☕' : null }),
          headers: [['source', n % 2 === 0 ? 'web' : 'app']] as [string, string][],
          partition: n % partitions,
          timestamp: Math.round(start + n * step - late),
        };
      });
      await produce(engine.kafka, topic, records, { transactionalId: `${topic}-producer`, abort });
      if (abort) aborted += records.length;
      else committed += records.length;
    }
    progress(`produced ${committed} committed and ${aborted} aborted records in ${transactions} transactions`);

    const runner = new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true }, progress);
    const summary = await runner.run();
    progress(`indexed ${summary.records} records in ${summary.events} events: ${summary.rangesCommitted} ranges, ${summary.filesCommitted} files`);

    const tableRecord = await findTable(engine.catalog, table.name);
    const files = await listFiles(engine.catalog, tableRecord.tableId);
    const source = kafkaSource(engine.kafka);
    let rows = 0;
    for (const file of files) rows += (await rebuildFile(source, tableRecord, file, await schemaVersion(engine.catalog, tableRecord.tableId, file.schemaVersion))).records;
    progress(`rebuilt all ${files.length} files from Kafka: same size, footer and sha256 as the catalog; ${rows} rows (${committed} committed records)`);
    if (rows !== committed) throw new Error(`the files hold ${rows} rows but ${committed} records were committed`);
  } finally {
    await engine.close();
  }
  process.stdout.write('\nThe catalog (offsetlake files demo_orders):\n');
  await filesCommand(['demo_orders']);
  process.stdout.write('\nPartition status (offsetlake status demo_orders):\n');
  await statusCommand(['demo_orders']);
  const sql = 'SELECT _partition, count(*) AS orders, count(_error) AS not_json, round(sum(CAST(_value->>\'total\' AS DOUBLE)), 2) AS total FROM demo_orders GROUP BY 1 ORDER BY 1';
  process.stdout.write(`\nSQL over the rebuilt files (offsetlake query "${sql}"):\n`);
  await queryCommand([sql, '--quiet']);
  process.stdout.write(
    '\nThe local stack keeps running (Kafka, the Schema Registry and Postgres: about 1 GiB of\n' +
      'memory, resident sets of ~550, ~250 and ~250 MiB), so that files, status, query, serve\n' +
      'and run work on demo_orders now. `npm run -s offsetlake -- stack down` stops it; its\n' +
      'data stays in ./.offsetlake until you delete that folder.\n',
  );
  return 0;
}
