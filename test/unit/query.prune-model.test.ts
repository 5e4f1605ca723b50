/**
 * Statistics pruning with the WHERE tree, against a model written from the
 * specification (DuckDB's SQL meaning of each form; a file may match when its min/max and
 * null counts admit a value the predicate accepts), never by calling our evaluator:
 * each random predicate is built here as SQL text with, beside it, its meaning on one
 * row (SQL's three-valued logic) and on one file's statistics. The planner's file set must
 * equal the model's, and must keep every file that holds a row the WHERE accepts.
 */
import { describe, expect, it } from 'vitest';
import { mayMatch, type Bounds, type NullCounts } from '../../src/query/prune.js';
import { tableReferences, tokenize } from '../../src/sql/scan.js';
import { predicateTree } from '../../src/sql/where.js';
import { seededRandom } from '../helpers/random.js';

interface Row { partition: number; offset: number; timestamp: number; n: number | null }
interface File { partition: number; offsets: [number, number]; timestamps: [number, number]; nulls: number; rows: Row[] }
/** A predicate: its SQL, its value on a row (null: SQL's unknown), whether a file's statistics admit a TRUE row. */
interface Model { sql: string; row: (row: Row) => boolean | null; file: (file: File) => boolean }

type Op = '=' | '<' | '<=' | '>' | '>=';
const holds = (a: number, op: Op, b: number): boolean => (op === '=' ? a === b : op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b);
/** Whether [min, max] holds a value v with `v op k`. */
const admits = ([min, max]: [number, number], op: Op, k: number): boolean =>
  op === '=' ? min <= k && k <= max : op === '<' ? min < k : op === '<=' ? min <= k : op === '>' ? max > k : max >= k;

const start = Date.UTC(2026, 0, 1);
const timestampText = (ms: number) => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

function atom(random: () => number): Model {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const op = pick(['=', '<', '<=', '>', '>='] as const);
  const offset = Math.floor(random() * 120) - 5;
  switch (pick(['offset', 'offset', 'between', 'in', 'timestamp', 'partition', 'null', 'notnull', 'unknown'] as const)) {
    case 'offset': {
      const literal = pick([`${offset}`, `${offset}::BIGINT`, `CAST(${offset} AS INTEGER)`, `'${offset}'::BIGINT`]);
      return { sql: `_offset ${op} ${literal}`, row: (r) => holds(r.offset, op, offset), file: (f) => admits(f.offsets, op, offset) };
    }
    case 'between': {
      const high = offset + Math.floor(random() * 20);
      return { sql: `_offset BETWEEN ${offset} AND ${high}`, row: (r) => r.offset >= offset && r.offset <= high, file: (f) => f.offsets[1] >= offset && f.offsets[0] <= high };
    }
    case 'in': {
      const values = [offset, offset + 37, offset + 71];
      return { sql: `_offset IN (${values.join(', ')})`, row: (r) => values.includes(r.offset), file: (f) => values.some((v) => admits(f.offsets, '=', v)) };
    }
    case 'timestamp': {
      const ms = start + Math.floor(random() * 130) * 1000;
      const literal = pick([`TIMESTAMP '${timestampText(ms)}'`, `'${timestampText(ms)}'::TIMESTAMP`, `CAST('${timestampText(ms)}' AS TIMESTAMP)`, `'${timestampText(ms)}'`]);
      return { sql: `_timestamp ${op} ${literal}`, row: (r) => holds(r.timestamp, op, ms), file: (f) => admits(f.timestamps, op, ms) };
    }
    case 'partition': {
      const p = Math.floor(random() * 3);
      return { sql: `c._partition = ${p}`, row: (r) => r.partition === p, file: (f) => f.partition === p };
    }
    case 'null':
      return { sql: 'n IS NULL', row: (r) => r.n === null, file: (f) => f.nulls > 0 };
    case 'notnull':
      return { sql: 'n IS NOT NULL', row: (r) => r.n !== null, file: () => true };
    case 'unknown':
      // A function of the column: no statistic decides it.
      return { sql: `_offset + 0 ${op} ${offset}`, row: (r) => holds(r.offset, op, offset), file: () => true };
  }
}

function predicate(random: () => number, depth: number): Model {
  const roll = random();
  if (depth === 0 || roll < 0.35) return atom(random);
  if (roll < 0.45) {
    const inner = predicate(random, depth - 1);
    // NOT is never read: a file may always match.
    return { sql: `NOT (${inner.sql})`, row: (r) => { const v = inner.row(r); return v === null ? null : !v; }, file: () => true };
  }
  const items = [predicate(random, depth - 1), predicate(random, depth - 1)];
  if (roll < 0.72) {
    return {
      sql: items.map((m) => `(${m.sql})`).join(' AND '),
      row: (r) => { const v = items.map((m) => m.row(r)); return v.includes(false) ? false : v.includes(null) ? null : true; },
      file: (f) => items.every((m) => m.file(f)),
    };
  }
  return {
    sql: items.map((m) => `(${m.sql})`).join(' OR '),
    row: (r) => { const v = items.map((m) => m.row(r)); return v.includes(true) ? true : v.includes(null) ? null : false; },
    file: (f) => items.some((m) => m.file(f)),
  };
}

function files(random: () => number): File[] {
  return Array.from({ length: 12 }, (_, i) => {
    const partition = i % 3;
    const first = Math.floor(i / 3) * 25 + Math.floor(random() * 5);
    const rows: Row[] = Array.from({ length: 5 + Math.floor(random() * 15) }, (_, k) => ({
      partition,
      offset: first + k,
      timestamp: start + (first + k) * 1000 + Math.floor(random() * 3) * 1000,
      n: random() < 0.15 * (i % 4) ? null : k,
    }));
    const times = rows.map((r) => r.timestamp);
    return {
      partition,
      offsets: [first, first + rows.length - 1],
      timestamps: [Math.min(...times), Math.max(...times)],
      nulls: rows.filter((r) => r.n === null).length,
      rows,
    };
  });
}

function keptByPlanner(sql: string, all: readonly File[]): number[] {
  const tokens = tokenize(`SELECT * FROM clicks c WHERE ${sql}`);
  const tree = predicateTree(tokens, tableReferences(tokens, new Set(['clicks'])).get('clicks')![0]!);
  const columns = new Set(['_partition', '_offset', '_timestamp', 'n']);
  return all.flatMap((file, i) => {
    const bounds: Bounds = new Map([
      ['_partition', { min: BigInt(file.partition), max: BigInt(file.partition) }],
      ['_offset', { min: BigInt(file.offsets[0]), max: BigInt(file.offsets[1]) }],
      ['_timestamp', { min: BigInt(file.timestamps[0]), max: BigInt(file.timestamps[1]) }],
    ]);
    const nulls: NullCounts = new Map([['n', BigInt(file.nulls)]]);
    return mayMatch(bounds, tree, nulls, columns) ? [i] : [];
  });
}

describe('statistics pruning with the WHERE tree, against a model of the SQL forms', () => {
  it('keeps exactly the files whose min/max and null counts admit a row the WHERE accepts, for random AND/OR/NOT predicates (seeded)', () => {
    const random = seededRandom(29);
    const all = files(random);
    let pruned = 0;
    for (let n = 0; n < 400; n++) {
      const model = predicate(random, 3);
      const expected = all.flatMap((file, i) => (model.file(file) ? [i] : []));
      const kept = keptByPlanner(model.sql, all);
      expect(kept, model.sql).toEqual(expected);
      // Never a file holding a row that makes the WHERE TRUE left out.
      const holding = all.flatMap((file, i) => (file.rows.some((row) => model.row(row) === true) ? [i] : []));
      expect(holding.filter((i) => !kept.includes(i)), model.sql).toEqual([]);
      pruned += all.length - kept.length;
    }
    expect(pruned).toBeGreaterThan(0);
  });

  it('an OR prunes a file only when every branch rules it out; NOT and unread forms never prune', () => {
    const all = files(seededRandom(7));
    const offsetsOf = (i: number) => all[i]!.offsets;
    const byOffset = (v: number) => all.flatMap((f, i) => (f.offsets[0] <= v && v <= f.offsets[1] ? [i] : []));
    const [a, b] = [offsetsOf(0)[0], offsetsOf(11)[1]];
    expect(keptByPlanner(`_offset = ${a} OR _offset = ${b}`, all)).toEqual([...new Set([...byOffset(a), ...byOffset(b)])].sort((x, y) => x - y));
    expect(keptByPlanner(`_offset = ${a} OR _offset + 0 = ${b}`, all)).toHaveLength(all.length);
    expect(keptByPlanner(`NOT _offset = ${a}`, all)).toHaveLength(all.length);
    expect(keptByPlanner(`_offset = -100 OR _offset = 10000`, all)).toEqual([]);
  });
});
