/**
 * Encoder v5 (issue 47) stores a UTC millisecond timestamp (`_timestamp`, an Avro
 * timestamp-millis field) as TIMESTAMP(MICROS, true), Iceberg's `timestamptz`: pyarrow reads
 * the same instants as timestamp[us, tz=UTC], the footer's bounds are micros, while the
 * catalog's statistics stay in the column's unit (milliseconds) for the Iceberg bounds and
 * the DuckLake face, as for every older file. v4's files keep milliseconds. Encoder v6 does
 * the same for a local millisecond timestamp (Avro local-timestamp-millis): TIMESTAMP(MICROS,
 * false), Iceberg's `timestamp`; v5's files keep it in milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { type Column, encodeParquet, encoderForCompression, kafkaColumnArrays, kafkaTableColumns, encoderOf } from '../../src/parquet/index.js';
import { defaultSettings } from '../../src/table/settings.js';
import { rowGroupBounds } from '../../src/query/prune.js';
import type { CatalogFile } from '../../src/catalog/file-reads.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const dir = mkdtempSync(join(tmpdir(), 'offsetlake-timestamps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = fileURLToPath(new URL('./parquet_timestamps.py', import.meta.url));

interface Seen {
  types: Record<string, string>;
  values: Record<string, unknown[]>;
  stats: Record<string, [string, string, string]>[];
}

function read(bytes: Uint8Array, columns: string[]): Seen {
  const path = join(dir, 'file.parquet');
  writeFileSync(path, bytes);
  return JSON.parse(execFileSync('python3', [script, path, columns.join(',')], { encoding: 'utf8', maxBuffer: 64 << 20 })) as Seen;
}

const V4 = 'offsetlake-parquet@4/lz4-napi@2.10.0';
const V5 = encoderVersion.replace('offsetlake-parquet@6/', 'offsetlake-parquet@5/');
// around now, before 1970, and past 2255 (where millis × 1000 is no longer a safe integer)
const stamps = [1_700_000_000_123, 0, -1, -86_400_000_001, 9_007_199_254_741, 1_700_000_003_600, 253_402_300_799_999];
const records: KafkaRecord[] = Array.from({ length: 300 }, (_, i) => ({
  offset: BigInt(i), timestamp: stamps[i % stamps.length]! + i, key: null, value: null, headers: [],
}));

describe(`${encoderVersion}: UTC millisecond timestamps as micros`, () => {
  it('`_timestamp` is timestamp[us, tz=UTC] for pyarrow, the same instants; footer bounds in micros; catalog statistics and query pruning in millis', () => {
    const file = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(0, records, 'json'), { rowGroupRows: 100 });
    const seen = read(file.bytes, ['_timestamp']);
    expect(seen.types._timestamp).toBe('timestamp[us, tz=UTC]');
    expect(seen.values._timestamp).toEqual(records.map((r) => String(BigInt(r.timestamp) * 1000n)));
    for (const [g, group] of seen.stats.entries()) {
      const slice = records.slice(g * 100, g * 100 + 100).map((r) => BigInt(r.timestamp));
      const min = slice.reduce((a, b) => (b < a ? b : a));
      const max = slice.reduce((a, b) => (b > a ? b : a));
      expect(group._timestamp).toEqual(['INT64', String(min * 1000n), String(max * 1000n)]);
      expect(rowGroupBounds({ partition: 0 } as CatalogFile, parquetMetadata(file.bytes.buffer.slice(file.bytes.byteOffset, file.bytes.byteOffset + file.bytes.byteLength) as ArrayBuffer), g).get('_timestamp')).toEqual({ min, max });
    }
    const statistics = file.statistics!.find((s) => s.column === '_timestamp')!;
    const all = records.map((r) => r.timestamp);
    expect([statistics.min, statistics.max]).toEqual([String(Math.min(...all)), String(Math.max(...all))]);
  });

  it('a nested UTC millisecond field too, a local millisecond field in micros (v6 on); micro timestamps as they were', () => {
    const columns: Column[] = [
      { name: 'at', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: true },
      { name: 'local', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: true },
      { name: 'us', type: { kind: 'timestamp', unit: 'micros', utc: true }, nullable: true },
      {
        name: 'events', nullable: true,
        type: { kind: 'list', element: { nullable: true, type: { kind: 'struct', fields: [{ name: 'when', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: true }] } } },
      },
    ];
    const rows = Array.from({ length: 40 }, (_, i) => ({
      at: i % 5 === 0 ? null : BigInt(stamps[i % stamps.length]!),
      local: BigInt(i),
      us: BigInt(i) * 7n,
      events: i % 3 === 0 ? null : [{ when: BigInt(stamps[(i + 1) % stamps.length]!) }, null, { when: null }],
    }));
    const seen = read(encodeParquet(columns, rows, { rowGroupRows: 40 }).bytes, ['at', 'local', 'us', 'events']);
    expect(seen.types).toEqual({ at: 'timestamp[us, tz=UTC]', local: 'timestamp[us]', us: 'timestamp[us, tz=UTC]', events: 'list<element: struct<when: timestamp[us, tz=UTC]>>' });
    expect(seen.values.at).toEqual(rows.map((r) => (r.at === null ? null : String(r.at * 1000n))));
    expect(seen.values.local).toEqual(rows.map((r) => String(r.local * 1000n)));
    // v5 kept the local one in milliseconds
    const v5 = read(encodeParquet(columns, rows, { rowGroupRows: 40, encoderVersion: V5 }).bytes, ['local']);
    expect(v5.types.local).toBe('timestamp[ms]');
    expect(v5.values.local).toEqual(rows.map((r) => String(r.local)));
    expect(seen.values.us).toEqual(rows.map((r) => String(r.us)));
    expect(seen.values.events).toEqual(rows.map((r) => (r.events === null ? null : r.events.map((e) => (e === null ? null : { when: e.when === null ? null : String(e.when * 1000n) })))));
  });

  it.each(Object.entries(encoderForCompression))('a %s file holding a millisecond timestamp with no int64 of micros (past ±292,277 years) is built by its v4 twin (v6 hands it to v5, v5 to v4) and names it', (_, version) => {
    const twin = version.replace('offsetlake-parquet@6/', 'offsetlake-parquet@4/');
    const far = [...records.slice(0, 10), { ...records[10]!, timestamp: 9_223_372_036_854_776 }];
    const file = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(0, far, 'json'), { rowGroupRows: 100, encoderVersion: version });
    const v4 = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(0, far, 'json'), { rowGroupRows: 100, encoderVersion: twin });
    expect(file.encoderVersion).toBe(twin);
    expect(Buffer.from(file.sha256).toString('hex')).toBe(Buffer.from(v4.sha256).toString('hex'));
    expect(read(file.bytes, ['_timestamp']).types._timestamp).toBe('timestamp[ms, tz=UTC]');
  });

  it('a file holding a local millisecond timestamp with no int64 of micros is built by v5 (which keeps local ones in milliseconds) and names it', () => {
    const columns: Column[] = [
      { name: 'at', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: false },
      { name: 'local', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: true },
    ];
    const rows = [{ at: 1_700_000_000_000n, local: 9_223_372_036_854_776n }, { at: 1n, local: null }];
    const file = encodeParquet(columns, rows, { rowGroupRows: 10 });
    const v5 = encodeParquet(columns, rows, { rowGroupRows: 10, encoderVersion: V5 });
    expect(file.encoderVersion).toBe(V5);
    expect(Buffer.from(file.sha256).toString('hex')).toBe(Buffer.from(v5.sha256).toString('hex'));
    expect(read(file.bytes, ['at', 'local']).types).toEqual({ at: 'timestamp[us, tz=UTC]', local: 'timestamp[ms]' });
  });

  it('a v4 file keeps milliseconds', () => {
    const file = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(0, records, 'json'), { rowGroupRows: 100, encoderVersion: V4 });
    const seen = read(file.bytes, ['_timestamp']);
    expect(seen.types._timestamp).toBe('timestamp[ms, tz=UTC]');
    expect(seen.values._timestamp).toEqual(records.map((r) => String(r.timestamp)));
  });
});
