import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { buildDataFile, columnValues, valueAt } from '../../src/parquet/index.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { sideColumns, tableDecoder, unmergedIds, type RegistryFormat } from '../../src/schema/decode.js';
import { avroType, avroWriter } from '../../src/schema/decode-avro.js';
import { jsonSchemaWriter } from '../../src/schema/decode-json-schema.js';
import { protobufRoot, protobufWriter } from '../../src/schema/decode-protobuf.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { mergeFields, typeTag } from '../../src/schema/merge.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { initialSchema, typeName, type TableSchema } from '../../src/schema/table-schema.js';
import { readMessageIndexes, readWireHeader, wireHeader } from '../../src/schema/wire.js';

const avroSchema = (id: number, schema: unknown): RegistrySchema => ({ id, type: 'AVRO', schema: JSON.stringify(schema), references: [] });

function record(offset: number, value: Uint8Array | null, key: Uint8Array | null = null): KafkaRecord {
  return { offset: BigInt(offset), timestamp: 1_700_000_000_000 + offset, key, value, headers: [] };
}

function framed(id: number, payload: Uint8Array, indexes?: number[]): Uint8Array {
  return Buffer.concat([wireHeader(id, indexes), payload]);
}

function merged(format: RegistryFormat, ...schemas: RegistrySchema[]): TableSchema {
  return mergeRegistrySchemas(initialSchema(format), format, schemas.map((schema) => ({ schema, sides: new Set(['value'] as const) })));
}

function columnTypes(schema: TableSchema): Record<string, string> {
  return Object.fromEntries(schema.columns.filter((c) => !c.name.startsWith('_')).map((c) => [c.name, typeName(c)]));
}

describe('wire format', () => {
  it('reads the magic byte and schema id, and says what is wrong otherwise', () => {
    expect(readWireHeader(Uint8Array.from([0, 0, 0, 1, 2, 9]))).toEqual({ schemaId: 258, offset: 5 });
    expect(readWireHeader(Uint8Array.from([1, 0, 0, 0, 1]))).toBe('wrong magic byte 0x01 (expected 0x00)');
    expect(readWireHeader(Uint8Array.from([0, 0]))).toBe('2 bytes are too short for the wire format (magic byte + 4-byte schema id)');
  });

  it('round-trips Protobuf message indexes, including the [0] shorthand', () => {
    for (const indexes of [[0], [1], [0, 2], [3, 1, 70]]) {
      const bytes = Buffer.concat([wireHeader(7, indexes), Buffer.from([0xaa])]);
      const read = readMessageIndexes(bytes, 5);
      expect(read).toEqual({ indexes, offset: bytes.byteLength - 1 });
    }
    expect(wireHeader(7, [0])).toEqual(Uint8Array.from([0, 0, 0, 0, 7, 0]));
    expect(readMessageIndexes(Uint8Array.from([0, 0, 0, 0, 7, 0x84]), 5)).toBe('message indexes: truncated varint');
  });
});

describe('merge rules', () => {
  const fields = (...pairs: [string, string][]) => pairs.map(([name, kind]) => ({ name, type: { kind } as never, nullable: true }));

  it('adds a new field as a new nullable column at the end', () => {
    const out = mergeFields(fields(['a', 'int32']), fields(['a', 'int32'], ['b', 'string']));
    expect(out.map((c) => [c.name, c.type.kind, c.nullable])).toEqual([['a', 'int32', true], ['b', 'string', true]]);
  });

  it('widens int → long and float → double in place; a narrower field fits the wider column', () => {
    const start = fields(['n', 'int32'], ['x', 'float']);
    const widened = mergeFields(start, fields(['n', 'int64'], ['x', 'double']));
    expect(widened.map((c) => c.type.kind)).toEqual(['int64', 'double']);
    expect(mergeFields(widened, fields(['n', 'int32'], ['x', 'float']))).toBe(widened);
  });

  it('puts a change that cannot widen into a sibling column <field>__<type>, and nothing is lost', () => {
    const out = mergeFields(fields(['amount', 'int64']), fields(['amount', 'string']));
    expect(out.map((c) => `${c.name}:${c.type.kind}`)).toEqual(['amount:int64', 'amount__string:string']);
    expect(mergeFields(out, fields(['amount', 'string']))).toBe(out);
    expect(typeTag({ kind: 'decimal', precision: 10, scale: 2 })).toBe('decimal_10_2');
  });

  it('merges nested records field by field and keeps column and leaf ids', () => {
    const v1 = avroSchema(1, { type: 'record', name: 'R', fields: [{ name: 'id', type: 'int' }, { name: 'who', type: { type: 'record', name: 'Who', fields: [{ name: 'name', type: 'string' }] } }] });
    const v2 = avroSchema(2, { type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }, { name: 'who', type: { type: 'record', name: 'Who', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: ['null', 'int'], default: null }] } }] });
    const first = merged('avro', v1);
    const second = mergeRegistrySchemas(first, 'avro', [{ schema: v2, sides: new Set(['value']) }]);
    expect(columnTypes(first)).toEqual({ id: 'int32', who: 'struct<name: string>' });
    expect(columnTypes(second)).toEqual({ id: 'int64', who: 'struct<name: string, age: int32>' });
    const id = (s: TableSchema, name: string) => s.columns.find((c) => c.name === name)!.id;
    expect(id(second, 'id')).toBe(id(first, 'id'));
    expect(id(second, 'who')).toBe(id(first, 'who'));
    expect(second.leafIds['who.name']).toBe(first.leafIds['who.name']);
    expect(second.leafIds['who.age']).toBeGreaterThan(Math.max(...Object.values(first.leafIds)));
    expect(Object.keys(second.registrySchemas!)).toEqual(['1', '2']);
  });
});

describe('Avro', () => {
  const schema = {
    type: 'record',
    name: 'Order',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'tags', type: { type: 'array', items: 'string' } },
      { name: 'attrs', type: { type: 'map', values: 'int' } },
      { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['A', 'B'] } },
      { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 'at_us', type: { type: 'long', logicalType: 'timestamp-micros' } },
      { name: 'day', type: { type: 'int', logicalType: 'date' } },
      { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
      { name: 'ref', type: { type: 'string', logicalType: 'uuid' } },
      { name: 'note', type: ['null', 'string'], default: null },
      { name: 'either', type: ['int', 'string'] },
      { name: 'raw', type: { type: 'fixed', name: 'F2', size: 2 } },
    ],
  };
  const registry = avroSchema(11, schema);
  const value = {
    id: 9007199254740993n,
    tags: ['x', 'y'],
    attrs: { k: 1 },
    kind: 'B',
    at: 1_700_000_000_123n,
    at_us: 5n,
    day: 19_000,
    price: Buffer.from([0xff, 0x85]), // -123 → -1.23
    ref: '0f8fad5b-d9cb-469f-a165-70867728950e',
    note: { string: 'hi' },
    either: { string: 'two' },
    raw: Buffer.from([1, 2]),
  };

  it('maps records, arrays, maps, enums, unions and logical types onto the column model', () => {
    expect(columnTypes(merged('avro', registry))).toEqual({
      id: 'int64',
      tags: 'list<string>',
      attrs: 'list<struct<key: string, value: int32>>',
      kind: 'string',
      at: 'timestamp(millis, utc)',
      at_us: 'timestamp(micros, utc)',
      day: 'date',
      price: 'decimal(9, 2)',
      ref: 'string',
      note: 'string',
      either: 'struct<int: int32, string: string>',
      raw: 'binary',
    });
  });

  it('decodes longs exactly as bigint and routes every field to its column', () => {
    const bytes = framed(11, avroType(registry).toBuffer(value));
    expect(avroWriter(registry).decode(bytes, 5)).toMatchObject({ id: 9007199254740993n, price: -123n, either: { string: Buffer.from('two') }, note: Buffer.from('hi'), attrs: [{ key: 'k', value: 1 }] });
    const table = merged('avro', registry);
    const arrays = tableDecoder('avro', table).decode([record(0, bytes)]);
    expect(arrays._error).toEqual([null]);
    expect(arrays._value).toEqual([null]);
    expect(columnValues(arrays.id!)).toEqual([9007199254740993n]);
    expect(columnValues(arrays.at!)).toEqual([1_700_000_000_123n]);
    // the whole file builds
    expect(() => buildDataFile(table.columns, { _partition: [0], _offset: [0n], _timestamp: [0], _key: [null], _headers: [[]], ...arrays }, { rowGroupRows: 10 })).not.toThrow();
  });

  it('keeps a bad record as a row: wrong magic byte, unknown schema id, truncated bytes', () => {
    const table = merged('avro', registry);
    const truncated = framed(11, Buffer.from([2]));
    const arrays = tableDecoder('avro', table).decode([
      record(0, Uint8Array.from([1, 0, 0, 0, 11, 2])),
      record(1, framed(99, Buffer.from([2]))),
      record(2, truncated),
      record(3, null),
      record(4, Buffer.concat([framed(11, avroType(registry).toBuffer({ ...value, id: 1n })), Buffer.from([7])])),
    ]);
    expect(arrays._error).toEqual([
      'value: wrong magic byte 0x01 (expected 0x00)',
      'value: schema id 99 is unknown to the Schema Registry',
      'value: Avro schema 11: the payload ends early (1 bytes)',
      null,
      'value: Avro schema 11: 1 bytes left after the value',
    ]);
    expect(columnValues(arrays.id!)).toEqual([null, null, null, null, null]);
    expect(valueAt(arrays._value!, 0)).toEqual(Uint8Array.from([1, 0, 0, 0, 11, 2]));
    expect(valueAt(arrays._value!, 3)).toBeNull();
  });
});

describe('Protobuf', () => {
  const text = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  repeated Line lines = 2;
  map<string, int64> attrs = 3;
  Status status = 4;
  google.protobuf.Timestamp at = 5;
  uint64 big = 6;
  optional string note = 7;
  uint32 small = 8;
}
enum Status { NEW = 0; PAID = 1; }`;
  const registry: RegistrySchema = { id: 21, type: 'PROTOBUF', schema: text, references: [] };

  it('maps messages, repeated, maps, enums, 64-bit and Timestamp onto the column model', () => {
    expect(columnTypes(merged('protobuf', registry))).toEqual({
      id: 'int64',
      lines: 'list<struct<sku: string, qty: int32>>',
      attrs: 'list<struct<key: string, value: int64>>',
      status: 'string',
      at: 'timestamp(micros, utc)',
      big: 'decimal(20, 0)',
      note: 'string',
      small: 'int64',
    });
  });

  it('decodes the message the indexes name; unset optional fields are null', () => {
    const { root } = protobufRoot(registry);
    const Order = root.lookupType('shop.Order');
    const payload = Order.encode(Order.fromObject({ id: '-5', lines: [{ sku: 'a', qty: 2 }], attrs: { k: '7' }, status: 'PAID', big: '18446744073709551615', small: 4000000000 })).finish();
    const writer = protobufWriter(registry);
    const decoded = writer.decode(framed(21, payload, [0]), 5);
    expect(decoded).toEqual({ id: -5n, lines: [{ sku: 'a', qty: 2 }], attrs: [{ key: 'k', value: 7n }], status: 'PAID', at: null, big: 18446744073709551615n, note: null, small: 4000000000n });
    const arrays = tableDecoder('protobuf', merged('protobuf', registry)).decode([record(0, framed(21, payload, [0])), record(1, framed(21, payload, [5]))]);
    expect(arrays._error).toEqual([null, 'value: Protobuf schema 21 has no message at indexes [5]']);
  });
});

describe('JSON Schema', () => {
  const registry: RegistrySchema = {
    id: 31,
    type: 'JSON',
    references: [],
    schema: JSON.stringify({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        id: { type: 'integer' },
        price: { type: 'number' },
        at: { type: 'string', format: 'date-time' },
        day: { type: 'string', format: 'date' },
        tags: { type: 'array', items: { type: 'string' } },
        who: { $ref: '#/definitions/Who' },
        extra: {},
        note: { type: ['string', 'null'] },
        counts: { type: 'object', additionalProperties: { type: 'integer' } },
      },
      definitions: { Who: { type: 'object', properties: { name: { type: 'string' } } } },
    }),
  };

  it('maps types, formats, $refs and maps; anything else is JSON text', () => {
    expect(columnTypes(merged('json-schema', registry))).toEqual({
      id: 'int64',
      price: 'double',
      at: 'timestamp(micros, utc)',
      day: 'date',
      tags: 'list<string>',
      who: 'struct<name: string>',
      extra: 'json',
      note: 'string',
      counts: 'list<struct<key: string, value: int64>>',
    });
  });

  it('reads values against the shape; a value of the wrong type makes an error row', () => {
    const writer = jsonSchemaWriter(registry);
    const ok = Buffer.from(JSON.stringify({ id: 3, price: 1.5, at: '2026-01-02T03:04:05.678Z', day: '2026-01-02', tags: ['a'], who: { name: 'n' }, extra: { any: [1] }, counts: { a: 1 } }));
    expect(writer.decode(framed(31, ok), 5)).toEqual({ id: 3n, price: 1.5, at: 1767323045678000n, day: 20455, tags: ['a'], who: { name: 'n' }, extra: '{"any":[1]}', note: null, counts: [{ key: 'a', value: 1n }] });
    const arrays = tableDecoder('json-schema', merged('json-schema', registry)).decode([record(0, framed(31, Buffer.from('{"id":"x"}'))), record(1, framed(31, Buffer.from('{nope')))]);
    expect(arrays._error).toEqual(['value: $.id: expected an integer, got a string', 'value: JSON Schema 31: the payload is not UTF-8 JSON text']);
  });
});

describe('keys and schema ids', () => {
  it('decodes wire-format keys into _key_decoded and ignores other keys', () => {
    const keySchema = avroSchema(41, 'string');
    const valueSchema = avroSchema(42, { type: 'record', name: 'V', fields: [{ name: '_offset', type: 'int' }] });
    const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [
      { schema: keySchema, sides: new Set(['key']) },
      { schema: valueSchema, sides: new Set(['value']) },
    ]);
    expect(columnTypes(schema)).toEqual({ value__offset: 'int32' });
    expect(typeName(schema.columns.find((c) => c.name === '_key_decoded')!)).toBe('string');
    const key = framed(41, avro.Type.forSchema('string').toBuffer('k1'));
    const value = framed(42, avro.Type.forSchema(JSON.parse(valueSchema.schema)).toBuffer({ _offset: 5 }));
    const arrays = tableDecoder('avro', schema).decode([record(0, value, key), record(1, value, Buffer.from('plain'))]);
    expect(columnValues(arrays._key_decoded!)).toEqual([Buffer.from('k1'), null]);
    expect(arrays.value__offset).toEqual([5, 5]);
    expect(arrays._error).toEqual([null, null]);
    expect([...unmergedIds(schema, [[record(0, value, key), record(1, framed(43, Buffer.from([])))]])]).toEqual([[43, new Set(['value'])]]);
    expect(sideColumns({ kind: 'string' }, 'value')).toEqual([{ name: 'value', type: { kind: 'string' }, nullable: true }]);
  });
});

describe('schemas that cannot be used never stop indexing', () => {
  it('a schema of another format is kept (no columns); an unreadable one is recorded as unreadable with the answer, not merged (asked again); the records of both are error rows', () => {
    const broken: RegistrySchema = { id: 51, type: 'AVRO', schema: '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}', references: [] };
    const protobufOne: RegistrySchema = { id: 52, type: 'PROTOBUF', schema: 'syntax = "proto3"; message M { int32 a = 1; }', references: [] };
    const schema = merged('avro', broken, protobufOne);
    expect(columnTypes(schema)).toEqual({});
    expect(Object.keys(schema.registrySchemas!)).toEqual(['52']);
    const unreadable = `schema 51 cannot be read as AVRO: the Schema Registry answered ${JSON.stringify(broken.schema)}`;
    expect(schema.unreadableSchemas).toEqual({ 51: { sides: ['value'], reason: unreadable } });
    expect([...unmergedIds(schema, [[record(0, framed(51, Buffer.from([2])))]])]).toEqual([[51, new Set(['value'])]]);
    const arrays = tableDecoder('avro', schema).decode([record(0, framed(51, Buffer.from([2]))), record(1, framed(52, Buffer.from([8, 1])))]);
    expect(arrays._error).toEqual([`value: ${unreadable}`, 'value: schema 52 is PROTOBUF, the table\'s format is avro']);
    // a version written before unreadable schemas were recorded (it merged the schema) decodes as it did
    const older = { ...schema, registrySchemas: { ...schema.registrySchemas, 51: { ...broken, sides: ['value' as const] } } };
    delete older.unreadableSchemas;
    expect(tableDecoder('avro', older).decode([record(0, framed(51, Buffer.from([2])))])._error).toEqual(['value: schema 51 cannot be read as AVRO']);
  });
});

describe('Avro strings', () => {
  it('are read as their UTF-8 bytes, checked: invalid UTF-8 is an error row', () => {
    const schema = avroSchema(61, { type: 'record', name: 'S', fields: [{ name: 's', type: 'string' }] });
    const table = merged('avro', schema);
    const good = framed(61, Buffer.from([2 * 3, 0xe2, 0x9c, 0x93]));
    const bad = framed(61, Buffer.from([2 * 2, 0xc3, 0x28]));
    const arrays = tableDecoder('avro', table).decode([record(0, good), record(1, bad)]);
    expect(columnValues(arrays.s!)).toEqual([Buffer.from('✓'), null]);
    expect(arrays._error).toEqual([null, 'value: a string is not valid UTF-8']);
  });

  it('a record that contains itself becomes JSON text, strings as text', () => {
    const schema = avroSchema(62, { type: 'record', name: 'Node', fields: [{ name: 'label', type: 'string' }, { name: 'next', type: ['null', 'Node'], default: null }] });
    const table = merged('avro', schema);
    expect(columnTypes(table)).toEqual({ label: 'string', next: 'json' });
    const bytes = framed(62, avroType(schema).toBuffer({ label: 'a', next: { Node: { label: 'b', next: null } } }));
    const arrays = tableDecoder('avro', table).decode([record(0, bytes)]);
    expect(arrays.label).toEqual(['a']);
    expect(arrays.next).toEqual(['{"label":"b","next":null}']);
  });
});
