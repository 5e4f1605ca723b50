/**
 * Issue 14, granules: a read rebuilds only the row groups and columns it covers, and the
 * bytes are those of the whole file, always. Files of both encoder versions, JSON and
 * each registry format (nested columns: headers, arrays, maps, structs), with records of
 * another bucket inside the files' offsets, are indexed against the real broker, Schema
 * Registry and Postgres. Expected bytes: the whole-file rebuild, whose sha256 equals the
 * catalog's; expected granule spans: pyarrow's reading of each row group's offsets.
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findGranules, listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { countingSource } from '../../src/kafka/counting-source.js';
import { fileLayout, type FileLayout } from '../../src/parquet/index.js';
import { bodyBytes } from '../../src/reader/http.js';
import { rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import { ReaderService } from '../../src/reader/service.js';
import type { RegistryFormat } from '../../src/schema/decode.js';
import type { Engine } from '../../src/runtime/engine.js';
import type { TableFormat } from '../../src/table/settings.js';
import { fuzzSchemas, mutatedValue } from '../helpers/fuzz.js';
import { seededRandom } from '../helpers/random.js';
import { registerSchema } from '../helpers/registry.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';

const run = promisify(execFile);
const V1 = 'hyparquet-writer@0.17.0/v1';
const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 30, 10, 30);

let engine: Engine;
let dir: string;
beforeAll(async () => {
  engine = await testEngine('granules');
  dir = mkdtempSync(join(tmpdir(), 'offsetlake-granules-'));
});
afterAll(async () => {
  await engine?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Case {
  label: string;
  format: TableFormat;
  settings: Record<string, string>;
  encoder?: string;
  values: (i: number, rnd: () => number) => Buffer | string | null;
}

async function registryValues(format: RegistryFormat, topic: string): Promise<Case['values']> {
  const spec = fuzzSchemas[format];
  const schema = await registerSchema(`${topic}-value`, spec.text, spec.type);
  return (_i, rnd) => Buffer.from(mutatedValue(format, schema.id, rnd));
}

/**
 * 130 records, rows 40 to a row group; every 9th record an hour late (another bucket, so
 * the range has two files and each file's offsets hold records of the other one), keys,
 * repeated headers, a null value now and then.
 */
async function indexedTable(c: Case): Promise<{ table: TableRecord; files: CatalogFile[]; records: RecordToProduce[] }> {
  const topic = await newTopic(engine, 1, `granules-${c.label}`);
  const values = c.format === 'json' || c.format === 'raw' ? c.values : await registryValues(c.format as RegistryFormat, topic);
  const rnd = seededRandom(c.label.length * 104_729);
  const records: RecordToProduce[] = Array.from({ length: 130 }, (_, i) => ({
    key: i % 5 === 0 ? null : `k${i % 7}`,
    value: i % 23 === 11 ? null : values(i, rnd),
    headers: i % 3 === 0 ? [] : [['h', `v${i}`], ['h', i % 2 ? null : 'x'], ['trace', randomUUID()]],
    timestamp: t0 + i * 10 - (i % 9 === 4 ? hour : 0),
  }));
  return { ...(await indexedRecords(topic, c.label, records, { row_group_rows: '40', file_window: '2h', ...c.settings }, c.format, c.encoder)), records };
}

/** A table over `topic` (one partition), `records` produced to it and indexed to the end by one indexer: the table and its files. */
async function indexedRecords(topic: string, label: string, records: RecordToProduce[], settings: Record<string, string>, format: TableFormat = 'json', encoder?: string): Promise<{ table: TableRecord; files: CatalogFile[] }> {
  const created = await testTable(engine, topic, settings, format);
  await produce(engine.kafka, topic, records);
  const table = await findTable(engine.catalog, created.name);
  const runtime = testRuntime(engine, `granules-${label}`, encoder ? { build: rangeBuilder(engine.catalog, undefined, encoder) } : {});
  const indexer = await indexerFor(runtime, table, 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
  return { table, files: await listFiles(engine.catalog, table.tableId) };
}

/** Key, value and header bytes of what was produced, as Kafka stores them (UTF-8 for text). */
function producedBytes(records: readonly RecordToProduce[]): number {
  const size = (part: Buffer | string | null | undefined) => (part === null || part === undefined ? 0 : Buffer.byteLength(part));
  return records.reduce((sum, r) => sum + size(r.key) + size(r.value) + (r.headers ?? []).reduce((h, [name, value]) => h + size(name) + size(value), 0), 0);
}

const jsonValue = (i: number, rnd: () => number) => (i === 17 ? 'not json' : JSON.stringify({ i, s: 'é'.repeat(Math.floor(rnd() * 60)), nested: { list: [i, i * 2] } }));

const cases: (() => Case)[] = [
  () => ({ label: 'json-v1', format: 'json', settings: {}, encoder: V1, values: jsonValue }),
  () => ({ label: 'json-v5-zstd', format: 'json', settings: {}, values: jsonValue }),
  () => ({ label: 'json-v5-lz4', format: 'json', settings: { compression: 'lz4_raw' }, values: jsonValue }),
  () => ({ label: 'json-v5-none', format: 'json', settings: { compression: 'none' }, values: jsonValue }),
  () => ({ label: 'json-v2-snappy', format: 'json', settings: { compression: 'snappy' }, values: jsonValue }),
  () => ({ label: 'avro-v1', format: 'avro', settings: {}, encoder: V1, values: () => null }),
  () => ({ label: 'avro-v2', format: 'avro', settings: {}, values: () => null }),
  () => ({ label: 'protobuf-v2', format: 'protobuf', settings: {}, values: () => null }),
  () => ({ label: 'json-schema-v2', format: 'json-schema', settings: {}, values: () => null }),
];

function layoutOf(file: CatalogFile): FileLayout {
  const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
  if ('problem' in layout) throw new Error(layout.problem);
  return layout;
}

/** Every place where one piece of the file ends and the next begins, and the byte after each (unaligned). */
function cutPoints(layout: FileLayout): number[] {
  const aligned = new Set([0, 4, layout.dataEnd, layout.footerStart, layout.fileSize]);
  for (const group of layout.rowGroups) for (const chunk of group.chunks) aligned.add(chunk.start).add(chunk.end);
  const points = new Set<number>();
  for (const at of aligned) for (const p of [at, at + 1]) if (p <= layout.fileSize) points.add(p);
  return [...points].sort((a, b) => a - b);
}

describe('granules: a read rebuilds only what it covers and gives the bytes of the whole file', () => {
  for (const make of cases) {
    const c = make();
    it(`${c.label}: every range between piece boundaries (and one byte past each) equals the whole file's bytes; every chunk read cold reads only its granule's offsets; pyarrow's row groups match the granules`, async () => {
      const { table, files } = await indexedTable(c);
      // One range: the on-time file holds several row groups, the late file's offsets interleave with it.
      expect(files.map((file) => Number(file.recordCount)).sort((a, b) => a - b)).toEqual([14, 116]);
      expect(files.every((file) => file.hasGranules)).toBe(true);
      expect(new Set(files.map((file) => file.encoderVersion)).size).toBe(1);
      const source = kafkaSource(engine.kafka);
      const warm = new ReaderService(engine.catalog, source, { cacheBytes: 64 * 1024 * 1024 });
      const paths: string[] = [];
      for (const file of files) {
        const rebuilt = await rebuildFile(source, table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion));
        const whole = Buffer.from(rebuilt.bytes);
        expect(Buffer.from(rebuilt.sha256).equals(file.sha256)).toBe(true);
        const path = join(dir, `${c.label}-${file.dataFileId}.parquet`);
        writeFileSync(path, whole);
        paths.push(path);
        const layout = layoutOf(file);
        const points = cutPoints(layout);
        const wrong: string[] = [];
        let ranges = 0;
        for (const start of points) {
          for (const end of points) {
            if (end <= start) continue;
            ranges += 1;
            const got = Buffer.from(await bodyBytes(warm.producer.range(table, file, start, end)));
            if (!got.equals(whole.subarray(start, end))) wrong.push(`[${start}, ${end})`);
          }
        }
        expect(wrong, `file ${file.dataFileId}: ranges that differ from the whole file`).toEqual([]);
        expect(ranges).toBeGreaterThan(100);

        // Cold, one chunk at a time: only that granule's offsets are read, only its columns encoded.
        const { granules } = (await findGranules(engine.catalog, file.dataFileId))!;
        expect(granules.length).toBe(layout.rowGroups.length);
        for (const [g, group] of layout.rowGroups.entries()) for (const chunk of group.chunks) {
          const cold = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
          const got = Buffer.from(await bodyBytes(cold.producer.range(table, file, chunk.start, chunk.end)));
          expect(got.equals(whole.subarray(chunk.start, chunk.end)), `row group ${g}, ${chunk.path}`).toBe(true);
          expect(cold.metrics).toMatchObject({ rebuilds: 0, granuleRebuilds: group.chunks.length === 1 ? 1 : 0, partialGranuleRebuilds: group.chunks.length === 1 ? 0 : 1 });
          expect(cold.metrics.kafkaBytes).toBe(granules[g]!.kafkaBytes);
        }
        // The whole file, cold and streamed: one rebuild per row group, no whole-file rebuild.
        const cold = new ReaderService(engine.catalog, source, { cacheBytes: 0 });
        expect(Buffer.from(await bodyBytes(cold.producer.range(table, file, 0, whole.byteLength))).equals(whole)).toBe(true);
        expect(cold.metrics).toMatchObject({ rebuilds: 0, granuleRebuilds: layout.rowGroups.length, partialGranuleRebuilds: 0 });
        expect(cold.metrics.kafkaBytes).toBe(granules.reduce((n, granule) => n + granule.kafkaBytes, 0));
        // Spans tile the file's offsets.
        expect(granules[0]!.startOffset).toBe(file.startOffset);
        expect(granules.at(-1)!.endOffset).toBe(file.endOffset);
        for (let g = 1; g < granules.length; g++) expect(granules[g]!.startOffset).toBe(granules[g - 1]!.endOffset);
      }
      // pyarrow: each row group's row count, and its offsets inside the granule's span, the next group starting where the span ends.
      const { stdout } = await run('python3', [fileURLToPath(new URL('./granule_spans.py', import.meta.url)), ...paths]);
      const read = JSON.parse(stdout) as Record<string, { rows: number; first: string; last: string }[]>;
      for (const [i, path] of paths.entries()) {
        const file = files[i]!;
        const { granules } = (await findGranules(engine.catalog, file.dataFileId))!;
        expect(read[path]!.map((group) => group.rows)).toEqual(granules.map((granule) => granule.rowCount));
        for (const [g, group] of read[path]!.entries()) {
          const granule = granules[g]!;
          if (g > 0) expect(BigInt(group.first)).toBe(granule.startOffset);
          expect(BigInt(group.first)).toBeGreaterThanOrEqual(granule.startOffset);
          expect(BigInt(group.last)).toBeLessThan(granule.endOffset);
        }
      }
    }, 180_000);
  }

  it('a row group read one column chunk per request, as engines do, is read from Kafka once: later columns take its records from the cache', async () => {
    const { table, files } = await indexedTable({ label: 'percolumn', format: 'json', settings: {}, values: jsonValue });
    const file = files.reduce((a, b) => (b.recordCount > a.recordCount ? b : a));
    const layout = layoutOf(file);
    const { granules } = (await findGranules(engine.catalog, file.dataFileId))!;
    const source = kafkaSource(engine.kafka);
    const whole = Buffer.from((await rebuildFile(source, table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion))).bytes);
    const service = new ReaderService(engine.catalog, source, { cacheBytes: 16 * 1024 * 1024 });
    const group = layout.rowGroups[1]!;
    for (const chunk of group.chunks) {
      const got = Buffer.from(await bodyBytes(service.producer.range(table, file, chunk.start, chunk.end)));
      expect(got.equals(whole.subarray(chunk.start, chunk.end)), chunk.path).toBe(true);
    }
    expect(service.metrics).toMatchObject({ partialGranuleRebuilds: group.chunks.length, granuleRecordHits: group.chunks.length - 1, kafkaBytes: granules[1]!.kafkaBytes });
  }, 120_000);

  it('the files of one range (two time buckets over the same offsets) are served from one Kafka read: reading every file whole fetches each record once', async () => {
    const { table, files, records } = await indexedTable({ label: 'sharedspan', format: 'json', settings: {}, values: jsonValue });
    expect(files.length).toBe(2);
    expect(files.map((f) => [f.startOffset, f.endOffset, f.rangeFiles])).toEqual([[files[0]!.startOffset, files[0]!.endOffset, 2], [files[0]!.startOffset, files[0]!.endOffset, 2]]);
    const produced = producedBytes(records);
    const readAll = async (service: ReaderService, together: boolean) => {
      const one = async (file: CatalogFile) => {
        const bytes = Buffer.from(await bodyBytes(service.producer.range(table, file, 0, Number(file.fileSizeBytes))));
        expect(createHash('sha256').update(bytes).digest().equals(file.sha256), `file ${file.dataFileId}`).toBe(true);
      };
      if (together) await Promise.all(files.map(one));
      else for (const file of files) await one(file);
    };
    for (const together of [false, true]) {
      // read at once: on two build threads as serve builds, the bytes still the catalog's
      const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 16 * 1024 * 1024, ...(together ? { buildThreads: 2 } : {}) });
      await readAll(service, together);
      await service.close();
      expect(service.metrics.kafkaBytes, together ? 'read at once' : 'read one after the other').toBe(produced);
    }
    // Without room to hold the records, each file's read fetches the range's offsets again.
    const small = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 0 });
    await readAll(small, false);
    expect(small.metrics.kafkaBytes).toBe(2 * produced);
  }, 120_000);

  it('records held for a scan\'s partial reads do not push out the chunks it rebuilt: the same column of every row group asked again is served with no Kafka read', async () => {
    const topic = await newTopic(engine, 1, 'granules-heldshare');
    // ~1 KiB values that compress well: the rebuilt `_value` chunks are small, the records held for the other columns are not
    const records: RecordToProduce[] = Array.from({ length: 1_200 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i, pad: 'x'.repeat(1_000) }), timestamp: t0 + i }));
    const { table, files } = await indexedRecords(topic, 'heldshare', records, { row_group_rows: '100', file_window: '2h' });
    const valueChunks = files.flatMap((file) => layoutOf(file).rowGroups.map((group) => ({ file, chunk: group.chunks.find((c) => c.path === '_value')! })));
    expect(valueChunks.length).toBe(12);
    const cacheBytes = 1024 * 1024;
    // the premise: the chunks fit in the budget many times over, the records of the scan do not
    expect(valueChunks.reduce((n, { chunk }) => n + chunk.end - chunk.start, 0)).toBeLessThan(cacheBytes / 4);
    expect(producedBytes(records)).toBeGreaterThan(cacheBytes);
    const counted = countingSource(kafkaSource(engine.kafka));
    const service = new ReaderService(engine.catalog, counted, { cacheBytes });
    const scan = async () => Promise.all(valueChunks.map(async ({ file, chunk }) => Buffer.from(await bodyBytes(service.producer.range(table, file, chunk.start, chunk.end)))));
    const first = await scan();
    expect(counted.log.bytes).toBe(producedBytes(records));
    const reads = counted.log.reads.length;
    const again = await scan();
    expect(again.map((bytes, i) => bytes.equals(first[i]!))).toEqual(valueChunks.map(() => true));
    expect(counted.log.reads.length, 'Kafka reads of the second scan').toBe(reads);
    expect(service.metrics.chunkCacheHits).toBe(valueChunks.length);
  }, 120_000);

  it('a file of a few stragglers in a long range reads only the offsets of its records, not the range: its bytes are the catalog\'s, and pyarrow reads its rows', async () => {
    const topic = await newTopic(engine, 1, 'granules-stragglers');
    // 300 records in one range; offsets 5 to 7 stamped in the hour before (late records, as at an
    // hour's start with jittered clocks): their own bucket's file, over the range's offsets
    const records: RecordToProduce[] = Array.from({ length: 300 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i, pad: 'x'.repeat(200) }), timestamp: t0 + i * 10 - (i >= 5 && i <= 7 ? hour : 0) }));
    const { table, files } = await indexedRecords(topic, 'stragglers', records, { file_window: '2h' });
    expect(files.map((f) => [Number(f.recordCount), f.startOffset, f.endOffset]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([[3, 0n, 300n], [297, 0n, 300n]]);
    const stragglers = files.find((f) => f.recordCount === 3n)!;
    const onTime = files.find((f) => f.recordCount === 297n)!;
    const counted = countingSource(kafkaSource(engine.kafka));
    const service = new ReaderService(engine.catalog, counted, { cacheBytes: 16 * 1024 * 1024 });
    const served = Buffer.from(await bodyBytes(service.producer.range(table, stragglers, 0, Number(stragglers.fileSizeBytes))));
    expect(createHash('sha256').update(served).digest().equals(stragglers.sha256)).toBe(true);
    expect(service.metrics).toMatchObject({ granuleRebuilds: 1, kafkaRecords: 3, kafkaBytes: producedBytes(records.slice(5, 8)) });
    expect(counted.log.reads.map((read) => [read.from, read.until])).toEqual([[5n, 8n]]);
    // the on-time file reads the rest of the range around the held stragglers: each record once
    const onTimeBytes = Buffer.from(await bodyBytes(service.producer.range(table, onTime, 0, Number(onTime.fileSizeBytes))));
    expect(createHash('sha256').update(onTimeBytes).digest().equals(onTime.sha256)).toBe(true);
    expect(counted.log.reads.map((read) => [read.from, read.until])).toEqual([[5n, 8n], [0n, 5n], [8n, 300n]]);
    expect(service.metrics.kafkaRecords).toBe(300);
    const path = join(dir, 'stragglers.parquet');
    writeFileSync(path, served);
    const { stdout } = await run('python3', [fileURLToPath(new URL('./granule_spans.py', import.meta.url)), path]);
    expect((JSON.parse(stdout) as Record<string, unknown>)[path]).toEqual([{ rows: 3, first: '5', last: '7' }]);
  }, 120_000);

  it('a file indexed before granules existed is served whole once, then gets the same granules indexing would have given it', async () => {
    const { table, files } = await indexedTable({ label: 'premigration', format: 'json', settings: {}, values: jsonValue });
    const file = files.reduce((a, b) => (b.recordCount > a.recordCount ? b : a));
    const before = await findGranules(engine.catalog, file.dataFileId);
    expect(before!.granules.length).toBeGreaterThan(1);
    await engine.catalog.query('DELETE FROM offsetlake.granule WHERE data_file_id = $1', [file.dataFileId]);
    await engine.catalog.query('UPDATE offsetlake.data_file SET page_index = NULL WHERE data_file_id = $1', [file.dataFileId]);
    const [old] = (await listFiles(engine.catalog, table.tableId)).filter((f) => f.dataFileId === file.dataFileId);
    expect(old!.hasGranules).toBe(false);
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 0 });
    const layout = layoutOf(old!);
    const chunk = layout.rowGroups[1]!.chunks[0]!;
    await bodyBytes(service.producer.range(table, old!, chunk.start, chunk.end));
    expect(service.metrics).toMatchObject({ rebuilds: 1, granuleRebuilds: 0, partialGranuleRebuilds: 0 });
    expect(await findGranules(engine.catalog, file.dataFileId)).toEqual(before);
    const [now] = (await listFiles(engine.catalog, table.tableId)).filter((f) => f.dataFileId === file.dataFileId);
    expect(now!.hasGranules).toBe(true);
    const again = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 0 });
    await bodyBytes(again.producer.range(table, now!, chunk.start, chunk.end));
    expect(again.metrics).toMatchObject({ rebuilds: 0, partialGranuleRebuilds: 1 });
  }, 120_000);
});
