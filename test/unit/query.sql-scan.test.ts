import { describe, expect, it } from 'vitest';
import { mayMatch, timestampMillis, type Bounds } from '../../src/query/prune.js';
import { requiredPredicates, tableReferences, tokenize } from '../../src/query/sql-scan.js';

function predicates(sql: string, table = 'clicks') {
  const tokens = tokenize(sql);
  const at = tableReferences(tokens, new Set([table])).get(table);
  return at?.length === 1 ? requiredPredicates(tokens, at[0]!) : [];
}

describe('finding tables and required predicates in SQL', () => {
  it('finds tables by name, quoted or not, but not functions, qualified names or strings', () => {
    const tokens = tokenize(`SELECT clicks(1), s.clicks, 'clicks' FROM "clicks" JOIN CLICKS c ON true -- clicks\n/* clicks */`);
    expect(tableReferences(tokens, new Set(['clicks'])).get('clicks')).toHaveLength(2);
  });

  it('extracts comparisons, mirrored literals and BETWEEN from a plain WHERE', () => {
    expect(predicates("SELECT * FROM clicks c WHERE c._offset >= 10 AND 20 > _offset AND _timestamp BETWEEN TIMESTAMP '2026-01-01' AND '2026-01-02' AND _partition = -1 ORDER BY 1")).toEqual([
      { column: '_offset', op: '>=', value: { kind: 'number', text: '10' } },
      { column: '_offset', op: '<', value: { kind: 'number', text: '20' } },
      { column: '_timestamp', op: 'between', low: { kind: 'timestamp', text: '2026-01-01' }, high: { kind: 'string', text: '2026-01-02' } },
      { column: '_partition', op: '=', value: { kind: 'number', text: '-1' } },
    ]);
  });

  it('extracts nothing when unsure: OR, CASE, NOT, casts, joins, CTEs, set operations, subqueries, other qualifiers', () => {
    for (const sql of [
      'SELECT * FROM clicks WHERE _offset > 1 OR _offset < 0',
      'SELECT * FROM clicks WHERE CASE WHEN _offset > 1 AND true THEN 1 END = 1',
      'SELECT * FROM clicks, other WHERE _offset > 1',
      'SELECT * FROM clicks JOIN other USING (x) WHERE _offset > 1',
      'WITH x AS (SELECT * FROM clicks) SELECT * FROM x WHERE _offset > 1',
      'SELECT * FROM (SELECT _offset - 5 AS _offset FROM clicks) WHERE _offset > 1',
      'SELECT * FROM clicks WHERE _offset > 1 UNION ALL SELECT * FROM other',
      'SELECT * FROM clicks; SELECT 1',
    ]) expect(predicates(sql), sql).toEqual([]);
    expect(predicates('SELECT * FROM clicks WHERE NOT _offset > 1 AND _offset > 5::BIGINT AND o._offset = 1 AND _offset > 2 IS TRUE')).toEqual([]);
    expect(predicates('SELECT * FROM clicks a JOIN clicks b USING (_offset) WHERE a._offset = 1')).toEqual([]);
  });

  it('reads timestamps only to the millisecond, UTC unless a zone is given', () => {
    expect(timestampMillis('2026-11-29 09:00:00')).toBe(BigInt(Date.UTC(2026, 10, 29, 9)));
    expect(timestampMillis('2026-11-29T09:00:00.5+01:00')).toBe(BigInt(Date.UTC(2026, 10, 29, 8, 0, 0, 500)));
    expect(timestampMillis('2026-11-29')).toBe(BigInt(Date.UTC(2026, 10, 29)));
    expect(timestampMillis('2026-11-29 09:00:00.0005')).toBeUndefined();
    expect(timestampMillis('yesterday')).toBeUndefined();
  });

  it('keeps a file unless its bounds rule the predicate out', () => {
    const bounds: Bounds = new Map([['_offset', { min: 10n, max: 20n }]]);
    const keep = (sql: string) => mayMatch(bounds, predicates(sql));
    expect(keep('SELECT * FROM clicks WHERE _offset = 20')).toBe(true);
    expect(keep('SELECT * FROM clicks WHERE _offset = 21')).toBe(false);
    expect(keep('SELECT * FROM clicks WHERE _offset > 20')).toBe(false);
    expect(keep('SELECT * FROM clicks WHERE _offset >= 20')).toBe(true);
    expect(keep('SELECT * FROM clicks WHERE _offset < 10')).toBe(false);
    expect(keep('SELECT * FROM clicks WHERE _offset BETWEEN 0 AND 9')).toBe(false);
    expect(keep('SELECT * FROM clicks WHERE _offset BETWEEN 0 AND 10')).toBe(true);
    expect(keep("SELECT * FROM clicks WHERE _offset > '30'")).toBe(true); // not an integer literal: unsure
    expect(keep('SELECT * FROM clicks WHERE _offset > 30.5')).toBe(true);
    expect(keep("SELECT * FROM clicks WHERE _key = 'x'")).toBe(true); // no bounds for it
  });
});
