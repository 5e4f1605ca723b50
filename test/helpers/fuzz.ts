/**
 * Fuzz corpus for registry-format tables: one schema per format with every kind of
 * column, valid payloads encoded from the specifications, and mutations of them (bit
 * flips, truncation, growth, random bytes, other schema ids, broken headers).
 */
import type { RegistryFormat } from '../../src/schema/decode.js';
import type { SchemaType } from '../../src/schema/registry.js';
import { avro, pb, utf8, wire, zigzag } from './spec-encoding.js';

export const fuzzSchemas: Record<RegistryFormat, { type: SchemaType; text: string; messageIndexes?: number[] }> = {
  avro: {
    type: 'AVRO',
    text: JSON.stringify({
      type: 'record', name: 'F', fields: [
        { name: 'n', type: 'int' }, { name: 'l', type: 'long' }, { name: 's', type: 'string' }, { name: 'b', type: 'bytes' },
        { name: 'd', type: 'double' }, { name: 'tags', type: { type: 'array', items: 'string' } }, { name: 'm', type: { type: 'map', values: 'long' } },
        { name: 'opt', type: ['null', 'string'] }, { name: 'u', type: ['null', 'int', 'string'] },
        { name: 'at', type: { type: 'long', logicalType: 'timestamp-micros' } }, { name: 'day', type: { type: 'int', logicalType: 'date' } },
        { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
        { name: 'e', type: { type: 'enum', name: 'E', symbols: ['A', 'B'] } }, { name: 'constructor', type: 'int' },
      ],
    }),
  },
  protobuf: {
    type: 'PROTOBUF',
    messageIndexes: [0],
    text: 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\nmessage F { int32 n = 1; int64 l = 2; string s = 3; bytes b = 4; double d = 5; repeated string tags = 6; map<int64, string> m = 7; optional string opt = 8; uint64 big = 9; google.protobuf.Timestamp at = 10; Inner inner = 11; int32 constructor = 12; }\nmessage Inner { sint64 z = 1; }\n',
  },
  'json-schema': {
    type: 'JSON',
    text: JSON.stringify({
      type: 'object', properties: {
        n: { type: 'integer' }, d: { type: 'number' }, s: { type: 'string' }, ok: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } },
        m: { type: 'object', additionalProperties: { type: 'integer' } }, at: { type: 'string', format: 'date-time' }, day: { type: 'string', format: 'date' },
        inner: { type: 'object', properties: { x: { type: ['integer', 'null'] } } }, constructor: { type: 'integer' },
      },
    }),
  },
};

/** Valid payloads (without the wire header) for each format's fuzz schema. */
export function validPayloads(format: RegistryFormat): number[][] {
  if (format === 'avro') {
    const one = (i: number, s: string) => [
      ...avro.long(i), ...avro.long(-(2n ** 63n) + BigInt(i)), ...avro.string(s), ...zigzag(2n), 0xff, 0x00,
      ...[0, 0, 0, 0, 0, 0, 0xf8, 0x7f], // NaN, little-endian
      ...zigzag(2n), ...avro.string(s), ...avro.string(''), 0,
      ...avro.map([[s, avro.long(i)], ['__proto__', avro.long(-1)]]),
      ...zigzag(1n), ...avro.string(s), ...zigzag(2n), ...avro.string('x'),
      ...avro.long(1_767_225_600_000_000n + BigInt(i)), ...avro.long(20_454), ...zigzag(2n), 0x30, 0x39, ...zigzag(0n), ...avro.long(i),
    ];
    return [one(1, 'a\u0000b'), one(2, '\uFEFFbom'), one(3, 'π≈3.14'), one(4, '')];
  }
  if (format === 'protobuf') {
    const one = (i: number, s: string) => [
      ...pb.varint(1, BigInt(i)), ...pb.varint(2, -(2n ** 63n)), ...pb.bytes(3, utf8(s)), ...pb.bytes(4, []),
      ...pb.bytes(6, utf8(s)), ...pb.bytes(6, utf8('')), ...pb.bytes(7, [...pb.varint(1, -2n), ...pb.bytes(2, utf8(s))]),
      ...pb.varint(9, 2n ** 64n - 1n), ...pb.bytes(10, pb.varint(1, 1_767_225_600n)), ...pb.bytes(11, [8, ...zigzag(-5n)]), ...pb.varint(12, 7n),
    ];
    return [one(1, 'a\u0000b'), one(2, '\uFEFFbom'), one(3, 'π≈3.14'), []];
  }
  const one = (i: number, s: string) =>
    utf8(JSON.stringify({ n: i, d: i / 3, s, ok: true, tags: [s, ''], m: { [s]: i, __proto__: 1 }, at: '2026-01-01T00:00:00.000001Z', day: '2024-02-29', inner: { x: null }, constructor: i }));
  return [one(1, 'a\u0000b'), one(2, '\uFEFFbom'), one(3, 'π≈3.14'), utf8('{}')];
}

/** A mutated payload, framed with `schemaId` (or a broken header): what producers of all kinds may send. */
export function mutatedValue(format: RegistryFormat, schemaId: number, rnd: () => number): Uint8Array {
  const int = (n: number) => Math.floor(rnd() * n);
  const valid = validPayloads(format);
  let payload = [...valid[int(valid.length)]!];
  const indexes = fuzzSchemas[format].messageIndexes;
  switch (int(7)) {
    case 0: // bit flips
      for (let k = 0; k < 1 + int(4) && payload.length > 0; k++) payload[int(payload.length)]! ^= 1 << int(8);
      break;
    case 1: // truncated
      payload = payload.slice(0, int(payload.length + 1));
      break;
    case 2: // grown
      payload.push(...Array.from({ length: 1 + int(8) }, () => int(256)));
      break;
    case 3: // random bytes
      payload = Array.from({ length: int(64) }, () => int(256));
      break;
    case 4: // a schema id nobody registered
      return wire(2_000_000_000 + int(1000), payload, indexes);
    case 5: // a broken header
      return Uint8Array.from([int(256), ...payload].slice(0, int(payload.length + 2)));
    default: // valid
      break;
  }
  return wire(schemaId, payload, indexes && int(5) === 0 ? [2, 0, 0] : indexes);
}
