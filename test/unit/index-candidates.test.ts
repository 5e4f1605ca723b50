/**
 * Candidate row groups from index entries never leave out a row group that holds a row
 * passing the WHERE clause. The expected side is a naive model written from the
 * specification (SQL's three-valued AND/OR, NULL never equal, NaN above every number,
 * text and blobs ordered by their bytes), evaluated row by row; the entries come from the
 * indexer's builder.
 */
import { describe, expect, it } from 'vitest';
import { answerProbes, candidateRowGroups, type FileEntries } from '../../src/indexes/candidates.js';
import { resolveIndexColumn } from '../../src/indexes/columns.js';
import { BLOOM_PART } from '../../src/indexes/bloom-entries.js';
import { buildIndexEntries } from '../../src/indexes/entries.js';
import { HEADER_PART } from '../../src/indexes/header.js';
import type { IndexColumn, IndexDefinition, IndexKind } from '../../src/indexes/definition.js';
import { bindIndexes, type BindableIndex } from '../../src/query/index-binding.js';
import { predicateTree } from '../../src/sql/where.js';
import { tableReferences, tokenize } from '../../src/sql/scan.js';
import type { Column } from '../../src/parquet/schema.js';
import { prepare } from '../../src/parquet/values.js';
import { seededRandom } from '../helpers/random.js';

const columns: Column[] = [
  { name: 'n', type: { kind: 'int64' }, nullable: true },
  { name: 's', type: { kind: 'string' }, nullable: true },
  { name: 'd', type: { kind: 'double' }, nullable: true },
  { name: 'b', type: { kind: 'boolean' }, nullable: true },
  { name: '_key', type: { kind: 'binary' }, nullable: true },
];
type Value = bigint | string | number | boolean | null;
type Row = { n: bigint | null; s: string | null; d: number | null; b: boolean | null; _key: string | null };
const strings = ['a', 'b', 'c', 'é', 'ab', ''];

function definition(id: number, kind: IndexKind, names: string[], granuleRows: number): IndexDefinition {
  const indexColumns: IndexColumn[] = names.map((name) => ({ kind: 'column', path: [name] }));
  return { indexId: BigInt(id), tableId: 1n, name: `i${id}`, kind, columns: indexColumns, scope: 'history', granuleRows, falsePositiveRate: 0.01, postingBuckets: 4, state: 'active' };
}

/** SQL's comparison of a row's value with a literal: null unknown, NaN above every number, text by UTF-8 bytes. */
function compare(a: Value, b: Value): number | null {
  if (a === null || b === null) return null;
  if (typeof a === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b as string));
  if (typeof a === 'number' && Number.isNaN(a)) return Number.isNaN(b as number) ? 0 : 1;
  if (typeof a === 'boolean') return Number(a) - Number(b);
  return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0;
}

type Model = { op: 'and' | 'or'; items: Model[] } | { op: '=' | '<' | '<=' | '>' | '>='; column: keyof Row; value: Value } | { op: 'in'; column: keyof Row; values: Value[] } | { op: 'between'; column: keyof Row; low: Value; high: Value };

/** TRUE, FALSE or NULL (null) for one row. */
function evaluate(model: Model, row: Row): boolean | null {
  switch (model.op) {
    case 'and': {
      const values = model.items.map((item) => evaluate(item, row));
      return values.includes(false) ? false : values.includes(null) ? null : true;
    }
    case 'or': {
      const values = model.items.map((item) => evaluate(item, row));
      return values.includes(true) ? true : values.includes(null) ? null : false;
    }
    case 'in': {
      const values = model.values.map((value) => compare(row[model.column], value));
      return values.includes(0) ? true : values.includes(null) ? null : false;
    }
    case 'between': {
      const low = compare(row[model.column], model.low);
      const high = compare(row[model.column], model.high);
      return low === null || high === null ? null : low >= 0 && high <= 0;
    }
    default: {
      const c = compare(row[model.column], model.value);
      if (c === null) return null;
      return { '=': c === 0, '<': c < 0, '<=': c <= 0, '>': c > 0, '>=': c >= 0 }[model.op];
    }
  }
}

function literal(column: keyof Row, value: Value): string {
  if (column === 'n') return String(value);
  if (column === 'd') return String(value);
  if (column === 'b') return value ? 'TRUE' : 'FALSE';
  return `'${String(value).replace(/'/g, "''")}'`;
}

function sqlOf(model: Model): string {
  switch (model.op) {
    case 'and':
    case 'or':
      return `(${model.items.map(sqlOf).join(` ${model.op.toUpperCase()} `)})`;
    case 'in':
      return `${model.column} IN (${model.values.map((v) => literal(model.column, v)).join(', ')})`;
    case 'between':
      return `${model.column} BETWEEN ${literal(model.column, model.low)} AND ${literal(model.column, model.high)}`;
    default:
      return `${model.column} ${model.op} ${literal(model.column, model.value)}`;
  }
}

describe('candidate row groups from index entries', () => {
  it('never leave out a row group holding a row that passes random AND/OR predicates (seeded), and leave some out', () => {
    const rnd = seededRandom(16_005);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    let skipped = 0;
    let considered = 0;
    for (let round = 0; round < 150; round++) {
      const rowGroupRows = 2 + Math.floor(rnd() * 3);
      const granuleRows = rowGroupRows * (1 + Math.floor(rnd() * 2));
      const count = 1 + Math.floor(rnd() * 40);
      const rows: Row[] = Array.from({ length: count }, () => ({
        n: rnd() < 0.15 ? null : BigInt(Math.floor(rnd() * 30) - 5),
        s: rnd() < 0.15 ? null : pick(strings),
        d: rnd() < 0.1 ? null : rnd() < 0.1 ? Number.NaN : pick([-1.5, 0, -0, 2.25, 7, Infinity]),
        b: rnd() < 0.15 ? null : rnd() < 0.5,
        _key: rnd() < 0.15 ? null : pick(['u1', 'u2', 'u3']),
      }));
      const data = prepare(columns, rows.map((r) => ({ ...r, _key: r._key === null ? null : new TextEncoder().encode(r._key) })));
      const definitions = [
        definition(1, 'minmax', ['n', 'd', 's'], granuleRows),
        definition(2, 'bloom', ['s'], granuleRows),
        definition(3, 'postings', ['n'], granuleRows),
        definition(4, 'postings', ['b'], granuleRows),
        definition(5, 'bloom', ['n', 's'], granuleRows),
        definition(6, 'postings', ['_key', 'b'], granuleRows),
        definition(7, 'minmax', ['_key'], granuleRows),
      ];
      const indexes: BindableIndex[] = definitions.map((d) => ({ definition: d, columns: d.columns.map((c) => resolveIndexColumn(columns, 'avro', c, d.kind)) }));
      const entries = new Map<number, FileEntries>();
      indexes.forEach(({ definition: d, columns: resolved }, position) => {
        const built = buildIndexEntries(d, resolved, data);
        entries.set(position, {
          header: built.find((e) => e.part === HEADER_PART)!.payload,
          bloom: built.find((e) => d.kind === 'bloom' && e.part === BLOOM_PART)?.payload ?? null,
          postings: new Map(d.kind === 'postings' ? built.filter((e) => e.part >= 0).map((e) => [e.part, e.payload]) : []),
          postingBuckets: 4,
        });
      });
      const groups = Array.from({ length: Math.ceil(count / rowGroupRows) }, (_, g) => Math.min(rowGroupRows, count - g * rowGroupRows));
      const leaf = (): Model => {
        const column = pick(['n', 's', 'd', 'b', '_key'] as const);
        const value = (): Value => (column === 'n' ? BigInt(Math.floor(rnd() * 34) - 7) : column === 's' ? pick([...strings, 'zz']) : column === 'd' ? pick([-1.5, 0, 2.25, 3, 7]) : column === 'b' ? rnd() < 0.5 : pick(['u1', 'u2', 'u9']));
        const op = column === 'b' ? pick(['=', 'in'] as const) : pick(['=', '<', '<=', '>', '>=', 'in', 'between'] as const);
        if (op === 'in') return { op, column, values: Array.from({ length: 1 + Math.floor(rnd() * 3) }, value) };
        if (op === 'between') return { op, column, low: value(), high: value() };
        return { op, column, value: value() };
      };
      const node = (depth: number): Model => (depth > 0 && rnd() < 0.5 ? { op: pick(['and', 'or'] as const), items: Array.from({ length: 2 + Math.floor(rnd() * 2) }, () => node(depth - 1)) } : leaf());
      const model = node(3);
      const sql = `SELECT * FROM t WHERE ${sqlOf(model)}`;
      const tokens = tokenize(sql);
      const probes = bindIndexes(predicateTree(tokens, tableReferences(tokens, new Set(['t'])).get('t')![0]!), indexes, new Set(columns.map((c) => c.name)));
      const answers = answerProbes(probes, entries, groups);
      expect(answers.unusable, sql).toEqual(new Map());
      const kept = candidateRowGroups(probes, answers);
      rows.forEach((row, r) => {
        if (evaluate(model, row) === true) expect(kept === null || kept.has(Math.floor(r / rowGroupRows)), `${sql}: row ${r} ${JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`).toBe(true);
      });
      considered += groups.length;
      skipped += kept === null ? 0 : groups.length - kept.size;
    }
    expect(skipped).toBeGreaterThan(considered / 10);
  });

  it('an index whose entries are corrupt, missing or describe other rows answers for no row group of the file', () => {
    const data = prepare(columns, [{ n: 1n, s: 'a', d: 1, b: true, _key: null }, { n: 2n, s: 'b', d: 2, b: false, _key: null }]);
    const d = definition(3, 'postings', ['n'], 1);
    const built = buildIndexEntries(d, d.columns.map((c) => resolveIndexColumn(columns, 'avro', c, 'postings')), data);
    const header = built.find((e) => e.part === HEADER_PART)!.payload;
    const tokens = tokenize('SELECT * FROM t WHERE n = 1');
    const probes = bindIndexes(predicateTree(tokens, 3), [{ definition: d, columns: d.columns.map((c) => resolveIndexColumn(columns, 'avro', c, 'postings')) }], new Set(['n']));
    const postings = new Map(built.filter((e) => e.part >= 0).map((e) => [e.part, e.payload]));
    const good = answerProbes(probes, new Map([[0, { header, bloom: null, postings, postingBuckets: 4 }]]), [1, 1]);
    expect(candidateRowGroups(probes, good)).toEqual(new Set([0]));
    for (const [why, entries, groups] of [
      ['corrupt header', { header: new TextEncoder().encode('{not json'), bloom: null, postings, postingBuckets: 4 }, [1, 1]],
      ['no header', { header: null, bloom: null, postings, postingBuckets: 4 }, [1, 1]],
      ['corrupt postings', { header, bloom: null, postings: new Map([...postings].map(([p]) => [p, new Uint8Array([0xff])])), postingBuckets: 4 }, [1, 1]],
      ['other rows', { header, bloom: null, postings, postingBuckets: 4 }, [1, 1, 1]],
    ] as const) {
      const answers = answerProbes(probes, new Map([[0, entries as FileEntries]]), groups);
      expect(answers.unusable.size, why).toBe(1);
      expect(candidateRowGroups(probes, answers), why).toBeNull();
    }
  });
});
