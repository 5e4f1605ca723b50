/**
 * How many bytes a Fetch asks for when the caller already knows most of the records of
 * the span it reads (an MSK event's, when the handler re-reads them committed). A Fetch
 * answers with up to that many bytes of whole batches from its offset on, and the client
 * decodes all of them, also those past the span's end: asking for read.ts's default
 * (4 MiB) to read an event of 100 records of 1 KiB brings and decodes 40 times the
 * event when Kafka holds more behind it (bench/msk-second-read.ts).
 *
 * Only how many Fetches a read takes depends on this number, never which records it
 * returns: an answer that stops short of the span's end is followed by another Fetch.
 */
import { defaultMaxBytes } from './read.js';
import { recordBytes, type KafkaRecord } from './record.js';

/** Batch and record framing per offset, with room for offsets the records do not show (markers, aborted records). */
const framingPerOffset = 100;
/** Room for the producer batch that straddles the span's end: Kafka returns whole batches or none. */
const straddlingBatch = 256 * 1024;

/** Bytes to ask per Fetch to read [from, until) of a partition whose records there are (mostly) `records`; never more than a read's default. */
export function fetchBytesFor(records: readonly KafkaRecord[], from: bigint, until: bigint): number {
  if (until <= from) return defaultMaxBytes;
  let bytes = straddlingBatch + Number(until - from) * framingPerOffset;
  for (const record of records) {
    if (bytes >= defaultMaxBytes) break;
    const offset = record.offset;
    if (offset >= from && offset < until) bytes += recordBytes(record);
  }
  return Math.min(bytes, defaultMaxBytes);
}

/**
 * The same, when the span's record bytes are known as a number (a granule's kafka_bytes,
 * src/files/granules.ts): reading one row group of a file must not decode the next ones.
 */
export function fetchBytesForSpan(spanRecordBytes: number, from: bigint, until: bigint): number {
  if (until <= from) return defaultMaxBytes;
  return Math.min(straddlingBatch + Number(until - from) * framingPerOffset + spanRecordBytes, defaultMaxBytes);
}

/**
 * The Fetch size for reading part [from, until) of a read sized `fetchBytes` for
 * [readFrom, readUntil): its share of the bytes, with room for the batch that straddles
 * the part's end. A read assembled around records already held fetches only the gaps, and
 * a granule read narrowed to its records only those (src/files/granules.ts): a small part
 * asked with the whole read's size would bring and decode the whole span.
 */
export function fetchBytesForPart(fetchBytes: number, from: bigint, until: bigint, readFrom: bigint, readUntil: bigint): number {
  if (until - from >= readUntil - readFrom || readUntil <= readFrom) return fetchBytes;
  return Math.min(fetchBytes, straddlingBatch + Math.ceil((fetchBytes * Number(until - from)) / Number(readUntil - readFrom)));
}
