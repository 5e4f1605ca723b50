/**
 * An index's entries for one data file, built from the file's prepared rows. Pure. Each
 * part has its module, with how a read asks it: header.ts, bloom-entries.ts, postings.ts
 * (keys.ts: the key of a row; entry-bytes.ts: the byte layout).
 *
 * Index granule g covers rows [g·granuleRows, (g+1)·granuleRows) of the file, so with
 * granule_rows a multiple of the file's row_group_rows it is a run of whole row groups:
 * what a read rebuilds (`rowGroupsOf`). Entries, by part:
 *   -1  header (JSON): rows, granule size and count, the granules with a row whose value
 *       could not be known (never skipped), MINMAX bounds per column and granule
 *    0  BLOOM: per granule, a split-block Bloom filter of its distinct keys, sized for
 *       the index's false-positive rate
 *    b  POSTINGS: the keys with hash(key) mod posting_buckets = b, sorted by their bytes,
 *       each with the granules holding it: exact
 * A key is the row's values of the index's columns, each tagged with its type and
 * length-prefixed (`encodeKey`), so a composite key is one byte string. A row with a
 * null value in any column has no key: `=` and IN never match null.
 */
import type { PreparedData } from '../parquet/values.js';
import { xxhash64 } from './bloom.js';
import { BLOOM_PART, bloomEntry } from './bloom-entries.js';
import { unknownValue, type KeyValue, type ResolvedColumn, type RowValue } from './columns.js';
import { defaultFalsePositiveRate, defaultPostingBuckets, entryScopes, type EntryScope, type IndexDefinition } from './definition.js';
import { encodeHeader, granuleCount, HEADER_PART, minmaxOf, type FileIndexHeader } from './header.js';
import { encodeKey } from './keys.js';
import { postingEntries } from './postings.js';

/** One row of `index_entry`. */
export interface IndexEntryRow {
  indexId: bigint;
  scope: EntryScope;
  part: number;
  payload: Uint8Array;
}

/** Entries of `index` for one file's rows: the header, then the kind's parts. */
export function buildIndexEntries(index: IndexDefinition, columns: readonly ResolvedColumn[], data: PreparedData, scope: EntryScope = 'history'): IndexEntryRow[] {
  const rows = data.rowCount;
  const granules = granuleCount(rows, index.granuleRows);
  const values = columns.map((column) => column.values(data));
  const header: FileIndexHeader = { rows, granuleRows: index.granuleRows, granules, unknown: [] };
  const entries: IndexEntryRow[] = [];
  const entry = (part: number, payload: Uint8Array): void => void entries.push({ indexId: index.indexId, scope, part, payload });
  if (index.kind === 'minmax') {
    header.minmax = columns.map((column, c) => minmaxOf(column.keyType, values[c]!, index.granuleRows, granules));
    entry(HEADER_PART, encodeHeader(header, columns));
    return entries;
  }
  const keyTypes = columns.map((column) => column.keyType);
  const unknown = new Set<number>();
  const row: KeyValue[] = new Array(columns.length);
  // BLOOM keeps per granule its keys' hashes as upper and lower halves (a key inserted twice
  // sets the same bits; the distinct lower halves size the filter: two keys of one granule
  // share them with odds of about 1 in 2^32 per pair, which only makes a filter a block
  // smaller). POSTINGS keeps each distinct key (by its bytes as a latin1 string: exact)
  // with its first granule, and the later granules of the few keys in several.
  const highs: number[][] = index.kind === 'bloom' ? Array.from({ length: granules }, () => []) : [];
  const lows: number[][] = index.kind === 'bloom' ? Array.from({ length: granules }, () => []) : [];
  const positions = new Map<string, number>();
  const keys: Buffer[] = [];
  const firstGranule: number[] = [];
  const laterGranules = new Map<number, number[]>();
  for (let r = 0; r < rows; r++) {
    const g = Math.floor(r / index.granuleRows);
    let skip = false;
    for (let c = 0; c < columns.length; c++) {
      const v: RowValue = values[c]![r]!;
      if (v === null) {
        skip = true;
        break;
      }
      if (v === unknownValue) {
        unknown.add(g);
        skip = true;
        break;
      }
      row[c] = v;
    }
    if (skip) continue;
    const key = encodeKey(keyTypes, row);
    if (index.kind === 'bloom') {
      const hash = xxhash64(key);
      highs[g]!.push(Number(hash >> 32n));
      lows[g]!.push(Number(hash & 0xffffffffn));
      continue;
    }
    const name = key.toString('latin1');
    const at = positions.get(name);
    if (at === undefined) {
      positions.set(name, keys.length);
      keys.push(key);
      firstGranule.push(g);
      continue;
    }
    const later = laterGranules.get(at);
    const last = later ? later[later.length - 1]! : firstGranule[at]!;
    if (last === g) continue;
    if (later) later.push(g);
    else laterGranules.set(at, [g]);
  }
  header.unknown = [...unknown].sort((a, b) => a - b);
  entry(HEADER_PART, encodeHeader(header, columns));
  if (index.kind === 'bloom') {
    entry(BLOOM_PART, bloomEntry(highs, lows, index.falsePositiveRate ?? defaultFalsePositiveRate));
    return entries;
  }
  for (const [bucket, payload] of postingEntries(keys, firstGranule, laterGranules, index.postingBuckets ?? defaultPostingBuckets)) entry(bucket, payload);
  return entries;
}

/**
 * Entries of every index in `indexes` for one file's rows. A column the file's schema
 * does not resolve (it cannot happen for a column that existed at CREATE INDEX, since
 * columns are never removed) gives a granule that is never skipped, not a stopped partition.
 */
export function fileIndexEntries(indexes: readonly IndexDefinition[], resolve: (index: IndexDefinition) => ResolvedColumn[], data: PreparedData): IndexEntryRow[] {
  const out: IndexEntryRow[] = [];
  for (const index of indexes) {
    for (const scope of entryScopes(index.scope)) out.push(...buildIndexEntries(index, resolve(index), data, scope));
  }
  return out;
}
