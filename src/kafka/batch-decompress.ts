/**
 * Pure: a batch's records decompressed, within the two bounds that decide whether a batch
 * is read now, later or as error rows: MAX_BATCH_RECORD_BYTES, a fixed property of the
 * format, and a process's memory budget (`BatchSource.maxRecordBytes`). Its own module
 * because it is the one place where a codec's failure or overflow (batch-codecs.ts)
 * becomes an error naming the batch, or the batch's error rows (unreadable-batch.ts).
 */
import { BatchTooLargeError, CorruptRecordBatchError } from './batch-errors.js';
import { type ChunkVisitor, isXerial, lz4Decompress, OverLimit, snappyDecompress, snappyLength, zlibChunks, zlibDecompress } from './batch-codecs.js';
import { batchCodec, batchLastOffset, type BatchSource, COMPRESSION_CODEC_MASK, LOG_OVERHEAD, type RecordBatch } from './batch-header.js';

/**
 * The most bytes one batch's records may decompress to: 2 GiB less a byte, the largest
 * size whose byte positions the record columns (Int32Array, record.ts) and Kafka's own
 * record lengths (int32) can address. A batch over it becomes error rows.
 */
export const MAX_BATCH_RECORD_BYTES = 2 ** 31 - 1;

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
