/**
 * Pure: Kafka record batches (message format v2, "magic 2") read where they lie in a
 * Fetch response. `parseRecordBatches` reads each batch's header, checks its CRC-32C and
 * leaves its records as a view: batch-decompress.ts decompresses them, record-batch.ts
 * decodes them. Its own module because the header is all that the Fetch reader and the
 * committed filter (committed.ts) read of most batches.
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
 * A Fetch response may end inside a batch (the broker cuts at the byte limit): that
 * partial batch is dropped, as Kafka's clients drop it, and fetched again from its offset.
 */
import { crc32c } from './crc32c.js';
import { CorruptRecordBatchError } from './batch-errors.js';

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

export const BATCH_HEADER_BYTES = 61;
/** baseOffset + batchLength: what precedes the bytes batchLength counts. */
export const LOG_OVERHEAD = 12;
const CRC_START = 21;

// Batch attribute bits.
export const COMPRESSION_CODEC_MASK = 0x07;
export const TIMESTAMP_TYPE_LOG_APPEND = 1 << 3;
export const TRANSACTIONAL = 1 << 4;
export const CONTROL = 1 << 5;

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
