/**
 * Part -1 of an index's entries for a file, the header (JSON): rows, granule size and
 * count, the granules with a row whose value could not be known (never skipped), and for
 * MINMAX the bounds per column and granule; and which row groups granules cover. Pure.
 */
import { unknownValue, type KeyType, type KeyValue, type ResolvedColumn, type RowValue } from './columns.js';
import { IndexEntryError } from './entry-bytes.js';
import { compareValues } from './keys.js';

export const HEADER_PART = -1;

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

export function granuleCount(rows: number, granuleRows: number): number {
  return Math.ceil(rows / granuleRows);
}

/** MINMAX bounds of one column's values, per granule. */
export function minmaxOf(keyType: KeyType, values: readonly RowValue[], granuleRows: number, granules: number): ColumnBounds[] {
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

/** The header as its entry's bytes. */
export function encodeHeader(header: FileIndexHeader, columns: readonly ResolvedColumn[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(headerJson(header, columns)));
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

