/**
 * Pure: the codecs' decoders of a batch's records (compressed as a whole): gzip and zstd
 * through node:zlib's engines, snappy, LZ4, each handed the bytes and nothing of the batch.
 * Each stops at a limit (OverLimit, holding nothing larger) and can hand its output to a
 * visitor part by part instead of keeping it. Its own module because these are the formats
 * themselves; what a limit or a failure means for a batch is batch-decompress.ts's.
 *
 * Codecs: LZ4 is the LZ4 *frame* format (its blocks decoded by lz4-napi); snappy is either xerial-framed (the
 * Java client: an 8-byte magic, two int32 versions, then [int32 length, raw block]...) or
 * one raw block (librdkafka may write that); gzip and zstd go to node:zlib's engines, every
 * gzip member and every zstd frame of a batch (`zlibChunks`).
 */
// a namespace: zstd came in Node 22.15, and the encoder (which imports record-batch.ts, and so this) is also run under older Nodes
import * as zlib from 'node:zlib';
import { decompressFrameSync as lz4FrameDecompress, uncompressSync as lz4BlockDecompress } from 'lz4-napi';
import { uncompressSync as snappyUncompress } from 'snappy';

/** A visitor of decompressed bytes, in order; each chunk is valid only during the call. Returns false to stop. */
export type ChunkVisitor = (chunk: Buffer) => boolean;

/** Decompression passed its limit (`maxRecordBytes` of a memory budget, or MAX_BATCH_RECORD_BYTES). */
export class OverLimit extends Error {}

const EMPTY = Buffer.alloc(0);

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

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]); // \x82SNAPPY\0
const XERIAL_HEADER_BYTES = 16; // magic, int32 version, int32 minimum compatible version

export const isXerial = (data: Buffer) => data.length >= XERIAL_HEADER_BYTES && XERIAL_MAGIC.equals(data.subarray(0, XERIAL_MAGIC.length));

/** A raw snappy block's uncompressed length: the varint (base-128, least significant group first) it starts with. */
export function snappyLength(block: Buffer): number {
  let length = 0;
  for (let i = 0, scale = 1; i < 5 && i < block.length; i++, scale *= 128) {
    length += (block[i]! & 0x7f) * scale;
    if (block[i]! < 0x80) return length;
  }
  return Infinity; // not a length: the decoder says why
}

/** `visit`: each block is handed to it instead of kept (the result is then empty). */
export function snappyDecompress(data: Buffer, limit: number, visit?: ChunkVisitor): Buffer {
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
export function lz4Decompress(data: Buffer, limit: number, visit?: ChunkVisitor): Buffer {
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
  // Bytes after the frame's end mark (and content checksum) are not read, as Java's reader
  // (KafkaLZ4BlockInputStream) does not read them: the broker's validator takes such a batch
  // (Produce code 0) and Java consumers read its records, so it is in logs. Refusing it
  // stopped its partition for good. A second frame is such bytes too: its records are then
  // missing from the first, which the records' own decoding names (as Java's does).
  if (at + ((flg & 0x04) !== 0 ? 4 : 0) > data.length) throw new Error(`the LZ4 frame's content checksum is cut at byte ${at} of ${data.length}`);
  if (blocks.length === 1) {
    const block = blocks[0]!;
    // A block decoded into room for `maximum` bytes may keep that room: copy one much smaller.
    return maximum > 64 << 10 && block.length < maximum >> 2 ? Buffer.from(block) : block;
  }
  return Buffer.concat(blocks, total);
}
