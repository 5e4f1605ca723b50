/**
 * Files of our own writer (every encoder, v2 to v5, each codec) as engines we did not write see them:
 * pyarrow, DuckDB, polars and DataFusion read the same rows; pyarrow reads back the
 * values we gave, every column and nested leaf carries its column id as field_id,
 * `_value` has the JSON logical type (STRING from v6 on), every column chunk has a page index (floats an
 * offset index only), each chunk's footer statistics bound exactly the values pyarrow
 * reads from it, and DataFusion's page pruning by the page index skips pages without
 * changing its answer.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { encodeParquet, encoders, kafkaColumnArrays, leaves } from '../../src/parquet/index.js';
import { fieldIds, initialSchema } from '../../src/schema/table-schema.js';
import { randomRows, typedColumns } from '../helpers/typed-rows.js';

const utf8 = new TextEncoder();
// ~1.1 KB values, 3,000 per row group: `_value` spans several pages
const values = Array.from({ length: 6_000 }, (_, i) => JSON.stringify({ i, pad: 'ab'.repeat(500 + (i % 50)), x: i / 3 }));
const records: KafkaRecord[] = values.map((value, i) => ({
  offset: BigInt(i),
  timestamp: 1_700_000_000_000 + i,
  key: utf8.encode(`k${i % 10}`),
  value: utf8.encode(value),
  headers: i % 2 ? [['h', utf8.encode('v')]] : [],
}));
const schema = initialSchema('json');
const dir = mkdtempSync(join(tmpdir(), 'offsetlake-v2-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = fileURLToPath(new URL('./parquet_v2_engines.py', import.meta.url));

interface Seen {
  rows: number;
  pyarrow: Record<string, unknown>[];
  disagree: Record<string, number>;
  first_disagreement: Record<string, unknown>;
  field_ids: Record<string, number>;
  logical: Record<string, string>;
  page_index: [string, boolean, boolean][];
  statistics_problems: string[];
  datafusion_count?: number;
  pyarrow_count?: number;
  pages?: [number, number] | null;
}

const hexOf = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
// our own writer's encoders, every version (v3 differs from v2 in its cut bounds alone)
const v2 = Object.keys(encoders).filter((v) => /^offsetlake-parquet@[0-9]+\//.test(v));

const typedRows = randomRows(2_000, 7);
const typedIds = Object.fromEntries(typedColumns.map((c, i) => [c.name, 100 + i]));
const texts = ['é'.repeat(100), '😀'.repeat(40), `a${'\u{10FFFF}'.repeat(30)}`, `${'\u{10FFFF}'.repeat(30)}`, 'z'.repeat(64), `${'\uFFFF'.repeat(40)}`];
const textValues = texts.flatMap((t) => [t, Array.from(t).slice(0, 3).join('')]);

/** Each encoder's three files, as the tests below read them. */
function filesOf(version: string): { name: string; bytes: Uint8Array; filter?: [string, number, number] }[] {
  return [
    { name: 'json', bytes: encodeParquet(schema.columns, kafkaColumnArrays(0, records, 'json'), { rowGroupRows: 3_000, fieldIds: fieldIds(schema), encoderVersion: version }).bytes, filter: ['_offset', 4_200, 4_210] },
    { name: 'typed', bytes: encodeParquet(typedColumns, typedRows, { rowGroupRows: 700, fieldIds: typedIds, encoderVersion: version }).bytes },
    { name: 'texts', bytes: encodeParquet([{ name: 't', type: { kind: 'string' as const }, nullable: false }], { t: textValues }, { rowGroupRows: 2, encoderVersion: version }).bytes },
  ];
}

const folderOf = (version: string): string => join(dir, version.replaceAll('/', '_'));

// Every file of every encoder written first, then read by one Python process (its engines'
// imports cost more than a file's read); each test below checks what it saw of its file.
beforeAll(() => {
  const jobs = v2.flatMap((version) => {
    mkdirSync(folderOf(version));
    return filesOf(version).map(({ name, bytes, filter }) => {
      const path = join(folderOf(version), `${name}.parquet`);
      writeFileSync(path, bytes);
      return { path, filter: filter ?? null };
    });
  });
  execFileSync('python3', [script], { input: JSON.stringify(jobs), stdio: ['pipe', 'inherit', 'inherit'] });
}, 600_000);

function read(version: string, name: string): Seen {
  return JSON.parse(readFileSync(join(folderOf(version), `${name}.parquet.seen.json`), 'utf8')) as Seen;
}

describe.each(v2)('%s files, read by engines we did not write', (version) => {
  it('json table: all four engines agree, values and offsets as given, field ids, JSON type, page index, exact statistics, page pruning', () => {
    const seen = read(version, 'json');
    expect(seen.rows).toBe(records.length);
    expect(seen.disagree, JSON.stringify(seen.first_disagreement).slice(0, 2000)).toEqual({ duckdb: 0, polars: 0, datafusion: 0 });
    expect(seen.pyarrow.map((r) => r._value)).toEqual(values.map((v) => hexOf(utf8.encode(v))));
    expect(seen.pyarrow.map((r) => r._offset)).toEqual(records.map((r) => String(r.offset)));
    expect(seen.field_ids).toEqual(Object.fromEntries(schema.columns.map((c) => [c.name, c.id])));
    // v6 on stores JSON text as Iceberg's `string` (Parquet STRING); v2 to v5 annotate it JSON
    expect(seen.logical._value).toBe(Number(/@(\d+)\//.exec(version)![1]) >= 6 ? 'String' : 'JSON');
    expect(seen.page_index.every(([, column, offset]) => column && offset), JSON.stringify(seen.page_index)).toBe(true);
    expect(seen.statistics_problems).toEqual([]);
    expect(seen.datafusion_count).toBe(11);
    expect(seen.pyarrow_count).toBe(11);
    // 1,000-row pages: of the 3 pages of the matching row group, one is read
    expect(seen.pages).toEqual([3, 1]);
  });

  it('every column kind, nested and awkward values: all four engines agree with the values given', () => {
    const seen = read(version, 'typed');
    expect(seen.rows).toBe(typedRows.length);
    expect(seen.disagree, JSON.stringify(seen.first_disagreement).slice(0, 2000)).toEqual({ duckdb: 0, polars: 0, datafusion: 0 });
    expect(seen.field_ids).toEqual(typedIds);
    expect(seen.statistics_problems).toEqual([]);
    const floating = new Set(leaves(typedColumns).filter((l) => l.type.kind === 'float' || l.type.kind === 'double').map((l) => l.path.join('.')));
    for (const [path, column, offset] of seen.page_index) {
      expect([path, column, offset]).toEqual([path, !floating.has(path), true]);
    }
    // a sample of values as given, in the same text form the script uses
    typedRows.forEach((row, i) => {
      const got = seen.pyarrow[i]!;
      expect(got.i64, `row ${i}`).toBe(row.i64 === null ? null : String(row.i64));
      expect(got.text, `row ${i}`).toBe(row.text === null ? null : hexOf(utf8.encode(row.text as string)));
      expect(got.bytes, `row ${i}`).toBe(row.bytes === null ? null : hexOf(row.bytes as Uint8Array));
      expect(got.at, `row ${i}`).toBe(String(row.at));
      expect(got.nums, `row ${i}`).toEqual(row.nums === null ? null : (row.nums as (bigint | null)[]).map((n) => (n === null ? null : String(n))));
    });
  });

  it('long text bounds are cut on a character and still bound every value (pyarrow decodes them as text)', () => {
    const seen = read(version, 'texts');
    expect(seen.statistics_problems).toEqual([]);
    expect(seen.disagree).toEqual({ duckdb: 0, polars: 0, datafusion: 0 });
    expect(seen.pyarrow.map((r) => r.t)).toEqual(textValues.map((t) => hexOf(utf8.encode(t))));
  });
});
