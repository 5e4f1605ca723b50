/**
 * Every column our tables make, as the Parquet file of the encoder of new files stores it,
 * checked against Iceberg's own type mapping (issue 47): pyarrow reads each primitive
 * column's physical and logical type and each node's field id, and they must be what
 * Iceberg's spec (Appendix A, Parquet "Data Type Mappings", written out below) gives the
 * Iceberg type the catalog declares for that field. The columns come from real schemas
 * merged as the indexer merges them: a json and a raw table's Kafka columns, and an Avro,
 * a Protobuf and a JSON Schema record with every type docs/formats.md maps.
 *
 * Encoder v5 stored a JSON text column with the JSON annotation where Iceberg declares
 * `string` (polars refused it), an Avro local-timestamp-millis in milliseconds where
 * Iceberg's `timestamp` is micros, and a decimal above precision 38 (Iceberg `fixed[L]`)
 * with the DECIMAL annotation: the v5 test names exactly those, so its files stay
 * readable to what reads them by name and widens, as docs/formats.md says. The last tests
 * read such a decimal's values and footer with pyarrow.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFile } from '../../src/files/files.js';
import { type Column, encodeParquet, encoderOf } from '../../src/parquet/index.js';
import { icebergSchema, type IcebergType } from '../../src/iceberg/schema.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { initialSchema, type TableSchema } from '../../src/schema/table-schema.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import type { TableRecord } from '../../src/table/record.js';
import { resolveSettings, defaultSettings } from '../../src/table/settings.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const dir = mkdtempSync(join(tmpdir(), 'offsetlake-iceberg-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = fileURLToPath(new URL('./parquet_iceberg_types.py', import.meta.url));
const fixedScript = fileURLToPath(new URL('./parquet_fixed_columns.py', import.meta.url));

/**
 * "Fixed must use the minimum number of bytes that can store P" (Iceberg's spec, after
 * Parquet's rule): n bytes hold floor(log10(2^(8n-1) - 1)) digits.
 */
function fewestBytes(precision: number): number {
  let n = 1;
  while (10n ** BigInt(precision) > 2n ** BigInt(8 * n - 1) - 1n) n++;
  return n;
}

/**
 * Iceberg's spec, Appendix A, Parquet: the physical type and logical type a primitive
 * Iceberg type is stored as. Logical types are spelled as below from pyarrow's reading.
 */
function icebergParquet(type: string): { physical: string; logical: string | null; length: number | null } {
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  if (decimal) {
    const [p, s] = [Number(decimal[1]), Number(decimal[2])];
    const logical = `Decimal(${p},${s})`;
    if (p <= 9) return { physical: 'INT32', logical, length: null };
    if (p <= 18) return { physical: 'INT64', logical, length: null };
    return { physical: 'FIXED_LEN_BYTE_ARRAY', logical, length: fewestBytes(p) };
  }
  const fixed = /^fixed\[(\d+)\]$/.exec(type);
  if (fixed) return { physical: 'FIXED_LEN_BYTE_ARRAY', logical: null, length: Number(fixed[1]) };
  const table: Record<string, [string, string | null, number?]> = {
    boolean: ['BOOLEAN', null],
    int: ['INT32', null],
    long: ['INT64', null],
    float: ['FLOAT', null],
    double: ['DOUBLE', null],
    date: ['INT32', 'Date'],
    time: ['INT64', 'Time(utc=false, microseconds)'],
    timestamp: ['INT64', 'Timestamp(utc=false, microseconds)'],
    timestamptz: ['INT64', 'Timestamp(utc=true, microseconds)'],
    string: ['BYTE_ARRAY', 'String'],
    uuid: ['FIXED_LEN_BYTE_ARRAY', 'UUID', 16],
    binary: ['BYTE_ARRAY', null],
  };
  const row = table[type];
  if (!row) throw new Error(`no Parquet mapping written here for Iceberg type ${type}`);
  return { physical: row[0], logical: row[1], length: row[2] ?? null };
}

interface Leaf { path: string; physical: string; logical: Record<string, unknown> | null; length: number | null }
interface Node { name: string; id: number | null; kind: string; children: Node[] }

/** pyarrow's logical type (its JSON form) spelled as icebergParquet spells it. */
function spelled(logical: Leaf['logical']): string | null {
  if (!logical) return null;
  const { Type: type } = logical;
  if (type === 'Timestamp' || type === 'Time') return `${type as string}(utc=${String(logical.isAdjustedToUTC)}, ${logical.timeUnit as string})`;
  if (type === 'Decimal') return `Decimal(${logical.precision as number},${logical.scale as number})`;
  return type as string;
}

function readFile(bytes: Uint8Array): { leaves: Leaf[]; tree: Node[] } {
  const path = join(dir, 'file.parquet');
  writeFileSync(path, bytes);
  return JSON.parse(execFileSync('python3', [script, path], { encoding: 'utf8' })) as { leaves: Leaf[]; tree: Node[] };
}

/** The Iceberg schema as a tree by the file's names (a list's element is `element`; `_partition` keeps its name in the file). */
function icebergTree(schema: TableSchema): { name: string; id: number; type: IcebergType; children: ReturnType<typeof icebergTree> }[] {
  const children = (type: IcebergType): ReturnType<typeof icebergTree> => {
    if (typeof type === 'string') return [];
    if (type.type === 'list') return [{ name: 'element', id: type['element-id'], type: type.element, children: children(type.element) }];
    return type.fields.map((field) => ({ name: field.name, id: field.id, type: field.type, children: children(field.type) }));
  };
  return icebergSchema(schema, 1).fields.map((field, i) => ({ name: schema.columns[i]!.name, id: field.id, type: field.type, children: children(field.type) }));
}

/** Each primitive of the Iceberg schema by its Parquet path: its Iceberg type. */
function icebergPrimitives(schema: TableSchema): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (prefix: string[], node: ReturnType<typeof icebergTree>[number]): void => {
    const path = node.name === 'element' && prefix.length > 0 ? [...prefix, 'list', 'element'] : [...prefix, node.name];
    if (typeof node.type === 'string') out.set(path.join('.'), node.type);
    for (const child of node.children) walk(path, child);
  };
  for (const node of icebergTree(schema)) walk([], node);
  return out;
}

/** The file's ids and node kinds beside the Iceberg schema's ids and kinds, as one tree each. */
function idTrees(schema: TableSchema, tree: Node[]) {
  const fromIceberg = (node: ReturnType<typeof icebergTree>[number]): unknown => ({
    name: node.name, id: node.id, kind: typeof node.type === 'string' ? 'primitive' : node.type.type, children: node.children.map(fromIceberg),
  });
  const fromFile = (node: Node): unknown => ({
    name: node.name, id: node.id, kind: node.kind === 'struct' || node.kind === 'list' ? node.kind : 'primitive', children: node.children.map(fromFile),
  });
  return { file: tree.map(fromFile), iceberg: icebergTree(schema).map(fromIceberg) };
}

const avroSchema = JSON.stringify({
  type: 'record', name: 'Everything', fields: [
    { name: 'flag', type: 'boolean' },
    { name: 'i', type: 'int' },
    { name: 'l', type: 'long' },
    { name: 'f', type: 'float' },
    { name: 'd', type: 'double' },
    { name: 's', type: 'string' },
    { name: 'raw', type: 'bytes' },
    { name: 'fx', type: { type: 'fixed', name: 'Four', size: 4 } },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['A', 'B'] } },
    { name: 'id', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'tm', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'tu', type: { type: 'long', logicalType: 'time-micros' } },
    { name: 'ts_ms', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'ts_us', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'local_ms', type: { type: 'long', logicalType: 'local-timestamp-millis' } },
    { name: 'local_us', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
    { name: 'd9', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
    { name: 'd18', type: { type: 'bytes', logicalType: 'decimal', precision: 18, scale: 6 } },
    { name: 'd20', type: { type: 'fixed', name: 'Nine', size: 9, logicalType: 'decimal', precision: 20, scale: 0 } },
    { name: 'd38', type: { type: 'bytes', logicalType: 'decimal', precision: 38, scale: 10 } },
    { name: 'd50', type: { type: 'bytes', logicalType: 'decimal', precision: 50, scale: 5 } },
    { name: 'nums', type: { type: 'array', items: 'long' } },
    { name: 'prices', type: { type: 'map', values: 'double' } },
    { name: 'addr', type: { type: 'record', name: 'Addr', fields: [{ name: 'geo', type: { type: 'record', name: 'Geo', fields: [{ name: 'at', type: { type: 'long', logicalType: 'local-timestamp-millis' } }] } }] } },
    { name: 'items', type: { type: 'array', items: { type: 'record', name: 'Item', fields: [{ name: 'sku', type: 'string' }, { name: 'when', type: { type: 'long', logicalType: 'timestamp-millis' } }] } } },
    { name: 'maybe', type: ['null', 'string'], default: null },
    { name: 'either', type: ['int', 'string'] },
    { name: 'chain', type: { type: 'record', name: 'Link', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'Link'], default: null }] } },
  ],
});

const protobufSchema = `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Everything {
  message Inner { double x = 1; }
  uint64 u64 = 1;
  fixed64 f64 = 2;
  int32 i = 3;
  sint64 s64 = 4;
  uint32 u32 = 5;
  google.protobuf.Timestamp at = 6;
  map<string, int32> counts = 7;
  map<int64, string> names = 8;
  repeated string tags = 9;
  bytes raw = 10;
  Inner inner = 11;
  optional bool flag = 12;
  float f = 13;
}`;

const jsonSchema = JSON.stringify({
  $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: {
    n: { type: 'integer' }, x: { type: 'number' }, s: { type: 'string' }, ok: { type: 'boolean' },
    at: { type: 'string', format: 'date-time' }, day: { type: 'string', format: 'date' }, anything: {},
    obj: { type: 'object', properties: { a: { type: ['string', 'null'] } } }, arr: { type: 'array', items: { type: 'integer' } },
    dict: { type: 'object', additionalProperties: { type: 'number' } },
  },
});

const tables: [string, () => TableSchema][] = [
  ['a json table', () => initialSchema('json')],
  ['a raw table', () => initialSchema('raw')],
  ['an Avro record with every type', () => merged('avro', { id: 1, type: 'AVRO', schema: avroSchema, references: [] })],
  ['a Protobuf message with every type', () => merged('protobuf', { id: 2, type: 'PROTOBUF', schema: protobufSchema, references: [] })],
  ['a JSON Schema object with every type', () => merged('json-schema', { id: 3, type: 'JSON', schema: jsonSchema, references: [] })],
];

function merged(format: 'avro' | 'protobuf' | 'json-schema', registered: RegistrySchema): TableSchema {
  return mergeRegistrySchemas(initialSchema(format), format, [{ schema: registered, sides: new Set(['value'] as const) }]);
}

function fileOf(schema: TableSchema, format: string, version: string): Uint8Array {
  const table = { tableId: 1n, name: 't', topic: 't', format, settings: resolveSettings({}) } as unknown as TableRecord;
  return encodeFile(table, schema, 0, [], version).bytes;
}

const formatOf = (name: string) => (name.includes('json table') ? 'json' : name.includes('raw') ? 'raw' : name.includes('Avro') ? 'avro' : name.includes('Protobuf') ? 'protobuf' : 'json-schema');

/** Each primitive column whose physical or logical type is not what Iceberg's mapping gives its declared type. */
function mismatches(schema: TableSchema, leaves: Leaf[]): { path: string; iceberg: string; file: object; spec: object }[] {
  const declared = icebergPrimitives(schema);
  expect([...declared.keys()].sort()).toEqual(leaves.map((leaf) => leaf.path).sort());
  return leaves.flatMap((leaf) => {
    const iceberg = declared.get(leaf.path)!;
    const file = { physical: leaf.physical, logical: spelled(leaf.logical), length: leaf.length };
    const spec = icebergParquet(iceberg);
    return JSON.stringify(file) === JSON.stringify(spec) ? [] : [{ path: leaf.path, iceberg, file, spec }];
  });
}

describe(`${encoderVersion} stores each Iceberg type as Iceberg's Parquet mapping says (pyarrow reads the file)`, () => {
  it.each(tables)('%s', (name, make) => {
    const schema = make();
    const { leaves, tree } = readFile(fileOf(schema, formatOf(name), encoderVersion));
    expect(leaves.length).toBeGreaterThan(5);
    expect(mismatches(schema, leaves)).toEqual([]);
    const ids = idTrees(schema, tree);
    expect(ids.file).toEqual(ids.iceberg);
  });

  it('the Avro record covers what the check is about: JSON text, local and UTC millisecond timestamps, decimals of every physical width and above precision 38, nested at depth', () => {
    const declared = icebergPrimitives(tables[2]![1]());
    expect(Object.fromEntries(['chain.next', 'local_ms', 'ts_ms', 'd9', 'd18', 'd20', 'd38', 'd50', 'addr.geo.at', 'items.list.element.when', 'id', 'kind', 'tm', 'prices.list.element.key'].map((p) => [p, declared.get(p)]))).toEqual({
      'chain.next': 'string', local_ms: 'timestamp', ts_ms: 'timestamptz', d9: 'decimal(9, 2)', d18: 'decimal(18, 6)', d20: 'decimal(20, 0)', d38: 'decimal(38, 10)', d50: 'fixed[21]',
      'addr.geo.at': 'timestamp', 'items.list.element.when': 'timestamptz', id: 'string', kind: 'string', tm: 'int', 'prices.list.element.key': 'string',
    });
  });
});

describe('encoder v5 files differ from the mapping only in JSON text (the JSON annotation), local millisecond timestamps (MILLIS) and decimals above precision 38 (DECIMAL-annotated fixed)', () => {
  const V5 = 'offsetlake-parquet@5/lz4-napi@2.10.0';
  it.each(tables)('%s', (name, make) => {
    const schema = make();
    const { leaves } = readFile(fileOf(schema, formatOf(name), V5));
    const found = mismatches(schema, leaves).map(({ path, file }) => `${path}: ${(file as { logical: string }).logical}`);
    const expected: Record<string, string[]> = {
      json: ['_value: JSON'],
      raw: [],
      avro: ['addr.geo.at: Timestamp(utc=false, milliseconds)', 'chain.next: JSON', 'd50: Decimal(50,5)', 'local_ms: Timestamp(utc=false, milliseconds)'],
      protobuf: [],
      'json-schema': ['anything: JSON'],
    };
    expect(found.sort()).toEqual(expected[formatOf(name)]);
  });
});

/** The bytes Iceberg's spec gives a decimal's unscaled value: two's complement, big-endian, `length` bytes (lowercase hex). */
function twosComplement(value: bigint, length: number): string {
  const modulus = 2n ** BigInt(8 * length);
  return (((value % modulus) + modulus) % modulus).toString(16).padStart(2 * length, '0');
}

interface FixedRead {
  columns: Record<string, { type: string; values: (string | null)[] }>;
  chunks: { path: string; row_group: number; physical: string; logical: string | null; length: number | null; has_min_max: boolean; null_count: number | null; has_column_index: boolean; has_offset_index: boolean }[];
}

describe('a decimal above precision 38 (Iceberg fixed[L]; only Avro decimal makes one), at the top level and in a struct', () => {
  const columns: Column[] = [
    { name: 'd50', type: { kind: 'decimal', precision: 50, scale: 0 }, nullable: true },
    { name: 'outer', type: { kind: 'struct', fields: [{ name: 'd39', type: { kind: 'decimal', precision: 39, scale: 3 }, nullable: false }] }, nullable: true },
  ];
  const top = 10n ** 50n - 1n;
  // both ends of the precision, ±1 and 0, values that differ in sign only: their unsigned byte order is not their order
  const d50 = [0n, -1n, 1n, top, -top, null, 255n, -256n, ...Array.from({ length: 400 }, (_, i) => (i % 9 === 0 ? null : BigInt(i) * 7_919n ** 11n * (i % 2 ? -1n : 1n)))];
  const d39 = d50.map((_, i) => (i % 5 === 0 ? null : BigInt(i) * 10n ** 36n * (i % 3 ? -1n : 1n) + BigInt(i)));
  const rows = d50.map((v, i) => ({ d50: v, outer: d39[i] === null ? null : { d39: d39[i] } }));
  const rowGroupRows = 150;
  const build = (version: string) => encodeParquet(columns, rows, { rowGroupRows, encoderVersion: version });
  const read = (bytes: Uint8Array): FixedRead => {
    const path = join(dir, 'fixed.parquet');
    writeFileSync(path, bytes);
    return JSON.parse(execFileSync('python3', [fixedScript, path], { encoding: 'utf8', maxBuffer: 64 << 20 })) as FixedRead;
  };
  const nullsPerGroup = (values: readonly (bigint | null)[]) =>
    Array.from({ length: Math.ceil(values.length / rowGroupRows) }, (_, g) => values.slice(g * rowGroupRows, (g + 1) * rowGroupRows).filter((v) => v === null).length);

  it(`${encoderVersion}: pyarrow reads a plain fixed_size_binary[L] (no DECIMAL annotation) holding each value's L-byte two's complement; no min/max, no ColumnIndex, null counts kept`, () => {
    const { columns: read_, chunks } = read(build(encoderVersion).bytes);
    const [l50, l39] = [fewestBytes(50), fewestBytes(39)];
    expect(read_).toEqual({
      d50: { type: `fixed_size_binary[${l50}]`, values: d50.map((v) => (v === null ? null : twosComplement(v, l50))) },
      'outer.d39': { type: `fixed_size_binary[${l39}]`, values: d39.map((v) => (v === null ? null : twosComplement(v, l39))) },
    });
    const expected = (path: string, length: number, nulls: number[]) => nulls.map((nullCount, g) => ({
      path, row_group: g, physical: 'FIXED_LEN_BYTE_ARRAY', logical: null, length, has_min_max: false, null_count: nullCount, has_column_index: false, has_offset_index: true,
    }));
    expect(chunks).toEqual(
      nullsPerGroup(d50).flatMap((_, g) => [expected('d50', l50, nullsPerGroup(d50))[g], expected('outer.d39', l39, nullsPerGroup(d39))[g]]),
    );
  });

  it(`${encoderVersion}: the catalog's statistics stay decimal values in decimal order, as v5's`, () => {
    const present = d50.filter((v) => v !== null);
    const statistics = build(encoderVersion).statistics!;
    expect(statistics.find((s) => s.column === 'd50')).toMatchObject({
      nullCount: d50.length - present.length, min: String(present.reduce((a, b) => (b < a ? b : a))), max: String(present.reduce((a, b) => (b > a ? b : a))),
    });
    expect(statistics).toEqual(build('offsetlake-parquet@5/lz4-napi@2.10.0').statistics);
  });

  it('encoder v5 keeps the DECIMAL annotation, its footer bounds and ColumnIndex', () => {
    const { columns: read_, chunks } = read(build('offsetlake-parquet@5/lz4-napi@2.10.0').bytes);
    expect([read_.d50!.type, read_['outer.d39']!.type]).toEqual(['decimal256(50, 0)', 'decimal256(39, 3)']);
    expect(new Set(chunks.map((c) => JSON.stringify([c.logical, c.has_min_max, c.has_column_index])))).toEqual(new Set([JSON.stringify(['DECIMAL', true, true])]));
  });
});
