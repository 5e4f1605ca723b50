import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { describe, expect, it } from 'vitest';
import { type Column, type ColumnStatistics, buildDataFile, columnStatistics, decimalText, encoderForCompression, encoders, leaves, type ScalarType } from '../../src/parquet/index.js';
import { wellFormed } from '../helpers/strings.js';
import { randomRows, typedColumns } from '../helpers/typed-rows.js';

const columns = typedColumns;

// --- a naive model: sort everything, take the ends ---------------------------------


const codePoints = (s: string): number[] => Array.from(wellFormed(s), (c) => c.codePointAt(0)!);
function lexical(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

function naiveOrder(type: ScalarType): (a: any, b: any) => number {
  switch (type.kind) {
    case 'string':
    case 'json':
      return (a: string, b: string) => lexical(codePoints(a), codePoints(b));
    case 'binary':
      return (a: Uint8Array, b: Uint8Array) => lexical([...a], [...b]);
    case 'float':
    case 'double':
      return (a: number, b: number) => (a === b ? Number(Object.is(b, -0)) - Number(Object.is(a, -0)) : a < b ? -1 : 1);
    default:
      return (a: any, b: any) => (a < b ? -1 : a > b ? 1 : 0);
  }
}

function naiveText(type: ScalarType, v: any): string {
  if (type.kind === 'binary') return hex(v);
  if (type.kind === 'string') return wellFormed(v);
  if (type.kind === 'decimal') {
    const s = (v < 0n ? -v : v).toString().padStart(type.scale + 1, '0');
    return `${v < 0n ? '-' : ''}${s.slice(0, s.length - type.scale)}.${s.slice(s.length - type.scale)}`;
  }
  if (typeof v === 'number' && v === 0) return 1 / v < 0 ? '-0' : '0';
  return String(v);
}

/** Leaf slots the Dremel way, written independently of statistics.ts. */
function slots(type: Column['type'], value: any, out: any[][], at: number): void {
  if (type.kind === 'list') {
    if (value === null || value.length === 0) slots(type.element.type, null, out, at);
    else for (const v of value) slots(type.element.type, v, out, at);
  } else if (type.kind === 'struct') {
    let i = at;
    for (const f of type.fields) {
      slots(f.type, value === null ? null : value[f.name], out, i);
      i += leaves([f]).length;
    }
  } else out[at]!.push(value);
}

function naiveStatistics(cols: Column[], rows: Record<string, unknown>[]): ColumnStatistics[] {
  const ls = leaves(cols);
  const values: any[][] = ls.map(() => []);
  let at = 0;
  for (const c of cols) {
    for (const r of rows) slots(c.type, r[c.name] ?? null, values, at);
    at += leaves([c]).length;
  }
  return ls.map((leaf, i) => {
    const type = leaf.type;
    const all = values[i]!.map((v) => (type.kind === 'float' && v !== null ? Math.fround(v) : v));
    const present = all.filter((v) => v !== null && !Number.isNaN(v)).sort(naiveOrder(type));
    return {
      column: leaf.path.join('.'),
      valueCount: all.length,
      nullCount: all.filter((v) => v === null).length,
      nanCount: all.filter((v) => typeof v === 'number' && Number.isNaN(v)).length,
      min: present.length ? naiveText(type, present[0]) : null,
      max: present.length ? naiveText(type, present[present.length - 1]) : null,
    };
  });
}

// --- tests ------------------------------------------------------------------------

describe('columnStatistics', () => {
  it.each([1, 2, 3, 4, 5])('agrees with a naive sort on random rows (seed %i)', (seed) => {
    const rows = randomRows(400, seed);
    expect(columnStatistics(columns, rows)).toEqual(naiveStatistics(columns, rows));
  });

  it('orders strings by UTF-8 bytes, not UTF-16 code units', () => {
    // '😀' is a surrogate pair (0xD83D…) and sorts before U+FFFF in UTF-16, after it in UTF-8
    const [s] = columnStatistics([{ name: 's', type: { kind: 'string' }, nullable: false }], [{ s: '\uffff' }, { s: '😀' }, { s: 'z' }]);
    expect(s).toMatchObject({ min: 'z', max: '😀' });
  });

  it('keeps int64 beyond 2^53 exact, and binary as hex', () => {
    const cols: Column[] = [
      { name: 'n', type: { kind: 'int64' }, nullable: false },
      { name: 'b', type: { kind: 'binary' }, nullable: false },
    ];
    const stats = columnStatistics(cols, { n: [2n ** 53n + 1n, 2n ** 53n], b: [new Uint8Array([0xff]), new Uint8Array([0x00, 0xff])] });
    expect(stats[0]).toMatchObject({ min: '9007199254740992', max: '9007199254740993' });
    expect(stats[1]).toMatchObject({ min: '00ff', max: 'ff' });
  });

  it('handles NaN, -0 and +0 deliberately', () => {
    const d: Column[] = [{ name: 'd', type: { kind: 'double' }, nullable: true }];
    const one = (values: (number | null)[]) => columnStatistics(d, { d: values })[0]!;
    expect(one([NaN, null, NaN])).toEqual({ column: 'd', valueCount: 3, nullCount: 1, nanCount: 2, min: null, max: null });
    expect(one([0, -0])).toMatchObject({ min: '-0', max: '0' });
    expect(one([-0])).toMatchObject({ min: '-0', max: '-0' });
    expect(one([0, NaN, -Infinity])).toMatchObject({ min: '-Infinity', max: '0', nanCount: 1 });
    const [f] = columnStatistics([{ name: 'f', type: { kind: 'float' }, nullable: false }], { f: [0.1] });
    expect(f).toMatchObject({ min: '0.10000000149011612' });
  });

  it('writes decimals as exact decimal text', () => {
    expect(decimalText(-5n, 2)).toBe('-0.05');
    expect(decimalText(12345n, 0)).toBe('12345');
    expect(decimalText(10n ** 30n, 4)).toBe('100000000000000000000000000.0000');
  });
});

describe('statistics of a built file, taken in the writer\'s pass where the encoder can', () => {
  // decimals of each physical form besides typedColumns' INT64 one: INT32 (precision <= 9) and FIXED_LEN_BYTE_ARRAY (> 18)
  const withDecimals: Column[] = [
    ...columns,
    { name: 'cents', type: { kind: 'decimal', precision: 9, scale: 2 }, nullable: true },
    { name: 'huge', type: { kind: 'decimal', precision: 30, scale: 3 }, nullable: true },
  ];
  const decimalRows = (n: number, seed: number): Record<string, unknown>[] => {
    let state = BigInt(seed) * 6364136223846793005n + 1442695040888963407n;
    const next = (): bigint => (state = (state * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n);
    const within = (limit: bigint): bigint => {
      const v = next() % limit;
      return next() % 2n === 0n ? v : -v;
    };
    const extremes = [10n ** 9n - 1n, -(10n ** 9n - 1n), 0n];
    return randomRows(n, seed).map((row, i) => ({
      ...row,
      cents: i % 7 === 3 ? null : i % 50 < 3 ? extremes[i % 50] : within(10n ** 9n),
      huge: i % 5 === 1 ? null : i === 17 ? -(10n ** 30n - 1n) : within(10n ** 30n),
    }));
  };

  it.each(Object.keys(encoders))('%s: every leaf agrees with a naive sort, over row groups of 1, 37 and all rows', (encoderVersion) => {
    for (const [seed, rowGroupRows] of [[1, 1], [2, 37], [3, 400]] as const) {
      const rows = decimalRows(400, seed);
      const expected = naiveStatistics(withDecimals, rows);
      expect(buildDataFile(withDecimals, rows, { rowGroupRows, encoderVersion }).statistics, `seed ${seed}`).toEqual(expected);
    }
  });

  it('the encoders of new files (and v3) take them in their pass; v1 and v2 leave them to the walk over the values', () => {
    const rows = decimalRows(50, 9);
    const walked = (version: string): boolean => version.startsWith('hyparquet-writer@') || version.startsWith('offsetlake-parquet@2/');
    for (const version of Object.values(encoderForCompression)) expect(walked(version), version).toBe(false);
    for (const version of Object.keys(encoders)) {
      const { file } = buildDataFile(withDecimals, rows, { rowGroupRows: 10, encoderVersion: version });
      expect(file.statistics === undefined, version).toBe(walked(version));
    }
  });
});

describe('statistics against the file itself', () => {
  const rows = randomRows(300, 42);
  const { file, statistics } = buildDataFile(columns, rows, { rowGroupRows: 64 });
  const byName = new Map(statistics.map((s) => [s.column, s]));

  it('match the counts of every column chunk in the footer', () => {
    const metadata = parquetMetadata(file.footer);
    for (const stat of statistics) {
      const chunks = metadata.row_groups.map((g) => g.columns.find((c) => c.meta_data!.path_in_schema.join('.') === stat.column)!.meta_data!);
      expect(chunks.reduce((n, c) => n + Number(c.num_values), 0), stat.column).toBe(stat.valueCount);
      expect(chunks.reduce((n, c) => n + Number(c.statistics!.null_count), 0), stat.column).toBe(stat.nullCount);
    }
  });

  it('bound every value read back, and count its nulls and NaNs', async () => {
    const read = await parquetReadObjects({ compressors,
      file: file.bytes.slice().buffer,
      utf8: false,
      parsers: { timestampFromMicroseconds: (v: bigint) => v, dateFromDays: (v: number) => v },
    });
    expect(read).toHaveLength(rows.length);
    for (const column of columns.filter((c) => c.type.kind !== 'list' && c.type.kind !== 'struct' && c.type.kind !== 'decimal')) {
      const type = column.type as ScalarType;
      const stat = byName.get(column.name)!;
      const order = naiveOrder(type);
      const parse = (text: string): unknown =>
        type.kind === 'int64' || type.kind === 'timestamp' ? BigInt(text)
        : type.kind === 'binary' ? Uint8Array.from(text.match(/../g) ?? [], (h) => parseInt(h, 16))
        : type.kind === 'boolean' ? text === 'true'
        : type.kind === 'string' ? text
        : Number(text);
      const values = read.map((r) => r[column.name]);
      const present = values.filter((v) => v !== null && v !== undefined && !Number.isNaN(v));
      expect(values.filter((v) => v === null || v === undefined).length, column.name).toBe(stat.nullCount);
      expect(values.filter((v) => typeof v === 'number' && Number.isNaN(v)).length, column.name).toBe(stat.nanCount);
      expect(stat.valueCount).toBe(rows.length);
      const [min, max] = [parse(stat.min!), parse(stat.max!)];
      for (const v of present) {
        expect(order(min, v) <= 0 && order(v, max) <= 0, `${column.name}: ${String(v)} outside ${stat.min}..${stat.max}`).toBe(true);
      }
      // the bounds are values of the column, not merely bounds
      expect(present.some((v) => order(v, min) === 0) && present.some((v) => order(v, max) === 0), column.name).toBe(true);
    }
    // nested columns come back as given (hyparquet decodes nested strings with a default
    // TextDecoder, which drops a leading U+FEFF; pyarrow, in the integration tests, keeps it)
    const same = (v: unknown): unknown =>
      typeof v === 'string' ? wellFormed(v).replace(/^\uFEFF+/, '') : Array.isArray(v) ? v.map(same) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, same(x)])) : v;
    expect(read.map((r) => same([r.nums ?? null, r.obj ?? null]))).toEqual(rows.map((r) => same([r.nums, r.obj])));
  });
});
