/**
 * Normalization (values.ts) and statistics (statistics.ts, stat-text.ts) are on the hot
 * path of indexing and get made faster; what they give must not move: normalized
 * values reach the writer (file bytes), statistics text reaches the catalog, error
 * messages reach the operator. The digests below were taken with the code of 370e2bc,
 * before normalizers and feeders were built once per column and compareBytes began
 * in JavaScript.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type Column, columnStatistics, columnValues, compareBytes, kafkaColumnArrays, kafkaTableColumns, prepare } from '../../src/parquet/index.js';
import type { KafkaRecord } from '../../src/kafka/record.js';

function prng(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

/** Every detail a writer could see: kinds, holes, -0, prototypes, key order. */
function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undef';
  if (v instanceof Uint8Array) return `${v.constructor.name}(${Buffer.from(v).toString('hex')})`;
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${Array.from({ length: v.length }, (_, k) => (k in v ? describeValue(v[k]) : 'hole')).join(',')}]`;
  const proto = Object.getPrototypeOf(v) === Object.prototype ? '' : 'proto?';
  return `${proto}{${Reflect.ownKeys(v as object)
    .map((k) => `${String(k)}:${describeValue((v as Record<string, unknown>)[k as string])}`)
    .join(',')}}`;
}
const digest = (text: string): string => createHash('sha256').update(text).digest('hex');

const utf8 = new TextEncoder();
const words = ['a', 'trace-id', 'ünï', '日本', '😀', '', '\u0000', '\ufeff', 'x'.repeat(70), 'é'.repeat(40), 'k'.repeat(64), 'k'.repeat(65)];

function kafkaRecords(n: number): KafkaRecord[] {
  const rnd = prng(3);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => ({
    offset: 2n ** 40n + BigInt(i),
    timestamp: 1_700_000_000_000 + Math.floor(rnd() * 1e6),
    key: rnd() < 0.1 ? null : utf8.encode(pick(words) + i),
    value: rnd() < 0.05 ? null : utf8.encode(rnd() < 0.1 ? pick(['{"a":', '[1,]', 'nope', '"\\x"']) : JSON.stringify({ i, w: pick(words), p: pick(['x'.repeat(40), 'y']) })),
    headers: Array.from({ length: Math.floor(rnd() * 3) }, () => [pick(words), rnd() < 0.3 ? null : utf8.encode(pick(words))] as [string, Uint8Array | null]),
  }));
}

const nested: Column[] = [
  { name: 's', type: { kind: 'string' }, nullable: true },
  { name: 'j', type: { kind: 'json' }, nullable: true },
  { name: 'b', type: { kind: 'binary' }, nullable: false },
  {
    name: 'l',
    type: {
      kind: 'list',
      element: {
        nullable: true,
        type: {
          kind: 'struct',
          fields: [
            { name: 'k', type: { kind: 'string' }, nullable: false },
            { name: '__proto__', type: { kind: 'int64' }, nullable: true },
            { name: 'm', type: { kind: 'list', element: { type: { kind: 'double' }, nullable: true } }, nullable: true },
          ],
        },
      },
    },
    nullable: true,
  },
  {
    name: 'o',
    type: { kind: 'struct', fields: [{ name: 'd', type: { kind: 'decimal', precision: 9, scale: 3 }, nullable: true }, { name: 't', type: { kind: 'timestamp', unit: 'micros', utc: true }, nullable: false }] },
    nullable: true,
  },
];

function nestedRows(n: number): Record<string, unknown>[] {
  const rnd = prng(17);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const entry = (): unknown => {
    if (rnd() < 0.1) return null;
    const e: Record<string, unknown> = { k: pick(words) };
    Object.defineProperty(e, '__proto__', { value: rnd() < 0.3 ? null : BigInt(Math.floor(rnd() * 1e6)) - 500_000n, enumerable: true });
    if (rnd() < 0.8) e.m = rnd() < 0.2 ? null : Array.from({ length: Math.floor(rnd() * 3) }, () => pick([null, NaN, -0, 0, 1.5, -Infinity, rnd()]));
    return e;
  };
  return Array.from({ length: n }, (_, i) => ({
    s: rnd() < 0.1 ? null : pick(words) + pick(words),
    j: rnd() < 0.1 ? null : rnd() < 0.5 ? `{"n":${i}}` : utf8.encode(`[${i}]`),
    b: Uint8Array.from({ length: Math.floor(rnd() * 40) }, () => (rnd() < 0.5 ? 0x41 : Math.floor(rnd() * 256))),
    l: rnd() < 0.1 ? null : Array.from({ length: Math.floor(rnd() * 4) }, entry),
    o: rnd() < 0.1 ? null : { d: rnd() < 0.2 ? null : BigInt(Math.floor(rnd() * 2e8)) - 100_000_000n, t: BigInt(i) * 1_000_003n },
  }));
}

describe('normalization and statistics keep their output', () => {
  it('for a json table', () => {
    const columns = kafkaTableColumns('json');
    const prepared = prepare(columns, kafkaColumnArrays(3, kafkaRecords(3_000), 'json'));
    expect(digest(prepared.arrays.map((a) => describeValue(columnValues(a))).join('\n'))).toBe('c55b866e288328d8c8cda3475683a71af70912076e2ec170e37547d83f8191a7');
    expect(digest(JSON.stringify(columnStatistics(columns, prepared)))).toBe('7543eed3e80bffaec227805cfb63b2eed78b2a32a90366205dc26ae3264540a6');
  });

  it('for nested lists and structs, as rows and as column arrays', () => {
    const rows = nestedRows(2_000);
    const fromRows = prepare(nested, rows);
    const fromArrays = prepare(nested, Object.fromEntries(nested.map((c) => [c.name, rows.map((r) => r[c.name])])));
    const values = fromRows.arrays.map((a) => describeValue(a)).join('\n');
    expect(fromArrays.arrays.map((a) => describeValue(a)).join('\n')).toBe(values);
    expect(digest(values)).toBe('784e4b37007b3422b916931f0ee7a3f4417caf9725a29b454a4d59647e4ff72c');
    expect(digest(JSON.stringify(columnStatistics(nested, fromRows)))).toBe('d77509db7980af72b456b26e43332b3dc840f7edde4750de5183c752ba1b5045');
  });

  it('keeps a hole in a list a hole', () => {
    // eslint-disable-next-line no-sparse-arrays
    const prepared = prepare([{ name: 'l', type: { kind: 'list', element: { type: { kind: 'string' }, nullable: true } }, nullable: true }], { l: [[, 'a', , null]] });
    expect(describeValue(prepared.arrays[0])).toBe('[[hole,Uint8Array(61),hole,null]]');
  });

  it('names the same value in the same words when it is wrong', () => {
    const messages: string[] = [];
    const bad: unknown[] = [
      { l: [{ k: 5 }] },
      { l: [{ k: 'x', m: [1, 'two'] }] },
      { l: [{ k: 'x', m: 'not a list' }] },
      { l: [{}] },
      { l: ['not a struct'] },
      { l: [[1]] },
      { l: [Uint8Array.of(1)] },
      { s: 'lone \ud800 surrogate' },
      { s: 'x'.repeat(64) + '\udc00' },
      { s: 7 },
      { j: { a: 1 } },
      { b: null },
      { b: 'text' },
      { o: { d: 10n ** 9n, t: 1n } },
      { o: { t: null } },
      { o: [] },
      { l: [{ k: 'x', ['__proto__']: 1.5 }] },
    ];
    bad.forEach((row, i) => {
      const full = { s: null, j: null, b: new Uint8Array(0), l: null, o: null, ...(row as object) };
      const rows = [{ s: null, j: null, b: new Uint8Array(0), l: null, o: null }, full];
      try {
        prepare(nested, rows);
        messages.push(`${i}: no error`);
      } catch (error) {
        messages.push(`${i}: ${(error as Error).name} ${(error as { column?: string }).column} ${(error as Error).message}`);
      }
    });
    expect(messages).toEqual([
      '0: ValueError l l.element.k (row 1) must be a string, got number 5',
      '1: ValueError l l.element.m.element (row 1) must be a number, got string two',
      '2: ValueError l l.element.m (row 1) must be an array, got string not a list',
      '3: ValueError l l.element.k (row 1) must be a value (the column is not nullable), got null',
      '4: ValueError l l.element (row 1) must be an object, got string not a struct',
      '5: ValueError l l.element (row 1) must be an object, got an array',
      '6: ValueError l l.element (row 1) must be an object, got bytes',
      '7: ValueError s s (row 1) must be well-formed text (it holds a lone surrogate), got string lone \ufffd surrogate',
      '8: ValueError s s (row 1) must be well-formed text (it holds a lone surrogate), got string xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      '9: ValueError s s (row 1) must be a string, got number 7',
      '10: ValueError j j (row 1) must be JSON text (string or UTF-8 bytes), got object [object Object]',
      '11: ValueError b b (row 1) must be a value (the column is not nullable), got null',
      '12: ValueError b b (row 1) must be bytes (Uint8Array), got string text',
      '13: ValueError o o.d (row 1) must be an unscaled decimal of at most 9 digits (bigint), got bigint 1000000000',
      '14: ValueError o o.t (row 1) must be a value (the column is not nullable), got null',
      '15: ValueError o o (row 1) must be an object, got an array',
      '16: ValueError l l.element.__proto__ (row 1) must be a 64-bit integer (bigint), got number 1.5',
    ]);
  });
});

describe('compareBytes', () => {
  it('orders as Buffer.compare does, with the same -1, 0 and 1', () => {
    const rnd = prng(8);
    for (let round = 0; round < 20_000; round++) {
      const prefix = Uint8Array.from({ length: Math.floor(rnd() * (rnd() < 0.3 ? 80 : 6)) }, () => Math.floor(rnd() * 256));
      const tail = (): number[] => Array.from({ length: Math.floor(rnd() * 4) }, () => (rnd() < 0.5 ? Math.floor(rnd() * 256) : rnd() < 0.5 ? 0 : 0xff));
      const a = Uint8Array.from([...prefix, ...tail()]);
      const b = rnd() < 0.1 ? Uint8Array.from(a) : Uint8Array.from([...prefix, ...tail()]);
      const view = new Uint8Array(a.length + 2);
      view.set(a, 1);
      expect(compareBytes(a, b), `${Buffer.from(a).toString('hex')} ${Buffer.from(b).toString('hex')}`).toBe(Buffer.compare(a, b));
      expect(compareBytes(view.subarray(1, a.length + 1), b)).toBe(Buffer.compare(a, b));
    }
  });
});
