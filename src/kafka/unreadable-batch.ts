/**
 * Pure: a record batch too large for any process to read, as records without their keys,
 * values and headers. `MAX_BATCH_RECORD_BYTES` is a fixed property of the format, the
 * same on every machine and under every memory budget, so indexing and every later rebuild
 * decide the same batches so (docs/design.md, "Retention and failures").
 *
 * Deciding needs no allocation of the bound: the batch is decompressed as a stream into
 * one small buffer that is counted and overwritten (`zlibChunks` for gzip and zstd; snappy
 * and LZ4 are read block by block by their callers). Each record's offset and timestamp
 * lie in its first bytes (length varint, attributes, timestampDelta varlong, offsetDelta
 * varint), so `recordHeads` reads those from the stream and skips the rest: the rows get
 * the records' own offsets and timestamps, also in a compacted batch whose records do not
 * fill its offset span.
 */
// a namespace: zstd came in Node 22.15, and the encoder (which imports record-batch.ts, and so this) is also run under older Nodes
import * as zlib from 'node:zlib';

/**
 * The most bytes one batch's records may decompress to: 2 GiB less a byte, the largest
 * size whose byte positions the record columns (Int32Array, record.ts) and Kafka's own
 * record lengths (int32) can address. A batch over it becomes error rows.
 */
export const MAX_BATCH_RECORD_BYTES = 2 ** 31 - 1;

/** A visitor of decompressed bytes, in order; each chunk is valid only during the call. Returns false to stop. */
export type ChunkVisitor = (chunk: Buffer) => boolean;

/** zlib's engine, as its synchronous functions drive it (Node has no public synchronous stream). */
interface ZlibEngine {
  _handle: { writeSync(flush: number, input: Buffer, inOff: number, inLen: number, out: Buffer, outOff: number, outLen: number): void; onerror: (message: string, errno: number) => void; close(): void };
  _writeState: Uint32Array;
  _finishFlushFlag: number;
  _chunkSize: number;
}

/**
 * Decompresses gzip (codec 1) or zstd (codec 4) `data`, handing each filled part to `visit`
 * until it returns false or the stream ends; by default the parts share one reused buffer,
 * and with `keep` each part is bytes of its own that `visit` may keep (`zlibDecompress`).
 * The engine is driven as Node's own `gunzipSync` drives zlib (the same engine options,
 * output chunks of its `_chunkSize`, done at the first write that leaves room in its chunk,
 * by which gzip has read every member), except that zstd goes on while input is left:
 * zstd's engine stops at the end of each frame, and Node's `zstdDecompressSync` (a write
 * that leaves room is its last) so reads only as far as the first frame that ends with room
 * in its chunk, while concatenated frames decode to the concatenation of their contents
 * (RFC 8878 section 3; Java's ZstdInputStream and librdkafka's ZSTD_decompress read them
 * all). Bytes after a frame that are not a frame are the decoder's error, as they are for
 * Java and librdkafka. Throws the decoder's error for bytes that do not decompress.
 */
export function zlibChunks(codec: 1 | 4, data: Buffer, visit: ChunkVisitor, keep = false): void {
  const engine = (codec === 1 ? zlib.createGunzip() : zlib.createZstdDecompress()) as unknown as ZlibEngine;
  let failure: Error | undefined;
  engine._handle.onerror = (message) => { failure = new Error(message); };
  let out = Buffer.allocUnsafe(engine._chunkSize);
  let outOff = 0;
  let inOff = 0;
  let availIn = data.length;
  try {
    for (;;) {
      engine._handle.writeSync(engine._finishFlushFlag, data, inOff, availIn, out, outOff, out.length - outOff);
      if (failure) throw failure;
      const [availOut, availInAfter] = engine._writeState as unknown as [number, number];
      const produced = out.length - outOff - availOut;
      const consumed = availIn - availInAfter;
      inOff += consumed;
      availIn = availInAfter;
      if (produced > 0 && !visit(out.subarray(outOff, outOff + produced))) return;
      if (availOut === 0) {
        if (keep) out = Buffer.allocUnsafe(engine._chunkSize);
        outOff = 0;
        continue;
      }
      // room left in the chunk: the stream ended, or (zstd) a frame did
      if (codec === 1 || availIn === 0) return;
      if (produced === 0 && consumed === 0) throw new Error(`zstd stopped with ${availIn} bytes of its input left`);
      outOff = keep ? outOff + produced : 0;
    }
  } finally {
    // the native context, closed at once as the synchronous functions close it (the stream's close() would wait for a tick)
    engine._handle.close();
  }
}

/**
 * gzip or zstd `data` decompressed whole (every gzip member, every zstd frame), or
 * OverLimit as soon as it passes `limit` bytes: nothing larger is held.
 */
export function zlibDecompress(codec: 1 | 4, data: Buffer, limit: number): Buffer {
  const parts: Buffer[] = [];
  let total = 0;
  zlibChunks(codec, data, (part) => {
    total += part.length;
    if (total > limit) throw new OverLimit();
    parts.push(part);
    return true;
  }, true);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

/** Decompression passed its limit (`maxRecordBytes` of a memory budget, or MAX_BATCH_RECORD_BYTES). */
export class OverLimit extends Error {}

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
