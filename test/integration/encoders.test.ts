/**
 * One catalog, files of two encoder versions: a table indexed first with v1, then (the
 * default switched) with v2. Every file is rebuilt from Kafka with the version it names
 * and comes back byte for byte; and a table of each page compression.
 */
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { produce } from '../../src/kafka/produce.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { encoderForCompression, encoders, encoderOf } from '../../src/parquet/index.js';
import { checkTable } from '../helpers/verify.js';
import { rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import type { Engine } from '../../src/runtime/engine.js';
import { compressions, defaultSettings } from '../../src/table/settings.js';
import { newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const V1 = 'hyparquet-writer@0.17.0/v1';
let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('encoders');
});
afterAll(async () => {
  await engine?.close();
});

describe('a catalog holding v1 and v2 files', () => {
  it('rebuilds each with its own encoder, byte for byte', async () => {
    expect(encoders[V1]).toBeDefined();
    expect(encoderVersion).not.toBe(V1);
    const topic = await newTopic(engine, 1, 'encoders');
    const created = await testTable(engine, topic, { file_bytes: '20KiB' });
    const t0 = Date.UTC(2026, 0, 1);
    const batch = (from: number) =>
      Array.from({ length: 60 }, (_, i) => ({ key: `k${i % 4}`, value: JSON.stringify({ i: from + i, pad: 'x'.repeat(700) }), timestamp: t0 + from + i, partition: 0 }));
    const indexWith = async (owner: string, encoder?: string) => {
      const runtime = testRuntime(engine, owner, encoder ? { build: rangeBuilder(engine.catalog, undefined, encoder) } : {});
      const indexer = await indexerFor(runtime, await findTable(engine.catalog, created.name), 0);
      await indexer.advance();
      await indexer.flush();
      await indexer.release();
    };
    await produce(engine.kafka, topic, batch(0));
    await indexWith(`v1-${topic}`, V1);
    await produce(engine.kafka, topic, batch(60));
    await indexWith(`v2-${topic}`);

    const files = await listFiles(engine.catalog, created.tableId);
    expect(new Set(files.map((f) => f.encoderVersion))).toEqual(new Set([V1, encoderVersion]));
    expect(files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(120);
    const table = await findTable(engine.catalog, created.name);
    for (const file of files) {
      const rebuilt = await rebuildFile(kafkaSource(engine.kafka), table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion));
      expect(rebuilt.bytes.byteLength).toBe(Number(file.fileSizeBytes));
      expect(Buffer.from(rebuilt.sha256).equals(file.sha256)).toBe(true);
    }
  });

  it.each(compressions)('a table created with compression %s builds its files with that encoder; they rebuild byte for byte, with statistics equal to what hyparquet (its own decompressors) reads back', async (compression) => {
    const topic = await newTopic(engine, 1, compression);
    const created = await testTable(engine, topic, { file_bytes: '20KiB', compression });
    await produce(engine.kafka, topic, Array.from({ length: 80 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'y'.repeat(500) }) })));
    const runtime = testRuntime(engine, `${compression}-${topic}`);
    const table = await findTable(engine.catalog, created.name);
    const indexer = await indexerFor(runtime, table, 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    const files = await listFiles(engine.catalog, created.tableId);
    expect(new Set(files.map((f) => f.encoderVersion))).toEqual(new Set([encoderForCompression[compression]]));
    // the codec each file's column chunks name, as hyparquet reads the footer
    const codec = { zstd: 'ZSTD', snappy: 'SNAPPY', lz4_raw: 'LZ4_RAW', none: 'UNCOMPRESSED' }[compression];
    for (const file of files) {
      const metadata = parquetMetadata(file.footer.buffer.slice(file.footer.byteOffset, file.footer.byteOffset + file.footer.byteLength) as ArrayBuffer);
      expect(new Set(metadata.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data?.codec)))).toEqual(new Set([codec]));
    }
    await checkTable(engine, table);
  });
});
