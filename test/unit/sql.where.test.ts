import { describe, expect, it } from 'vitest';
import { resolveIndexColumn } from '../../src/indexes/columns.js';
import { literalKey } from '../../src/query/literals.js';
import { predicateTree, readWhere, type Literal, type PredicateTree } from '../../src/sql/where.js';
import { tableReferences, tokenize } from '../../src/sql/scan.js';
import type { Column, ScalarType } from '../../src/parquet/schema.js';

function tree(sql: string, table = 'clicks'): PredicateTree {
  const tokens = tokenize(sql);
  const at = tableReferences(tokens, new Set([table])).get(table);
  return at?.length === 1 ? predicateTree(tokens, at[0]!) : { kind: 'any' };
}

const num = (text: string) => ({ kind: 'number', text }) as const;
const str = (text: string) => ({ kind: 'string', text }) as const;
const col = (...path: string[]) => ({ kind: 'column', path }) as const;

describe('the WHERE clause as an AND/OR tree for secondary indexes', () => {
  it('reads =, IN, BETWEEN and mirrored comparisons under AND and OR with their precedence', () => {
    expect(tree("SELECT * FROM clicks WHERE a = 1 AND (b = 'x' OR c IN (1, -2)) OR 5 < d")).toEqual({
      kind: 'or',
      items: [
        { kind: 'and', items: [
          { kind: 'compare', operand: col('a'), op: '=', value: num('1') },
          { kind: 'or', items: [{ kind: 'compare', operand: col('b'), op: '=', value: str('x') }, { kind: 'in', operand: col('c'), values: [num('1'), num('-2')] }] },
        ] },
        { kind: 'compare', operand: col('d'), op: '>', value: num('5') },
      ],
    });
    expect(tree('SELECT * FROM clicks WHERE a BETWEEN 1 AND 3 AND b = TRUE')).toEqual({
      kind: 'and',
      items: [{ kind: 'between', operand: col('a'), low: num('1'), high: num('3') }, { kind: 'compare', operand: col('b'), op: '=', value: { kind: 'boolean', value: true } }],
    });
  });

  it('reads struct leaves with dots or brackets, qualified columns, json fields and the first header of a name', () => {
    expect(tree("SELECT * FROM clicks c WHERE c.who.addr.city = 'x'")).toEqual({ kind: 'compare', operand: { kind: 'column', path: ['who', 'addr', 'city'], qualifier: 'c' }, op: '=', value: str('x') });
    expect(tree("SELECT * FROM clicks WHERE who['addr']['city'] = 'x'")).toMatchObject({ operand: col('who', 'addr', 'city') });
    expect(tree("SELECT * FROM clicks WHERE _value->>'$.user.id' = 'u1'")).toMatchObject({ operand: { kind: 'json', path: ['user', 'id'] } });
    expect(tree("SELECT * FROM clicks WHERE _value->>'user' IN ('a', 'b')")).toMatchObject({ kind: 'in', operand: { kind: 'json', path: ['user'] } });
    expect(tree("SELECT * FROM clicks WHERE list_filter(_headers, h -> h.key = 'trace')[1].value = 'abc'")).toEqual({ kind: 'compare', operand: { kind: 'header', name: 'trace' }, op: '=', value: str('abc') });
  });

  it('extracts nothing from forms whose meaning it does not read: NOT, functions, casts of a column, other json paths, an OR with any of them', () => {
    for (const where of [
      'NOT a = 1', 'a IS NOT DISTINCT FROM 1', 'abs(a) = 1', 'a::INT = 1', "_value->'user' = 'x'", "_value->>'$.a[0]' = 'x'", "_value->>'$.\"a.b\"' = 'x'",
      "_value->>'a' || 'b' = 'ab'", 'a = 1 OR NOT b IS NULL', 'a NOT IN (1, 2)',
      "a = '1.5'::INT", 'a = 1.5::BIGINT', "a = 'x'::VARCHAR(3)", "a = 'x'::TIMESTAMP_MS", "a = 'x'::VARCHAR::BLOB", "a = CAST('x' AS DECIMAL(3, 1))", "a = encode(b)", 'a = NULL', 'a + 1 = 2', 'f(x) BETWEEN 1 AND 3 OR a = 1',
      "list_filter(_headers, h -> h.key = 'x')[2].value = 'v'", 'CASE WHEN a = 1 AND b = 2 THEN true END OR a = 1', 'a = b',
    ]) {
      expect(tree(`SELECT * FROM clicks WHERE ${where}`), where).toEqual({ kind: 'any' });
    }
  });

  it('reads a json field only where DuckDB gives `_value->>` nothing else as its left side: first in the clause or after a parenthesis', () => {
    // DuckDB parses `a = 1 AND _value->>'k' = 'x'` as `(a = 1 AND _value)->>'k' = 'x'`.
    expect(tree("SELECT * FROM clicks WHERE a = 1 AND _value->>'k' = 'x'")).toEqual({ kind: 'any' });
    expect(tree("SELECT * FROM clicks WHERE _value->>'k' = 'x' AND _value->>'j' = 'y'")).toEqual({ kind: 'any' });
    expect(tree("SELECT * FROM clicks WHERE 'x' = _value->>'k'")).toEqual({ kind: 'any' });
    expect(tree("SELECT * FROM clicks WHERE (_value->>'k' = 'x') OR (a = 1 AND (_value->>'j' = 'y'))")).toEqual({
      kind: 'or',
      items: [
        { kind: 'compare', operand: { kind: 'json', path: ['k'] }, op: '=', value: str('x') },
        { kind: 'and', items: [{ kind: 'compare', operand: col('a'), op: '=', value: num('1') }, { kind: 'compare', operand: { kind: 'json', path: ['j'] }, op: '=', value: str('y') }] },
      ],
    });
    // An arrow inside parentheses regroups only what is inside them.
    expect(tree("SELECT * FROM clicks WHERE a = 1 AND (b = 2 AND _value->>'k' = 'x')")).toEqual({ kind: 'compare', operand: col('a'), op: '=', value: num('1') });
  });

  it('reads IS [NOT] NULL of an operand, alone and in an OR', () => {
    expect(tree('SELECT * FROM clicks WHERE a IS NULL')).toEqual({ kind: 'null', operand: col('a'), negated: false });
    expect(tree('SELECT * FROM clicks WHERE a = 1 OR b.c IS NOT NULL')).toEqual({
      kind: 'or',
      items: [{ kind: 'compare', operand: col('a'), op: '=', value: num('1') }, { kind: 'null', operand: col('b', 'c'), negated: true }],
    });
  });

  it('reads the literal forms users write for a column\'s type: casts to BLOB, VARCHAR, integers, timestamps, dates, and encode()', () => {
    const value = (literal: string) => {
      const found = tree(`SELECT * FROM clicks WHERE _key = ${literal}`);
      return found.kind === 'compare' ? found.value : found;
    };
    expect(value("'k1'::BLOB")).toEqual({ kind: 'blob', text: 'k1' });
    expect(value("CAST('k1' AS blob)")).toEqual({ kind: 'blob', text: 'k1' });
    expect(value("'k1'::BYTEA")).toEqual({ kind: 'blob', text: 'k1' });
    expect(value("encode('k1')")).toEqual({ kind: 'utf8', text: 'k1' });
    expect(value("'k1'::VARCHAR")).toEqual({ kind: 'varchar', text: 'k1' });
    expect(value("CAST('k1' AS TEXT)")).toEqual({ kind: 'varchar', text: 'k1' });
    expect(value('5::BIGINT')).toEqual(num('5'));
    expect(value("'-7'::INTEGER")).toEqual(num('-7'));
    expect(value('CAST(-7 AS SMALLINT)')).toEqual(num('-7'));
    expect(value("'2026-01-01 10:00'::TIMESTAMP")).toEqual({ kind: 'timestamp', text: '2026-01-01 10:00' });
    expect(value("CAST('2026-01-01' AS TIMESTAMPTZ)")).toEqual({ kind: 'timestamptz', text: '2026-01-01' });
    expect(value("TIMESTAMPTZ '2026-01-01'")).toEqual({ kind: 'timestamptz', text: '2026-01-01' });
    expect(value("'2026-01-01'::DATE")).toEqual({ kind: 'date', text: '2026-01-01' });
    expect(tree("SELECT * FROM clicks WHERE 'k1'::BLOB = _key")).toEqual({ kind: 'compare', operand: col('_key'), op: '=', value: { kind: 'blob', text: 'k1' } });
    expect(tree("SELECT * FROM clicks WHERE _key IN ('a'::BLOB, encode('b'))")).toEqual({ kind: 'in', operand: col('_key'), values: [{ kind: 'blob', text: 'a' }, { kind: 'utf8', text: 'b' }] });
    expect(tree("SELECT * FROM clicks WHERE _offset BETWEEN 1::BIGINT AND CAST('9' AS BIGINT)")).toEqual({ kind: 'between', operand: col('_offset'), low: num('1'), high: num('9') });
  });

  it('keeps what it could not read, with the names it mentions', () => {
    const tokens = tokenize("SELECT * FROM clicks WHERE a = 1 AND NOT _offset = 5 AND (_key::VARCHAR = 'k' OR b = 2)");
    const { unread } = readWhere(tokens, tableReferences(tokens, new Set(['clicks'])).get('clicks')![0]!);
    expect(unread).toEqual([
      { text: 'NOT _offset = 5', names: ['not', '_offset'] },
      { text: "_key::VARCHAR = 'k'", names: ['_key', 'varchar', 'k'] },
    ]);
  });

  it('keeps the readable conditions of an AND whose other conditions it does not read', () => {
    expect(tree('SELECT * FROM clicks WHERE f(x) BETWEEN 1 AND 3 AND a = 1 AND NOT b = 2')).toEqual({ kind: 'compare', operand: col('a'), op: '=', value: num('1') });
    expect(tree("SELECT * FROM clicks WHERE CASE WHEN a = 1 OR b = 2 THEN true END AND c = 'z'")).toEqual({ kind: 'compare', operand: col('c'), op: '=', value: str('z') });
  });

  it('extracts nothing from statements whose WHERE is not the table\'s alone: joins, set operations, no WHERE', () => {
    expect(tree('SELECT * FROM clicks JOIN other o ON true WHERE a = 1')).toEqual({ kind: 'any' });
    expect(tree('SELECT * FROM clicks WHERE a = 1 UNION SELECT * FROM clicks WHERE a = 2')).toEqual({ kind: 'any' });
    expect(tree('SELECT * FROM clicks ORDER BY a')).toEqual({ kind: 'any' });
  });
});

function keyOf(type: ScalarType | { kind: 'binary' }, literal: Literal, name = 'c') {
  const columns: Column[] = [{ name, type, nullable: true }];
  return literalKey(resolveIndexColumn(columns, 'avro', { kind: 'column', path: [name] }, type.kind === 'double' || type.kind === 'float' ? 'minmax' : 'bloom'), literal);
}

describe('literals as the key values an index holds', () => {
  it('integers, decimals (unscaled), dates (days) and timestamps (in the column\'s unit) as bigints', () => {
    expect(keyOf({ kind: 'int64' }, num('-42'))).toBe(-42n);
    expect(keyOf({ kind: 'decimal', precision: 9, scale: 2 }, num('12.5'))).toBe(1250n);
    expect(keyOf({ kind: 'decimal', precision: 9, scale: 2 }, num('-0.500'))).toBe(-50n);
    expect(keyOf({ kind: 'date' }, { kind: 'date', text: '1970-01-02' })).toBe(1n);
    expect(keyOf({ kind: 'date' }, str('1969-12-31'))).toBe(-1n);
    expect(keyOf({ kind: 'timestamp', unit: 'millis', utc: true }, { kind: 'timestamp', text: '1970-01-01 00:00:01.5' })).toBe(1500n);
    expect(keyOf({ kind: 'timestamp', unit: 'micros', utc: false }, str('1970-01-01T00:00:00.000007'))).toBe(7n);
  });

  it('refuses literals whose meaning for the column is not certain', () => {
    expect(keyOf({ kind: 'int64' }, str('5'))).toBeUndefined(); // DuckDB casts '5' to 5, and '05' too
    expect(keyOf({ kind: 'int64' }, num('1.5'))).toBeUndefined();
    expect(keyOf({ kind: 'int64' }, num('1'.repeat(39)))).toBeUndefined(); // a DOUBLE to DuckDB
    expect(keyOf({ kind: 'decimal', precision: 9, scale: 2 }, num('1.234'))).toBeUndefined();
    expect(keyOf({ kind: 'date' }, str('2026-02-30'))).toBeUndefined();
    expect(keyOf({ kind: 'timestamp', unit: 'millis', utc: true }, str('2026-01-01 00:00:00.0001'))).toBeUndefined();
    expect(keyOf({ kind: 'timestamp', unit: 'millis', utc: true }, str('2026-01-01 00:00:00+02'))).toBeUndefined();
    expect(keyOf({ kind: 'timestamp', unit: 'nanos', utc: true }, str('2026-01-01'))).toBeUndefined();
    expect(keyOf({ kind: 'float' }, num('0.1'))).toBeUndefined(); // 0.1::FLOAT = 0.1 in DuckDB
    expect(keyOf({ kind: 'double' }, num('0.1234567890123456'))).toBeUndefined();
    expect(keyOf({ kind: 'binary' }, str('a\\x41'))).toBeUndefined(); // a BLOB cast reads \xNN escapes
    expect(keyOf({ kind: 'binary' }, str('é'))).toBeUndefined();
    expect(keyOf({ kind: 'string' }, num('1'))).toBeUndefined();
    expect(keyOf({ kind: 'binary' }, { kind: 'blob', text: 'a\\x41' })).toBeUndefined();
    expect(keyOf({ kind: 'binary' }, { kind: 'varchar', text: 'é' })).toBeUndefined(); // DuckDB casts the VARCHAR to BLOB: an error
    expect(keyOf({ kind: 'string' }, { kind: 'blob', text: 'a' })).toBeUndefined();
    expect(keyOf({ kind: 'string' }, { kind: 'utf8', text: 'a' })).toBeUndefined();
    expect(keyOf({ kind: 'timestamp', unit: 'millis', utc: true }, { kind: 'timestamptz', text: '2026-01-01' })).toBeUndefined();
  });

  it('casts to BLOB and VARCHAR and encode() as the bytes DuckDB compares a BLOB column with', () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    expect(keyOf({ kind: 'binary' }, { kind: 'blob', text: 'k1' })).toEqual(bytes('k1'));
    expect(keyOf({ kind: 'binary' }, { kind: 'varchar', text: 'k1' })).toEqual(bytes('k1'));
    expect(keyOf({ kind: 'binary' }, { kind: 'utf8', text: 'é\\' })).toEqual(bytes('é\\'));
    expect(keyOf({ kind: 'string' }, { kind: 'varchar', text: 'é' })).toEqual(bytes('é'));
  });

  it('strings as UTF-8 bytes, ASCII blobs byte for byte, doubles and booleans as themselves', () => {
    expect(keyOf({ kind: 'string' }, str('é'))).toEqual(new TextEncoder().encode('é'));
    expect(keyOf({ kind: 'binary' }, str('u1'))).toEqual(new TextEncoder().encode('u1'));
    expect(keyOf({ kind: 'double' }, num('-2.5'))).toBe(-2.5);
    expect(keyOf({ kind: 'boolean' }, { kind: 'boolean', value: false })).toBe(false);
  });
});
