/**
 * A file's index entries (src/indexes/entries.ts) against a naive model written from the
 * issue's definition: granule g is rows [g·G, (g+1)·G) of the file; POSTINGS give, for
 * a key, exactly the granules holding a row with that key; BLOOM never misses a key of its
 * granule; MINMAX bounds hold every value of their granule and are reached by one. A row
 * whose value cannot be known here (a json number with a fraction) marks its granule as
 * never skipped. The rows come from the file builder (fileRows), as indexing feeds them.
 */
import { describe, expect, it } from 'vitest';
import { fileRows, indexResolver } from '../../src/files/files.js';
import { resolveSettings, defaultSettings } from '../../src/table/settings.js';
import type { TableRecord } from '../../src/table/record.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { encoderOf } from '../../src/parquet/index.js';
import { parseIndexColumn, type IndexDefinition, type IndexKind } from '../../src/indexes/definition.js';
import { bloomGranules, BLOOM_PART } from '../../src/indexes/bloom-entries.js';
import { fileIndexEntries, type IndexEntryRow } from '../../src/indexes/entries.js';
import { decodeHeader, HEADER_PART, rowGroupsOf } from '../../src/indexes/header.js';
import { encodeKey, postingBucket } from '../../src/indexes/keys.js';
import { postingGranules } from '../../src/indexes/postings.js';
import { seededRandom } from '../helpers/random.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const table = { tableId: 1n, name: 't', topic: 't', format: 'json', settings: resolveSettings({}) } as unknown as TableRecord;
const schema = initialSchema('json');
const utf8 = new TextEncoder();

interface Made {
  record: KafkaRecord;
  /** DuckDB's `_value->>'$.user'`: text, null, or 'unknown' (a float, whose text DuckDB formats its own way). */
  user: string | null | 'unknown';
  source: string | null;
}

function records(seed: number, count: number): Made[] {
  const random = seededRandom(seed);
  const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
  return Array.from({ length: count }, (_, i) => {
    const roll = random();
    let value: string | null;
    let user: Made['user'];
    if (roll < 0.6) {
      user = users[Math.floor(random() * users.length)]!;
      value = JSON.stringify({ user, n: i });
    } else if (roll < 0.75) {
      const n = Math.floor(random() * 50) - 25;
      user = String(n);
      value = `{"user": ${n}}`;
    } else if (roll < 0.8) {
      user = 'unknown';
      value = `{"user": ${(random() * 10).toFixed(2)}1}`;
    } else if (roll < 0.85) {
      user = null;
      value = 'not json';
    } else if (roll < 0.9) {
      user = null;
      value = null;
    } else {
      user = null;
      value = JSON.stringify({ other: 1 });
    }
    const source = random() < 0.7 ? ['app', 'web', 'batch'][Math.floor(random() * 3)]! : null;
    return {
      user,
      source,
      record: {
        offset: BigInt(1000 + 2 * i),
        timestamp: Date.UTC(2026, 0, 1) + Math.floor(random() * 3_600_000),
        key: random() < 0.1 ? null : utf8.encode(`k${Math.floor(random() * 300)}`),
        value: value === null ? null : utf8.encode(value),
        headers: source === null ? [['other', utf8.encode('x')]] : [['source', utf8.encode(source)], ['source', utf8.encode('second')]],
      },
    };
  });
}

function index(indexId: bigint, kind: IndexKind, columns: string[], granuleRows: number): IndexDefinition {
  return { indexId, tableId: 1n, name: `i${indexId}`, kind, columns: columns.map(parseIndexColumn), scope: 'history', granuleRows, falsePositiveRate: 0.01, postingBuckets: 16, state: 'active' };
}

function part(entries: IndexEntryRow[], indexId: bigint, p: number): Uint8Array | undefined {
  return entries.find((e) => e.indexId === indexId && e.part === p)?.payload;
}

/** The model: per key text, the granules holding it. */
function granulesByKey(made: Made[], granuleRows: number, keyOf: (m: Made) => string | null): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  made.forEach((m, row) => {
    const key = keyOf(m);
    if (key === null) return;
    const set = out.get(key) ?? new Set<number>();
    set.add(Math.floor(row / granuleRows));
    out.set(key, set);
  });
  return out;
}

describe('index entries of one file', () => {
  const granuleRows = 50;
  const made = records(7, 1_000);
  const rows = fileRows(table, schema, 0, made.map((m) => m.record), encoderVersion);
  const indexes = [
    index(1n, 'postings', ['_value.user'], granuleRows),
    index(2n, 'bloom', ['_key'], granuleRows),
    index(3n, 'postings', ['_value.user', '_headers.source'], granuleRows),
    index(4n, 'minmax', ['_timestamp', '_offset'], granuleRows),
  ];
  const entries = fileIndexEntries(indexes, indexResolver(table, schema), rows);
  const granules = Math.ceil(made.length / granuleRows);

  it('POSTINGS on a json field give exactly the granules holding each value; granules with a value of unknown text are listed as never skipped', () => {
    const model = granulesByKey(made, granuleRows, (m) => (m.user === 'unknown' ? null : m.user));
    const header = decodeHeader(part(entries, 1n, HEADER_PART)!);
    expect(header.granules).toBe(granules);
    const unknown = [...new Set(made.flatMap((m, row) => (m.user === 'unknown' ? [Math.floor(row / granuleRows)] : [])))].sort((a, b) => a - b);
    expect(header.unknown).toEqual(unknown);
    expect(unknown.length).toBeGreaterThan(0);
    for (const text of [...model.keys(), 'user-absent', '99']) {
      const key = encodeKey(['string'], [utf8.encode(text)]);
      const payload = part(entries, 1n, postingBucket(key, 16));
      const found = payload ? postingGranules(payload, key) : [];
      expect(found, text).toEqual([...(model.get(text) ?? [])].sort((a, b) => a - b));
    }
  });

  it('composite POSTINGS key the pair of values, and a header by its first value of that name', () => {
    const model = granulesByKey(made, granuleRows, (m) => (m.user === 'unknown' || m.user === null || m.source === null ? null : JSON.stringify([m.user, m.source])));
    expect(model.size).toBeGreaterThan(20);
    for (const [pair, expected] of model) {
      const [user, source] = JSON.parse(pair) as [string, string];
      const key = encodeKey(['string', 'binary'], [utf8.encode(user), utf8.encode(source)]);
      expect(postingGranules(part(entries, 3n, postingBucket(key, 16))!, key)).toEqual([...expected].sort((a, b) => a - b));
    }
    const second = encodeKey(['string', 'binary'], [utf8.encode('user-1'), utf8.encode('second')]);
    const payload = part(entries, 3n, postingBucket(second, 16));
    expect(payload ? postingGranules(payload, second) : []).toEqual([]);
  });

  it('BLOOM on _key holds every key of its granule', () => {
    const model = granulesByKey(made, granuleRows, (m) => (m.record.key === null ? null : Buffer.from(m.record.key).toString('latin1')));
    const payload = part(entries, 2n, BLOOM_PART)!;
    for (const [text, expected] of model) {
      const key = encodeKey(['binary'], [new Uint8Array(Buffer.from(text, 'latin1'))]);
      const found = bloomGranules(payload, [key]);
      for (const g of expected) expect(found.has(g), `${text} in granule ${g}`).toBe(true);
    }
  });

  it('MINMAX bounds hold every value of their granule and are reached', () => {
    const header = decodeHeader(part(entries, 4n, HEADER_PART)!);
    for (let g = 0; g < granules; g++) {
      const slice = made.slice(g * granuleRows, (g + 1) * granuleRows).map((m) => m.record);
      const times = slice.map((r) => BigInt(r.timestamp));
      const offsets = slice.map((r) => r.offset);
      const [timeBounds, offsetBounds] = [header.minmax![0]![g]!, header.minmax![1]![g]!];
      expect([timeBounds.min, timeBounds.max]).toEqual([times.reduce((a, b) => (b < a ? b : a)), times.reduce((a, b) => (b > a ? b : a))]);
      expect([offsetBounds.min, offsetBounds.max]).toEqual([offsets[0], offsets.at(-1)]);
      expect(timeBounds.nulls + timeBounds.nans).toBe(0);
    }
  });

  it('a corrupt entry is refused as unreadable, never read as an empty answer', () => {
    const bloom = part(entries, 2n, BLOOM_PART)!;
    expect(() => bloomGranules(bloom.subarray(0, bloom.length - 5), [utf8.encode('x')])).toThrow(/IndexEntryError|ends inside|whole number/);
    expect(() => decodeHeader(utf8.encode('{"rows": 3'))).toThrow(/not readable/);
  });

  it('index granules map to the row groups they cover', () => {
    expect(rowGroupsOf([0], 20_000, [10_000, 10_000, 10_000, 5])).toEqual([0, 1]);
    expect(rowGroupsOf([1], 20_000, [10_000, 10_000, 10_000, 5])).toEqual([2, 3]);
    expect(rowGroupsOf([0, 3], 10_000, [10_000, 10_000, 10_000, 5])).toEqual([0, 3]);
  });
});
