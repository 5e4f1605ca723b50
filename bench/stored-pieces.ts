/**
 * What checking the stored page index and footer costs a read (issue 46), on the local
 * stack (or KAFKA_BROKERS / DATABASE_URL):
 *
 *   npm run bench:stored-pieces -- [records=60000] [rounds=40]
 *
 * Indexes one file of `records` JSON records (~300 bytes each: several row groups, a page
 * index on every chunk), then, alternating, `rounds` times each:
 * - the file's footer read by a service that has never seen the file (a new ReaderService:
 *   what a Lambda instance or a fresh `serve` pays once per file), with the check (the
 *   file as the indexer records it now: its granules, page index and their sha256 are
 *   loaded, and the page index and footer hashed) and without (the same file with
 *   tail_sha256 set to NULL, whose footer `serve` answers from the catalog's record alone,
 *   as it answered every footer read before);
 * - the same read again on a service that already has the file (the check is remembered);
 * - the sha256 of the page index and footer alone: all a read of the page index adds.
 * Prints medians and ratios; no goal is asserted.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { findGranules, listFiles } from '../src/catalog/file-reads.js';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../src/local/runner.js';
import { bodyBytes, readerHandler } from '../src/reader/http.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';

const records = Number(process.argv[2] ?? 60_000);
const rounds = Number(process.argv[3] ?? 40);

useLocalStackDefaults();
const engine = await openEngine();
try {
  const topic = `bench-stored-pieces-${Date.now()}`;
  await createTopic(engine.kafka, topic, 1);
  const created = await createTableFromTopic(engine, { name: topic.replaceAll('-', '_'), topic, format: 'json', settings: resolveSettings({ granularity: 'day' }) });
  const t0 = Date.UTC(2026, 10, 1, 12);
  for (let at = 0; at < records; at += 5_000) {
    await produce(engine.kafka, topic, Array.from({ length: Math.min(5_000, records - at) }, (_, j) => ({
      key: `k${at + j}`, value: JSON.stringify({ i: at + j, n: Math.sin(at + j), text: 'x'.repeat((at + j) % 200) }), timestamp: t0 + at + j,
    })));
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  const table = await findTable(engine.catalog, created.name);
  const [file] = await listFiles(engine.catalog, table.tableId);
  if (!file?.hasGranules) throw new Error('the bench file has no granules');
  const granules = (await findGranules(engine.catalog, file.dataFileId))!;
  const tailBytes = granules.pageIndex.byteLength + file.footer.byteLength;
  const request = { method: 'GET', path: `/tables/${table.name}/files/${file.dataFileId}.parquet`, headers: { range: `bytes=-${file.footer.byteLength}` } };
  const source = kafkaSource(engine.kafka);
  console.log(`file ${file.dataFileId}: ${file.fileSizeBytes} bytes, ${granules.granules.length} row groups, page index ${granules.pageIndex.byteLength} bytes, footer ${file.footer.byteLength} bytes`);

  const read = async (service: ReaderService): Promise<number> => {
    const t = performance.now();
    const response = await readerHandler(service, { token: null })(request);
    const body = await bodyBytes(response.body);
    if (response.status !== 206 || body.byteLength !== file.footer.byteLength) throw new Error(`tail read answered ${response.status}, ${body.byteLength} bytes`);
    return performance.now() - t;
  };
  const times = { checkedCold: [] as number[], uncheckedCold: [] as number[], checkedWarm: [] as number[], uncheckedWarm: [] as number[], hash: [] as number[] };
  const setTail = (value: Buffer | null) => engine.catalog.query('UPDATE offsetlake.data_file SET tail_sha256 = $2 WHERE data_file_id = $1', [file.dataFileId, value]);
  for (let round = 0; round < rounds; round += 1) {
    for (const checked of round % 2 === 0 ? [true, false] : [false, true]) {
      await setTail(checked ? Buffer.from(granules.tailSha256) : null);
      const service = new ReaderService(engine.catalog, source, { publishEveryMs: 0 });
      times[checked ? 'checkedCold' : 'uncheckedCold'].push(await read(service));
      times[checked ? 'checkedWarm' : 'uncheckedWarm'].push(await read(service));
      await service.close();
    }
    const t = performance.now();
    createHash('sha256').update(granules.pageIndex).update(file.footer).digest();
    times.hash.push(performance.now() - t);
  }
  await setTail(Buffer.from(granules.tailSha256));
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const ms = (value: number) => `${value.toFixed(3)} ms`;
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<keyof typeof times, number>;
  console.log(`footer read (${file.footer.byteLength} bytes), new service: checked ${ms(m.checkedCold)}, unchecked ${ms(m.uncheckedCold)}: ×${(m.checkedCold / m.uncheckedCold).toFixed(2)}`);
  console.log(`footer read again, same service: checked ${ms(m.checkedWarm)}, unchecked ${ms(m.uncheckedWarm)}: ×${(m.checkedWarm / m.uncheckedWarm).toFixed(2)}`);
  console.log(`sha256 of the page index and footer (${tailBytes} bytes): ${ms(m.hash)} (${(tailBytes / 1024 / 1024 / (m.hash / 1000)).toFixed(0)} MiB/s)`);
  console.log(`medians of ${rounds} rounds each, alternating`);
} finally {
  await engine.close();
}
