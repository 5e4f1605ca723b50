/**
 * Rows of every column kind with awkward values (extremes, NaN, ±0, NUL, U+FEFF, astral
 * characters, nulls at every level), from a seed: the same seed gives the same rows.
 */
import type { Column } from '../../src/parquet/index.js';
import { seededRandom } from './random.js';



function generators(rnd: () => number) {
  const int = (n: number): number => Math.floor(rnd() * n);
  const oneOf = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const u64 = (): bigint => (BigInt(int(2 ** 32)) << 32n) | BigInt(int(2 ** 32));
  const codePoint = (): number =>
    oneOf([() => 0x20 + int(95), () => 0x80 + int(0x700), () => 0xe000 + int(0x2000), () => 0x10000 + int(0x100000), () => oneOf([0, 0xfeff])])();
  return {
    int32: () => oneOf([-(2 ** 31), 2 ** 31 - 1, 0, int(2 ** 32) - 2 ** 31, int(200) - 100]),
    int64: () => oneOf([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 3n, BigInt.asIntN(64, u64()), BigInt(int(1000) - 500)]),
    double: () => oneOf([NaN, -0, 0, Infinity, -Infinity, 5e-324, -Number.MAX_VALUE, (rnd() - 0.5) * 1e6, int(10) - 5]),
    boolean: () => rnd() < 0.5,
    // NUL and U+FEFF (a BOM when it leads) included: both are values like any other
    string: () => Array.from({ length: int(5) }, () => String.fromCharCode(...codePointUnits(codePoint()))).join(''),
    binary: () => Uint8Array.from({ length: int(5) }, () => oneOf([0, 0x7f, 0x80, 0xff, int(256)])),
    decimal: () => BigInt.asIntN(64, u64()) % 10n ** 18n,
    nullable: <T>(gen: () => T, p = 0.15): (() => T | null) => () => (rnd() < p ? null : gen()),
    int,
  };
}

function codePointUnits(cp: number): number[] {
  if (cp < 0x10000) return [cp];
  const v = cp - 0x10000;
  return [0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff)];
}

export const typedColumns: Column[] = [
  { name: 'i32', type: { kind: 'int32' }, nullable: true },
  { name: 'i64', type: { kind: 'int64' }, nullable: true },
  { name: 'f32', type: { kind: 'float' }, nullable: true },
  { name: 'f64', type: { kind: 'double' }, nullable: true },
  { name: 'flag', type: { kind: 'boolean' }, nullable: true },
  { name: 'text', type: { kind: 'string' }, nullable: true },
  { name: 'bytes', type: { kind: 'binary' }, nullable: true },
  { name: 'at', type: { kind: 'timestamp', unit: 'micros', utc: true }, nullable: false },
  { name: 'day', type: { kind: 'date' }, nullable: true },
  { name: 'amount', type: { kind: 'decimal', precision: 18, scale: 4 }, nullable: true },
  { name: 'nums', type: { kind: 'list', element: { type: { kind: 'int64' }, nullable: true } }, nullable: true },
  {
    name: 'obj',
    type: {
      kind: 'struct',
      fields: [
        { name: 'x', type: { kind: 'double' }, nullable: true },
        { name: 'tags', type: { kind: 'list', element: { type: { kind: 'string' }, nullable: false } }, nullable: false },
      ],
    },
    nullable: true,
  },
];

export function randomRows(n: number, seed: number): Record<string, unknown>[] {
  const g = generators(seededRandom(seed));
  return Array.from({ length: n }, () => ({
    i32: g.nullable(g.int32)(),
    i64: g.nullable(g.int64)(),
    f32: g.nullable(g.double)(),
    f64: g.nullable(g.double)(),
    flag: g.nullable(g.boolean)(),
    text: g.nullable(g.string)(),
    bytes: g.nullable(g.binary)(),
    at: g.int64(),
    day: g.nullable(() => g.int(40000) - 20000)(),
    amount: g.nullable(g.decimal)(),
    nums: g.nullable(() => Array.from({ length: g.int(3) }, g.nullable(g.int64)))(),
    obj: g.nullable(() => ({ x: g.nullable(g.double)(), tags: Array.from({ length: g.int(3) }, g.string) }))(),
  }));
}

