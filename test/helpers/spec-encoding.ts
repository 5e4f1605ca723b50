/**
 * Encoders written from the formats' specifications (Avro 1.11 binary encoding, the
 * Protobuf wire format, the Confluent wire format), not by the libraries our decoders
 * use: what a test feeds the decoders comes from the specification, not from our code.
 */
export function varint(n: bigint): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
export const zigzag = (n: bigint): number[] => varint(n >= 0n ? n * 2n : -n * 2n - 1n);
export const utf8 = (s: string): number[] => [...Buffer.from(s, 'utf8')];
/** Avro: long/int zigzag varint, string = length + UTF-8, map = one block of pairs then 0. */
export const avro = {
  long: (n: number | bigint) => zigzag(BigInt(n)),
  string: (s: string) => [...zigzag(BigInt(Buffer.byteLength(s))), ...utf8(s)],
  map: (pairs: [string, number[]][]) => [...zigzag(BigInt(pairs.length)), ...pairs.flatMap(([k, v]) => [...avro.string(k), ...v]), 0],
};
/** Protobuf: tag = field << 3 | wire type; 0 varint, 2 length-delimited. */
export const pb = {
  varint: (field: number, n: bigint) => [...varint(BigInt((field << 3) | 0)), ...varint(n)],
  bytes: (field: number, b: number[]) => [...varint(BigInt((field << 3) | 2)), ...varint(BigInt(b.length)), ...b],
};
export const wire = (id: number, payload: number[], indexes?: number[]): Uint8Array =>
  Uint8Array.from([0, (id >>> 24) & 0xff, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff, ...(indexes ?? []), ...payload]);

