/**
 * Issue 25: byte-array values longer than the 64-byte bound limit that share their first
 * 64 bytes, given as Node Buffers (what Kafka hands over), must leave the catalog's
 * statistics equal to the file's values. pyarrow reads every value back from the bytes
 * and Python takes min and max; the encoder's own statistics are what the catalog stores.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { buildDataFile, type Column, encoders, kafkaColumnArrays, kafkaTableColumns } from '../../src/parquet/index.js';
import { seededRandom } from '../helpers/random.js';

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'offsetlake-long-bounds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Bounds = Record<string, { min: string | null; max: string | null; nulls: number }>;

function pyarrowBounds(paths: string[]): Record<string, Bounds> {
  return JSON.parse(execFileSync('python3', [join(here, 'parquet_column_bounds.py'), ...paths], { encoding: 'utf8', maxBuffer: 256 << 20 })) as Record<string, Bounds>;
}

/** Bytes that start with `prefix` and go on for 0–40 bytes, 0xFF and 0xFE often (where a raised bound carries). */
function longBytes(random: () => number, prefix: Uint8Array): Buffer {
  const tail = Array.from({ length: Math.floor(random() * 41) }, () => (random() < 0.3 ? 0xff : random() < 0.2 ? 0xfe : Math.floor(random() * 256)));
  return Buffer.concat([prefix, Buffer.from(tail)]);
}

/** UTF-8 text of at least 64 bytes sharing `prefix`, with multi-byte characters that straddle byte 64. */
function longText(random: () => number, prefix: string): string {
  const pieces = ['a', 'z', 'é', '€', '😀', '\u{10FFFF}', '\uFFFF', '"'];
  let out = prefix;
  for (let n = Math.floor(random() * 12); n > 0; n--) out += pieces[Math.floor(random() * pieces.length)];
  return out;
}

const typed: Column[] = [
  { name: 'blob', type: { kind: 'binary' }, nullable: true },
  { name: 'text', type: { kind: 'string' }, nullable: true },
  { name: 'doc', type: { kind: 'json' }, nullable: true },
  { name: 'blobs', type: { kind: 'list', element: { type: { kind: 'binary' }, nullable: true } }, nullable: true },
];

const newest = Object.keys(encoders).filter((v) => /^offsetlake-parquet@[3-9]\//.test(v));

describe.each(newest)('%s: statistics of long byte arrays with a shared 64-byte prefix', (encoderVersion) => {
  it('equal the min and max pyarrow reads from the file, for 40 seeded files of a raw table and of typed columns', () => {
    const expected: { path: string; statistics: Map<string, { min: string | null; max: string | null; nulls: number }> }[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const random = seededRandom(seed);
      const prefixBytes = Buffer.from(Array.from({ length: 64 }, () => (random() < 0.5 ? 0xff : Math.floor(random() * 256))));
      const prefixText = 'p'.repeat(60 + Math.floor(random() * 4)) + Array.from('é😀').slice(0, 1 + Math.floor(random() * 2)).join('');
      const rows = 1 + Math.floor(random() * 1_500);
      const nullable = <T>(make: () => T): T | null => (random() < 0.1 ? null : make());
      const records: KafkaRecord[] = Array.from({ length: rows }, (_, i) => ({
        offset: BigInt(i),
        timestamp: 1_700_000_000_000 + i,
        key: nullable(() => longBytes(random, prefixBytes)),
        value: nullable(() => longBytes(random, prefixBytes)),
        headers: [['h', nullable(() => longBytes(random, prefixBytes))]],
      }));
      const raw = buildDataFile(kafkaTableColumns('raw'), kafkaColumnArrays(0, records, 'raw'), { rowGroupRows: 1 + Math.floor(random() * 600), encoderVersion });
      const typedRows = Array.from({ length: rows }, () => ({
        blob: nullable(() => longBytes(random, prefixBytes)),
        text: nullable(() => Buffer.from(longText(random, prefixText))),
        // JSON text as bytes, as a json table's `_value` comes from Kafka
        doc: nullable(() => Buffer.from(JSON.stringify({ s: longText(random, prefixText) }))),
        blobs: nullable(() => Array.from({ length: Math.floor(random() * 3) }, () => nullable(() => longBytes(random, prefixBytes)))),
      }));
      const typedFile = buildDataFile(typed, typedRows, { rowGroupRows: 1 + Math.floor(random() * 600), encoderVersion });
      for (const [name, built] of [['raw', raw], ['typed', typedFile]] as const) {
        const path = join(dir, `${encoderVersion.replace(/\W/g, '_')}-${seed}-${name}.parquet`);
        writeFileSync(path, built.file.bytes);
        expected.push({ path, statistics: new Map(built.statistics.map((s) => [s.column, { min: s.min, max: s.max, nulls: s.nullCount }])) });
      }
    }
    const read = pyarrowBounds(expected.map((e) => e.path));
    let compared = 0;
    for (const { path, statistics } of expected) {
      const columns = Object.entries(read[path]!).filter(([column]) => column !== '_headers.list.element.key' && column !== '_error');
      expect(columns.length, path).toBeGreaterThan(0);
      for (const [column, bounds] of columns) {
        const ours = statistics.get(column)!;
        // a nested leaf's null count also counts null and empty lists, which flattening drops
        const nested = column.includes('.');
        expect({ ...ours, nulls: nested ? 0 : ours.nulls }, `${path} ${column}`).toEqual({ ...bounds, nulls: nested ? 0 : bounds.nulls });
        compared++;
      }
    }
    expect(compared).toBeGreaterThanOrEqual(40 * 7);
  });
});
