/**
 * Pure: Kafka record batches (message format v2, "magic 2") read where they lie in a
 * Fetch response. `parseRecordBatches` reads each batch's header, checks its CRC-32C and
 * leaves its records as a view; `appendRecords` decompresses one batch (native code) and
 * makes its records, whose keys, values and header values are views into the
 * decompressed bytes (or into the response, uncompressed): nothing is copied.
 *
 * A batch, big-endian (Kafka's DefaultRecordBatch):
 *
 *   byte  size  field
 *      0     8  baseOffset            int64
 *      8     4  batchLength           int32   bytes after this field
 *     12     4  partitionLeaderEpoch  int32
 *     16     1  magic                 int8    2 (0 and 1 are the old message sets: refused)
 *     17     4  crc                   uint32  CRC-32C of bytes [21, 12 + batchLength)
 *     21     2  attributes            int16   bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4,
 *                                             4 zstd), 3 LogAppendTime, 4 transactional, 5 control
 *     23     4  lastOffsetDelta       int32
 *     27     8  baseTimestamp         int64
 *     35     8  maxTimestamp          int64
 *     43     8  producerId            int64   -1: none
 *     51     2  producerEpoch         int16
 *     53     4  baseSequence          int32
 *     57     4  recordCount           int32
 *     61        records               recordCount records, compressed as a whole by the codec
 *
 * A record: length varint (bytes after it), attributes int8, timestampDelta varlong,
 * offsetDelta varint, keyLength varint (-1: null), key, valueLength varint (-1: null),
 * value, headerCount varint, then per header keyLength varint, key (UTF-8),
 * valueLength varint (-1: null), value. Varints are zigzag-encoded base-128, least
 * significant group first (protobuf's sint32/sint64).
 *
 * Codecs: LZ4 is the LZ4 *frame* format (its blocks decoded by lz4-napi); snappy is either xerial-framed (the
 * Java client: an 8-byte magic, two int32 versions, then [int32 length, raw block]...) or
 * one raw block (librdkafka may write that); gzip and zstd go to node:zlib's engines, every
 * gzip member and every zstd frame of a batch (`zlibChunks`).
 *
 * A Fetch response may end inside a batch (the broker cuts at the byte limit): that
 * partial batch is dropped, as Kafka's clients drop it, and fetched again from its offset.
 */
import { isUtf8 } from 'node:buffer';
import { decompressFrameSync as lz4FrameDecompress, uncompressSync as lz4BlockDecompress } from 'lz4-napi';
import { uncompressSync as snappyUncompress } from 'snappy';
import { crc32c } from './crc32c.js';
import { BatchTooLargeError, CorruptRecordBatchError } from './batch-errors.js';
import { MAX_BATCH_RECORD_BYTES, OverLimit, recordHeads, UnreadableRecord, zlibChunks, zlibDecompress, type ChunkVisitor } from './unreadable-batch.js';
import type { ByteSpanColumn, FileRecords, KafkaRecord, RecordColumns } from './record.js';

/** Where a batch comes from, for errors; and how far its records may decompress. */
export interface BatchSource {
  topic: string;
  partition: number;
  /**
   * The most bytes one batch's records may decompress to (none: as far as a Buffer goes):
   * decompression stops there and the batch is a BatchTooLargeError. Only the indexer of
   * `run --memory` sets it; what it decides is whether to read now, never what a row is.
   */
  maxRecordBytes?: number | undefined;
}

export interface RecordBatch {
  baseOffset: bigint;
  /** Bytes of the batch after the batchLength field (the whole batch is 12 + batchLength). */
  batchLength: number;
  partitionLeaderEpoch: number;
  /** 2; an older message set (0, 1) has only baseOffset, batchLength and magic read. */
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
  /** The records as they lie in the response (compressed when `attributes` name a codec): a view. */
  data: Buffer;
}

/** A record of a batch, with its offset and timestamp (ms) made absolute: a committed read's record. */
export interface BatchRecord extends KafkaRecord {
  offset: bigint;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  /** In the record's order; names are UTF-8, as every Kafka client writes them. */
  headers: [string, Buffer | null][];
}

export const BATCH_HEADER_BYTES = 61;
/** baseOffset + batchLength: what precedes the bytes batchLength counts. */
const LOG_OVERHEAD = 12;
const CRC_START = 21;

// Batch attribute bits.
export const COMPRESSION_CODEC_MASK = 0x07;
export const TIMESTAMP_TYPE_LOG_APPEND = 1 << 3;
export const TRANSACTIONAL = 1 << 4;
export const CONTROL = 1 << 5;
// Control record types, in a control record's key (int16 version, int16 type).
const ABORT_MARKER = 0;

export const compressionCodecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type CompressionCodec = (typeof compressionCodecs)[number];

export function isControlBatch(batch: RecordBatch): boolean {
  return (batch.attributes & CONTROL) !== 0;
}

export function isTransactionalBatch(batch: RecordBatch): boolean {
  return (batch.attributes & TRANSACTIONAL) !== 0;
}

export function batchLastOffset(batch: RecordBatch): bigint {
  return batch.baseOffset + BigInt(batch.lastOffsetDelta);
}

export function batchCodec(batch: RecordBatch): CompressionCodec | `codec ${number}` {
  const codec = batch.attributes & COMPRESSION_CODEC_MASK;
  return compressionCodecs[codec] ?? `codec ${codec}`;
}

/**
 * The batches of one partition's records in a Fetch response, in order: each checked
 * against its CRC-32C (a mismatch is a CorruptRecordBatchError naming the partition and
 * offset). A partial batch at the end is dropped.
 */
export function parseRecordBatches(records: Buffer, source: BatchSource): RecordBatch[] {
  const batches: RecordBatch[] = [];
  const size = records.length;
  let at = 0;
  while (size - at >= LOG_OVERHEAD + 5) {
    const batchLength = records.readInt32BE(at + 8);
    const end = at + LOG_OVERHEAD + batchLength;
    if (batchLength < 0) throw new CorruptRecordBatchError(source.topic, source.partition, records.readBigInt64BE(at), `negative batch length ${batchLength}`);
    if (end > size) break; // cut by the fetch's byte limit: fetched again from its offset
    const baseOffset = records.readBigInt64BE(at);
    const magic = records.readInt8(at + 16);
    if (magic !== 2) {
      batches.push(oldMessageSet(records, at, baseOffset, batchLength, magic));
      at = end;
      continue;
    }
    if (LOG_OVERHEAD + batchLength < BATCH_HEADER_BYTES) {
      throw new CorruptRecordBatchError(source.topic, source.partition, baseOffset, `batch length ${batchLength} is shorter than a batch header (${BATCH_HEADER_BYTES - LOG_OVERHEAD} bytes)`);
    }
    const crc = records.readUInt32BE(at + 17);
    const computed = crc32c(records.subarray(at + CRC_START, end));
    if (computed !== crc) {
      throw new CorruptRecordBatchError(source.topic, source.partition, baseOffset, `its CRC-32C is 0x${hex32(computed)}, the batch says 0x${hex32(crc)} (${LOG_OVERHEAD + batchLength} bytes)`);
    }
    const recordCount = records.readInt32BE(at + 57);
    if (recordCount < 0) throw new CorruptRecordBatchError(source.topic, source.partition, baseOffset, `negative record count ${recordCount}`);
    batches.push({
      baseOffset,
      batchLength,
      partitionLeaderEpoch: records.readInt32BE(at + 12),
      magic,
      crc,
      attributes: records.readInt16BE(at + 21),
      lastOffsetDelta: records.readInt32BE(at + 23),
      baseTimestamp: records.readBigInt64BE(at + 27),
      maxTimestamp: records.readBigInt64BE(at + 35),
      producerId: records.readBigInt64BE(at + 43),
      producerEpoch: records.readInt16BE(at + 51),
      baseSequence: records.readInt32BE(at + 53),
      recordCount,
      data: records.subarray(at + BATCH_HEADER_BYTES, end),
    });
    at = end;
  }
  return batches;
}

function oldMessageSet(records: Buffer, at: number, baseOffset: bigint, batchLength: number, magic: number): RecordBatch {
  return {
    baseOffset, batchLength, partitionLeaderEpoch: -1, magic, crc: 0, attributes: 0, lastOffsetDelta: 0,
    baseTimestamp: -1n, maxTimestamp: -1n, producerId: -1n, producerEpoch: -1, baseSequence: -1, recordCount: 0,
    data: records.subarray(at + LOG_OVERHEAD, at + LOG_OVERHEAD + batchLength),
  };
}

const hex32 = (n: number) => n.toString(16).padStart(8, '0');

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]); // \x82SNAPPY\0
const XERIAL_HEADER_BYTES = 16; // magic, int32 version, int32 minimum compatible version

/**
 * The batch's records, uncompressed: `batch.data` itself when the batch is not compressed;
 * null when they decompress to more than MAX_BATCH_RECORD_BYTES, which no process reads
 * (`unreadableRecords` makes its rows). Nothing larger than the bound or than
 * `source.maxRecordBytes` is ever allocated: gzip and zstd stop at it (counted chunk by
 * chunk, `zlibDecompress`), snappy's uncompressed lengths are read from its headers before a block
 * is decoded, LZ4's blocks are counted as they are decoded (4 MiB each at most). A batch
 * over `maxRecordBytes` is then measured as a stream against the fixed bound: under it, a
 * BatchTooLargeError (the partition waits for a larger budget); over it, null.
 */
export function batchRecordBytes(batch: RecordBatch, source: BatchSource): Buffer | null {
  const codec = batch.attributes & COMPRESSION_CODEC_MASK;
  if (codec === 0) return batch.data;
  const budget = source.maxRecordBytes ?? Infinity;
  const limit = Math.min(budget, MAX_BATCH_RECORD_BYTES);
  try {
    switch (codec) {
      case 1: return zlibDecompress(1, batch.data, limit);
      case 2: return snappyDecompress(batch.data, limit);
      case 3: return lz4Decompress(batch.data, limit);
      case 4: return zlibDecompress(4, batch.data, limit);
    }
  } catch (error) {
    const overLimit = error instanceof OverLimit;
    if (!overLimit && error instanceof CorruptRecordBatchError) throw error;
    if (!overLimit) throw notDecompressing(batch, source, error);
    if (limit === MAX_BATCH_RECORD_BYTES || !underBound(batch, source)) return null;
    throw new BatchTooLargeError(source.topic, source.partition, batch.baseOffset, batchLastOffset(batch), batchCodec(batch), LOG_OVERHEAD + batch.batchLength, budget);
  }
  throw new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, `unknown compression codec ${codec} (attributes 0x${batch.attributes.toString(16)})`);
}

function notDecompressing(batch: RecordBatch, source: BatchSource, error: unknown): CorruptRecordBatchError {
  return new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, `its ${batchCodec(batch)} records do not decompress: ${(error as Error).message}`, { cause: error });
}

/**
 * Hands the batch's decompressed records to `visit`, part by part, until it returns false:
 * gzip and zstd as a stream through one small buffer, snappy and LZ4 block by block (a
 * single raw snappy block, or an LZ4 frame of linked blocks, whole).
 */
export function decompressedChunks(batch: RecordBatch, source: BatchSource, visit: ChunkVisitor): void {
  const codec = batch.attributes & COMPRESSION_CODEC_MASK;
  try {
    if (codec === 1 || codec === 4) zlibChunks(codec, batch.data, visit);
    else if (codec === 2) snappyDecompress(batch.data, Infinity, visit);
    else if (codec === 3) lz4Decompress(batch.data, Infinity, visit);
    else visit(batch.data);
  } catch (error) {
    if (error instanceof CorruptRecordBatchError) throw error;
    throw notDecompressing(batch, source, error);
  }
}

/** How many bytes the batch's records decompress to, counted without holding them; counting stops past `stopAfter`. */
function decompressedBytes(batch: RecordBatch, source: BatchSource, stopAfter: number): number {
  if ((batch.attributes & COMPRESSION_CODEC_MASK) === 2 && !isXerial(batch.data)) return snappyLength(batch.data); // one raw block says its size
  let total = 0;
  decompressedChunks(batch, source, (chunk) => (total += chunk.length) <= stopAfter);
  return total;
}

/**
 * Batches measured under MAX_BATCH_RECORD_BYTES but over a memory budget, by partition,
 * offset and CRC-32C: a partition that waits on one reads it again at every try, and
 * measuring it again could take seconds each time. Only this outcome is kept: at worst
 * (a CRC that collides at the same offset) a batch waits, and no row depends on it.
 */
const measuredUnder = new Set<string>();
const MEASURED_KEPT = 256;

function underBound(batch: RecordBatch, source: BatchSource): boolean {
  const key = `${source.topic}\0${source.partition}\0${batch.baseOffset}\0${batch.crc}`;
  if (measuredUnder.has(key)) return true;
  if (decompressedBytes(batch, source, MAX_BATCH_RECORD_BYTES + 1) > MAX_BATCH_RECORD_BYTES) return false;
  if (measuredUnder.size >= MEASURED_KEPT) measuredUnder.delete(measuredUnder.values().next().value!);
  measuredUnder.add(key);
  return true;
}

/**
 * The rows of a batch whose records decompress to more than MAX_BATCH_RECORD_BYTES: each
 * record's offset and timestamp (read from the stream of its records), no key, value or
 * header, and an error naming the batch, its codec and the bound. The same batch gives the
 * same rows on every machine.
 */
function unreadableRecords(batch: RecordBatch, source: BatchSource): UnreadableRecord[] {
  const heads = recordHeads((visit) => decompressedChunks(batch, source, visit), batch.recordCount, batch.lastOffsetDelta);
  if (typeof heads === 'string') throw new CorruptRecordBatchError(source.topic, source.partition, batch.baseOffset, heads);
  const logAppendTime = (batch.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
  const error = `the record batch at offsets [${batch.baseOffset}, ${batchLastOffset(batch)}] (${batchCodec(batch)}, ${LOG_OVERHEAD + batch.batchLength} bytes in Kafka) decompresses to more than ${MAX_BATCH_RECORD_BYTES} bytes, the most one batch may: its records' keys, values and headers are not read`;
  return heads.map((head) => new UnreadableRecord(
    batch.baseOffset + BigInt(head.offsetDelta),
    Number(logAppendTime ? batch.maxTimestamp : batch.baseTimestamp + BigInt(head.timestampDelta)),
    error,
  ));
}

const isXerial = (data: Buffer) => data.length >= XERIAL_HEADER_BYTES && XERIAL_MAGIC.equals(data.subarray(0, XERIAL_MAGIC.length));

/** A raw snappy block's uncompressed length: the varint (base-128, least significant group first) it starts with. */
function snappyLength(block: Buffer): number {
  let length = 0;
  for (let i = 0, scale = 1; i < 5 && i < block.length; i++, scale *= 128) {
    length += (block[i]! & 0x7f) * scale;
    if (block[i]! < 0x80) return length;
  }
  return Infinity; // not a length: the decoder says why
}

/** `visit`: each block is handed to it instead of kept (the result is then empty). */
function snappyDecompress(data: Buffer, limit: number, visit?: ChunkVisitor): Buffer {
  if (!isXerial(data)) {
    if (limit < Infinity && snappyLength(data) > limit) throw new OverLimit();
    const whole = snappyUncompress(data, { asBuffer: true }) as Buffer;
    if (visit) visit(whole);
    return whole;
  }
  const blocks: Buffer[] = [];
  let total = 0;
  for (let at = XERIAL_HEADER_BYTES; at < data.length;) {
    if (at + 4 > data.length) throw new Error(`xerial snappy block length cut at byte ${at} of ${data.length}`);
    const length = data.readInt32BE(at);
    at += 4;
    if (length < 0 || at + length > data.length) throw new Error(`xerial snappy block of ${length} bytes at byte ${at} runs past the end (${data.length})`);
    if (limit < Infinity && total + snappyLength(data.subarray(at, at + length)) > limit) throw new OverLimit();
    const block = snappyUncompress(data.subarray(at, at + length), { asBuffer: true }) as Buffer;
    at += length;
    if (visit) {
      if (!visit(block)) break;
      continue;
    }
    blocks.push(block);
    total += block.length;
  }
  return blocks.length === 1 ? blocks[0]! : Buffer.concat(blocks, total);
}

const LZ4_FRAME_MAGIC = 0x184d2204;
/** An LZ4 frame's block maximum size, by the BD byte's bits 6-4. */
const lz4BlockMaximum = [0, 0, 0, 0, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/**
 * Kafka's LZ4: one LZ4 frame (magic, FLG, BD, [content size], HC, then blocks of an int32 LE
 * size, high bit set for a stored block, ending with a 0). When its blocks are independent
 * (as the Java client and librdkafka write them, 64 KiB each), each block goes to lz4-napi's
 * block decoder, given the frame's block maximum as its size: measured 1.4-2x faster than
 * lz4-napi's frame decoder (lz4_flex's, which reads the frame through a Read adapter into a
 * growing Vec). Checksums are not verified again: the batch's CRC-32C covers these bytes. Any
 * other frame (linked blocks, a dictionary) goes to the frame decoder; bytes after the end
 * mark (a second frame) are an error, as in Kafka's own decoder.
 */
function lz4Decompress(data: Buffer, limit: number, visit?: ChunkVisitor): Buffer {
  if (data.length < 7 || data.readUInt32LE(0) !== LZ4_FRAME_MAGIC) {
    const whole = lz4FrameDecompress(data);
    if (visit) visit(whole);
    return whole;
  }
  const flg = data[4]!;
  const maximum = lz4BlockMaximum[(data[5]! >> 4) & 7]!;
  // the frame decoder takes no limit: a frame that says its content size is checked first, one that does not is checked once decoded
  if (flg >> 6 !== 1 || (flg & 0x20) === 0 || (flg & 0x01) !== 0 || maximum === 0) {
    if (limit < Infinity && (flg & 0x08) !== 0 && data.length >= 14 && Number(data.readBigUInt64LE(6)) > limit) throw new OverLimit();
    const whole = lz4FrameDecompress(data);
    if (whole.length > limit) throw new OverLimit();
    if (visit) visit(whole);
    return whole;
  }
  const blockChecksums = (flg & 0x10) !== 0;
  let at = 7 + ((flg & 0x08) !== 0 ? 8 : 0);
  const blocks: Buffer[] = [];
  let total = 0;
  for (;;) {
    if (at + 4 > data.length) throw new Error(`LZ4 block size cut at byte ${at} of ${data.length}`);
    const size = data.readUInt32LE(at);
    at += 4;
    if (size === 0) break;
    const length = size & 0x7fffffff;
    if (length > maximum || at + length > data.length) throw new Error(`LZ4 block of ${length} bytes at byte ${at} runs past the frame (${data.length} bytes, blocks of at most ${maximum})`);
    let block: Buffer;
    if (size !== length) {
      block = data.subarray(at, at + length); // stored uncompressed
    } else {
      // lz4-napi's block format is the block after its uncompressed size (int32 LE); an upper bound will do.
      const input = Buffer.allocUnsafe(4 + length);
      input.writeUInt32LE(maximum, 0);
      data.copy(input, 4, at, at + length);
      block = lz4BlockDecompress(input);
    }
    at += length + (blockChecksums ? 4 : 0);
    if (visit) {
      if (!visit(block)) return EMPTY;
      continue;
    }
    blocks.push(block);
    total += block.length;
    if (total > limit) throw new OverLimit();
  }
  const end = at + ((flg & 0x04) !== 0 ? 4 : 0);
  if (end !== data.length) throw new Error(`${data.length - end} bytes after the LZ4 frame's end (Kafka writes one frame per batch)`);
  if (blocks.length === 1) {
    const block = blocks[0]!;
    // A block decoded into room for `maximum` bytes may keep that room: copy one much smaller.
    return maximum > 64 << 10 && block.length < maximum >> 2 ? Buffer.from(block) : block;
  }
  return Buffer.concat(blocks, total);
}

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
