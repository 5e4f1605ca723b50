/**
 * Exactness rules of registry-format decoding and building (issue: exact in every
 * registry format). Payloads are encoded here by hand from the formats' specifications
 * (Avro 1.11 binary encoding, Protobuf wire format, JSON text), never by the libraries
 * the decoders use, and expected values are written from those specifications.
 */
import { describe, expect, it } from 'vitest';
import type { TableRecord } from '../../src/table/record.js';
import { buildFile, prepareDecoded } from '../../src/files/files.js';
import { initialSchema as startSchema } from '../../src/schema/table-schema.js';
import { columnValues, kafkaColumnArrays, statText, valueAt, type Column } from '../../src/parquet/index.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { recordColumns } from '../../src/kafka/record-batch.js';
import { tableDecoder, type RegistryFormat } from '../../src/schema/decode.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import type { TableSchema } from '../../src/schema/table-schema.js';
import { resolveSettings } from '../../src/table/settings.js';
import { avro, pb, utf8, varint, wire, zigzag } from '../helpers/spec-encoding.js';

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString'];

// --- helpers -------------------------------------------------------------------------
const table = (format: RegistryFormat): TableRecord => ({ tableId: 1n, name: 't', topic: 't', format, settings: resolveSettings({}) }) as unknown as TableRecord;
const registry = (id: number, type: RegistrySchema['type'], schema: unknown): RegistrySchema => ({ id, type, schema: typeof schema === 'string' ? schema : JSON.stringify(schema), references: [] });
const records = (values: Uint8Array[]): KafkaRecord[] =>
  values.map((value, i) => ({ offset: BigInt(i), timestamp: Date.UTC(2026, 0, 1) + i, key: null, value, headers: [] }));
function merged(format: RegistryFormat, ...schemas: RegistrySchema[]): TableSchema {
  return mergeRegistrySchemas(startSchema(format), format, schemas.map((schema) => ({ schema, sides: new Set(['value'] as const) })));
}
/** What Postgres jsonb does to a stored schema: every object's keys in another order. */
function asJsonb<T>(value: T): T {
  const reorder = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(reorder) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reorder(x)])) : v;
  return JSON.parse(JSON.stringify(reorder(value))) as T;
}
function decodeOne(format: RegistryFormat, schema: TableSchema, value: Uint8Array): Record<string, unknown> {
  const columns = tableDecoder(format, schema).decode(records([value]));
  return Object.fromEntries(Object.entries(columns).map(([name, values]) => [name, valueAt(values, 0)]));
}

describe('a table schema read back from the catalog (jsonb reorders keys) is the same schema', () => {
  const v1 = registry(1, 'AVRO', { type: 'record', name: 'E', fields: [{ name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } }] });
  const v2 = registry(2, 'AVRO', { type: 'record', name: 'E', fields: [{ name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } }, { name: 'n', type: 'int' }] });

  it('an unchanged timestamp field still fits its column: its values are decoded, and a later merge adds no sibling column', () => {
    const stored = asJsonb(merged('avro', v1));
    expect(decodeOne('avro', stored, wire(1, avro.long(1_767_225_600_123))).at).toBe(1_767_225_600_123n);
    const next = mergeRegistrySchemas(stored, 'avro', [{ schema: v2, sides: new Set(['value']) }]);
    expect(next.columns.map((c) => c.name).filter((n) => !n.startsWith('_'))).toEqual(['at', 'n']);
  });

  it('a file built from the schema in memory and from its catalog copy has the same bytes', () => {
    const schema = merged('avro', v1);
    const rows = records([wire(1, avro.long(5)), wire(1, avro.long(-5))]);
    const inMemory = buildFile(table('avro'), schema, 0, rows, 'hyparquet-writer@0.17.0/v1').file;
    const fromCatalog = buildFile(table('avro'), asJsonb(schema), 0, rows, 'hyparquet-writer@0.17.0/v1').file;
    expect(Buffer.from(fromCatalog.sha256).toString('hex')).toBe(Buffer.from(inMemory.sha256).toString('hex'));
  });
});

describe('names that come from data are only names: every Object.prototype member', () => {
  const values = PROTOTYPE_NAMES.map((_, i) => i + 1);
  const expectFields = (decoded: Record<string, unknown>) => {
    for (const [i, name] of PROTOTYPE_NAMES.entries()) expect(Object.hasOwn(decoded, name) ? decoded[name] : 'missing', name).toBe(values[i]);
  };
  const expectMap = (entries: unknown) => expect(entries).toEqual(PROTOTYPE_NAMES.map((key, i) => ({ key, value: values[i] })));

  it('avro: as record fields and map keys, decoded, built, and each with a column id of its own', () => {
    const schema = merged('avro', registry(3, 'AVRO', { type: 'record', name: 'R', fields: [...PROTOTYPE_NAMES.map((name) => ({ name, type: 'int' })), { name: 'm', type: { type: 'map', values: 'int' } }] }));
    const payload = [...values.flatMap((v) => avro.long(v)), ...avro.map(PROTOTYPE_NAMES.map((k, i) => [k, avro.long(values[i]!)]))];
    const decoded = decodeOne('avro', schema, wire(3, payload));
    expectFields(decoded);
    expectMap(decoded.m);
    expect(new Set(PROTOTYPE_NAMES.map((n) => Object.hasOwn(schema.leafIds, n) && schema.leafIds[n])).size).toBe(PROTOTYPE_NAMES.length);
    expect(buildFile(table('avro'), asJsonb(schema), 0, records([wire(3, payload)]), 'hyparquet-writer@0.17.0/v1').statistics.length).toBeGreaterThan(PROTOTYPE_NAMES.length);
  });

  it('avro: a field a later schema drops is null, never an inherited member', () => {
    const withAll = registry(4, 'AVRO', { type: 'record', name: 'R', fields: PROTOTYPE_NAMES.map((name) => ({ name, type: 'int' })) });
    const without = registry(5, 'AVRO', { type: 'record', name: 'R', fields: [{ name: 'x', type: 'int' }] });
    const decoded = decodeOne('avro', merged('avro', withAll, without), wire(5, avro.long(1)));
    for (const name of PROTOTYPE_NAMES) expect(decoded[name], name).toBeNull();
  });

  it('protobuf: as message fields and map keys', () => {
    const text = `syntax = "proto3";\nmessage R {\n${PROTOTYPE_NAMES.map((n, i) => `  int32 ${n} = ${i + 1};`).join('\n')}\n  map<string, int32> m = 20;\n}\n`;
    const schema = merged('protobuf', registry(6, 'PROTOBUF', text));
    const entry = (k: string, v: number) => pb.bytes(20, [...pb.bytes(1, utf8(k)), ...pb.varint(2, BigInt(v))]);
    const payload = [...values.flatMap((v, i) => pb.varint(i + 1, BigInt(v))), ...PROTOTYPE_NAMES.flatMap((k, i) => entry(k, values[i]!))];
    const decoded = decodeOne('protobuf', schema, wire(6, payload, [0]));
    expectFields(decoded);
    // a Protobuf map has no order: compare as a set
    expect([...(decoded.m as { key: string }[])].sort((a, b) => (a.key < b.key ? -1 : 1))).toEqual(
      PROTOTYPE_NAMES.map((key, i) => ({ key, value: values[i] })).sort((a, b) => (a.key < b.key ? -1 : 1)),
    );
    // unset fields have their proto3 default, not an inherited member
    for (const name of PROTOTYPE_NAMES) expect(decodeOne('protobuf', schema, wire(6, [], [0]))[name], name).toBe(0);
  });

  it('json-schema: as properties and as keys of an additionalProperties map; missing properties are null', () => {
    const schema = merged('json-schema', registry(7, 'JSON', { type: 'object', properties: { ...Object.fromEntries(PROTOTYPE_NAMES.map((n) => [n, { type: 'integer' }])), m: { type: 'object', additionalProperties: { type: 'integer' } } } }));
    const object = `{${PROTOTYPE_NAMES.map((n, i) => `"${n}": ${values[i]}`).join(', ')}}`;
    const decoded = decodeOne('json-schema', schema, wire(7, utf8(`{${object.slice(1, -1)}, "m": ${object}}`)));
    for (const [i, name] of PROTOTYPE_NAMES.entries()) expect(decoded[name], name).toBe(BigInt(values[i]!));
    expect(decoded.m).toEqual(PROTOTYPE_NAMES.map((key, i) => ({ key, value: BigInt(values[i]!) })));
    const empty = decodeOne('json-schema', schema, wire(7, utf8('{}')));
    for (const name of PROTOTYPE_NAMES) expect(empty[name], name).toBeNull();
    expect(empty._error).toBeNull();
  });

  it('header keys of every such name are kept in order', () => {
    const rows = records([wire(7, utf8('{}'))]).map((r) => ({ ...r, headers: PROTOTYPE_NAMES.map((k) => [k, Buffer.from(k)] as [string, Uint8Array]) }));
    // each key as its UTF-8 bytes, as the column holds it
    expect(columnValues(kafkaColumnArrays(0, rows, "json-schema")._headers!)[0]).toEqual(PROTOTYPE_NAMES.map((key) => ({ key: new TextEncoder().encode(key), value: Buffer.from(key) })));
  });
});

describe('protobuf values that protobufjs represents in its own way', () => {
  const text = 'syntax = "proto3";\nmessage P { bytes blob = 1; map<int64, string> signed = 2; map<uint64, string> unsigned = 3; map<sint64, string> zig = 4; }\n';
  const schema = merged('protobuf', registry(8, 'PROTOBUF', text));

  it('an empty or unset bytes field is empty bytes, and the file builds', () => {
    const set = wire(8, pb.bytes(1, []), [0]);
    const unset = wire(8, [], [0]);
    expect(decodeOne('protobuf', schema, set).blob).toEqual(new Uint8Array(0));
    expect(decodeOne('protobuf', schema, unset).blob).toEqual(new Uint8Array(0));
    const built = buildFile(table('protobuf'), schema, 0, records([set, unset]), 'hyparquet-writer@0.17.0/v1');
    expect(built.statistics.find((s) => s.column === 'blob')).toMatchObject({ nullCount: 0, min: '', max: '' });
  });

  it('64-bit map keys are their decimal value, signed or not', () => {
    const keys = [-2n, 0n, 2n ** 63n - 1n, -(2n ** 63n)];
    const entry = (field: number, key: number[], value: string) => pb.bytes(field, [...key, ...pb.bytes(2, utf8(value))]);
    const payload = [
      ...keys.flatMap((k) => entry(2, pb.varint(1, k), `s${k}`)),
      ...entry(3, pb.varint(1, 2n ** 64n - 1n), 'max'),
      ...keys.flatMap((k) => entry(4, [...varint(8n), ...zigzag(k)], `z${k}`)),
    ];
    const decoded = decodeOne('protobuf', schema, wire(8, payload, [0]));
    const sorted = (m: unknown) => [...(m as { key: string }[])].sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(sorted(decoded.signed)).toEqual(sorted(keys.map((k) => ({ key: String(k), value: `s${k}` }))));
    expect(decoded.unsigned).toEqual([{ key: '18446744073709551615', value: 'max' }]);
    expect(sorted(decoded.zig)).toEqual(sorted(keys.map((k) => ({ key: String(k), value: `z${k}` }))));
  });
});

describe('JSON Schema dates and times are read exactly or refused', () => {
  const schema = merged('json-schema', registry(9, 'JSON', { type: 'object', properties: { day: { type: 'string', format: 'date' }, at: { type: 'string', format: 'date-time' }, s: { type: 'string' } } }));
  const one = (json: string) => decodeOne('json-schema', schema, wire(9, utf8(json)));

  it('dates that exist are days since 1970-01-01; dates that do not are error rows', () => {
    expect(one('{"day": "2024-02-29"}').day).toBe(19782);
    expect(one('{"day": "1970-01-01"}').day).toBe(0);
    expect(one('{"day": "0001-01-01"}').day).toBe(-719162);
    for (const day of ['2026-02-30', '2025-02-29', '2026-13-01', '2026-04-31', '2026-1-01']) {
      const row = one(`{"day": "${day}"}`);
      expect(row.day, day).toBeNull();
      expect(row._error, day).toBe(`value: $.day: expected a date YYYY-MM-DD that exists, got "${day}"`);
    }
  });

  it('date-times are microseconds, UTC, exactly; leap seconds, impossible days and sub-microsecond digits are refused', () => {
    expect(one('{"at": "2026-03-01T12:34:56.123456Z"}').at).toBe(1_772_368_496_123_456n);
    expect(one('{"at": "2026-03-01T18:04:56.123456+05:30"}').at).toBe(1_772_368_496_123_456n);
    expect(one('{"at": "2026-03-01T12:34:56.1234560Z"}').at).toBe(1_772_368_496_123_456n);
    expect(one('{"at": "1969-12-31T23:59:59.999999Z"}').at).toBe(-1n);
    for (const at of ['2026-02-30T00:00:00Z', '2026-12-31T23:59:60Z', '2026-01-01T00:00:00.1234567Z', '2026-01-01T24:00:00Z', '2026-01-01T00:00:00']) {
      const row = one(`{"at": "${at}"}`);
      expect(row.at, at).toBeNull();
      expect(row._error, at).toMatch(/^value: \$\.at: expected an RFC 3339 date-time/);
    }
  });

  it('a string that holds a lone surrogate (JSON may escape one) is an error row, never silently replaced', () => {
    const payload = wire(9, utf8('{"s": "a\\ud800b"}'));
    const row = decodeOne('json-schema', schema, payload);
    expect(row.s).toBeNull();
    expect(row._error).toBe('value: $.s: the string holds a lone surrogate, which UTF-8 text cannot hold');
    expect(row._value).toEqual(payload);
  });
});

describe('no record stops a partition', () => {
  it('a JSON Schema whose property name the catalog cannot store (U+0000, a lone surrogate) adds no column; its records are error rows', () => {
    for (const name of ['a\u0000b', 'a\ud800']) {
      const schema = merged('json-schema', registry(10, 'JSON', { type: 'object', properties: { [name]: { type: 'integer' }, ok: { type: 'integer' } } }));
      expect(schema.columns.map((c) => c.name).filter((n) => !n.startsWith('_'))).toEqual([]);
      const row = decodeOne('json-schema', schema, wire(10, utf8('{"ok": 1}')));
      expect(row._error).toBe(`value: schema 10 cannot be read as JSON: the Schema Registry answered ${JSON.stringify(JSON.stringify({ type: 'object', properties: { [name]: { type: 'integer' }, ok: { type: 'integer' } } }))}`);
    }
  });


  it('a decoded value its column cannot take makes that side of its row an error row; other rows are untouched', () => {
    const columns: Column[] = [...startSchema('avro').columns, { name: 'n', type: { kind: 'int32' }, nullable: true }, { name: 's', type: { kind: 'string' }, nullable: true }];
    const rows = records([wire(1, [1]), wire(1, [2]), wire(1, [3])]);
    const data = { ...kafkaColumnArrays(0, rows, 'avro'), _value: [null, null, null], _error: [null, null, null], n: [1, 2 ** 40, 3], s: ['a', 'b', 'c'] };
    const prepared = prepareDecoded(columns, data, recordColumns(rows));
    const at = (name: string) => columnValues(prepared.arrays[columns.findIndex((c) => c.name === name)]!);
    expect(at('n')).toEqual([1, null, 3]);
    expect(at('s').map((b) => (b === null ? null : Buffer.from(b as Uint8Array).toString()))).toEqual(['a', null, 'c']);
    expect(at('_value')).toEqual([null, rows[1]!.value, null]);
    expect(at('_error').map((b) => (b === null ? null : Buffer.from(b as Uint8Array).toString()))).toEqual([null, 'value: column n cannot hold the decoded value (it must be a 32-bit integer)', null]);
  });
});

describe('statistics text keeps every character', () => {
  it('a leading U+FEFF and U+0000 are part of a string bound', () => {
    expect(statText({ kind: 'string' }, Uint8Array.from([0xef, 0xbb, 0xbf, 0x61]))).toBe('\uFEFFa');
    expect(statText({ kind: 'string' }, Uint8Array.from([0x61, 0x00]))).toBe('a\u0000');
  });
});
