/**
 * A range of committed records as a few flat arrays, so that they cross to a build worker
 * (src/build/pool.ts) with their bytes moved, not cloned: offsets, timestamps, one buffer
 * of every key, value and header value, their places in it, and the header names. The
 * records unpacked on the other side are views into that one buffer: equal byte for byte,
 * so the files built from them are the same. Pure.
 */
import type { KafkaRecord } from '../kafka/record.js';

export interface PackedRecords {
  offsets: BigInt64Array;
  timestamps: Float64Array;
  /** Every key, value and header value, one after the other. */
  bytes: Uint8Array;
  /** Per record: key start, key length (-1: null), value start, value length (-1: null). */
  places: Int32Array;
  /** Per record, its number of headers; then per header its value's start and length (-1: null), in `headerPlaces`. */
  headerCounts: Uint32Array;
  headerPlaces: Int32Array;
  headerNames: string[];
}

export function packRecords(records: readonly KafkaRecord[]): PackedRecords {
  let size = 0;
  let headers = 0;
  // each field read once per pass: a committed read's record makes a new view each time it is asked
  for (const record of records) {
    size += (record.key?.byteLength ?? 0) + (record.value?.byteLength ?? 0);
    const own = record.headers;
    for (const [, value] of own) size += value?.byteLength ?? 0;
    headers += own.length;
  }
  const packed: PackedRecords = {
    offsets: new BigInt64Array(records.length),
    timestamps: new Float64Array(records.length),
    bytes: new Uint8Array(size),
    places: new Int32Array(records.length * 4),
    headerCounts: new Uint32Array(records.length),
    headerPlaces: new Int32Array(headers * 2),
    headerNames: new Array<string>(headers),
  };
  let at = 0;
  let header = 0;
  const put = (part: Uint8Array | null, places: Int32Array, where: number): void => {
    if (part === null) {
      places[where] = 0;
      places[where + 1] = -1;
      return;
    }
    packed.bytes.set(part, at);
    places[where] = at;
    places[where + 1] = part.byteLength;
    at += part.byteLength;
  };
  for (let r = 0; r < records.length; r++) {
    const record = records[r]!;
    packed.offsets[r] = record.offset;
    packed.timestamps[r] = record.timestamp;
    put(record.key, packed.places, r * 4);
    put(record.value, packed.places, r * 4 + 2);
    const own = record.headers;
    packed.headerCounts[r] = own.length;
    for (const [name, value] of own) {
      packed.headerNames[header] = name;
      put(value, packed.headerPlaces, header * 2);
      header += 1;
    }
  }
  return packed;
}

/** The buffers `packRecords` made, to hand to postMessage's transfer list. */
export function packedBuffers(packed: PackedRecords): ArrayBuffer[] {
  return [packed.offsets.buffer, packed.timestamps.buffer, packed.bytes.buffer, packed.places.buffer, packed.headerCounts.buffer, packed.headerPlaces.buffer] as ArrayBuffer[];
}

/** The records again, keys, values and header values as Buffers over `packed.bytes`. */
export function unpackRecords(packed: PackedRecords): KafkaRecord[] {
  const all = Buffer.from(packed.bytes.buffer, packed.bytes.byteOffset, packed.bytes.byteLength);
  const part = (places: Int32Array, where: number): Buffer | null => (places[where + 1]! < 0 ? null : all.subarray(places[where]!, places[where]! + places[where + 1]!));
  const records: KafkaRecord[] = new Array(packed.offsets.length);
  let header = 0;
  for (let r = 0; r < packed.offsets.length; r++) {
    const headers: [string, Buffer | null][] = new Array(packed.headerCounts[r]!);
    for (let h = 0; h < headers.length; h++, header++) headers[h] = [packed.headerNames[header]!, part(packed.headerPlaces, header * 2)];
    records[r] = { offset: packed.offsets[r]!, timestamp: packed.timestamps[r]!, key: part(packed.places, r * 4), value: part(packed.places, r * 4 + 2), headers };
  }
  return records;
}
