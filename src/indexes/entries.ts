/**
 * An index's entries for one data file, built from the file's prepared rows, and how a
 * read asks them. Pure: bytes in, bytes out.
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
import { bloomBytesFor, SplitBlockBloomFilter, xxhash64 } from './bloom.js';
import { unknownValue, type KeyType, type KeyValue, type ResolvedColumn, type RowValue } from './columns.js';
import { defaultFalsePositiveRate, defaultPostingBuckets, entryScopes, type EntryScope, type IndexDefinition } from './definition.js';

export const HEADER_PART = -1;
export const BLOOM_PART = 0;

/** One row of `index_entry`. */
export interface IndexEntryRow {
  indexId: bigint;
  scope: EntryScope;
  part: number;
  payload: Uint8Array;
}

/** Bounds of one column in one granule (MINMAX). */
export interface ColumnBounds {
  /** null when no row has a known non-null value (all null, NaN or unknown). */
  min: KeyValue | null;
  max: KeyValue | null;
  nulls: number;
  nans: number;
  /** A row's value could not be known: the granule is never skipped on this column. */
  unknown: boolean;
}

export interface FileIndexHeader {
  rows: number;
  granuleRows: number;
  granules: number;
  /** BLOOM/POSTINGS: granules with a row whose key could not be known. */
  unknown: number[];
  /** MINMAX: per column, per granule. */
  minmax?: ColumnBounds[][];
}

class ByteWriter {
  private buffer = new Uint8Array(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const next = new Uint8Array(Math.max(this.buffer.length * 2, this.length + n));
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buffer[this.length++] = b;
  }

  varint(n: number): void {
    this.room(5);
    while (n >= 0x80) {
      this.buffer[this.length++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buffer[this.length++] = n;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buffer.set(b, this.length);
    this.length += b.length;
  }

  done(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

class ByteReader {
  at = 0;
  constructor(private readonly b: Uint8Array) {}

  get done(): boolean {
    return this.at >= this.b.length;
  }

  varint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const c = this.b[this.at++];
      if (c === undefined) throw new IndexEntryError('index entry ends inside a number');
      n += (c & 0x7f) * scale;
      if (c < 0x80) return n;
      scale *= 128;
    }
  }

  bytes(n: number): Uint8Array {
    if (this.at + n > this.b.length) throw new IndexEntryError('index entry ends inside a value');
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/** An entry that cannot be read: the index is skipped for that read. */
export class IndexEntryError extends Error {
  override name = 'IndexEntryError';
}

const TAG: Record<KeyType, number> = { integer: 1, string: 2, binary: 3, boolean: 4, float: 5 };
const ascii = new TextEncoder();

/** A value's bytes in a key: integers and floats as their decimal text, text and blobs as they are. */
function valueBytes(keyType: KeyType, value: KeyValue): Uint8Array | null {
  if (keyType === 'boolean') return null;
  if (keyType === 'integer') return ascii.encode((value as bigint).toString());
  if (keyType === 'float') return ascii.encode(String(value));
  return value as Uint8Array;
}

function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    length++;
  }
  return length;
}

/**
 * The key of one combination of column values (in the index's column order): per value
 * its type tag, then a boolean's one byte or the length (varint) and bytes of the rest.
 * Built in a Buffer of exactly its size (hot: once per row and index).
 */
export function encodeKey(keyTypes: readonly KeyType[], values: readonly KeyValue[]): Buffer {
  if (keyTypes.length === 1) return encodeOne(keyTypes[0]!, values[0]!);
  const parts: (Uint8Array | null)[] = new Array(keyTypes.length);
  let size = 0;
  for (let c = 0; c < keyTypes.length; c++) {
    const bytes = valueBytes(keyTypes[c]!, values[c]!);
    parts[c] = bytes;
    size += bytes === null ? 2 : 1 + varintLength(bytes.length) + bytes.length;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let c = 0; c < keyTypes.length; c++) at = writeValue(out, at, keyTypes[c]!, values[c]!, parts[c]!);
  return out;
}

/** The key of one value: the common case, without the list of parts. */
function encodeOne(keyType: KeyType, value: KeyValue): Buffer {
  const bytes = valueBytes(keyType, value);
  const out = Buffer.allocUnsafe(bytes === null ? 2 : 1 + varintLength(bytes.length) + bytes.length);
  writeValue(out, 0, keyType, value, bytes);
  return out;
}

/** Writes one value's tag and bytes at `at`; returns where the next one goes. */
function writeValue(out: Buffer, at: number, keyType: KeyType, value: KeyValue, bytes: Uint8Array | null): number {
  out[at++] = TAG[keyType];
  if (bytes === null) {
    out[at++] = value ? 1 : 0;
    return at;
  }
  let n = bytes.length;
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  out.set(bytes, at);
  return at + bytes.length;
}

/** The POSTINGS bucket of a key. */
export function postingBucket(key: Uint8Array, buckets: number): number {
  return Number(xxhash64(key) % BigInt(buckets));
}

function compareValues(keyType: KeyType, a: KeyValue, b: KeyValue): number {
  if (keyType === 'string' || keyType === 'binary') return Buffer.compare(a as Uint8Array, b as Uint8Array);
  if (keyType === 'boolean') return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Compares two values of one key type as DuckDB orders them (bytes for text and blobs; NaN is not passed here). */
export { compareValues };

function granuleCount(rows: number, granuleRows: number): number {
  return Math.ceil(rows / granuleRows);
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
    entry(HEADER_PART, ascii.encode(JSON.stringify(headerJson(header, columns))));
    return entries;
  }
  const keyTypes = columns.map((column) => column.keyType);
  const unknown = new Set<number>();
  const row: KeyValue[] = new Array(columns.length);
  // BLOOM keeps per granule the hashes of its keys (a key inserted twice sets the same
  // bits; the distinct hashes size the filter). POSTINGS keeps each distinct key (by its
  // bytes as a latin1 string: exact) with the granules that hold it, in order.
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
  entry(HEADER_PART, ascii.encode(JSON.stringify(headerJson(header, columns))));
  if (index.kind === 'bloom') {
    const out = new ByteWriter();
    out.varint(granules);
    const fpp = index.falsePositiveRate ?? defaultFalsePositiveRate;
    for (let g = 0; g < granules; g++) {
      const filter = SplitBlockBloomFilter.ofSize(bloomBytesFor(Math.max(1, new Set(lows[g]).size), fpp));
      const high = highs[g]!;
      const low = lows[g]!;
      for (let i = 0; i < high.length; i++) filter.insertHalves(high[i]!, low[i]!);
      out.varint(filter.bytes.length);
      out.bytes(filter.bytes);
    }
    entry(BLOOM_PART, out.done());
    return entries;
  }
  const buckets = index.postingBuckets ?? defaultPostingBuckets;
  const byBucket = new Map<number, number[]>();
  for (let at = 0; at < keys.length; at++) {
    const bucket = postingBucket(keys[at]!, buckets);
    const list = byBucket.get(bucket);
    if (list) list.push(at);
    else byBucket.set(bucket, [at]);
  }
  for (const [bucket, list] of [...byBucket].sort((a, b) => a[0] - b[0])) {
    list.sort((a, b) => Buffer.compare(keys[a]!, keys[b]!));
    const out = new ByteWriter();
    out.varint(list.length);
    for (const at of list) {
      const key = keys[at]!;
      const later = laterGranules.get(at);
      out.varint(key.length);
      out.bytes(key);
      out.varint(1 + (later?.length ?? 0));
      out.varint(firstGranule[at]!);
      let previous = firstGranule[at]!;
      for (const g of later ?? []) {
        out.varint(g - previous);
        previous = g;
      }
    }
    entry(bucket, out.done());
  }
  return entries;
}

function minmaxOf(keyType: KeyType, values: readonly RowValue[], granuleRows: number, granules: number): ColumnBounds[] {
  const out: ColumnBounds[] = Array.from({ length: granules }, () => ({ min: null, max: null, nulls: 0, nans: 0, unknown: false }));
  for (let r = 0; r < values.length; r++) {
    const bounds = out[Math.floor(r / granuleRows)]!;
    const v = values[r]!;
    if (v === null) bounds.nulls++;
    else if (v === unknownValue) bounds.unknown = true;
    else if (typeof v === 'number' && Number.isNaN(v)) bounds.nans++;
    else {
      if (bounds.min === null || compareValues(keyType, v, bounds.min) < 0) bounds.min = v;
      if (bounds.max === null || compareValues(keyType, v, bounds.max) > 0) bounds.max = v;
    }
  }
  return out;
}

type JsonBound = string | number | boolean | null;

function boundJson(keyType: KeyType, value: KeyValue | null): JsonBound {
  if (value === null) return null;
  if (keyType === 'integer') return (value as bigint).toString();
  if (keyType === 'float') return Number.isFinite(value) ? (Object.is(value, -0) ? '-0' : (value as number)) : String(value);
  if (keyType === 'boolean') return value as boolean;
  return Buffer.from(value as Uint8Array).toString('hex');
}

function boundValue(keyType: KeyType, json: JsonBound): KeyValue | null {
  if (json === null) return null;
  if (keyType === 'integer') return BigInt(json as string);
  if (keyType === 'float') return typeof json === 'number' ? json : Number(json);
  if (keyType === 'boolean') return json as boolean;
  return new Uint8Array(Buffer.from(json as string, 'hex'));
}

interface HeaderJson {
  rows: number;
  granuleRows: number;
  granules: number;
  unknown: number[];
  keyTypes: KeyType[];
  minmax?: { min: JsonBound; max: JsonBound; nulls: number; nans: number; unknown: boolean }[][];
}

function headerJson(header: FileIndexHeader, columns: readonly ResolvedColumn[]): HeaderJson {
  const keyTypes = columns.map((column) => column.keyType);
  return {
    rows: header.rows, granuleRows: header.granuleRows, granules: header.granules, unknown: header.unknown, keyTypes,
    ...(header.minmax ? { minmax: header.minmax.map((bounds, c) => bounds.map((b) => ({ ...b, min: boundJson(keyTypes[c]!, b.min), max: boundJson(keyTypes[c]!, b.max) }))) } : {}),
  };
}

/** The header of a file's entries; throws IndexEntryError when it cannot be read. */
export function decodeHeader(payload: Uint8Array): FileIndexHeader {
  let json: HeaderJson;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as HeaderJson;
  } catch (error) {
    throw new IndexEntryError(`index entry header is not readable: ${(error as Error).message}`);
  }
  if (!Number.isInteger(json.rows) || !Number.isInteger(json.granuleRows) || json.granuleRows <= 0 || json.granules !== granuleCount(json.rows, json.granuleRows) || !Array.isArray(json.unknown)) {
    throw new IndexEntryError('index entry header does not describe the file\'s granules');
  }
  return {
    rows: json.rows, granuleRows: json.granuleRows, granules: json.granules, unknown: json.unknown,
    ...(json.minmax ? { minmax: json.minmax.map((bounds, c) => bounds.map((b) => ({ ...b, min: boundValue(json.keyTypes[c]!, b.min), max: boundValue(json.keyTypes[c]!, b.max) }))) } : {}),
  };
}

/** How many granules' filters a BLOOM entry holds (a read checks it against the header). */
export function bloomFilterCount(payload: Uint8Array): number {
  return new ByteReader(payload).varint();
}

/** The granules whose Bloom filter may hold one of `keys` (granules it cannot answer for are not added here). */
export function bloomGranules(payload: Uint8Array, keys: readonly Uint8Array[]): Set<number> {
  const reader = new ByteReader(payload);
  const granules = reader.varint();
  const hashes = keys.map((key) => xxhash64(key));
  const out = new Set<number>();
  for (let g = 0; g < granules; g++) {
    const size = reader.varint();
    if (size === 0 || size % 32 !== 0) throw new IndexEntryError(`bloom filter of granule ${g} has ${size} bytes, not a whole number of 32-byte blocks`);
    const filter = SplitBlockBloomFilter.from(reader.bytes(size));
    if (hashes.some((hash) => filter.mightContainHash(hash))) out.add(g);
  }
  if (!reader.done) throw new IndexEntryError('bloom entry has bytes after its last filter');
  return out;
}

/** The granules of one bucket's postings that hold `key`: exact. */
export function postingGranules(payload: Uint8Array, key: Uint8Array): number[] {
  const reader = new ByteReader(payload);
  const count = reader.varint();
  for (let i = 0; i < count; i++) {
    const candidate = reader.bytes(reader.varint());
    const n = reader.varint();
    const granules: number[] = [];
    let g = 0;
    for (let j = 0; j < n; j++) {
      g += reader.varint();
      granules.push(g);
    }
    const order = Buffer.compare(candidate, key);
    if (order === 0) return granules;
    if (order > 0) return [];
  }
  return [];
}

/**
 * The row groups of a file that index granules cover: granule g is rows
 * [g·granuleRows, (g+1)·granuleRows); `rowGroupRows` are the file's row groups' row counts.
 */
export function rowGroupsOf(granules: Iterable<number>, granuleRows: number, rowGroupRows: readonly number[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const rows of rowGroupRows) {
    starts.push(at);
    at += rows;
  }
  const out = new Set<number>();
  for (const g of granules) {
    const first = g * granuleRows;
    const last = first + granuleRows; // exclusive
    for (let r = 0; r < rowGroupRows.length; r++) {
      const start = starts[r]!;
      const end = start + rowGroupRows[r]!;
      if (start < last && end > first) out.add(r);
    }
  }
  return [...out].sort((a, b) => a - b);
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
