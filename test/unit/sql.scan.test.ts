import { describe, expect, it } from 'vitest';
import { parquetMetadata } from 'hyparquet';
import { encodeFile } from '../../src/files/files.js';
import type { CatalogFile } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/table/record.js';
import { encoderOf } from '../../src/parquet/index.js';
import { defaultSettings } from '../../src/table/settings.js';
import { timestampMillis } from '../../src/query/literals.js';
import { mayMatch, rowGroupBounds, statisticTree, type Bounds } from '../../src/query/prune.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { tableReferences, tokenize, usedColumns } from '../../src/sql/scan.js';
import { predicateTree, type PredicateTree } from '../../src/sql/where.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

/** The WHERE tree as statistics prune with it. */
function predicates(sql: string, table = 'clicks'): PredicateTree {
  const tokens = tokenize(sql);
  const at = tableReferences(tokens, new Set([table])).get(table);
  return at?.length === 1 ? statisticTree(predicateTree(tokens, at[0]!)) : { kind: 'any' };
}

const none = { kind: 'any' };
const column = (name: string, qualifier?: string) => (qualifier === undefined ? { kind: 'column', path: [name] } : { kind: 'column', path: [name], qualifier });
const offsetIs = (text: string) => ({ kind: 'compare', operand: column('_offset'), op: '=', value: { kind: 'number', text } });

describe('finding tables and required predicates in SQL', () => {
  it('finds tables by name, quoted or not, but not functions, qualified names or strings', () => {
    const tokens = tokenize(`SELECT clicks(1), s.clicks, 'clicks' FROM "clicks" JOIN CLICKS c ON true -- clicks\n/* clicks */`);
    expect(tableReferences(tokens, new Set(['clicks'])).get('clicks')).toHaveLength(2);
  });

  it('extracts nothing when an arrow after the first conjunct regroups the conjuncts before it (DuckDB: `(a AND _value)->>…`)', () => {
    expect(predicates("SELECT * FROM clicks WHERE _offset = 5 AND _value->>'$' = 'false'")).toEqual(none);
    expect(predicates("SELECT * FROM clicks WHERE _value->>'k' = 'x' AND _offset = 5")).toEqual(offsetIs('5'));
    expect(predicates("SELECT * FROM clicks WHERE _offset = 5 AND (_value->>'k' = 'x')")).toEqual(offsetIs('5'));
  });

  it('extracts comparisons, mirrored literals and BETWEEN from a plain WHERE', () => {
    expect(predicates("SELECT * FROM clicks c WHERE c._offset >= 10 AND 20 > _offset AND _timestamp BETWEEN TIMESTAMP '2026-01-01' AND '2026-01-02' AND _partition = -1 ORDER BY 1")).toEqual({
      kind: 'and',
      items: [
        { kind: 'compare', operand: column('_offset', 'c'), op: '>=', value: { kind: 'number', text: '10' } },
        { kind: 'compare', operand: column('_offset'), op: '<', value: { kind: 'number', text: '20' } },
        { kind: 'between', operand: column('_timestamp'), low: { kind: 'timestamp', text: '2026-01-01' }, high: { kind: 'string', text: '2026-01-02' } },
        { kind: 'compare', operand: column('_partition'), op: '=', value: { kind: 'number', text: '-1' } },
      ],
    });
  });

  it('extracts nothing when unsure: CASE, NOT, casts of a column, joins, CTEs, set operations, subqueries, other qualifiers', () => {
    for (const sql of [
      'SELECT * FROM clicks WHERE CASE WHEN _offset > 1 AND true THEN 1 END = 1',
      'SELECT * FROM clicks, other WHERE _offset > 1',
      'SELECT * FROM clicks JOIN other USING (x) WHERE _offset > 1',
      'WITH x AS (SELECT * FROM clicks) SELECT * FROM x WHERE _offset > 1',
      'SELECT * FROM (SELECT _offset - 5 AS _offset FROM clicks) WHERE _offset > 1',
      'SELECT * FROM clicks WHERE _offset > 1 UNION ALL SELECT * FROM other',
      'SELECT * FROM clicks; SELECT 1',
    ]) expect(predicates(sql), sql).toEqual(none);
    expect(predicates('SELECT * FROM clicks WHERE NOT _offset > 1 AND _offset::BIGINT > 5 AND o._offset = 1 AND _offset > 2 IS TRUE')).toEqual(none);
    expect(predicates('SELECT * FROM clicks a JOIN clicks b USING (_offset) WHERE a._offset = 1')).toEqual(none);
  });

  it('extracts an OR of what statistics decide, and integer casts of literals', () => {
    expect(predicates('SELECT * FROM clicks WHERE _offset > 1 OR _offset < 0')).toEqual({
      kind: 'or',
      items: [
        { kind: 'compare', operand: column('_offset'), op: '>', value: { kind: 'number', text: '1' } },
        { kind: 'compare', operand: column('_offset'), op: '<', value: { kind: 'number', text: '0' } },
      ],
    });
    expect(predicates('SELECT * FROM clicks WHERE _offset = 5::BIGINT AND o._offset = 1')).toEqual(offsetIs('5'));
    expect(predicates("SELECT * FROM clicks WHERE _offset = 5 OR _key = 'x'")).toEqual(none); // no statistic decides _key = 'x'
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

  it('row-group bounds come from the footer statistics: partition, exact offsets and millisecond timestamps of that row group alone', () => {
    const table = { name: 'clicks', format: 'json', settings: { row_group_rows: 3 } } as unknown as TableRecord;
    const records = Array.from({ length: 7 }, (_, i) => ({ offset: BigInt(100 + 2 * i), timestamp: 1_700_000_000_000 + i * 1000, key: null, value: null, headers: [] }));
    for (const version of [encoderVersion, 'hyparquet-writer@0.17.0/v1']) {
      const file = encodeFile(table, initialSchema('json'), 2, records, version);
      const metadata = parquetMetadata(file.footer);
      const bounds = rowGroupBounds({ partition: 2 } as CatalogFile, metadata, 1);
      expect([...bounds], version).toEqual([
        ['_partition', { min: 2n, max: 2n }],
        ['_offset', { min: 106n, max: 110n }],
        ['_timestamp', { min: 1_700_000_003_000n, max: 1_700_000_005_000n }],
      ]);
      const keep = (sql: string) => mayMatch(bounds, predicates(sql));
      expect(keep("SELECT * FROM clicks WHERE _timestamp >= TIMESTAMP '2023-11-14 22:13:25'")).toBe(true); // the group's last row
      expect(keep("SELECT * FROM clicks WHERE _timestamp > TIMESTAMP '2023-11-14 22:13:25'")).toBe(false);
      expect(keep('SELECT * FROM clicks WHERE _offset < 106')).toBe(false);
    }
  });

  it('row-group bounds leave out statistics that are not exact, and fall back to the granule span for _offset', () => {
    const table = { name: 'clicks', format: 'json', settings: { row_group_rows: 3 } } as unknown as TableRecord;
    const records = Array.from({ length: 4 }, (_, i) => ({ offset: BigInt(i), timestamp: 1_700_000_000_000 + i, key: null, value: null, headers: [] }));
    const metadata = parquetMetadata(encodeFile(table, initialSchema('json'), 0, records, encoderVersion).footer);
    for (const chunk of metadata.row_groups[0]!.columns) if (chunk.meta_data?.statistics) chunk.meta_data.statistics.is_max_value_exact = false;
    const granule = { rowGroup: 0, startOffset: 0n, endOffset: 3n, rowCount: 3, kafkaBytes: 0, chunkSha256: new Uint8Array() };
    expect([...rowGroupBounds({ partition: 0 } as CatalogFile, metadata, 0, granule)]).toEqual([
      ['_partition', { min: 0n, max: 0n }],
      ['_offset', { min: 0n, max: 2n }],
    ]);
  });
});

describe('the columns a statement may use', () => {
  const columns = ['_partition', '_offset', '_timestamp', '_key', '_headers', '_value', '_error', 'User'];
  const used = (sql: string) => {
    const set = usedColumns(tokenize(sql), columns, new Set(['clicks', 'other']));
    return set && [...set].sort();
  };

  it('every column named as a word or string, quoted or not, in any case; count(*) and products name none', () => {
    expect(used('SELECT _offset, count(*) FROM clicks WHERE _partition = 1 GROUP BY 1')).toEqual(['_offset', '_partition']);
    expect(used('SELECT c._KEY, "user", _offset * 2 FROM clicks c ORDER BY 1')).toEqual(['User', '_key', '_offset']);
    expect(used("SELECT json_extract(_value, '$.a') FROM clicks WHERE '_error' <> ''")).toEqual(['_error', '_value']);
    expect(used('SELECT count(*) FROM clicks')).toEqual([]);
    expect(used('WITH x AS (SELECT _offset FROM clicks) SELECT * FROM x')).toBeNull(); // the star reads the CTE, but unsure is all
  });

  it('every column when a column could be read without being named', () => {
    for (const sql of [
      'SELECT * FROM clicks',
      'SELECT c.* FROM clicks c',
      'SELECT COLUMNS(\'_o.*\') FROM clicks',
      'SELECT count(DISTINCT c) FROM clicks c',
      'SELECT clicks FROM clicks',
      'SELECT _offset FROM clicks NATURAL JOIN other',
      'SELECT #1 FROM clicks',
      'SELECT a FROM clicks AS t(a, b)',
      'FROM clicks',
      'DESCRIBE clicks',
      'SELECT * EXCLUDE (_value) FROM clicks',
    ]) {
      expect(used(sql), sql).toBeNull();
    }
  });
});

