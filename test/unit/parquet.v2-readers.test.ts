/**
 * v2 files as readers we did not write see them: pyarrow (child process) and hyparquet.
 * The values come back, every top-level column and nested leaf carries its column id as
 * Parquet field_id, `_value` has the JSON logical type, and column chunks of more than
 * one page have a page index (ColumnIndex + OffsetIndex).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { encodeParquet, encoderVersion, kafkaColumnArrays } from '../../src/parquet/index.js';
import { fieldIds, initialSchema } from '../../src/schema/table-schema.js';

const utf8 = new TextEncoder();
// ~1.1 KB values, 3,000 per row group: `_value` spans several 1 MiB pages
const values = Array.from({ length: 6_000 }, (_, i) => JSON.stringify({ i, pad: 'ab'.repeat(500 + (i % 50)), x: i / 3 }));
const records: KafkaRecord[] = values.map((value, i) => ({
  offset: BigInt(i),
  timestamp: 1_700_000_000_000 + i,
  key: utf8.encode(`k${i % 10}`),
  value: utf8.encode(value),
  headers: i % 2 ? [['h', utf8.encode('v')]] : [],
}));
const schema = initialSchema('json');
const file = encodeParquet(schema.columns, kafkaColumnArrays(0, records, 'json'), { rowGroupRows: 3_000, fieldIds: fieldIds(schema) });
const dir = mkdtempSync(join(tmpdir(), 'offsetlake-v2-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe(`${encoderVersion} files, read by others`, () => {
  it('hyparquet: field ids on every column and leaf, page index on multi-page chunks', () => {
    const metadata = parquetMetadata(file.bytes.buffer.slice(file.bytes.byteOffset, file.bytes.byteOffset + file.bytes.byteLength) as ArrayBuffer);
    const ids = Object.fromEntries(metadata.schema.filter((e) => e.field_id !== undefined).map((e) => [e.name, e.field_id]));
    expect(ids).toMatchObject(Object.fromEntries(schema.columns.map((c) => [c.name, c.id])));
    expect(ids.key).toBe(schema.leafIds['_headers.list.element.key']);
    expect(ids.value).toBe(schema.leafIds['_headers.list.element.value']);
    expect(metadata.row_groups).toHaveLength(2);
    for (const group of metadata.row_groups) {
      const value = group.columns.find((c) => c.meta_data?.path_in_schema.join('.') === '_value')!;
      expect(value.column_index_offset).toBeDefined();
      expect(value.offset_index_offset).toBeDefined();
    }
  });

  it('pyarrow: values, field ids, JSON logical type, page index', () => {
    const path = join(dir, 'v2.parquet');
    writeFileSync(path, file.bytes);
    const script = fileURLToPath(new URL('./parquet_v2_pyarrow.py', import.meta.url));
    const seen = JSON.parse(execFileSync('python3', [script, path], { encoding: 'utf8', maxBuffer: 64 << 20 })) as {
      rows: number; field_ids: Record<string, number>; header_leaf_ids: number[]; logical: Record<string, string>;
      page_index: Record<string, [boolean, boolean]>[]; values: string[]; offsets: number[];
    };
    expect(seen.rows).toBe(records.length);
    expect(seen.values).toEqual(values);
    expect(seen.offsets).toEqual(records.map((r) => Number(r.offset)));
    expect(seen.field_ids).toEqual(Object.fromEntries(schema.columns.map((c) => [c.name, c.id])));
    expect(seen.header_leaf_ids).toEqual([schema.leafIds['_headers.list.element.key'], schema.leafIds['_headers.list.element.value']]);
    expect(seen.logical._value).toBe('JSON');
    for (const group of seen.page_index) expect(group._value).toEqual([true, true]);
  });
});
