/**
 * The pure parts of src/iceberg/: bounds in Iceberg's single-value serialization, and the
 * Avro manifest list and manifest of a real (small) data file. Every expectation comes
 * from pyiceberg 0.12 (its conversions.to_bytes and its own manifest readers) and fastavro
 * (test/unit/iceberg_spec.py), or from the table spec's field ids, never from our code.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { icebergBound } from '../../src/iceberg/bounds.js';
import { manifestBytes, manifestListBytes, entryStatus, type ListedManifest } from '../../src/iceberg/manifests.js';
import { partitionSpec } from '../../src/iceberg/partition.js';
import { icebergPrimitive, icebergSchema, nameMapping } from '../../src/iceberg/schema.js';
import { buildDataFile, type ScalarType } from '../../src/parquet/index.js';
import type { TableSchema } from '../../src/schema/table-schema.js';
import type { CatalogFile } from '../../src/catalog/file-reads.js';

const here = dirname(fileURLToPath(import.meta.url));

interface Spec {
  bounds: string[];
  manifests?: Record<string, unknown>[];
  expectedBounds?: Record<string, [string, string]>;
}

function pyiceberg(request: unknown): Spec {
  return JSON.parse(execFileSync('python3', [join(here, 'iceberg_spec.py')], { input: JSON.stringify(request), encoding: 'utf8', maxBuffer: 64 << 20 })) as Spec;
}

describe("bounds in Iceberg's single-value serialization", () => {
  // [our type, the bound's catalog text, the Iceberg type, the value pyiceberg is given]
  const cases: [ScalarType, string, string, unknown][] = [
    [{ kind: 'int32' }, '0', 'int', 0],
    [{ kind: 'int32' }, '-2147483648', 'int', -2147483648],
    [{ kind: 'int32' }, '2147483647', 'int', 2147483647],
    [{ kind: 'int64' }, '9223372036854775807', 'long', 9223372036854775807n],
    [{ kind: 'int64' }, '-9223372036854775808', 'long', -9223372036854775808n],
    [{ kind: 'float' }, '1.5', 'float', 1.5],
    [{ kind: 'float' }, '-Infinity', 'float', '-inf'],
    [{ kind: 'double' }, '0.1', 'double', 0.1],
    [{ kind: 'double' }, '-0', 'double', '-0.0'],
    [{ kind: 'double' }, '1.7976931348623157e+308', 'double', 1.7976931348623157e308],
    [{ kind: 'boolean' }, 'true', 'boolean', true],
    [{ kind: 'boolean' }, 'false', 'boolean', false],
    [{ kind: 'string' }, 'é€𝄞 and \u0000', 'string', 'é€𝄞 and \u0000'],
    [{ kind: 'json' }, '{"a": [1, 2]}', 'string', '{"a": [1, 2]}'],
    [{ kind: 'binary' }, '00ff10', 'binary', '00ff10'],
    [{ kind: 'date' }, '-719162', 'date', -719162],
    [{ kind: 'timestamp', unit: 'millis', utc: true }, '1700000000123', 'timestamptz', 1700000000123000],
    [{ kind: 'timestamp', unit: 'micros', utc: false }, '-1', 'timestamp', -1],
    [{ kind: 'decimal', precision: 10, scale: 2 }, '-1.50', 'decimal(10, 2)', '-1.50'],
    [{ kind: 'decimal', precision: 10, scale: 2 }, '0.00', 'decimal(10, 2)', '0.00'],
    [{ kind: 'decimal', precision: 5, scale: 2 }, '-0.01', 'decimal(5, 2)', '-0.01'],
    [{ kind: 'decimal', precision: 5, scale: 0 }, '128', 'decimal(5, 0)', '128'],
    [{ kind: 'decimal', precision: 38, scale: 0 }, '99999999999999999999999999999999999999', 'decimal(38, 0)', '99999999999999999999999999999999999999'],
  ];

  it('every type a table column can have serializes its bounds as pyiceberg does (conversions.to_bytes)', () => {
    // JSON has no 64-bit integers: a long goes as its decimal text
    const expected = pyiceberg({ bounds: cases.map(([, , type, value]) => ({ type, value: typeof value === 'bigint' ? value.toString() : value })) });
    cases.forEach(([stored, text, type], i) => {
      expect(icebergPrimitive(stored), text).toBe(type);
      expect(Buffer.from(icebergBound(stored, stored, text)!).toString('hex'), `${type} ${text}`).toBe(expected.bounds[i]);
    });
  });

  it('an int column widened to long, and a float widened to double, give the wider type its bounds exactly', () => {
    const expected = pyiceberg({ bounds: [{ type: 'long', value: -7 }, { type: 'double', value: 0.10000000149011612 }] });
    expect(Buffer.from(icebergBound({ kind: 'int32' }, { kind: 'int64' }, '-7')!).toString('hex')).toBe(expected.bounds[0]);
    expect(Buffer.from(icebergBound({ kind: 'float' }, { kind: 'double' }, String(Math.fround(0.1)))!).toString('hex')).toBe(expected.bounds[1]);
  });

  it('leaves out what it cannot give exactly: nanosecond timestamps (engines read them cut to microseconds)', () => {
    expect(icebergBound({ kind: 'timestamp', unit: 'nanos', utc: true }, { kind: 'timestamp', unit: 'nanos', utc: true }, '1700000000123456789')).toBeUndefined();
  });
});

describe('the Avro manifest list and manifest of a data file', () => {
  // a schema with every scalar kind, a list and a struct, ids as the catalog gives them
  const schema: TableSchema = {
    columns: [
      { id: 0, name: '_timestamp', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: false },
      { id: 1, name: 'n', type: { kind: 'int64' }, nullable: true },
      { id: 2, name: 'small', type: { kind: 'int32' }, nullable: true },
      { id: 3, name: 's', type: { kind: 'string' }, nullable: true },
      { id: 4, name: 'x', type: { kind: 'double' }, nullable: true },
      { id: 5, name: 'amount', type: { kind: 'decimal', precision: 10, scale: 2 }, nullable: true },
      { id: 6, name: 'raw', type: { kind: 'binary' }, nullable: true },
      { id: 7, name: 'day', type: { kind: 'date' }, nullable: true },
      { id: 8, name: 'flag', type: { kind: 'boolean' }, nullable: true },
      { id: 9, name: 'tags', type: { kind: 'list', element: { nullable: true, type: { kind: 'string' } } }, nullable: true },
      { id: 10, name: 'point', type: { kind: 'struct', fields: [{ name: 'lat', type: { kind: 'float' }, nullable: true }] }, nullable: true },
    ],
    leafIds: { _timestamp: 0, n: 1, small: 2, s: 3, x: 4, amount: 5, raw: 6, day: 7, flag: 8, 'tags.list.element': 11, 'point.lat': 12 },
    nodeIds: {},
  };
  const rows = [
    { _timestamp: 1_700_000_000_123, n: 5n, small: -3, s: 'b€', x: Number.NaN, amount: -150n, raw: Uint8Array.of(0xff), day: 19000, flag: true, tags: ['z', null], point: { lat: 1.5 } },
    { _timestamp: 1_700_000_001_000, n: null, small: 7, s: 'a', x: 2.5, amount: 99n, raw: Uint8Array.of(0x00, 0x01), day: -5, flag: false, tags: [], point: null },
    { _timestamp: 1_700_000_000_999, n: -9n, small: null, s: '𝄞', x: -1, amount: null, raw: null, day: 3, flag: null, tags: null, point: { lat: null } },
  ];
  const built = buildDataFile(schema.columns, rows, { rowGroupRows: 2, fieldIds: Object.fromEntries(schema.columns.map((c) => [c.name, c.id])) });
  const file: CatalogFile = {
    dataFileId: 42n, tableId: 1n, partition: 0, startOffset: 0n, endOffset: 3n, bucket: new Date(Date.UTC(2023, 10, 14, 22)),
    recordCount: 3n, fileSizeBytes: BigInt(built.file.bytes.byteLength), footer: Buffer.from(built.file.footer), sha256: Buffer.alloc(32),
    sealReason: 'flush', schemaVersion: 1, encoderVersion: 'test', source: 'live', createdAt: new Date(0), expiredAt: null, replacedBy: null, replacedAt: null, hasGranules: true, rangeFiles: 1,
    columns: built.statistics.map((s) => ({ columnId: schema.leafIds[s.column]!, columnName: s.column, valueCount: BigInt(s.valueCount), nullCount: BigInt(s.nullCount), nanCount: BigInt(s.nanCount), min: s.min, max: s.max })),
  };
  const spec = partitionSpec(schema, 'hour');
  const hourOf = Math.floor(file.bucket.getTime() / 3_600_000);

  it("pyiceberg's own readers read them back: the list's counts and partition summary, each entry's path, size, counts, partition hour, split offsets and bounds equal to pyiceberg's serialization of the rows' min and max", () => {
    const dir = mkdtempSync(join(tmpdir(), 'offsetlake-iceberg-'));
    const manifest = manifestBytes([{ file, location: join(dir, '42.parquet'), schema, partition: hourOf, status: entryStatus.added, snapshotId: 7n, sequenceNumber: 3n }], { table: schema, iceberg: icebergSchema(schema, 1) }, spec);
    const manifestPath = join(dir, 'm.avro');
    writeFileSync(manifestPath, manifest);
    const listed: ListedManifest = { path: manifestPath, length: manifest.byteLength, addedSnapshotId: 7n, sequenceNumber: 3n, minSequenceNumber: 3n, addedFiles: 1, existingFiles: 0, addedRows: 3n, existingRows: 0n, partitionLower: hourOf, partitionUpper: hourOf };
    const listPath = join(dir, 'snap.avro');
    writeFileSync(listPath, manifestListBytes([listed], { snapshotId: 7n, parentSnapshotId: null, sequenceNumber: 3n }, spec));

    const values = (name: string, convert: (v: unknown) => unknown = (v) => v) => rows.map((r) => (r as Record<string, unknown>)[name]).map((v) => (v === null ? null : convert(v)));
    const seen = pyiceberg({
      manifestList: listPath,
      columns: [
        { id: 0, type: 'timestamptz', values: values('_timestamp', (v) => (v as number) * 1000) },
        { id: 1, type: 'long', values: values('n', (v) => Number(v)) },
        { id: 2, type: 'int', values: values('small') },
        { id: 3, type: 'string', values: values('s') },
        { id: 4, type: 'double', values: values('x', (v) => (Number.isNaN(v) ? 'NaN' : v)) },
        { id: 5, type: 'decimal(10, 2)', values: ['-1.50', '0.99', null] },
        { id: 6, type: 'binary', values: values('raw', (v) => Buffer.from(v as Uint8Array).toString('hex')) },
        { id: 7, type: 'date', values: values('day') },
        { id: 8, type: 'boolean', values: values('flag') },
        { id: 12, type: 'float', values: [1.5, null] },
      ],
    });
    rmSync(dir, { recursive: true, force: true });
    const [list] = seen.manifests!;
    expect(list).toMatchObject({
      path: manifestPath, length: manifest.byteLength, spec_id: 0, content: 0, sequence_number: 3, min_sequence_number: 3, added_snapshot_id: 7,
      added_files_count: 1, existing_files_count: 0, deleted_files_count: 0, added_rows_count: 3, existing_rows_count: 0,
      partitions: [{ contains_null: false, contains_nan: false, lower_bound: pyiceberg({ bounds: [{ type: 'int', value: hourOf }] }).bounds[0], upper_bound: pyiceberg({ bounds: [{ type: 'int', value: hourOf }] }).bounds[0] }],
    });
    const [entry] = (list as { entries: Record<string, unknown>[] }).entries;
    expect(entry).toMatchObject({
      status: 1, snapshot_id: 7, sequence_number: 3, file_sequence_number: 3, file_path: join(dir, '42.parquet'), file_format: 'FileFormat.PARQUET',
      partition: [hourOf], record_count: 3, file_size_in_bytes: built.file.bytes.byteLength, content: 0,
      value_counts: { 0: 3, 1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3, 7: 3, 8: 3, 11: 4, 12: 3 },
      null_value_counts: { 0: 0, 1: 1, 2: 1, 3: 0, 4: 0, 5: 1, 6: 1, 7: 0, 8: 1, 11: 3, 12: 2 },
      nan_value_counts: { 4: 1, 12: 0 },
      split_offsets: [4, expect.any(Number)],
    });
    // bounds: every primitive field outside the list, as pyiceberg serializes the min and max of the rows
    const lower = entry!.lower_bounds as Record<string, string>;
    const upper = entry!.upper_bounds as Record<string, string>;
    expect(Object.keys(lower).sort()).toEqual(Object.keys(seen.expectedBounds!).sort());
    for (const [id, [min, max]] of Object.entries(seen.expectedBounds!)) {
      expect(lower[id], `lower ${id}`).toBe(min);
      expect(upper[id], `upper ${id}`).toBe(max);
    }
    expect(Object.keys(entry!.column_sizes as object).map(Number).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12]);
    // the spec's field ids, as fastavro reads them from the file's schema
    expect((list as { fieldIds: Record<string, number> }).fieldIds).toMatchObject({
      status: 0, snapshot_id: 1, sequence_number: 3, file_sequence_number: 4, data_file: 2, 'data_file.content': 134, 'data_file.file_path': 100,
      'data_file.file_format': 101, 'data_file.partition': 102, 'data_file.partition._timestamp_hour': 1000, 'data_file.record_count': 103,
      'data_file.file_size_in_bytes': 104, 'data_file.column_sizes': 108, 'data_file.value_counts': 109, 'data_file.null_value_counts': 110,
      'data_file.nan_value_counts': 137, 'data_file.lower_bounds': 125, 'data_file.upper_bounds': 128, 'data_file.split_offsets': 132,
      'data_file.column_sizes.key': 117, 'data_file.column_sizes.value': 118,
    });
  });

  it('the same files give the same bytes, and the schema and name mapping carry the catalog ids down to list elements and struct fields', () => {
    const make = () => manifestBytes([{ file, location: 's3://b/tables/t/files/42.parquet', schema, partition: hourOf, status: entryStatus.existing, snapshotId: 1n, sequenceNumber: 1n }], { table: schema, iceberg: icebergSchema(schema, 1) }, spec);
    expect(make().equals(make())).toBe(true);
    const iceberg = icebergSchema({ ...schema, leafIds: schema.leafIds }, 1);
    expect(iceberg.fields.find((f) => f.name === 'tags')).toEqual({ id: 9, name: 'tags', required: false, type: { type: 'list', 'element-id': 11, element: 'string', 'element-required': false } });
    expect(iceberg.fields.find((f) => f.name === 'point')).toEqual({ id: 10, name: 'point', required: false, type: { type: 'struct', fields: [{ id: 12, name: 'lat', required: false, type: 'float' }] } });
    expect(nameMapping(iceberg).find((m) => m.names[0] === 'tags')).toEqual({ 'field-id': 9, names: ['tags'], fields: [{ 'field-id': 11, names: ['element'] }] });
  });
});
