/**
 * A range of committed records as a few flat arrays, so that they cross to a build worker
 * (src/files/pool.ts) with their bytes moved, not cloned: offsets, timestamps, one buffer
 * of every key, value, header name and header value, and their places in it. They are
 * packed from the records as columns (`recordColumns`: no view, header list or bigint
 * made per record), and unpacked as columns over that one buffer (issue 27): the same
 * bytes in the same places, so the files built from them are the same. Records whose
 * columns need the records beside them (an offset beyond 2^53, a header name that is not
 * well-formed text) cross as records. Pure.
 */
import { recordColumns } from '../kafka/record-batch.js';
import type { ByteSpanColumn, FileRecords, KafkaRecord, SelfContainedColumns } from '../kafka/record.js';

export interface PackedRecords {
  count: number;
  /** Offsets as numbers; null when one lies beyond 2^53 (then `bigOffsets`). */
  offsets: Float64Array | null;
  bigOffsets: BigInt64Array | null;
  timestamps: Float64Array;
  /** Every key, value, header name (UTF-8, unless `headerNames`) and header value, one after the other. */
  bytes: Uint8Array;
  /** Per record: key start, key length (-1: null), value start, value length (-1: null). */
  places: Int32Array;
  /** Record i's headers are entries [headerStarts[i], headerStarts[i + 1]). */
  headerStarts: Int32Array;
  /** Per header: name start, name length, value start, value length (-1: null). */
  headerPlaces: Int32Array;
  /** The header names as text, only when one is not well-formed text (the names are then not in `bytes`). */
  headerNames: string[] | null;
  /** Each record's `readError` (cloned, not moved), when some record has one. */
  readErrors: (string | null)[] | null;
}

export function packRecords(records: FileRecords): PackedRecords {
  const columns = recordColumns(records);
  const { count, key, value, headerValues } = columns;
  const list = 'count' in records ? undefined : records;
  // a column that needs its records has them: records that are not columns
  const names = columns.headerNames;
  let size = 0;
  for (const column of [key, value, headerValues, names]) if (column) for (const length of column.lengths) if (length > 0) size += length;
  const headers = columns.headerStarts[count]!;
  // the arrays recordColumns made for records are this pack's to move; columns given are the caller's
  const own = <T extends Float64Array | Int32Array>(array: T): T => (list ? array : (array.slice() as T));
  const packed: PackedRecords = {
    count,
    offsets: columns.offsets && own(columns.offsets),
    bigOffsets: columns.offsets ? null : BigInt64Array.from(list!, (record) => record.offset),
    timestamps: own(columns.timestamps),
    bytes: new Uint8Array(size),
    places: new Int32Array(count * 4),
    headerStarts: own(columns.headerStarts),
    headerPlaces: new Int32Array(headers * 4),
    headerNames: names ? null : list!.flatMap((record) => record.headers.map(([name]) => name)),
    readErrors: columns.readErrors ?? null,
  };
  let at = 0;
  const put = (column: ByteSpanColumn, i: number, places: Int32Array, where: number): void => {
    const length = column.lengths[i]!;
    places[where] = at;
    places[where + 1] = length;
    if (length <= 0) return;
    const start = column.starts[i]!;
    packed.bytes.set(column.sources[column.source[i]!]!.subarray(start, start + length), at);
    at += length;
  };
  for (let r = 0; r < count; r++) {
    put(key, r, packed.places, r * 4);
    put(value, r, packed.places, r * 4 + 2);
  }
  for (let h = 0; h < headers; h++) {
    if (names) put(names, h, packed.headerPlaces, h * 4);
    put(headerValues, h, packed.headerPlaces, h * 4 + 2);
  }
  return packed;
}

/** The buffers `packRecords` made, to hand to postMessage's transfer list. */
export function packedBuffers(packed: PackedRecords): ArrayBuffer[] {
  const buffers = [packed.timestamps.buffer, packed.bytes.buffer, packed.places.buffer, packed.headerStarts.buffer, packed.headerPlaces.buffer];
  if (packed.offsets) buffers.push(packed.offsets.buffer);
  if (packed.bigOffsets) buffers.push(packed.bigOffsets.buffer);
  return buffers as ArrayBuffer[];
}

/** The records again: columns over `packed.bytes`, or records of views into it where columns would need them. */
export function unpackRecords(packed: PackedRecords): FileRecords {
  const all = Buffer.from(packed.bytes.buffer, packed.bytes.byteOffset, packed.bytes.byteLength);
  if (packed.offsets && !packed.headerNames) {
    const columns: SelfContainedColumns = {
      count: packed.count,
      offsets: packed.offsets,
      timestamps: packed.timestamps,
      key: spanColumn(all, packed.places, 0, 4),
      value: spanColumn(all, packed.places, 2, 4),
      headerStarts: packed.headerStarts,
      headerNames: spanColumn(all, packed.headerPlaces, 0, 4),
      headerValues: spanColumn(all, packed.headerPlaces, 2, 4),
    };
    if (packed.readErrors) columns.readErrors = packed.readErrors;
    return columns;
  }
  const part = (places: Int32Array, where: number): Buffer | null => (places[where + 1]! < 0 ? null : all.subarray(places[where]!, places[where]! + places[where + 1]!));
  const records: KafkaRecord[] = new Array(packed.count);
  for (let r = 0; r < packed.count; r++) {
    const headers: [string, Buffer | null][] = [];
    for (let h = packed.headerStarts[r]!; h < packed.headerStarts[r + 1]!; h++) {
      headers.push([packed.headerNames ? packed.headerNames[h]! : all.toString('utf8', packed.headerPlaces[h * 4]!, packed.headerPlaces[h * 4]! + packed.headerPlaces[h * 4 + 1]!), part(packed.headerPlaces, h * 4 + 2)]);
    }
    const offset = packed.offsets ? BigInt(packed.offsets[r]!) : packed.bigOffsets![r]!;
    const readError = packed.readErrors?.[r];
    records[r] = { offset, timestamp: packed.timestamps[r]!, key: part(packed.places, r * 4), value: part(packed.places, r * 4 + 2), headers, ...(readError ? { readError } : {}) };
  }
  return records;
}

/** Every `stride`-th pair of `places` from `first`: (start, length) spans in `bytes`. */
function spanColumn(bytes: Uint8Array, places: Int32Array, first: number, stride: number): ByteSpanColumn {
  const n = places.length / stride;
  const starts = new Int32Array(n);
  const lengths = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    starts[i] = places[i * stride + first]!;
    lengths[i] = places[i * stride + first + 1]!;
  }
  return { sources: [bytes], source: new Int32Array(n), starts, lengths };
}
