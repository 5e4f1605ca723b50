/**
 * A granule read encodes only the columns it serves (src/files/files.ts, encodeColumns),
 * and skips the work those columns do not depend on (the JSON check, registry decoding):
 * every chunk it makes must still be the whole file's chunk, byte for byte, whatever
 * columns are asked together, including rows whose value is not JSON or does not decode.
 */
import { describe, expect, it } from 'vitest';
import type { TableRecord } from '../../src/table/record.js';
import { resolveSettings, type TableFormat, defaultSettings } from '../../src/table/settings.js';
import { encodeColumns, encodeFile } from '../../src/files/files.js';
import { columnValues, fileLayout, leafCount, type FileLayout, encoderOf } from '../../src/parquet/index.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { initialSchema, type TableSchema } from '../../src/schema/table-schema.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { avro, pb, utf8, wire, zigzag } from '../helpers/spec-encoding.js';
import { tableDecoder } from '../../src/schema/decode.js';
import { readSpan } from '../../src/files/granules.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const table = (format: TableFormat): TableRecord => ({ tableId: 1n, name: 't', topic: 't', format, settings: resolveSettings({}) }) as unknown as TableRecord;

function record(i: number, value: Uint8Array | string | null, extra: Partial<KafkaRecord> = {}): KafkaRecord {
  return { offset: BigInt(100 + 2 * i), timestamp: Date.UTC(2026, 0, 1) + i, key: Buffer.from(`k${i}`), value: typeof value === 'string' ? Buffer.from(value) : value, headers: [], ...extra };
}

function layoutOf(footer: Uint8Array, size: number): FileLayout {
  const layout = fileLayout(footer, size);
  if ('problem' in layout) throw new Error(layout.problem);
  return layout;
}

/** Every single column, and some columns together, encoded alone: each chunk equals the whole file's. */
function expectSameChunks(format: TableFormat, schema: TableSchema, records: KafkaRecord[], options: { noErrorRows?: boolean } = {}): void {
  const whole = encodeFile(table(format), schema, 3, records, encoderVersion);
  const wholeLayout = layoutOf(whole.footer, whole.byteLength);
  expect(wholeLayout.rowGroups).toHaveLength(1);
  const firstLeaf = schema.columns.map((_, c) => schema.columns.slice(0, c).reduce((n, column) => n + leafCount(column), 0));
  const n = schema.columns.length;
  const sets = [...schema.columns.map((_, c) => [c]), [1, n - 1], [0, 1, 2], [...schema.columns.keys()]];
  for (const columns of sets) {
    const built = encodeColumns(table(format), schema, 3, records, encoderVersion, columns, options);
    const chunks = layoutOf(built.footer, built.byteLength).rowGroups[0]!.chunks;
    let at = 0;
    for (const c of columns) {
      for (let k = 0; k < leafCount(schema.columns[c]!); k++) {
        const want = wholeLayout.rowGroups[0]!.chunks[firstLeaf[c]! + k]!;
        const got = chunks[at++]!;
        expect(got.path, `columns ${columns}`).toBe(want.path);
        expect(Buffer.from(built.bytes.subarray(got.start, got.end)).equals(Buffer.from(whole.bytes.subarray(want.start, want.end))), `${format}: ${want.path} of columns ${columns}`).toBe(true);
      }
    }
  }
}

describe('encodeColumns: the chunks of a granule read are the whole file’s', () => {
  it('json: with values that are not JSON, tombstones and headers, whether or not _value and _error are asked', () => {
    const records = [
      record(0, '{"a":1}'),
      record(1, 'not json', { headers: [['h', Buffer.from('v')], ['n', null]] }),
      record(2, null, { key: null }),
      record(3, '[1,2,{"b":"\u00e9"}]'),
      record(4, '{"a":'),
    ];
    expectSameChunks('json', initialSchema('json'), records);
  });

  it('raw', () => {
    expectSameChunks('raw', initialSchema('raw'), [record(0, 'x'), record(1, null), record(2, Buffer.from([0, 255]))]);
  });

  it('json: a file without error rows rebuilt without the JSON check (noErrorRows) gives the same chunks', () => {
    const records = [record(0, '{"a":1}'), record(1, null), record(2, '[1,2,{"b":"\u00e9"}]', { headers: [['h', null]] }), record(3, '"text"'), record(4, '-0.5e3')];
    expectSameChunks('json', initialSchema('json'), records, { noErrorRows: true });
  });

  it('avro: a file without error rows (noErrorRows) decodes only the chosen columns\' fields, skipping the rest, and gives the same chunks', () => {
    const dev = { type: 'record', name: 'Dev', fields: [{ name: 'os', type: 'string' }, { name: 'v', type: 'int' }] };
    const fields = [
      { name: 'n', type: 'long' }, { name: 's', type: 'string' }, { name: 'dev', type: dev }, { name: 'dev2', type: ['null', 'Dev'] },
      { name: 'tags', type: { type: 'array', items: 'string' } }, { name: 'm', type: { type: 'map', values: 'long' } }, { name: 'agent', type: ['null', 'string'] },
      { name: 'e', type: { type: 'enum', name: 'E', symbols: ['A', 'B'] } }, { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
    ];
    const registered: RegistrySchema = { id: 9, type: 'AVRO', schema: JSON.stringify({ type: 'record', name: 'Click', fields }), references: [] };
    const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: registered, sides: new Set(['value'] as const) }]);
    // written field by field from the specification: unions and enums by their index, arrays and maps in one block
    const payload = (i: number) => [
      ...avro.long(BigInt(i) * 1_000_000_007n), ...avro.string(`s${i}é`), ...avro.string(`os${i % 3}`), ...zigzag(BigInt(i)),
      ...(i % 2 ? zigzag(0n) : [...zigzag(1n), ...avro.string('mac'), ...zigzag(7n)]),
      ...zigzag(BigInt(i % 3)), ...Array.from({ length: i % 3 }, (_, t) => avro.string(`t${t}`)).flat(), ...(i % 3 ? [0] : []),
      ...avro.map(i % 2 ? [['k', avro.long(i)]] : []).slice(i % 2 ? 0 : 1),
      ...(i % 4 === 0 ? zigzag(0n) : [...zigzag(1n), ...avro.string(`agent ${i}`)]),
      ...zigzag(BigInt(i % 2)), ...avro.long(1_764_547_200_000 + i),
    ];
    const records = Array.from({ length: 8 }, (_, i) => record(i, Buffer.from(wire(9, payload(i)))));
    const full = tableDecoder('avro', schema).decode(records);
    expect(full._error).toEqual(records.map(() => null));
    const only = tableDecoder('avro', schema).decode(records, new Set(['agent', 'e']));
    const decoded = Object.keys(full).filter((name) => name !== '_value' && name !== '_error');
    expect(decoded.length).toBeGreaterThan(5);
    for (const name of decoded) expect(columnValues(only[name]!), name).toEqual(name === 'agent' || name === 'e' ? columnValues(full[name]!) : records.map(() => null));
    expectSameChunks('avro', schema, records, { noErrorRows: true });
  });

  it('protobuf: a file without error rows (noErrorRows), its chosen columns decoded and normalized alone, gives the same chunks', () => {
    const text = 'syntax = "proto3"; package p; message Line { string sku = 1; int32 qty = 2; } message M { int64 id = 1; string name = 2; repeated Line lines = 3; map<string, int64> attrs = 4; optional string note = 5; }';
    const registered: RegistrySchema = { id: 11, type: 'PROTOBUF', schema: text, references: [] };
    const schema = mergeRegistrySchemas(initialSchema('protobuf'), 'protobuf', [{ schema: registered, sides: new Set(['value'] as const) }]);
    // written field by field from the specification: tag, then a varint or a length and bytes; a map entry is a message of key 1 and value 2
    const line = (t: number) => [...pb.bytes(1, utf8(`sku${t}`)), ...pb.varint(2, BigInt(t + 1))];
    const payload = (i: number) => [
      ...pb.varint(1, BigInt(i) * 1_000_003n), ...pb.bytes(2, utf8(`name ${i} é`)),
      ...Array.from({ length: i % 3 }, (_, t) => pb.bytes(3, line(t))).flat(),
      ...(i % 2 ? pb.bytes(4, [...pb.bytes(1, utf8('k')), ...pb.varint(2, BigInt(i))]) : []),
      ...(i % 4 === 0 ? [] : pb.bytes(5, utf8(`note ${i}`))),
    ];
    const records = Array.from({ length: 8 }, (_, i) => record(i, Buffer.from(wire(11, payload(i), [0]))));
    expect(tableDecoder('protobuf', schema).decode(records)._error).toEqual(records.map(() => null));
    expectSameChunks('protobuf', schema, records, { noErrorRows: true });
  });

  it('avro: with a value that does not decode (an error row), asked alone or with the record columns', () => {
    const registered: RegistrySchema = { id: 7, type: 'AVRO', schema: JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }, { name: 's', type: 'string' }] }), references: [] };
    const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: registered, sides: new Set(['value'] as const) }]);
    const records = [
      record(0, Buffer.from(wire(7, [...avro.long(5), ...avro.string('five')]))),
      record(1, Buffer.from(wire(7, [...avro.long(6)]))), // truncated: an error row
      record(2, null),
      record(3, Buffer.from(wire(7, [...avro.long(-1), ...avro.string('')])), { headers: [['h', null]] }),
    ];
    expectSameChunks('avro', schema, records);
  });
});

describe('a row group\'s first and last offset (fileLayout), and the span a granule read takes (readSpan)', () => {
  it('each row group of a file gives the first and last offset of the records put in it', () => {
    // offsets 100 102 104 | 106 108 | ... : three row groups of two records (row_group_rows 2), the last of one
    const records = [0, 1, 2, 3, 4].map((i) => record(i, '{"a":1}'));
    const small = { ...table('json'), settings: resolveSettings({ row_group_rows: '2' }) } as TableRecord;
    const file = encodeFile(small, initialSchema('json'), 3, records, encoderVersion);
    expect(layoutOf(file.footer, file.byteLength).rowGroups.map((group) => group.offsets)).toEqual([
      { first: 100n, last: 102n }, { first: 104n, last: 106n }, { first: 108n, last: 108n },
    ]);
  });

  const granule = { rowGroup: 0, startOffset: 1000n, endOffset: 6000n, rowCount: 3, kafkaBytes: 0, chunkSha256: new Uint8Array(0) };
  it('a granule whose records lie within half of its span is read from its first to its last offset; otherwise, whole', () => {
    expect(readSpan(granule, { first: 5990n, last: 5992n })).toEqual({ startOffset: 5990n, endOffset: 5993n, narrowed: true });
    expect(readSpan(granule, { first: 1000n, last: 3499n })).toEqual({ startOffset: 1000n, endOffset: 3500n, narrowed: true });
    expect(readSpan(granule, { first: 1000n, last: 3500n })).toEqual({ startOffset: 1000n, endOffset: 6000n, narrowed: false });
    expect(readSpan(granule, null)).toEqual({ startOffset: 1000n, endOffset: 6000n, narrowed: false });
  });

  it('offsets outside the granule\'s span (a footer that does not belong to it) are not trusted: the whole span is read', () => {
    expect(readSpan(granule, { first: 999n, last: 1002n }).narrowed).toBe(false);
    expect(readSpan(granule, { first: 5999n, last: 6000n }).narrowed).toBe(false);
  });
});
