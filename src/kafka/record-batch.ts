/**
 * Pure: the records of a Kafka record batch (batch-header.ts reads the batch).
 * `appendRecords` decompresses one batch (batch-decompress.ts) and makes its records, whose
 * keys, values and header values are views into the decompressed bytes (or into the
 * response, uncompressed): nothing is copied. `recordColumns` turns records into columns
 * without making a key, value or header object. Records and columns are one module: both
 * read a batch's bytes through one cursor (module state that the varint readers share and
 * V8 inlines), and columns read the views' places, which nothing else sees.
 *
 * A record: length varint (bytes after it), attributes int8, timestampDelta varlong,
 * offsetDelta varint, keyLength varint (-1: null), key, valueLength varint (-1: null),
 * value, headerCount varint, then per header keyLength varint, key (UTF-8),
 * valueLength varint (-1: null), value. Varints are zigzag-encoded base-128, least
 * significant group first (protobuf's sint32/sint64).
 */
import { isUtf8 } from 'node:buffer';
import { CorruptRecordBatchError } from './batch-errors.js';
import { batchRecordBytes } from './batch-decompress.js';
import { batchLastOffset, type BatchSource, COMPRESSION_CODEC_MASK, type RecordBatch, TIMESTAMP_TYPE_LOG_APPEND } from './batch-header.js';
import type { ByteSpanColumn, FileRecords, KafkaRecord, RecordColumns } from './record.js';
import { unreadableRecords } from './unreadable-batch.js';

/** A record of a batch, with its offset and timestamp (ms) made absolute: a committed read's record. */
export interface BatchRecord extends KafkaRecord {
  offset: bigint;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  /** In the record's order; names are UTF-8, as every Kafka client writes them. */
  headers: [string, Buffer | null][];
}

// Control record types, in a control record's key (int16 version, int16 type).
const ABORT_MARKER = 0;

// The record decoder's cursor: module state, set by appendRecords and read by the varint
// readers below, which V8 inlines (no reader object, no closure). Parsing never yields,
// so no two parses share it.
let bytes: Buffer = Buffer.alloc(0);
let p = 0;

/** A zigzag varint (sint32); up to 5 bytes. Reading past the end yields 0s, which the callers' bounds checks catch. */
function varint(): number {
  let b = bytes[p++]!;
  let v = b & 0x7f;
  if (b & 0x80) {
    b = bytes[p++]!;
    v |= (b & 0x7f) << 7;
    if (b & 0x80) {
      b = bytes[p++]!;
      v |= (b & 0x7f) << 14;
      if (b & 0x80) {
        b = bytes[p++]!;
        v |= (b & 0x7f) << 21;
        if (b & 0x80) {
          b = bytes[p++]!;
          if (b > 0x0f) throw new RangeError(`varint longer than 32 bits at byte ${p - 5}`);
          v |= b << 28;
        }
      }
    }
  }
  return (v >>> 1) ^ -(v & 1);
}

/** A zigzag varlong (sint64) as a number: one beyond ±2^52 is refused (no timestamp delta is 140,000 years). */
function varlong(): number {
  let b = bytes[p++]!;
  if (b < 0x80) return (b >>> 1) ^ -(b & 1);
  let v = b & 0x7f;
  let scale = 128;
  for (let i = 1; ; i++) {
    b = bytes[p++]!;
    v += (b & 0x7f) * scale;
    if (b < 0x80) break;
    scale *= 128;
    if (i === 7) throw new RangeError(`varlong longer than 8 bytes at byte ${p - 8}`);
  }
  if (v > Number.MAX_SAFE_INTEGER) throw new RangeError(`varlong beyond 2^53 at byte ${p}`);
  return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Decodes `batch`'s records and appends those with offsets in [fromOffset, untilOffset) to
 * `out`, in order; returns their key + value + header name + header value bytes. Checks
 * that every record fits in its length and that the records fill the batch exactly (up to
 * untilOffset, where it stops).
 */
export function appendRecords(batch: RecordBatch, source: BatchSource, fromOffset: bigint, untilOffset: bigint, out: BatchRecord[]): number {
  if (batch.recordCount === 0) return 0;
  const data = batchRecordBytes(batch, source);
  if (data === null) {
    for (const record of unreadableRecords(batch, source)) if (record.offset >= fromOffset && record.offset < untilOffset) out.push(record);
    return 0;
  }
  const safe = batch.baseOffset >= 0n && batch.baseOffset + BigInt(batch.lastOffsetDelta) <= MAX_SAFE && batch.baseTimestamp <= MAX_SAFE && batch.baseTimestamp >= -MAX_SAFE;
  if (!safe) return appendRecordsExactly(batch, data, source, fromOffset, untilOffset, out);
  const base = Number(batch.baseOffset);
  const from = fromOffset <= BigInt(base) ? 0 : Number(fromOffset - batch.baseOffset); // as offset deltas
  const until = untilOffset - batch.baseOffset > BigInt(batch.lastOffsetDelta) ? Infinity : Number(untilOffset - batch.baseOffset);
  const logAppendTime = (batch.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const baseTimestamp = logAppendTime ? Number(batch.maxTimestamp) : Number(batch.baseTimestamp);
  const end = data.length;
  const place: BatchPlace = { data, baseOffset: base, baseTimestamp };
  let total = 0;
  bytes = data;
  p = 0;
  try {
    for (let i = 0; i < batch.recordCount; i++) {
      const start = p;
      const length = varint();
      const recordEnd = p + length;
      if (length < 0 || recordEnd > end) throw recordError(source, batch, i, start, `its length ${length} runs past the batch's ${end} bytes`);
      p++; // attributes: unused in v2
      const timestampDelta = varlong();
      const offsetDelta = varint();
      if (offsetDelta >= until) {
        p = end; // the rest is past the read's end
        break;
      }
      const keyLength = varint();
      const keyAt = p;
      if (keyLength >= 0) {
        if (p + keyLength > recordEnd) throw recordError(source, batch, i, start, `its key of ${keyLength} bytes runs past the record`);
        p += keyLength;
      }
      const valueLength = varint();
      const valueAt = p;
      if (valueLength >= 0) {
        if (p + valueLength > recordEnd) throw recordError(source, batch, i, start, `its value of ${valueLength} bytes runs past the record`);
        p += valueLength;
      }
      const headerCount = varint();
      if (headerCount < 0 || headerCount > recordEnd - p) throw recordError(source, batch, i, start, `header count ${headerCount}`);
      const headersAt = p;
      let headerBytes = 0;
      for (let h = 0; h < headerCount; h++) {
        const nameLength = varint();
        if (nameLength < -1 || p + nameLength > recordEnd) throw recordError(source, batch, i, start, `header ${h}'s name of ${nameLength} bytes runs past the record`);
        if (nameLength > 0) {
          p += nameLength;
          headerBytes += nameLength;
        }
        const headerLength = varint();
        if (headerLength >= 0) {
          if (p + headerLength > recordEnd) throw recordError(source, batch, i, start, `header ${h}'s value of ${headerLength} bytes runs past the record`);
          p += headerLength;
          headerBytes += headerLength;
        }
      }
      if (p !== recordEnd) throw recordError(source, batch, i, start, `it says ${length} bytes but its fields take ${p - (recordEnd - length)}`);
      if (offsetDelta < from) continue;
      const size = (keyLength > 0 ? keyLength : 0) + (valueLength > 0 ? valueLength : 0) + headerBytes;
      total += size;
      out.push(new RecordView(place, offsetDelta, logAppendTime ? 0 : timestampDelta, keyAt, keyLength, valueAt, valueLength, headersAt, headerCount, size));
    }
    if (p !== end) throw new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, `${end - p} bytes are left after its ${batch.recordCount} records`);
  } catch (error) {
    if (error instanceof RangeError) throw new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, error.message, { cause: error });
    throw error;
  } finally {
    bytes = EMPTY;
  }
  return total;
}

const EMPTY = Buffer.alloc(0);

/** What the records of one decoded batch share: its bytes (decompressed), its first offset and timestamp. */
interface BatchPlace {
  data: Buffer;
  baseOffset: number;
  baseTimestamp: number;
}

/**
 * A record as positions in its batch's bytes: one small object of small integers, which
 * the garbage collector copies cheaply while the record waits for its range to seal
 * (a record as an object with a bigint, two Buffers and its headers' arrays was seven
 * objects, and records outlive the young generation: GC was the largest share of
 * indexing, issue 27). Keys, values and headers are made when asked for, each time as
 * new views into the same bytes, so nothing that reads a record holds more than it uses.
 */
class RecordView implements BatchRecord {
  // read by recordColumns too, which turns many records into columns without their getters
  constructor(
    readonly place: BatchPlace,
    readonly offsetDelta: number,
    readonly timestampDelta: number,
    readonly keyAt: number,
    readonly keyLength: number,
    readonly valueAt: number,
    readonly valueLength: number,
    readonly headersAt: number,
    readonly headerCount: number,
    /** Key + value + header name and value bytes (`recordBytes`). */
    readonly byteSize: number,
  ) {}

  get offset(): bigint {
    return BigInt(this.place.baseOffset + this.offsetDelta);
  }

  get timestamp(): number {
    return this.place.baseTimestamp + this.timestampDelta;
  }

  get key(): Buffer | null {
    return this.keyLength < 0 ? null : this.place.data.subarray(this.keyAt, this.keyAt + this.keyLength);
  }

  get value(): Buffer | null {
    return this.valueLength < 0 ? null : this.place.data.subarray(this.valueAt, this.valueAt + this.valueLength);
  }

  get headers(): [string, Buffer | null][] {
    if (this.headerCount === 0) return [];
    const data = this.place.data;
    const headers: [string, Buffer | null][] = new Array(this.headerCount);
    // checked when the batch was decoded: read again without the checks
    bytes = data;
    p = this.headersAt;
    try {
      for (let h = 0; h < this.headerCount; h++) {
        const nameLength = varint();
        let name = '';
        if (nameLength > 0) {
          name = headerName(data, p, nameLength, h);
          p += nameLength;
        }
        const valueLength = varint();
        let value: Buffer | null = null;
        if (valueLength >= 0) {
          value = data.subarray(p, p + valueLength);
          p += valueLength;
        }
        headers[h] = [name, value];
      }
    } finally {
      bytes = EMPTY;
    }
    return headers;
  }
}

/**
 * Header names repeat record after record (a producer sets the same few), so the name last
 * decoded at each header position is kept with its bytes: one that matches is the same
 * string, without decoding UTF-8 and allocating it again for every record.
 */
const keptNames: { bytes: Uint8Array; name: string }[] = [];
const keptPositions = 8;
const keptNameBytes = 64;

function headerName(data: Buffer, at: number, length: number, position: number): string {
  if (position >= keptPositions || length > keptNameBytes) return data.toString('utf8', at, at + length);
  const kept = keptNames[position];
  if (kept && keptMatches(kept.bytes, data, at, length)) return kept.name;
  const name = data.toString('utf8', at, at + length);
  keptNames[position] = { bytes: Uint8Array.prototype.slice.call(data, at, at + length), name };
  return name;
}

/**
 * Records as columns (record.ts): a committed read's records give the places they already
 * have in their batches' bytes, with no key, value or header object made; any other
 * records (an MSK event's) give their own arrays as the places; columns (a build worker's)
 * are what they are.
 */
export function recordColumns(records: FileRecords): RecordColumns {
  if ('count' in records) return records;
  const n = records.length;
  let headerTotal = 0;
  for (let i = 0; i < n; i++) {
    const record = records[i]!;
    headerTotal += record instanceof RecordView ? record.headerCount : record.headers.length;
  }
  const columns: RecordColumns = {
    count: n,
    offsets: new Float64Array(n),
    timestamps: new Float64Array(n),
    key: spanColumn(n),
    value: spanColumn(n),
    headerStarts: new Int32Array(n + 1),
    headerNames: spanColumn(headerTotal),
    headerValues: spanColumn(headerTotal),
  };
  const names = new Map<string, number>();
  // the source index of the last view's bytes in each column (a column's sources grow apart when other records come between)
  let lastData: Uint8Array | null = null;
  const at = { key: 0, value: 0, names: 0, values: 0 };
  let header = 0;
  for (let i = 0; i < n; i++) {
    const record = records[i]!;
    columns.headerStarts[i] = header;
    if (record instanceof RecordView) {
      const { place } = record;
      if (place.data !== lastData) {
        lastData = place.data;
        at.key = columns.key.sources.push(place.data) - 1;
        at.value = columns.value.sources.push(place.data) - 1;
        at.values = columns.headerValues.sources.push(place.data) - 1;
        at.names = columns.headerNames ? columns.headerNames.sources.push(place.data) - 1 : 0;
      }
      if (columns.offsets) columns.offsets[i] = place.baseOffset + record.offsetDelta;
      columns.timestamps[i] = place.baseTimestamp + record.timestampDelta;
      setSpan(columns.key, i, at.key, record.keyAt, record.keyLength);
      setSpan(columns.value, i, at.value, record.valueAt, record.valueLength);
      if (record.headerCount > 0) header = viewHeaders(columns, record, at.names, at.values, header);
      continue;
    }
    lastData = null; // the next view's bytes are a source again
    if (record.readError !== undefined) (columns.readErrors ??= new Array<string | null>(n).fill(null))[i] = record.readError;
    const offset = record.offset;
    if (columns.offsets && offset <= MAX_SAFE && offset >= -MAX_SAFE) columns.offsets[i] = Number(offset);
    else columns.offsets = null;
    columns.timestamps[i] = record.timestamp;
    ownSpan(columns.key, i, record.key);
    ownSpan(columns.value, i, record.value);
    for (const [name, value] of record.headers) {
      ownSpan(columns.headerValues, header, value);
      if (columns.headerNames) {
        let source = names.get(name);
        if (source === undefined && name.isWellFormed()) names.set(name, (source = columns.headerNames.sources.push(utf8.encode(name)) - 1));
        if (source === undefined) columns.headerNames = null;
        else setSpan(columns.headerNames, header, source, 0, columns.headerNames.sources[source]!.length);
      }
      header++;
    }
  }
  columns.headerStarts[n] = header;
  return columns;
}

const utf8 = new TextEncoder();

function spanColumn(n: number): ByteSpanColumn {
  return { sources: [], source: new Int32Array(n), starts: new Int32Array(n), lengths: new Int32Array(n) };
}

function setSpan(column: ByteSpanColumn, i: number, source: number, start: number, length: number): void {
  column.source[i] = source;
  column.starts[i] = start;
  column.lengths[i] = length < 0 ? -1 : length;
}

function ownSpan(column: ByteSpanColumn, i: number, bytes: Uint8Array | null): void {
  if (bytes === null) setSpan(column, i, 0, 0, -1);
  else setSpan(column, i, column.sources.push(bytes) - 1, 0, bytes.length);
}

/** A view's headers as places (checked when its batch was decoded: read again without the checks); returns the next header entry. */
function viewHeaders(columns: RecordColumns, record: RecordView, nameSource: number, valueSource: number, header: number): number {
  const data = record.place.data;
  bytes = data;
  p = record.headersAt;
  try {
    for (let h = 0; h < record.headerCount; h++, header++) {
      const nameLength = varint();
      const nameAt = p;
      if (nameLength > 0) p += nameLength;
      const valueLength = varint();
      setSpan(columns.headerValues, header, valueSource, p, valueLength);
      if (valueLength > 0) p += valueLength;
      if (columns.headerNames === null) continue;
      // a name that is not UTF-8 is read as text with U+FFFD in its place (`headers`): the records' own headers say it
      if (nameLength > 0 && !validName(data, nameAt, nameLength, h)) columns.headerNames = null;
      else setSpan(columns.headerNames, header, nameSource, nameAt, nameLength > 0 ? nameLength : 0);
    }
  } finally {
    bytes = EMPTY;
  }
  return header;
}

/** Whether a header name's bytes are UTF-8; the bytes last found so at each position are kept (names repeat record after record). */
const keptValidNames: Uint8Array[] = [];

function validName(data: Uint8Array, at: number, length: number, position: number): boolean {
  const kept = position < keptPositions ? keptValidNames[position] : undefined;
  if (kept && keptMatches(kept, data, at, length)) return true;
  const name = data.subarray(at, at + length);
  if (!isUtf8(name)) return false;
  if (position < keptPositions && length <= keptNameBytes) keptValidNames[position] = Uint8Array.prototype.slice.call(name);
  return true;
}

/** Whether bytes [at, at + length) of `data` are the kept name's bytes. */
function keptMatches(kept: Uint8Array, data: Uint8Array, at: number, length: number): boolean {
  if (kept.length !== length) return false;
  for (let i = 0; i < length; i++) if (kept[i] !== data[at + i]) return false;
  return true;
}

function recordError(source: BatchSource, batch: RecordBatch, index: number, at: number, what: string): CorruptRecordBatchError {
  return new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, `record ${index} (byte ${at} of its records): ${what}`);
}

/** appendRecords for batches whose offsets or timestamps lie beyond 2^53: the same decoding, in bigint. */
function appendRecordsExactly(batch: RecordBatch, data: Buffer, source: BatchSource, fromOffset: bigint, untilOffset: bigint, out: BatchRecord[]): number {
  const decoded: BatchRecord[] = [];
  const relative: RecordBatch = { ...batch, baseOffset: 0n, baseTimestamp: 0n, maxTimestamp: 0n, attributes: batch.attributes & ~COMPRESSION_CODEC_MASK, data };
  appendRecords(relative, source, 0n, BigInt(batch.lastOffsetDelta) + 1n, decoded);
  const logAppendTime = (batch.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  let total = 0;
  for (const view of decoded) {
    const r = { offset: view.offset, timestamp: view.timestamp, key: view.key, value: view.value, headers: view.headers };
    const offset = batch.baseOffset + r.offset;
    if (offset < fromOffset || offset >= untilOffset) continue;
    r.offset = offset;
    r.timestamp = Number(logAppendTime ? batch.maxTimestamp : batch.baseTimestamp + BigInt(r.timestamp));
    total += (r.key?.length ?? 0) + (r.value?.length ?? 0);
    for (const [name, value] of r.headers) total += Buffer.byteLength(name) + (value?.length ?? 0);
    out.push(r);
  }
  return total;
}

/** All of a batch's records. */
export function decodeRecords(batch: RecordBatch, source: BatchSource): BatchRecord[] {
  const out: BatchRecord[] = [];
  appendRecords(batch, source, batch.baseOffset, batchLastOffset(batch) + 1n, out);
  return out;
}

/**
 * How many of the batch's records have offsets in [fromOffset, untilOffset): counted from
 * the header when the batch holds every offset of its span (the common case), else decoded.
 */
export function countRecords(batch: RecordBatch, source: BatchSource, fromOffset: bigint, untilOffset: bigint): number {
  if (batch.recordCount === batch.lastOffsetDelta + 1) {
    const lo = fromOffset > batch.baseOffset ? fromOffset : batch.baseOffset;
    const last = batch.baseOffset + BigInt(batch.recordCount);
    const hi = untilOffset < last ? untilOffset : last;
    return hi > lo ? Number(hi - lo) : 0;
  }
  const out: BatchRecord[] = [];
  appendRecords(batch, source, fromOffset, untilOffset, out);
  return out.length;
}

/** Whether a control batch holds an ABORT marker (a COMMIT marker otherwise). */
export function isAbortMarker(batch: RecordBatch, source: BatchSource): boolean {
  const key = decodeRecords(batch, source)[0]?.key;
  return key !== null && key !== undefined && key.length >= 4 && key.readInt16BE(2) === ABORT_MARKER;
}
