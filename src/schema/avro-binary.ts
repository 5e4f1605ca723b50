/**
 * Avro's binary primitives for the column decoder (avro-columns.ts): each reads at a
 * cursor and gives the value avsc's Tap gives for the same bytes (avsc 5.7, as our types
 * in decode-avro.ts configure it: bigint longs, strings and bytes as their bytes). Where
 * avsc would end early, invalidate or throw, these throw `notColumnar` instead: the caller
 * then decodes that payload the usual way, which says what is wrong in its own words.
 * Pure, no avsc.
 */

/**
 * A read position in one payload, which lies in `bytes` before `end`: a record's value
 * in its batch's bytes, read where it lies. A read may run past `end` into the bytes
 * after it (a varint's continuation); the decoder then ends beyond `end`, and the
 * payload is not taken.
 */
export interface AvroCursor {
  bytes: Buffer;
  pos: number;
  end: number;
}

/** The payload is not one the column decoder reads exactly (malformed, or beyond its bounds). */
export class NotColumnar extends Error {
  override name = 'NotColumnar';
}
/** One instance, thrown without a stack: it only ever means "decode this payload the usual way". */
export const notColumnar = new NotColumnar('not read by the column decoder');

/**
 * An int (and avsc's number for any varint: lengths, counts, indexes): avsc's readLong,
 * step for step, float arithmetic past 28 bits included, so that an over-long int gives
 * the same number (which the column then refuses, as it does today).
 */
export function readInt(c: AvroCursor): number {
  const buf = c.bytes;
  let n = 0;
  let k = 0;
  let b: number;
  let h: number;
  do {
    b = buf[c.pos++]!;
    h = b & 0x80;
    n |= (b & 0x7f) << k;
    k += 7;
  } while (h && k < 28);
  if (h) {
    let f = n;
    let fk = 268435456;
    do {
      b = buf[c.pos++]!;
      f += (b & 0x7f) * fk;
      fk *= 128;
    } while (b & 0x80);
    return (f % 2 ? -(f + 1) : f) / 2;
  }
  return (n >> 1) ^ -(n & 1);
}

/**
 * A long as bigint: the zigzag varint's 64 low bits, two's complement, which is what
 * avsc's unpackLongBytes and our BigLong's readBigInt64LE make of up to 10 bytes. Up to 7
 * bytes (49 bits) the sum is exact in a double; longer ones are summed as bigint. A varint
 * of more than 10 bytes, or one running past the payload, is not read here.
 */
export function readLong(c: AvroCursor): bigint {
  const value = readLongOrNumber(c);
  return typeof value === 'number' ? BigInt(value) : value;
}

/** `readLong`'s value as a number where it takes up to 7 bytes (a safe integer), as bigint where it takes more. */
export function readLongOrNumber(c: AvroCursor): number | bigint {
  const buf = c.bytes;
  const end = c.end;
  let pos = c.pos;
  let raw = 0;
  let scale = 1;
  for (let i = 0; i < 7; i++) {
    if (pos >= end) throw notColumnar;
    const b = buf[pos++]!;
    raw += (b & 0x7f) * scale;
    if (b < 0x80) {
      c.pos = pos;
      return raw % 2 ? -(raw + 1) / 2 : raw / 2;
    }
    scale *= 128;
  }
  let big = BigInt(raw);
  for (let shift = 49n; shift < 70n; shift += 7n) {
    if (pos >= end) throw notColumnar;
    const b = buf[pos++]!;
    big |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) {
      c.pos = pos;
      return BigInt.asIntN(64, (big >> 1n) ^ -(big & 1n));
    }
  }
  throw notColumnar;
}

/** A boolean: avsc takes any byte but 0 as true. */
export function readBoolean(c: AvroCursor): boolean {
  if (c.pos >= c.end) throw notColumnar;
  return c.bytes[c.pos++]! !== 0;
}

export function readFloat(c: AvroCursor): number {
  const pos = c.pos;
  if (pos + 4 > c.end) throw notColumnar;
  c.pos = pos + 4;
  return c.bytes.readFloatLE(pos);
}

export function readDouble(c: AvroCursor): number {
  const pos = c.pos;
  if (pos + 8 > c.end) throw notColumnar;
  c.pos = pos + 8;
  return c.bytes.readDoubleLE(pos);
}

/**
 * `size` bytes, as a view of the payload: avsc copies them, but the column takes the
 * bytes as they are, and the payload outlives the file's build.
 */
export function readFixed(c: AvroCursor, size: number): Buffer {
  const pos = c.pos;
  const end = pos + size;
  if (end > c.end) throw notColumnar;
  c.pos = end;
  return c.bytes.subarray(pos, end);
}

/** Bytes (and strings, as their UTF-8): a length, then that many bytes. */
export function readBytes(c: AvroCursor): Buffer {
  const start = readSpan(c);
  return c.bytes.subarray(start, c.pos);
}

/** `readBytes` without the view: where the bytes start (they end at the cursor). */
export function readSpan(c: AvroCursor): number {
  const size = readInt(c);
  const start = c.pos;
  const end = start + size;
  if (size < 0 || end > c.end) throw notColumnar;
  c.pos = end;
  return start;
}

/** The maximum items of one array or map block, as decode-avro.ts's readBlockCount. */
export const MAX_BLOCK_ITEMS = 10_000_000;

/**
 * An array's or map's block count (0: the end); a negative count is followed by the
 * block's size in bytes, skipped. `itemBytes` is the fewest bytes an item takes: a count
 * whose items cannot fit in the bytes left is no valid payload, and is not read here, so
 * that a corrupt count costs nothing (items of no size are bounded as avsc's path bounds them).
 */
export function readBlockCount(c: AvroCursor, itemBytes: number): number {
  let n = readInt(c);
  if (n < 0) {
    const buf = c.bytes;
    while (buf[c.pos++]! & 0x80) {
      // avsc's skipLong
    }
    n = -n;
  }
  if (c.pos > c.end || n > MAX_BLOCK_ITEMS || n * itemBytes > c.end - c.pos) throw notColumnar;
  return n;
}
