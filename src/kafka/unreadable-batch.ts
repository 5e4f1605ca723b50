/**
 * Pure: a record batch too large for any process to read, as records without their keys,
 * values and headers. `MAX_BATCH_RECORD_BYTES` is a fixed property of the format, the
 * same on every machine and under every memory budget, so indexing and every later rebuild
 * decide the same batches so (docs/design.md, "Retention and failures").
 *
 * Deciding needs no allocation of the bound: the batch is decompressed as a stream into
 * one small buffer that is counted and overwritten, or block by block (`decompressedChunks`,
 * batch-decompress.ts). Each record's offset and timestamp lie in its first bytes (length
 * varint, attributes, timestampDelta varlong, offsetDelta varint), so `recordHeads` reads
 * those from the stream and skips the rest: the rows get the records' own offsets and
 * timestamps, also in a compacted batch whose records do not fill its offset span.
 */
import { CorruptRecordBatchError } from './batch-errors.js';
import type { ChunkVisitor } from './batch-codecs.js';
import { decompressedChunks, MAX_BATCH_RECORD_BYTES } from './batch-decompress.js';
import { batchCodec, batchLastOffset, type BatchSource, LOG_OVERHEAD, type RecordBatch, TIMESTAMP_TYPE_LOG_APPEND } from './batch-header.js';

/**
 * The rows of a batch whose records decompress to more than MAX_BATCH_RECORD_BYTES: each
 * record's offset and timestamp (read from the stream of its records), no key, value or
 * header, and an error naming the batch, its codec and the bound. The same batch gives the
 * same rows on every machine.
 */
export function unreadableRecords(batch: RecordBatch, source: BatchSource): UnreadableRecord[] {
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

/** The offset (as a delta) and timestamp delta of each record of a batch, read from the stream of its decompressed records. */
export interface RecordHead {
  offsetDelta: number;
  timestampDelta: number;
}

/** Length varint (5) + attributes (1) + timestampDelta varlong (10) + offsetDelta varint (5). */
const HEAD_BYTES = 21;

/**
 * Reads the heads of `recordCount` records from decompressed chunks (`chunks` calls its
 * visitor with each). Returns them, or the reason they do not parse.
 */
export function recordHeads(chunks: (visit: ChunkVisitor) => void, recordCount: number, lastOffsetDelta: number): RecordHead[] | string {
  const heads: RecordHead[] = [];
  const head = Buffer.alloc(HEAD_BYTES);
  let held = 0; // bytes of the current record's head in `head`
  let skip = 0; // bytes of the current record still to pass
  let problem: string | undefined;
  const parse = (final: boolean): boolean => {
    // one or more records from `head`; false when it needs more bytes
    while (heads.length < recordCount && held > 0) {
      const parsed = parseHead(head, held);
      if (parsed === undefined) {
        if (final || held === HEAD_BYTES) problem = `record ${heads.length}'s first bytes do not parse`;
        return false;
      }
      if (typeof parsed === 'string') {
        problem = `record ${heads.length}: ${parsed}`;
        return false;
      }
      const previous = heads.at(-1)?.offsetDelta ?? -1;
      if (parsed.offsetDelta <= previous || parsed.offsetDelta > lastOffsetDelta) {
        problem = `record ${heads.length}'s offset delta ${parsed.offsetDelta} is not after ${previous} and at most the batch's last, ${lastOffsetDelta}`;
        return false;
      }
      heads.push({ offsetDelta: parsed.offsetDelta, timestampDelta: parsed.timestampDelta });
      if (parsed.size >= held) {
        skip = parsed.size - held;
        held = 0;
      } else {
        head.copyWithin(0, parsed.size, held);
        held -= parsed.size;
      }
    }
    return true;
  };
  chunks((chunk) => {
    for (let at = 0; at < chunk.length && heads.length < recordCount && problem === undefined;) {
      if (skip > 0) {
        const step = Math.min(skip, chunk.length - at);
        skip -= step;
        at += step;
        continue;
      }
      const take = Math.min(HEAD_BYTES - held, chunk.length - at);
      chunk.copy(head, held, at, at + take);
      held += take;
      at += take;
      parse(false);
    }
    return heads.length < recordCount && problem === undefined;
  });
  if (problem === undefined && heads.length < recordCount) parse(true);
  if (problem !== undefined) return problem;
  if (heads.length < recordCount) return `its records end after ${heads.length} of the ${recordCount} it says`;
  return heads;
}

/** A record's head from the start of `bytes` (`held` of them valid): undefined if they run out first. */
function parseHead(bytes: Buffer, held: number): (RecordHead & { size: number }) | string | undefined {
  let p = 0;
  const next = (): number | undefined => (p < held ? bytes[p++]! : undefined);
  const zigzag = (maxBytes: number): number | undefined | string => {
    let value = 0;
    for (let i = 0, scale = 1; ; i++, scale *= 128) {
      const b = next();
      if (b === undefined) return undefined;
      value += (b & 0x7f) * scale;
      if (b < 0x80) break;
      if (i + 1 === maxBytes) return `a varint longer than ${maxBytes} bytes`;
    }
    if (value > Number.MAX_SAFE_INTEGER) return 'a varint beyond 2^53';
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  };
  const length = zigzag(5);
  if (typeof length !== 'number') return length;
  const lengthBytes = p;
  if (next() === undefined) return undefined; // attributes
  const timestampDelta = zigzag(10);
  if (typeof timestampDelta !== 'number') return timestampDelta;
  const offsetDelta = zigzag(5);
  if (typeof offsetDelta !== 'number') return offsetDelta;
  if (length < p - lengthBytes) return `its length ${length} is shorter than its first fields`;
  return { offsetDelta, timestampDelta, size: lengthBytes + length };
}

/** A record of a batch over MAX_BATCH_RECORD_BYTES: its offset and timestamp, and why nothing else of it was read. */
export class UnreadableRecord {
  readonly key: Buffer | null = null;
  readonly value: Buffer | null = null;
  readonly headers: [string, Buffer | null][] = [];
  readonly byteSize = 0;
  constructor(readonly offset: bigint, readonly timestamp: number, readonly readError: string) {}
}
