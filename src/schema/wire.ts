/**
 * The Confluent wire format of a registry-encoded key or value:
 *
 *   byte 0      magic byte, always 0
 *   bytes 1..4  schema id, big-endian signed 32-bit (a registry-wide id)
 *   Protobuf only: message indexes, the path from the file's top-level messages to the
 *               message type: a zigzag varint count, then that many zigzag varints;
 *               the single byte 0 is short for [0] (the first top-level message)
 *   the rest    the payload in the schema's own encoding
 */
export const MAGIC_BYTE = 0;
export const HEADER_BYTES = 5;

export interface WireHeader {
  schemaId: number;
  /** Where the payload (or, for Protobuf, the message indexes) starts, in the bytes read. */
  offset: number;
}

/** The header of the bytes [start, end) (all of them by default), or the reason they are not in the wire format. */
export function readWireHeader(bytes: Uint8Array, start = 0, end = bytes.byteLength): WireHeader | string {
  const length = end - start;
  if (length < HEADER_BYTES) return `${length} bytes are too short for the wire format (magic byte + 4-byte schema id)`;
  if (bytes[start] !== MAGIC_BYTE) return `wrong magic byte 0x${bytes[start]!.toString(16).padStart(2, '0')} (expected 0x00)`;
  const schemaId = ((bytes[start + 1]! << 24) | (bytes[start + 2]! << 16) | (bytes[start + 3]! << 8) | bytes[start + 4]!) | 0;
  return { schemaId, offset: start + HEADER_BYTES };
}

/** Protobuf's message indexes at `offset`: the path and where the payload starts, or a reason. */
export function readMessageIndexes(bytes: Uint8Array, offset: number): { indexes: number[]; offset: number } | string {
  const count = readZigZag(bytes, offset);
  if (typeof count === 'string') return `message indexes: ${count}`;
  if (count.value === 0) return { indexes: [0], offset: count.offset };
  if (count.value < 0 || count.value > 100) return `message indexes: bad count ${count.value}`;
  const indexes: number[] = [];
  let at = count.offset;
  for (let i = 0; i < count.value; i++) {
    const index = readZigZag(bytes, at);
    if (typeof index === 'string') return `message indexes: ${index}`;
    if (index.value < 0) return `message indexes: negative index ${index.value}`;
    indexes.push(index.value);
    at = index.offset;
  }
  return { indexes, offset: at };
}

function readZigZag(bytes: Uint8Array, offset: number): { value: number; offset: number } | string {
  let result = 0;
  let shift = 0;
  for (let at = offset; at < bytes.byteLength && shift < 35; at++, shift += 7) {
    const byte = bytes[at]!;
    result += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value: result % 2 === 0 ? result / 2 : -(result + 1) / 2, offset: at + 1 };
  }
  return 'truncated varint';
}

/** The wire-format header for `schemaId` (and Protobuf message indexes), for producers and tests. */
export function wireHeader(schemaId: number, messageIndexes?: readonly number[]): Uint8Array {
  const head = [MAGIC_BYTE, (schemaId >>> 24) & 0xff, (schemaId >>> 16) & 0xff, (schemaId >>> 8) & 0xff, schemaId & 0xff];
  if (messageIndexes) {
    if (messageIndexes.length === 1 && messageIndexes[0] === 0) head.push(0);
    else for (const n of [messageIndexes.length, ...messageIndexes]) head.push(...zigZag(n));
  }
  return Uint8Array.from(head);
}

function zigZag(n: number): number[] {
  let v = n >= 0 ? n * 2 : -n * 2 - 1;
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
