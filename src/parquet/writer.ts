/**
 * Our own Parquet writer (encoders v2 and v3; v3 is v2 with cut bounds that are copies,
 * see `WriterSettings.boundsRaisedInPlace`). v1's hyparquet-writer spent over half of its
 * encode time outside compression: per-page statistics on every value, a dictionary
 * attempt per column, and copies through a doubling buffer (profile in docs/measurements.md,
 * "Encoder v2: the figures"). Our files need much less than a general writer offers, so this one
 * does only that, in one pass per column chunk into one reused page buffer:
 *
 * - data pages v1 (the kind every reader takes), PLAIN values, levels as RLE runs
 *   (runs only: levels are few, and the page is compressed after), no dictionary;
 * - pages of about `pageBytes` uncompressed and at most `pageRows` rows, cut only where
 *   a row starts, so each page holds whole rows and the offset index can name its first;
 * - footer statistics min_value/max_value in the column's order (TypeDefinedOrder, with
 *   `column_orders`), null and NaN counts; byte-array bounds longer than
 *   `statisticsBytes` are cut (min to a prefix, max to a prefix raised by one), marked
 *   inexact; UTF-8 columns are cut on a character, so a reader decoding a bound as text
 *   never meets a broken character. The catalog's statistics stay exact (statistics.ts);
 * - the page index (ColumnIndex + OffsetIndex) on every column chunk, laid out after the
 *   row groups; float and double chunks get no ColumnIndex: how a page of only NaN is
 *   bounded there is not settled between readers; nor does a decimal stored as plain
 *   fixed bytes (`wideDecimalAsFixed`), which gets no footer min/max either;
 * - Parquet field_id from `fieldIds` on each schema node named there: top-level columns
 *   and leaves only, unless `groupFieldIds` (v5 on) lets the nested groups have theirs.
 *
 * Everything here is plain JavaScript over typed arrays and depends on nothing but the
 * input, so the same input gives the same bytes; the compressor is a parameter, pinned
 * by the encoder version that chooses it (encoder.ts).
 */
import type { SchemaElement } from 'hyparquet-writer';
import { type Column, type ColumnType, type FieldType, ICEBERG_DECIMAL_PRECISION, isScalar, leafCount, leaves, parquetSchema, type ScalarType } from './schema.js';
import { compareBytes, compareFloats } from './stat-text.js';
import { CompactType, CompactWriter } from './thrift.js';
import { ByteSpans, KeyValueLists, type PreparedData, SafeInt64s, StructVectors } from './values.js';
import { PARQUET_MAGIC } from './footer.js';

export type Codec = 'UNCOMPRESSED' | 'SNAPPY' | 'ZSTD' | 'LZ4_RAW';

export interface WriterSettings {
  codec: Codec;
  /** Compresses one page into the codec's raw format; unused for UNCOMPRESSED. */
  compress: (page: Uint8Array) => Uint8Array;
  /** Target uncompressed size of a data page. */
  pageBytes: number;
  /**
   * Rows per data page at most. Every column's pages then start at the same rows (unless
   * a page reaches `pageBytes` first), so a reader that skips pages by one column's page
   * index (a filter on `_offset` or `_timestamp`) can skip the same rows of the others.
   */
  pageRows: number;
  /** Byte-array statistics (footer and page index) longer than this are cut. */
  statisticsBytes: number;
  /**
   * Encoder 2's cut bounds, kept only so that its files rebuild to their bytes: it cut a
   * bound with `bytes.slice()`, which for a Node Buffer (a Kafka record's key, value or
   * header, a decoder's bytes field) is a view of the value, and raised the max in place,
   * so the value itself changed (issue 25) and every later bound read the raised bytes.
   * Here the raises go to a copy of each value, read back as encoder 2 read the value, so
   * the bytes are encoder 2's and the values stay untouched. Never set for a new encoder.
   */
  boundsRaisedInPlace?: boolean;
  /**
   * field_id on a nested group node (a struct in a struct, a list's element group) too,
   * as Iceberg's own writer puts it: from encoder v5 on (issue 47; engines that map nested
   * fields by id, Trino and Daft, lost them). Before, only top-level columns and leaves had
   * one; their files keep exactly that whatever `fieldIds` names.
   */
  groupFieldIds?: boolean;
  /**
   * A UTC timestamp column in milliseconds is stored as TIMESTAMP(MICROS, true), its values
   * times 1000 (encoder v5 on): Iceberg's `timestamptz`, which Trino reads and refuses in
   * milliseconds. The column's statistics (`writtenStatistics`, the catalog's) stay in
   * the column's own unit; only the file's values, footer and page index are in micros.
   */
  utcMillisAsMicros?: boolean;
  /**
   * A local (not UTC) millisecond timestamp column too, as TIMESTAMP(MICROS, false), its
   * values times 1000 (encoder v6 on): Iceberg's `timestamp` is micros, and an engine that
   * takes the file's unit from Iceberg's mapping must not meet milliseconds.
   */
  localMillisAsMicros?: boolean;
  /**
   * A JSON text column stored as Parquet STRING (encoder v6 on): Iceberg declares it
   * `string`, whose Parquet form is STRING, and polars refused the JSON annotation
   * (`incoming: Binary != target: String`). The DuckLake face still calls it `json`.
   */
  jsonAsString?: boolean;
  /**
   * A decimal above precision 38 stored as a plain FIXED_LEN_BYTE_ARRAY, without the
   * DECIMAL annotation (encoder v6 on): Iceberg has no such decimal and declares it
   * `fixed[L]`, whose Parquet form is plain fixed bytes; each value's bytes stay the same
   * (big-endian two's complement). A reader orders plain fixed bytes as unsigned bytes,
   * not in the decimal order its bounds are taken in (a negative value's bytes sort after
   * every positive one's), so the file bounds it nowhere: no min/max in the chunk's
   * statistics, no ColumnIndex (OffsetIndex only; null counts kept). The catalog's
   * statistics (`writtenStatistics`) stay decimal values.
   */
  wideDecimalAsFixed?: boolean;
}

export interface WriteOptions {
  rowGroupRows: number;
  /** field_id per schema node, keyed by its path joined with '.'. */
  fieldIds: Readonly<Record<string, number>>;
  /** Written in this order. */
  keyValueMetadata: readonly { key: string; value: string }[];
  createdBy: string;
}

const codecIds: Record<Codec, number> = { UNCOMPRESSED: 0, SNAPPY: 1, ZSTD: 6, LZ4_RAW: 7 };
const physicalIds = { BOOLEAN: 0, INT32: 1, INT64: 2, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 } as const;
type Physical = keyof typeof physicalIds;
const PLAIN = 0;
const RLE = 3;
const DATA_PAGE = 0;

/** One primitive column of the file and where its values come from. */
interface LeafPlan {
  path: string[];
  type: ScalarType;
  physical: Physical;
  typeLength: number;
  maxDef: number;
  maxRep: number;
  /** Top-level column it belongs to. */
  column: number;
  /** Its index among the top-level column's leaves (shredding order). */
  within: number;
  /** What the file holds is the value times this: 1000 for a millisecond timestamp stored in micros, else 1. */
  scale: 1 | 1000;
  /** Whether the file bounds it (footer min/max, ColumnIndex): not a decimal stored as plain fixed bytes (`wideDecimalAsFixed`). */
  fileBounds: boolean;
}

/** One row group's entries of a leaf: levels, and the value of each entry that has one. */
interface LeafChunk {
  count: number;
  /** An array, or a vector of byte spans or safe-integer int64s (values.ts): its values are written from where they lie. */
  values: ArrayLike<unknown> | ByteSpans | SafeInt64s;
  /** Entry i's value is values[offset + i]; null or undefined where it has none. */
  offset: number;
  def: Uint8Array | null;
  rep: Uint8Array | null;
}

interface PageBounds {
  min: unknown;
  max: unknown;
  nulls: number;
  nans: number;
  /** Whether the page holds any value that is a bound (not null, not NaN). */
  bounded: boolean;
}

export interface ChunkMeta {
  leaf: LeafPlan;
  start: number;
  dataBytes: number;
  uncompressedBytes: number;
  count: number;
  nulls: number;
  nans: number;
  min: unknown;
  max: unknown;
  pages: { offset: number; size: number; firstRow: number; bounds: PageBounds }[];
  columnIndex?: { offset: number; length: number };
  offsetIndex?: { offset: number; length: number };
}

/** The parts of a file in order, joined once at the end. */
class Parts {
  readonly list: Uint8Array[] = [];
  offset = 0;
  push(bytes: Uint8Array): void {
    this.list.push(bytes);
    this.offset += bytes.byteLength;
  }
}

export function joinParts(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** A page buffer reused across pages and files: only compressed pages are kept. */
let scratch = new Uint8Array(1 << 20);
let scratchView = new DataView(scratch.buffer);
function reserve(bytes: number): void {
  if (bytes <= scratch.length) return;
  scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
  scratchView = new DataView(scratch.buffer);
}

/**
 * The file as its parts in order (the last two are the metadata and its length + magic,
 * i.e. the footer): indexing only hashes them and keeps the footer, so the whole file is
 * joined into one buffer only when its bytes are served (`joinParts`).
 */
export function writeParquet(data: PreparedData, options: WriteOptions, settings: WriterSettings): readonly Uint8Array[] {
  return assembleParquet(data, encodeRowGroups(data, options.rowGroupRows, settings), options, settings);
}

/** Every row group of the file, `rowGroupRows` rows each (the last one the rest), in order. */
export function encodeRowGroups(data: PreparedData, rowGroupRows: number, settings: WriterSettings): EncodedRowGroup[] {
  const groups: EncodedRowGroup[] = [];
  for (let start = 0; start < data.rowCount; start += rowGroupRows) {
    groups.push(encodeRowGroup(data, start, Math.min(start + rowGroupRows, data.rowCount), settings));
  }
  return groups;
}

/**
 * One row group's column chunks, encoded on their own (a row group depends on nothing
 * before it), so row groups can be encoded anywhere, e.g. on worker threads, and
 * assembled in order: byte offsets in `chunks` count from the group's first byte.
 */
export interface EncodedRowGroup {
  rows: number;
  parts: Uint8Array[];
  chunks: ChunkMeta[];
}

export function encodeRowGroup(data: PreparedData, start: number, end: number, settings: WriterSettings): EncodedRowGroup {
  const plans = leafPlans(data.columns, storedSchema(data.columns, settings), settings);
  const parts = new Parts();
  const chunks: ChunkMeta[] = [];
  data.columns.forEach((column, c) => {
    const own = plans.filter((p) => p.column === c);
    const values = data.arrays[c]!;
    const leafChunks = isScalar(column.type)
      ? [flatChunk(column, values as ArrayLike<unknown> | ByteSpans | SafeInt64s, start, end)]
      : values instanceof KeyValueLists ? shredKeyValueLists(values, start, end)
        : values instanceof StructVectors ? structChunks(column, values, start, end) : shred(column, values as readonly unknown[], start, end);
    own.forEach((plan, k) => chunks.push(writeChunk(parts, plan, leafChunks[k]!, settings)));
  });
  return { rows: end - start, parts: parts.list, chunks };
}

/** The file from its row groups in order: their bytes, the page index, the footer. */
export function assembleParquet(data: Pick<PreparedData, 'columns' | 'rowCount'>, encoded: readonly EncodedRowGroup[], options: WriteOptions, settings: WriterSettings): readonly Uint8Array[] {
  const schema = storedSchema(data.columns, settings);
  const plans = leafPlans(data.columns, schema, settings);
  const parts = new Parts();
  parts.push(PARQUET_MAGIC);
  const groups = encoded.map((group) => {
    const base = parts.offset;
    for (const part of group.parts) parts.push(part);
    const chunks = group.chunks.map((chunk) => ({ ...chunk, start: chunk.start + base, pages: chunk.pages.map((page) => ({ ...page, offset: page.offset + base })) }));
    return { rows: group.rows, chunks };
  });
  // one for the page index and the footer: encoder 2's footer read what its page index raised
  const bounds = new Bounds(settings);
  const index = new CompactWriter();
  for (const group of groups) {
    for (const chunk of group.chunks) {
      if (chunk.leaf.physical === 'FLOAT' || chunk.leaf.physical === 'DOUBLE' || !chunk.leaf.fileBounds) continue;
      writeColumnIndex(index, chunk, bounds);
      const bytes = index.take();
      chunk.columnIndex = { offset: parts.offset, length: bytes.length };
      parts.push(bytes);
    }
  }
  for (const group of groups) {
    for (const chunk of group.chunks) {
      writeOffsetIndex(index, chunk);
      const bytes = index.take();
      chunk.offsetIndex = { offset: parts.offset, length: bytes.length };
      parts.push(bytes);
    }
  }
  const meta = new CompactWriter();
  writeFileMetaData(meta, schema, plans, groups, data.rowCount, options, settings, bounds);
  const metadata = meta.take();
  parts.push(metadata);
  const tail = new Uint8Array(8);
  new DataView(tail.buffer).setUint32(0, metadata.length, true);
  tail.set(PARQUET_MAGIC, 4);
  parts.push(tail);
  return parts.list;
}

function physicalOf(element: SchemaElement): Physical {
  const type = element.type;
  if (!type || !(type in physicalIds)) throw new Error(`no physical type for schema element ${element.name}`);
  return type as Physical;
}

/** Whether a leaf of this type is stored in micros, its values times 1000 (`utcMillisAsMicros`, `localMillisAsMicros`). */
const millisAsMicros = (type: ScalarType, settings: WriterSettings): boolean =>
  type.kind === 'timestamp' && type.unit === 'millis' && (type.utc ? settings.utcMillisAsMicros === true : settings.localMillisAsMicros === true);

/** The type a column is stored as: millisecond timestamps in micros, JSON text as a string, where the settings say so. */
function storedType(type: ColumnType, settings: WriterSettings): ColumnType {
  if (type.kind === 'list') return { kind: 'list', element: { ...type.element, type: storedType(type.element.type, settings) } };
  if (type.kind === 'struct') return { kind: 'struct', fields: type.fields.map((field) => ({ ...field, type: storedType(field.type, settings) })) };
  if (type.kind === 'timestamp' && millisAsMicros(type, settings)) return { kind: 'timestamp', unit: 'micros', utc: type.utc };
  if (type.kind === 'json' && settings.jsonAsString) return { kind: 'string' };
  return type;
}

/** Whether a leaf of this type is stored as plain fixed bytes, without the DECIMAL annotation (`wideDecimalAsFixed`). */
const decimalAsFixed = (type: ScalarType, settings: WriterSettings): boolean =>
  type.kind === 'decimal' && type.precision > ICEBERG_DECIMAL_PRECISION && settings.wideDecimalAsFixed === true;

/** The file's Parquet schema (parquetSchema of the columns as stored). */
function storedSchema(columns: readonly Column[], settings: WriterSettings): SchemaElement[] {
  const changesTypes = settings.utcMillisAsMicros || settings.localMillisAsMicros || settings.jsonAsString;
  const schema = parquetSchema(changesTypes ? columns.map((column) => ({ ...column, type: storedType(column.type, settings) })) : columns);
  if (!settings.wideDecimalAsFixed) return schema;
  // the column model has no fixed type: the decimal's element loses its annotation (its physical type and length are already fixed bytes)
  return schema.map((element) =>
    element.logical_type?.type === 'DECIMAL' && element.logical_type.precision > ICEBERG_DECIMAL_PRECISION
      ? { name: element.name, type: element.type, type_length: element.type_length, repetition_type: element.repetition_type }
      : element,
  );
}

/** Leaves in schema order, with their levels, matched to parquetSchema's elements. */
function leafPlans(columns: readonly Column[], schema: readonly SchemaElement[], settings: WriterSettings): LeafPlan[] {
  const plans: LeafPlan[] = [];
  const elements = schema.filter((e) => e.type !== undefined);
  const all = leaves(columns);
  columns.forEach((column, c) => {
    let within = 0;
    const walk = (path: string[], field: FieldType, def: number, rep: number): void => {
      const d = def + (field.nullable ? 1 : 0);
      const { type } = field;
      if (type.kind === 'list') walk([...path, 'list', 'element'], type.element, d + 1, rep + 1);
      else if (type.kind === 'struct') for (const f of type.fields) walk([...path, f.name], f, d, rep);
      else {
        const element = elements[plans.length]!;
        const leaf = all[plans.length]!;
        if (leaf.path.join('.') !== path.join('.')) throw new Error(`leaf order mismatch at ${path.join('.')}`);
        const scale = millisAsMicros(type, settings) ? 1000 : 1;
        const fileBounds = !decimalAsFixed(type, settings);
        plans.push({ path, type, physical: physicalOf(element), typeLength: element.type_length ?? 0, maxDef: d, maxRep: rep, column: c, within: within++, scale, fileBounds });
      }
    };
    walk([column.name], column, 0, 0);
  });
  return plans;
}

function flatChunk(column: Column, values: ArrayLike<unknown> | ByteSpans | SafeInt64s, start: number, end: number): LeafChunk {
  const count = end - start;
  let def: Uint8Array | null = null;
  if (column.nullable) def = presence(values, start, end);
  return { count, values, offset: start, def, rep: null };
}

/** Per value of [start, end): 1 where it holds one, 0 where it is null (whatever holds the values). */
function presence(values: ArrayLike<unknown> | ByteSpans | SafeInt64s, start: number, end: number): Uint8Array {
  const present = new Uint8Array(end - start);
  if (values instanceof ByteSpans) for (let i = start; i < end; i++) present[i - start] = values.lengths[i]! < 0 ? 0 : 1;
  else if (values instanceof SafeInt64s) for (let i = start; i < end; i++) present[i - start] = Number.isNaN(values.numbers[i]) ? 0 : 1;
  else for (let i = start; i < end; i++) present[i - start] = values[i] === null ? 0 : 1;
  return present;
}

/**
 * `shred` of a KeyValueLists column (`list<struct<key, value>>`, neither list nor element
 * null): per row one entry per pair (repetition 0 for the first, 1 after), or one empty
 * entry for an empty list; the key's definition level is 1, the value's 2 (1 when null).
 */
function shredKeyValueLists(lists: KeyValueLists, start: number, end: number): LeafChunk[] {
  const { starts } = lists;
  let count = 0;
  for (let row = start; row < end; row++) count += Math.max(1, starts[row + 1]! - starts[row]!);
  const rep = new Uint8Array(count);
  const keyDef = new Uint8Array(count);
  const valueDef = new Uint8Array(count);
  const keys = entrySpans(count);
  const values = entrySpans(count);
  let at = 0;
  for (let row = start; row < end; row++) {
    const first = starts[row]!;
    const last = starts[row + 1]!;
    if (first === last) {
      keys.lengths[at] = values.lengths[at] = -1;
      at++;
      continue;
    }
    for (let e = first; e < last; e++, at++) {
      rep[at] = e === first ? 0 : 1;
      keyDef[at] = 1;
      copySpan(lists.keys, e, keys, at);
      copySpan(lists.values, e, values, at);
      valueDef[at] = values.lengths[at]! < 0 ? 1 : 2;
    }
  }
  return [
    { count, values: new ByteSpans(lists.keys.sources, keys.source, keys.starts, keys.lengths), offset: 0, def: keyDef, rep },
    { count, values: new ByteSpans(lists.values.sources, values.source, values.starts, values.lengths), offset: 0, def: valueDef, rep },
  ];
}

function entrySpans(count: number): { source: Int32Array; starts: Int32Array; lengths: Int32Array } {
  return { source: new Int32Array(count), starts: new Int32Array(count), lengths: new Int32Array(count) };
}

function copySpan(from: ByteSpans, i: number, to: { source: Int32Array; starts: Int32Array; lengths: Int32Array }, at: number): void {
  to.source[at] = from.source[i]!;
  to.starts[at] = from.starts[i]!;
  to.lengths[at] = from.lengths[i]!;
}

/** Growable level and value lists of one leaf while a nested column is shredded. */
class Shredded {
  def: number[] = [];
  rep: number[] = [];
  values: unknown[] = [];
  add(rep: number, def: number, value: unknown): void {
    this.rep.push(rep);
    this.def.push(def);
    this.values.push(value);
  }
}

/**
 * Dremel shredding of a nested column's rows into its leaves' levels. `def` counts the
 * optional and repeated nodes present above, `rep` is the level the next entry carries,
 * `depth` the repeated nodes entered. An absent (null, or empty list) node gives one
 * entry to every leaf under it.
 */
function shred(column: Column, rows: readonly unknown[], start: number, end: number): LeafChunk[] {
  const outs = Array.from({ length: leafCount(column) }, () => new Shredded());
  const absent = (at: number, n: number, rep: number, def: number): void => {
    for (let k = at; k < at + n; k++) outs[k]!.add(rep, def, null);
  };
  const visit = (field: FieldType, value: unknown, def: number, rep: number, depth: number, at: number): void => {
    if (field.nullable) {
      if (value === null || value === undefined) return absent(at, leafCount(field), rep, def);
      def++;
    }
    const { type } = field;
    if (type.kind === 'list') {
      const list = value as readonly unknown[];
      if (list.length === 0) return absent(at, leafCount(type.element), rep, def);
      for (let i = 0; i < list.length; i++) visit(type.element, list[i], def + 1, i === 0 ? rep : depth + 1, depth + 1, at);
    } else if (type.kind === 'struct') {
      const record = value as Record<string, unknown>;
      let k = at;
      for (const f of type.fields) {
        visit(f, Object.hasOwn(record, f.name) ? record[f.name] : null, def, rep, depth, k);
        k += leafCount(f);
      }
    } else outs[at]!.add(rep, def, value);
  };
  for (let row = start; row < end; row++) visit(column, rows[row], 0, 0, 0, 0);
  return outs.map((s) => ({ count: s.values.length, values: s.values, offset: 0, def: Uint8Array.from(s.def), rep: Uint8Array.from(s.rep) }));
}

/**
 * `shred` of a struct of scalar fields given as StructVectors: the same levels (a null
 * struct 0; else the struct's level, and the field's if it holds a value), each field's
 * values read where they lie.
 */
function structChunks(column: Column, struct: StructVectors, start: number, end: number): LeafChunk[] {
  const { fields } = column.type as Extract<ColumnType, { kind: 'struct' }>;
  const count = end - start;
  const structLevel = column.nullable ? 1 : 0;
  return fields.map((field, f) => {
    const values = struct.fields[f]!;
    const present = field.nullable ? presence(values, start, end) : null;
    const def = new Uint8Array(count);
    for (let i = 0; i < count; i++) if (!struct.nulls[start + i]) def[i] = structLevel + (present ? present[i]! : 0);
    return { count, values, offset: start, def, rep: null };
  });
}

function fixedWidth(physical: Physical, typeLength: number): number {
  switch (physical) {
    case 'INT32':
    case 'FLOAT':
      return 4;
    case 'INT64':
    case 'DOUBLE':
      return 8;
    case 'FIXED_LEN_BYTE_ARRAY':
      return typeLength;
    default:
      return 0;
  }
}

function writeChunk(parts: Parts, leaf: LeafPlan, chunk: LeafChunk, settings: WriterSettings): ChunkMeta {
  const meta: ChunkMeta = {
    leaf, start: parts.offset, dataBytes: 0, uncompressedBytes: 0, count: chunk.count,
    nulls: 0, nans: 0, min: undefined, max: undefined, pages: [],
  };
  const { values, offset, def, rep, count } = chunk;
  const { maxDef } = leaf;
  const width = fixedWidth(leaf.physical, leaf.typeLength);
  const spanLengths = values instanceof ByteSpans ? values.lengths : null;
  const compare = comparatorOf(leaf.physical);
  let rowsBefore = 0;
  let i = 0;
  do {
    const first = i;
    let valueBytes = 0;
    let present = 0;
    let rows = 0;
    for (; i < count; i++) {
      if (rep === null || rep[i] === 0) {
        if (i > first && (valueBytes >= settings.pageBytes || rows === settings.pageRows)) break;
        rows++;
      }
      if (def !== null && def[i] !== maxDef) continue;
      present++;
      if (width) valueBytes += width;
      else if (spanLengths) valueBytes += 4 + spanLengths[offset + i]!;
      else if (leaf.physical === 'BYTE_ARRAY') valueBytes += 4 + ((values as ArrayLike<unknown>)[offset + i] as Uint8Array).length;
    }
    if (leaf.physical === 'BOOLEAN') valueBytes = Math.ceil(present / 8);
    const bounds = writePage(parts, leaf, chunk, first, i, valueBytes, settings, meta);
    meta.pages.at(-1)!.firstRow = rowsBefore;
    meta.pages.at(-1)!.bounds = bounds;
    if (rep === null) rowsBefore += i - first;
    else for (let k = first; k < i; k++) if (rep[k] === 0) rowsBefore++;
    meta.nulls += bounds.nulls;
    meta.nans += bounds.nans;
    if (bounds.bounded) {
      if (meta.min === undefined || compare(bounds.min, meta.min) < 0) meta.min = bounds.min;
      if (meta.max === undefined || compare(bounds.max, meta.max) > 0) meta.max = bounds.max;
    }
  } while (i < count);
  return meta;
}

/** Writes levels and values of entries [from, to) into the scratch buffer, then the page. */
function writePage(parts: Parts, leaf: LeafPlan, chunk: LeafChunk, from: number, to: number, valueBytes: number, settings: WriterSettings, meta: ChunkMeta): PageBounds {
  const { values, offset, def, rep } = chunk;
  const levelBound = (to - from) * 6 + 8;
  reserve(valueBytes + (rep ? levelBound : 0) + (def ? levelBound : 0));
  let at = 0;
  if (rep && leaf.maxRep > 0) at = writeLevels(rep, from, to, leaf.maxRep, at);
  if (def && leaf.maxDef > 0) at = writeLevels(def, from, to, leaf.maxDef, at);
  const bounds = writeValues(leaf, values, offset, def, from, to, at);
  const size = at + valueBytes;
  const page = scratch.subarray(0, size);
  const body = settings.codec === 'UNCOMPRESSED' ? page.slice() : settings.compress(page);
  const header = new CompactWriter();
  header.message(() => {
    header.i32(1, DATA_PAGE);
    header.i32(2, size);
    header.i32(3, body.length);
    header.struct(5, () => {
      header.i32(1, to - from);
      header.i32(2, PLAIN);
      header.i32(3, RLE);
      header.i32(4, RLE);
    });
  });
  const head = header.take();
  const pageOffset = parts.offset;
  parts.push(head);
  parts.push(body);
  meta.dataBytes += head.length + body.length;
  meta.uncompressedBytes += head.length + size;
  meta.pages.push({ offset: pageOffset, size: head.length + body.length, firstRow: 0, bounds });
  return bounds;
}

/** RLE runs (no bit-packed groups) of levels [from, to), after a 4-byte length. */
function writeLevels(levels: Uint8Array, from: number, to: number, max: number, at: number): number {
  const start = at;
  at += 4;
  const byteWidth = Math.ceil(Math.max(1, 32 - Math.clz32(max)) / 8);
  let i = from;
  while (i < to) {
    const level = levels[i]!;
    let run = 1;
    while (i + run < to && levels[i + run] === level) run++;
    let header = run * 2;
    while (header >= 0x80) {
      scratch[at++] = (header & 0x7f) | 0x80;
      header >>>= 7;
    }
    scratch[at++] = header;
    scratch[at++] = level;
    for (let b = 1; b < byteWidth; b++) scratch[at++] = 0;
    i += run;
  }
  scratchView.setUint32(start, at - start - 4, true);
  return at;
}

function writeValues(leaf: LeafPlan, vector: LeafChunk['values'], offset: number, def: Uint8Array | null, from: number, to: number, at: number): PageBounds {
  const { maxDef, physical } = leaf;
  if (leaf.scale !== 1) return writeScaledInt64s(leaf, vector, offset, def, from, to, at);
  if (vector instanceof ByteSpans) return writeSpans(vector, offset, def, maxDef, from, to, at);
  if (vector instanceof SafeInt64s) return writeSafeInt64s(vector, offset, def, maxDef, from, to, at);
  const values = vector;
  const view = scratchView;
  let nulls = 0;
  let nans = 0;
  let min: unknown;
  let max: unknown;
  switch (physical) {
    case 'BYTE_ARRAY': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as Uint8Array;
        view.setUint32(at, v.length, true);
        scratch.set(v, at + 4);
        at += 4 + v.length;
        if (min === undefined) min = max = v;
        else if (compareBytes(v, min as Uint8Array) < 0) min = v;
        else if (compareBytes(v, max as Uint8Array) > 0) max = v;
      }
      break;
    }
    case 'INT32': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const raw = values[offset + i];
        const v = typeof raw === 'bigint' ? Number(raw) : (raw as number);
        view.setInt32(at, v, true);
        at += 4;
        if (min === undefined || v < (min as number)) min = v;
        if (max === undefined || v > (max as number)) max = v;
      }
      break;
    }
    case 'INT64': {
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as bigint;
        view.setBigInt64(at, v, true);
        at += 8;
        if (min === undefined || v < (min as bigint)) min = v;
        if (max === undefined || v > (max as bigint)) max = v;
      }
      break;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      const double = physical === 'DOUBLE';
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as number;
        if (double) view.setFloat64(at, v, true);
        else view.setFloat32(at, v, true);
        at += double ? 8 : 4;
        if (Number.isNaN(v)) nans++;
        else {
          if (min === undefined || compareFloats(v, min as number) < 0) min = v;
          if (max === undefined || compareFloats(v, max as number) > 0) max = v;
        }
      }
      break;
    }
    case 'BOOLEAN': {
      let bit = 0;
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as boolean;
        if (bit === 0) scratch[at] = 0;
        if (v) scratch[at]! |= 1 << bit;
        if (++bit === 8) {
          bit = 0;
          at++;
        }
        if (min === undefined || (!v && min)) min = v;
        if (max === undefined || (v && !max)) max = v;
      }
      break;
    }
    case 'FIXED_LEN_BYTE_ARRAY': {
      const length = leaf.typeLength;
      for (let i = from; i < to; i++) {
        if (def !== null && def[i] !== maxDef) {
          nulls++;
          continue;
        }
        const v = values[offset + i] as bigint;
        writeBigEndian(scratch, at, v, length);
        at += length;
        if (min === undefined || v < (min as bigint)) min = v;
        if (max === undefined || v > (max as bigint)) max = v;
      }
      break;
    }
  }
  return { min, max, nulls, nans, bounded: min !== undefined };
}

/** writeValues of BYTE_ARRAY spans: each copied from where it lies, the bounds compared there too; only the bounds become arrays. */
function writeSpans(spans: ByteSpans, offset: number, def: Uint8Array | null, maxDef: number, from: number, to: number, at: number): PageBounds {
  const { sources, source, starts, lengths } = spans;
  const view = scratchView;
  let nulls = 0;
  let min = -1;
  let max = -1;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const k = offset + i;
    const length = lengths[k]!;
    const bytes = sources[source[k]!]!;
    const start = starts[k]!;
    view.setUint32(at, length, true);
    at += 4;
    if (length <= 16) for (let b = 0; b < length; b++) scratch[at + b] = bytes[start + b]!;
    else scratch.set(bytes.subarray(start, start + length), at);
    at += length;
    if (min < 0) min = max = k;
    else if (compareSpans(spans, k, min) < 0) min = k;
    else if (compareSpans(spans, k, max) > 0) max = k;
  }
  if (min < 0) return { min: undefined, max: undefined, nulls, nans: 0, bounded: false };
  return { min: spans.at(min), max: spans.at(max), nulls, nans: 0, bounded: true };
}

/** compareBytes of spans a and b, where they lie. */
function compareSpans(spans: ByteSpans, a: number, b: number): number {
  const x = spans.sources[spans.source[a]!]!;
  const y = spans.sources[spans.source[b]!]!;
  const xAt = spans.starts[a]!;
  const yAt = spans.starts[b]!;
  const xLength = spans.lengths[a]!;
  const yLength = spans.lengths[b]!;
  const n = xLength < yLength ? xLength : yLength;
  for (let i = 0; i < n; i++) {
    const p = x[xAt + i]!;
    const q = y[yAt + i]!;
    if (p !== q) return p < q ? -1 : 1;
  }
  return xLength < yLength ? -1 : xLength > yLength ? 1 : 0;
}

const TWO_TO_32 = 2 ** 32;

/** writeValues of int64s held as safe-integer numbers: two's complement in two words, no bigint but the bounds. */
function writeSafeInt64s(vector: SafeInt64s, offset: number, def: Uint8Array | null, maxDef: number, from: number, to: number, at: number): PageBounds {
  const { numbers } = vector;
  const view = scratchView;
  let nulls = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const v = numbers[offset + i]!;
    view.setUint32(at, v >>> 0, true); // ToUint32 is v modulo 2^32: the low word of any safe integer
    view.setInt32(at + 4, Math.floor(v / TWO_TO_32), true);
    at += 8;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) return { min: undefined, max: undefined, nulls, nans: 0, bounded: false };
  return { min: BigInt(min), max: BigInt(max), nulls, nans: 0, bounded: true };
}

/** A value that the file's stored unit cannot hold (a UTC millisecond timestamp beyond ±292,277 years in micros). */
export class OutOfStoredRangeError extends Error {}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** The largest magnitude whose product with 1000 is still a safe integer. */
const SAFE_TIMES_1000 = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

/**
 * writeValues of an int64 leaf stored times `leaf.scale` (a millisecond timestamp in
 * micros): the bounds are of the values as given, in the column's own unit.
 */
function writeScaledInt64s(leaf: LeafPlan, vector: LeafChunk['values'], offset: number, def: Uint8Array | null, from: number, to: number, at: number): PageBounds {
  const { maxDef, scale } = leaf;
  const numbers = vector instanceof SafeInt64s ? vector.numbers : undefined;
  const values = vector as ArrayLike<unknown>;
  const view = scratchView;
  let nulls = 0;
  // bounds of safe-integer numbers as numbers (no bigint per value), of bigints as bigints
  let minNumber = Infinity;
  let maxNumber = -Infinity;
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (let i = from; i < to; i++) {
    if (def !== null && def[i] !== maxDef) {
      nulls++;
      continue;
    }
    const raw = numbers ? numbers[offset + i]! : (values[offset + i] as bigint | number);
    if (typeof raw === 'number' && raw <= SAFE_TIMES_1000 && raw >= -SAFE_TIMES_1000) {
      const v = raw * scale;
      view.setUint32(at, v >>> 0, true);
      view.setInt32(at + 4, Math.floor(v / TWO_TO_32), true);
    } else {
      const v = BigInt(raw) * BigInt(scale);
      if (v < INT64_MIN || v > INT64_MAX) throw new OutOfStoredRangeError(`${leaf.path.join('.')}: ${raw} times ${scale} leaves int64: the value has no form in the unit the file stores`);
      view.setBigInt64(at, v, true);
    }
    at += 8;
    if (typeof raw === 'number') {
      if (raw < minNumber) minNumber = raw;
      if (raw > maxNumber) maxNumber = raw;
    } else {
      if (min === undefined || raw < min) min = raw;
      if (max === undefined || raw > max) max = raw;
    }
  }
  if (minNumber !== Infinity) {
    if (min === undefined || BigInt(minNumber) < min) min = BigInt(minNumber);
    if (max === undefined || BigInt(maxNumber) > max) max = BigInt(maxNumber);
  }
  return { min, max, nulls, nans: 0, bounded: min !== undefined };
}

/** Two's complement, big-endian, `length` bytes: the FIXED_LEN_BYTE_ARRAY form of a decimal. */
function writeBigEndian(into: Uint8Array, at: number, value: bigint, length: number): void {
  let v = BigInt.asUintN(length * 8, value);
  for (let k = length - 1; k >= 0; k--) {
    into[at + k] = Number(v & 0xffn);
    v >>= 8n;
  }
}


function comparatorOf(physical: Physical): (a: unknown, b: unknown) => number {
  switch (physical) {
    case 'BYTE_ARRAY':
      return (a, b) => compareBytes(a as Uint8Array, b as Uint8Array);
    case 'FLOAT':
    case 'DOUBLE':
      return (a, b) => compareFloats(a as number, b as number);
    case 'BOOLEAN':
      return (a, b) => Number(a) - Number(b);
    case 'INT32':
      return (a, b) => (a as number) - (b as number);
    default:
      return (a, b) => ((a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0);
  }
}

const isUtf8 = (type: ScalarType): boolean => type.kind === 'string' || type.kind === 'json';

/**
 * Bounds as Parquet stores them (PLAIN bytes of the value), byte arrays cut to `limit`.
 * A cut bound is a new array: a bound never shares memory with the value it bounds, so
 * raising it cannot change the value, nor anything that reads the value after the writer
 * (statistics, index entries, a query's rows).
 */
class Bounds {
  private readonly limit: number;
  /** Encoder 2 only (`WriterSettings.boundsRaisedInPlace`): each Buffer value as its raises left it. */
  private readonly raised: Map<Uint8Array, Uint8Array> | null;
  constructor(settings: WriterSettings) {
    this.limit = settings.statisticsBytes;
    this.raised = settings.boundsRaisedInPlace ? new Map() : null;
  }

  value(leaf: LeafPlan, value: unknown, isMax: boolean): { bytes: Uint8Array; exact: boolean } {
    const { limit } = this;
    switch (leaf.physical) {
      case 'BYTE_ARRAY': {
        const bytes = this.asRead(value as Uint8Array);
        if (bytes.length <= limit) return { bytes, exact: true };
        const utf8 = isUtf8(leaf.type);
        const cut = isMax ? this.raisedPrefix(value as Uint8Array, bytes, utf8) : this.prefix(value as Uint8Array, bytes, utf8 ? charStart(bytes, limit) : limit);
        return cut ? { bytes: cut, exact: false } : { bytes, exact: true };
      }
      case 'INT32': {
        const out = new Uint8Array(4);
        new DataView(out.buffer).setInt32(0, value as number, true);
        return { bytes: out, exact: true };
      }
      case 'INT64': {
        const out = new Uint8Array(8);
        new DataView(out.buffer).setBigInt64(0, (value as bigint) * BigInt(leaf.scale), true);
        return { bytes: out, exact: true };
      }
      case 'FLOAT':
      case 'DOUBLE': {
        // the specification's rule for zeros: a min of ±0 is written -0, a max of ±0 as +0
        let v = value as number;
        if (v === 0) v = isMax ? 0 : -0;
        const out = new Uint8Array(leaf.physical === 'DOUBLE' ? 8 : 4);
        const view = new DataView(out.buffer);
        if (leaf.physical === 'DOUBLE') view.setFloat64(0, v, true);
        else view.setFloat32(0, v, true);
        return { bytes: out, exact: true };
      }
      case 'BOOLEAN':
        return { bytes: new Uint8Array([value ? 1 : 0]), exact: true };
      case 'FIXED_LEN_BYTE_ARRAY': {
        const out = new Uint8Array(leaf.typeLength);
        writeBigEndian(out, 0, value as bigint, leaf.typeLength);
        return { bytes: out, exact: true };
      }
    }
  }

  /** The value's bytes as a bound reads them: the value itself, or under encoder 2 its raised copy. */
  private asRead(value: Uint8Array): Uint8Array {
    return this.raised && Buffer.isBuffer(value) ? (this.raised.get(value) ?? value) : value;
  }

  /**
   * The first `end` bytes of the value, `bytes` being the value as read. A copy; under
   * encoder 2 a Buffer value gave a view, here a view of its raised copy (made now).
   */
  private prefix(value: Uint8Array, bytes: Uint8Array, end: number): Uint8Array {
    if (this.raised && Buffer.isBuffer(value)) {
      let copy = this.raised.get(value);
      if (!copy) this.raised.set(value, (copy = new Uint8Array(value)));
      return copy.subarray(0, end);
    }
    return new Uint8Array(bytes.subarray(0, end));
  }

  /**
   * An upper bound of at most `limit` bytes: a prefix whose last unit is raised by one (a
   * byte below 0xFF; for UTF-8 a character below U+10FFFF, skipping the surrogates), so
   * that it sorts after every value that starts with the prefix. null when no unit can be
   * raised (all 0xFF bytes): the value is then kept whole.
   */
  private raisedPrefix(value: Uint8Array, bytes: Uint8Array, utf8: boolean): Uint8Array | null {
    if (!utf8) {
      for (let end = this.limit; end > 0; end--) {
        if (bytes[end - 1]! < 0xff) {
          const out = this.prefix(value, bytes, end);
          out[end - 1]!++;
          return out;
        }
      }
      return null;
    }
    let end = charStart(bytes, this.limit);
    while (end > 0) {
      const start = charStart(bytes, end - 1);
      const cp = new TextDecoder().decode(bytes.subarray(start, end)).codePointAt(0)!;
      if (cp < 0x10ffff) {
        const raised = encoder.encode(String.fromCodePoint(cp + 1 === 0xd800 ? 0xe000 : cp + 1));
        const out = new Uint8Array(start + raised.length);
        out.set(bytes.subarray(0, start));
        out.set(raised, start);
        return out;
      }
      end = start;
    }
    return null;
  }
}

/** Start of the UTF-8 character that holds byte `at` (at most 3 steps back). */
function charStart(bytes: Uint8Array, at: number): number {
  while (at > 0 && (bytes[at]! & 0xc0) === 0x80) at--;
  return at;
}

const encoder = new TextEncoder();

function writeColumnIndex(w: CompactWriter, chunk: ChunkMeta, cut: Bounds): void {
  const { leaf, pages } = chunk;
  const bounds = pages.map((p) =>
    p.bounds.bounded
      ? { min: cut.value(leaf, p.bounds.min, false).bytes, max: cut.value(leaf, p.bounds.max, true).bytes, lo: p.bounds.min, hi: p.bounds.max }
      : null,
  );
  w.message(() => {
    w.list(1, CompactType.True, bounds, (b) => w.boolValue(b === null));
    w.list(2, CompactType.Binary, bounds, (b) => w.binaryValue(b ? b.min : new Uint8Array(0)));
    w.list(3, CompactType.Binary, bounds, (b) => w.binaryValue(b ? b.max : new Uint8Array(0)));
    w.i32(4, boundaryOrder(leaf, bounds.filter((b) => b !== null)));
    w.list(5, CompactType.I64, pages, (p) => w.i64Value(p.bounds.nulls));
  });
}

/** ASCENDING (1) or DESCENDING (2) when the pages' bounds are, else UNORDERED (0). */
function boundaryOrder(leaf: LeafPlan, bounds: { min: Uint8Array; max: Uint8Array; lo: unknown; hi: unknown }[]): number {
  // byte arrays are compared as written (possibly cut), other types by value
  const compare = leaf.physical === 'BYTE_ARRAY' ? (a: unknown, b: unknown) => compareBytes(a as Uint8Array, b as Uint8Array) : comparatorOf(leaf.physical);
  const lo = (b: (typeof bounds)[number]) => (leaf.physical === 'BYTE_ARRAY' ? b.min : b.lo);
  const hi = (b: (typeof bounds)[number]) => (leaf.physical === 'BYTE_ARRAY' ? b.max : b.hi);
  let ascending = true;
  let descending = true;
  for (let k = 1; k < bounds.length; k++) {
    const a = bounds[k - 1]!;
    const b = bounds[k]!;
    if (compare(lo(a), lo(b)) > 0 || compare(hi(a), hi(b)) > 0) ascending = false;
    if (compare(lo(a), lo(b)) < 0 || compare(hi(a), hi(b)) < 0) descending = false;
  }
  return ascending ? 1 : descending ? 2 : 0;
}

function writeOffsetIndex(w: CompactWriter, chunk: ChunkMeta): void {
  w.message(() => {
    w.list(1, CompactType.Struct, chunk.pages, (p) =>
      w.structValue(() => {
        w.i64(1, p.offset);
        w.i32(2, p.size);
        w.i64(3, p.firstRow);
      }),
    );
  });
}

const repetitionIds = { REQUIRED: 0, OPTIONAL: 1, REPEATED: 2 } as const;
const convertedIds: Record<string, number> = {
  UTF8: 0, MAP: 1, MAP_KEY_VALUE: 2, LIST: 3, ENUM: 4, DECIMAL: 5, DATE: 6, TIME_MILLIS: 7, TIME_MICROS: 8,
  TIMESTAMP_MILLIS: 9, TIMESTAMP_MICROS: 10, JSON: 19,
};
const unitIds = { MILLIS: 1, MICROS: 2, NANOS: 3 } as const;

function writeLogicalType(w: CompactWriter, logical: NonNullable<SchemaElement['logical_type']>): void {
  w.struct(10, () => {
    switch (logical.type) {
      case 'STRING':
        return w.emptyStruct(1);
      case 'LIST':
        return w.emptyStruct(3);
      case 'DECIMAL':
        return w.struct(5, () => {
          w.i32(1, logical.scale);
          w.i32(2, logical.precision);
        });
      case 'DATE':
        return w.emptyStruct(6);
      case 'TIMESTAMP':
        return w.struct(8, () => {
          w.bool(1, logical.isAdjustedToUTC);
          w.struct(2, () => w.emptyStruct(unitIds[logical.unit]));
        });
      case 'JSON':
        return w.emptyStruct(12);
      default:
        throw new Error(`logical type ${logical.type} is not written by this writer`);
    }
  });
}

function writeSchemaElement(w: CompactWriter, element: SchemaElement, fieldId: number | undefined): void {
  w.structValue(() => {
    if (element.type) w.i32(1, physicalIds[element.type as Physical]);
    if (element.type_length !== undefined) w.i32(2, element.type_length);
    if (element.repetition_type) w.i32(3, repetitionIds[element.repetition_type]);
    w.binary(4, element.name);
    if (element.num_children !== undefined) w.i32(5, element.num_children);
    // JSON text columns carry converted type JSON beside logical type JSON: the column
    // mapping's UTF8 (which v1 needs for hyparquet-writer) is refused as a mismatch by
    // arrow-rs readers (DataFusion), and this writer keeps the text as given anyway
    const converted = element.logical_type?.type === 'JSON' ? 'JSON' : element.converted_type;
    if (converted) {
      const id = convertedIds[converted];
      if (id === undefined) throw new Error(`converted type ${converted} is not written by this writer`);
      w.i32(6, id);
    }
    if (element.scale !== undefined) w.i32(7, element.scale);
    if (element.precision !== undefined) w.i32(8, element.precision);
    if (fieldId !== undefined) w.i32(9, fieldId);
    if (element.logical_type) writeLogicalType(w, element.logical_type);
  });
}

/**
 * The path of each element of the flattened schema (root first, as ''), joined with '.',
 * and whether it is a nested group (neither a top-level column nor a leaf).
 */
function elementPaths(schema: readonly SchemaElement[]): { path: string; nestedGroup: boolean }[] {
  const paths = [{ path: '', nestedGroup: false }];
  let at = 1;
  const walk = (prefix: string, top: boolean): void => {
    const element = schema[at++]!;
    const path = prefix ? `${prefix}.${element.name}` : element.name;
    paths.push({ path, nestedGroup: !top && (element.num_children ?? 0) > 0 });
    for (let child = 0; child < (element.num_children ?? 0); child++) walk(path, false);
  };
  for (let column = 0; column < (schema[0]!.num_children ?? 0); column++) walk('', true);
  return paths;
}

function writeFileMetaData(
  w: CompactWriter, schema: readonly SchemaElement[], plans: readonly LeafPlan[], groups: readonly { rows: number; chunks: ChunkMeta[] }[],
  rowCount: number, options: WriteOptions, settings: WriterSettings, bounds: Bounds,
): void {
  const paths = elementPaths(schema);
  const ids = options.fieldIds;
  w.message(() => {
    w.i32(1, 2);
    w.list(2, CompactType.Struct, schema.map((element, k) => ({ element, ...paths[k]! })), ({ element, path, nestedGroup }) =>
      writeSchemaElement(w, element, path && Object.hasOwn(ids, path) && (settings.groupFieldIds || !nestedGroup) ? ids[path] : undefined),
    );
    w.i64(3, rowCount);
    w.list(4, CompactType.Struct, groups.map((g, ordinal) => ({ ...g, ordinal })), (group) =>
      w.structValue(() => {
        w.list(1, CompactType.Struct, group.chunks, (chunk) => writeColumnChunk(w, chunk, settings, bounds));
        w.i64(2, group.chunks.reduce((n, c) => n + c.uncompressedBytes, 0));
        w.i64(3, group.rows);
        w.i64(5, group.chunks[0]?.start ?? 4);
        w.i64(6, group.chunks.reduce((n, c) => n + c.dataBytes, 0));
        w.i16(7, group.ordinal);
      }),
    );
    if (options.keyValueMetadata.length > 0) {
      w.list(5, CompactType.Struct, options.keyValueMetadata, (kv) =>
        w.structValue(() => {
          w.binary(1, kv.key);
          w.binary(2, kv.value);
        }),
      );
    }
    w.binary(6, options.createdBy);
    w.list(7, CompactType.Struct, plans, () => w.structValue(() => w.emptyStruct(1)));
  });
}

function writeColumnChunk(w: CompactWriter, chunk: ChunkMeta, settings: WriterSettings, bounds: Bounds): void {
  const { leaf } = chunk;
  w.structValue(() => {
    w.i64(2, chunk.start);
    w.struct(3, () => {
      w.i32(1, physicalIds[leaf.physical]);
      const encodings = leaf.maxDef > 0 || leaf.maxRep > 0 ? [PLAIN, RLE] : [PLAIN];
      w.list(2, CompactType.I32, encodings, (e) => w.i32Value(e));
      w.list(3, CompactType.Binary, leaf.path, (p) => w.binaryValue(p));
      w.i32(4, codecIds[settings.codec]);
      w.i64(5, chunk.count);
      w.i64(6, chunk.uncompressedBytes);
      w.i64(7, chunk.dataBytes);
      w.i64(9, chunk.start);
      w.struct(12, () => writeStatisticsFields(w, chunk, bounds));
    });
    if (chunk.offsetIndex) {
      w.i64(4, chunk.offsetIndex.offset);
      w.i32(5, chunk.offsetIndex.length);
    }
    if (chunk.columnIndex) {
      w.i64(6, chunk.columnIndex.offset);
      w.i32(7, chunk.columnIndex.length);
    }
  });
}

function writeStatisticsFields(w: CompactWriter, chunk: ChunkMeta, bounds: Bounds): void {
  const { leaf } = chunk;
  w.i64(3, chunk.nulls);
  if (chunk.min !== undefined && leaf.fileBounds) {
    const max = bounds.value(leaf, chunk.max, true);
    const min = bounds.value(leaf, chunk.min, false);
    w.binary(5, max.bytes);
    w.binary(6, min.bytes);
    w.bool(7, max.exact);
    w.bool(8, min.exact);
  }
  if (leaf.physical === 'FLOAT' || leaf.physical === 'DOUBLE') w.i64(9, chunk.nans);
}
