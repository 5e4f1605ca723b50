import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { describe, expect, it } from 'vitest';
import { readAsText } from '../helpers/table-audit.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { type Column, ENCODER_METADATA_KEY, encodeParquet, encoders, footerMetadata, kafkaColumnArrays, kafkaTableColumns, parquetFooter, prepare, valueAt, encoderOf } from '../../src/parquet/index.js';
import { defaultSettings } from '../../src/table/settings.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const utf8 = new TextEncoder();

function records(n: number): KafkaRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    offset: 2n ** 53n + BigInt(i),
    timestamp: 1_700_000_000_000 + i * 7,
    key: i % 5 === 0 ? null : utf8.encode(`key-${i % 13}`),
    value: i % 11 === 3 ? null : utf8.encode(i % 9 === 4 ? `{"broken": ${i}` : JSON.stringify({ i, name: `näme 😀 ${i}`, tags: ['a', i % 3] })),
    headers: i % 2 ? [['trace', utf8.encode(`t${i}`)], ['empty', null]] : [],
  }));
}

const columns = kafkaTableColumns('json');
const data = kafkaColumnArrays(3, records(257), 'json');
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('encodeParquet', () => {
  it('gives the same bytes for the same rows, however they are handed over', () => {
    const a = encodeParquet(columns, data, { rowGroupRows: 50 });
    const b = encodeParquet(columns, data, { rowGroupRows: 50 });
    expect(hex(b.sha256)).toBe(hex(a.sha256));
    expect(Buffer.compare(a.bytes, b.bytes)).toBe(0);
    // as row objects, and as prepared data: the same file
    const rows = Array.from({ length: 257 }, (_, i) => Object.fromEntries(columns.map((c) => [c.name, valueAt(data[c.name]!, i)])));
    expect(hex(encodeParquet(columns, rows, { rowGroupRows: 50 }).sha256)).toBe(hex(a.sha256));
    expect(hex(encodeParquet(columns, prepare(columns, data), { rowGroupRows: 50 }).sha256)).toBe(hex(a.sha256));
    expect(hex(a.sha256)).toBe(createHash('sha256').update(a.bytes).digest('hex'));
    expect(a).toMatchObject({ byteLength: a.bytes.byteLength, rowCount: 257, encoderVersion });
  });

  it('gives the same bytes in another process', () => {
    const payload = JSON.stringify(records(300), (_, v) =>
      typeof v === 'bigint' ? { $bigint: v.toString() } : v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString('base64') } : v,
    );
    const script = `
      import { encodeParquet, kafkaColumnArrays, kafkaTableColumns } from './src/parquet/index.ts';
      let input = '';
      for await (const chunk of process.stdin) input += chunk;
      const recs = JSON.parse(input, (_, v) => v && v.$bigint ? BigInt(v.$bigint) : v && v.$bytes !== undefined ? new Uint8Array(Buffer.from(v.$bytes, 'base64')) : v);
      const f = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(1, recs, 'json'), { rowGroupRows: 64 });
      process.stdout.write(Buffer.from(f.sha256).toString('hex'));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { input: payload, encoding: 'utf8', cwd: process.cwd() });
    expect(child.stderr).toBe('');
    const here = encodeParquet(columns, kafkaColumnArrays(1, records(300), 'json'), { rowGroupRows: 64 });
    expect(child.stdout).toBe(hex(here.sha256));
  });

  it('returns exactly the file\'s trailing footer', () => {
    const f = encodeParquet(columns, data, { rowGroupRows: 100 });
    expect(hex(f.footer)).toBe(hex(f.bytes.subarray(f.byteLength - f.footer.byteLength)));
    expect(hex(f.footer.subarray(-4))).toBe(hex(utf8.encode('PAR1')));
    expect(footerMetadata(f.footer).byteLength).toBe(f.footer.byteLength - 8);
    expect(hex(parquetFooter(f.bytes))).toBe(hex(f.footer));
    // the footer alone is enough to read the file's metadata
    const metadata = parquetMetadata(f.footer);
    expect(metadata.num_rows).toBe(257n);
    expect(metadata.created_by).toBe(`offsetlake (${encoderVersion})`);
    expect(metadata.key_value_metadata).toContainEqual({ key: ENCODER_METADATA_KEY, value: encoderVersion });
  });

  it.each([
    [1, 257],
    [50, 6],
    [256, 2],
    [257, 1],
    [10_000, 1],
  ])('cuts row groups of exactly %i rows', (rowGroupRows, groups) => {
    const f = encodeParquet(columns, data, { rowGroupRows });
    const sizes = parquetMetadata(f.footer).row_groups.map((g) => Number(g.num_rows));
    expect(sizes).toHaveLength(groups);
    expect(sizes.slice(0, -1).every((n) => n === rowGroupRows)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(257);
  });

  it('reads back as the rows it was given', async () => {
    const f = encodeParquet(columns, data, { rowGroupRows: 100 });
    const rows = await parquetReadObjects({ ...readAsText, file: f.bytes.slice().buffer });
    const recs = records(257);
    rows.forEach((row, i) => {
      const r = recs[i]!;
      expect(row._partition).toBe(3);
      expect(row._offset).toBe(r.offset);
      expect((row._timestamp as Date).getTime()).toBe(r.timestamp);
      expect(row._key === null ? null : hex(row._key)).toBe(r.key === null ? null : hex(r.key));
      expect(row._headers.map((h: { key: string; value: Uint8Array | null }) => [h.key, h.value && hex(h.value)])).toEqual(
        r.headers.map(([k, v]) => [k, v && hex(v)]),
      );
      const text = r.value && new TextDecoder().decode(r.value);
      const valid = text !== null && (() => { try { JSON.parse(text); return true; } catch { return false; } })();
      expect(row._value).toBe(valid ? text : null);
      expect(row._error === null).toBe(valid || r.value === null);
    });
  });

  it('keeps -0 and +0 apart, also where a dictionary would merge them', async () => {
    const cols: Column[] = [
      { name: 'd', type: { kind: 'double' }, nullable: false },
      { name: 's', type: { kind: 'struct', fields: [{ name: 'f', type: { kind: 'float' }, nullable: false }] }, nullable: false },
    ];
    const zeros = Array.from({ length: 40 }, (_, i) => (i % 2 ? 0 : -0));
    const f = encodeParquet(cols, { d: zeros, s: zeros.map((f) => ({ f })) }, { rowGroupRows: 100 });
    const rows = await parquetReadObjects({ compressors, file: f.bytes.slice().buffer });
    expect(rows.map((r) => Object.is(r.d, -0))).toEqual(zeros.map((z) => Object.is(z, -0)));
    expect(rows.map((r) => Object.is(r.s.f, -0))).toEqual(zeros.map((z) => Object.is(z, -0)));
  });

  it('records its encoder and can be asked for it by name', () => {
    expect(encoders[encoderVersion]?.version).toBe(encoderVersion);
    expect(() => encodeParquet(columns, data, { rowGroupRows: 10, encoderVersion: 'nope@0/v0' })).toThrow(/unknown Parquet encoder "nope@0\/v0"/);
    const a = encodeParquet(columns, data, { rowGroupRows: 10, encoderVersion, keyValueMetadata: { b: '2', a: '1' } });
    const b = encodeParquet(columns, data, { rowGroupRows: 10, keyValueMetadata: { a: '1', b: '2' } });
    expect(hex(a.sha256)).toBe(hex(b.sha256));
    expect(parquetMetadata(a.footer).key_value_metadata!.map((kv) => kv.key)).toEqual([ENCODER_METADATA_KEY, 'a', 'b']);
  });

  it('writes a file without rows', async () => {
    const empty = kafkaColumnArrays(0, [], 'raw');
    const f = encodeParquet(kafkaTableColumns('raw'), empty, { rowGroupRows: 10 });
    expect(parquetMetadata(f.footer).num_rows).toBe(0n);
    expect(await parquetReadObjects({ compressors, file: f.bytes.slice().buffer })).toEqual([]);
  });

  it('says which value is wrong', () => {
    const cols: Column[] = [{ name: 'n', type: { kind: 'int64' }, nullable: false }];
    expect(() => encodeParquet(cols, { n: [1n, null] }, { rowGroupRows: 10 })).toThrow('n (row 1) must be a value (the column is not nullable), got null');
    expect(() => encodeParquet(cols, { n: [1.5] }, { rowGroupRows: 10 })).toThrow(/n \(row 0\) must be a 64-bit integer/);
    expect(() => encodeParquet(cols, {}, { rowGroupRows: 10 })).toThrow('no values given for column n');
    expect(() => encodeParquet(cols, { n: [1n] }, { rowGroupRows: 0 })).toThrow(/rowGroupRows/);
    const dec: Column[] = [{ name: 'd', type: { kind: 'decimal', precision: 3, scale: 1 }, nullable: false }];
    expect(() => encodeParquet(dec, { d: [1000n] }, { rowGroupRows: 10 })).toThrow(/at most 3 digits/);
  });
});
