/**
 * Manifests and manifest lists (Iceberg table spec, format v2, "Manifests" and
 * "Manifest Lists"), computed from the catalog's files and never stored. Pure: the same
 * files, statistics and footers give the same bytes.
 *
 * Per data file: file_path (its location on the face the client reads), size, record
 * count, the partition tuple (hour or day of `_timestamp`), and per primitive field id
 * column_sizes (the column chunks' compressed bytes, from the footer), value_counts,
 * null_value_counts, nan_value_counts (float and double only), lower/upper bounds
 * (src/iceberg/bounds.ts; none for fields inside a list, as Iceberg's own writers do,
 * and none that we do not hold exactly), split_offsets (each row group's first byte,
 * where engines may split: our granules).
 */
import { parquetMetadata } from 'hyparquet';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { TableSchema } from '../schema/table-schema.js';
import { avroWriter, type AvroSchema } from './avro.js';
import { icebergBound } from './bounds.js';
import { primitiveFields, type IcebergSchema } from './schema.js';
import { specJson, type PartitionSpec } from './partition.js';

/** Iceberg's manifest entry status. */
export const entryStatus = { existing: 0, added: 1, deleted: 2 } as const;

const optional = (type: unknown) => ['null', type];
/** A field the Iceberg spec marks required: its Avro type as it is. */
const requiredField = (name: string, type: unknown, id: number): AvroSchema => ({ name, type, 'field-id': id });
/** A field the Iceberg spec marks optional: a union with null, null by default. */
const optionalField = (name: string, type: unknown, id: number): AvroSchema => ({ name, type: optional(type), default: null, 'field-id': id });
const intMap = (id: number, keyId: number, valueId: number, value: string, name: string): AvroSchema =>
  optionalField(name, { type: 'array', logicalType: 'map', items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [requiredField('key', 'int', keyId), requiredField('value', value, valueId)] } }, id);

/** The manifest_entry schema (v2) for a partition spec's partition struct. */
export function manifestEntrySchema(spec: PartitionSpec): AvroSchema {
  const partition = { type: 'record', name: 'r102', fields: spec.fields.map((field) => optionalField(field.name, field.avroType, field['field-id'])) };
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      requiredField('status', 'int', 0),
      optionalField('snapshot_id', 'long', 1),
      optionalField('sequence_number', 'long', 3),
      optionalField('file_sequence_number', 'long', 4),
      {
        name: 'data_file',
        'field-id': 2,
        type: {
          type: 'record',
          name: 'r2',
          fields: [
            requiredField('content', 'int', 134),
            requiredField('file_path', 'string', 100),
            requiredField('file_format', 'string', 101),
            requiredField('partition', partition, 102),
            requiredField('record_count', 'long', 103),
            requiredField('file_size_in_bytes', 'long', 104),
            intMap(108, 117, 118, 'long', 'column_sizes'),
            intMap(109, 119, 120, 'long', 'value_counts'),
            intMap(110, 121, 122, 'long', 'null_value_counts'),
            intMap(137, 138, 139, 'long', 'nan_value_counts'),
            intMap(125, 126, 127, 'bytes', 'lower_bounds'),
            intMap(128, 129, 130, 'bytes', 'upper_bounds'),
            optionalField('key_metadata', 'bytes', 131),
            optionalField('split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, 132),
            optionalField('equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, 135),
            optionalField('sort_order_id', 'int', 140),
          ],
        },
      },
    ],
  };
}

/** The manifest_file schema (v2): one manifest list entry. */
export const manifestFileSchema: AvroSchema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    requiredField('manifest_path', 'string', 500),
    requiredField('manifest_length', 'long', 501),
    requiredField('partition_spec_id', 'int', 502),
    requiredField('content', 'int', 517),
    requiredField('sequence_number', 'long', 515),
    requiredField('min_sequence_number', 'long', 516),
    requiredField('added_snapshot_id', 'long', 503),
    requiredField('added_files_count', 'int', 504),
    requiredField('existing_files_count', 'int', 505),
    requiredField('deleted_files_count', 'int', 506),
    requiredField('added_rows_count', 'long', 512),
    requiredField('existing_rows_count', 'long', 513),
    requiredField('deleted_rows_count', 'long', 514),
    optionalField('partitions', {
      type: 'array',
      'element-id': 508,
      items: {
        type: 'record',
        name: 'r508',
        fields: [
          requiredField('contains_null', 'boolean', 509),
          optionalField('contains_nan', 'boolean', 518),
          optionalField('lower_bound', 'bytes', 510),
          optionalField('upper_bound', 'bytes', 511),
        ],
      },
    }, 507),
    optionalField('key_metadata', 'bytes', 519),
  ],
};

/** One data file as a manifest holds it. */
export interface ManifestFile {
  file: CatalogFile;
  /** Its location as the client reads it (s3://bucket/tables/t/files/id.parquet, or an http URL). */
  location: string;
  /** The schema version it was built with. */
  schema: TableSchema;
  /** Its partition value (hours or days since 1970-01-01 UTC). */
  partition: number;
  status: (typeof entryStatus)[keyof typeof entryStatus];
  /** The snapshot that added it (that deleted it, for a DELETED entry), and the sequence number of the one that added it. */
  snapshotId: bigint;
  sequenceNumber: bigint;
}

/** Per leaf path: the compressed bytes of its column chunks; and each row group's first byte. */
export function footerSizes(footer: Uint8Array): { columnBytes: Map<string, number>; splitOffsets: number[] } {
  const metadata = parquetMetadata(footer);
  const columnBytes = new Map<string, number>();
  const splitOffsets: number[] = [];
  for (const group of metadata.row_groups) {
    let first: number | undefined;
    for (const column of group.columns) {
      const meta = column.meta_data;
      if (!meta) continue;
      const path = meta.path_in_schema.join('.');
      columnBytes.set(path, (columnBytes.get(path) ?? 0) + Number(meta.total_compressed_size));
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      first = first === undefined ? start : Math.min(first, start);
    }
    if (first !== undefined) splitOffsets.push(first);
  }
  return { columnBytes, splitOffsets: splitOffsets.sort((a, b) => a - b) };
}

type IntMap<V> = { key: number; value: V }[] | null;

/** primitiveFields of a schema, worked out once per schema object (every file of a manifest asks). */
const primitiveFieldsOf = new WeakMap<TableSchema, ReturnType<typeof primitiveFields>>();
function fieldsOf(schema: TableSchema): ReturnType<typeof primitiveFields> {
  let fields = primitiveFieldsOf.get(schema);
  if (!fields) primitiveFieldsOf.set(schema, (fields = primitiveFields(schema)));
  return fields;
}

/** Writers by partition spec (avsc compiles a schema once; every manifest of a table shares its spec). */
const entryWriters = new Map<string, ReturnType<typeof avroWriter>>();
function entryWriter(spec: PartitionSpec): ReturnType<typeof avroWriter> {
  const key = JSON.stringify(spec.fields);
  let writer = entryWriters.get(key);
  if (!writer) entryWriters.set(key, (writer = avroWriter(manifestEntrySchema(spec))));
  return writer;
}
const manifestListWriter = avroWriter(manifestFileSchema);

const entries = <V>(map: Map<number, V>): IntMap<V> => (map.size === 0 ? null : [...map].sort(([a], [b]) => a - b).map(([key, value]) => ({ key, value })));

/** A manifest entry's record (avsc's plain form of manifestEntrySchema) for one file, bounds typed by `manifestSchema`. */
export function manifestEntry(entry: ManifestFile, manifestSchema: TableSchema, spec: PartitionSpec): Record<string, unknown> {
  const { file } = entry;
  const stored = fieldsOf(entry.schema);
  const wanted = fieldsOf(manifestSchema);
  const sizes = footerSizes(file.footer);
  const columnSizes = new Map<number, number>();
  for (const [path, bytes] of sizes.columnBytes) {
    const id = entry.schema.leafIds[path];
    if (id !== undefined) columnSizes.set(id, bytes);
  }
  const valueCounts = new Map<number, number>();
  const nullCounts = new Map<number, number>();
  const nanCounts = new Map<number, number>();
  const lower = new Map<number, Buffer>();
  const upper = new Map<number, Buffer>();
  for (const column of file.columns) {
    const id = column.columnId;
    const field = wanted.get(id);
    const storedType = stored.get(id)?.type;
    if (!field || !storedType) continue;
    valueCounts.set(id, Number(column.valueCount));
    nullCounts.set(id, Number(column.nullCount));
    if (field.type.kind === 'float' || field.type.kind === 'double') nanCounts.set(id, Number(column.nanCount));
    if (field.inList) continue;
    const min = column.min === null ? undefined : icebergBound(storedType, field.type, column.min);
    const max = column.max === null ? undefined : icebergBound(storedType, field.type, column.max);
    if (min) lower.set(id, Buffer.from(min));
    if (max) upper.set(id, Buffer.from(max));
  }
  return {
    status: entry.status,
    snapshot_id: Number(entry.snapshotId),
    sequence_number: Number(entry.sequenceNumber),
    file_sequence_number: Number(entry.sequenceNumber),
    data_file: {
      content: 0,
      file_path: entry.location,
      file_format: 'PARQUET',
      partition: Object.fromEntries(spec.fields.map((field) => [field.name, entry.partition])),
      record_count: Number(file.recordCount),
      file_size_in_bytes: Number(file.fileSizeBytes),
      column_sizes: entries(columnSizes),
      value_counts: entries(valueCounts),
      null_value_counts: entries(nullCounts),
      nan_value_counts: entries(nanCounts),
      lower_bounds: entries(lower),
      upper_bounds: entries(upper),
      key_metadata: null,
      split_offsets: sizes.splitOffsets,
      equality_ids: null,
      sort_order_id: 0,
    },
  };
}

/** A manifest's bytes: its files (in the order given) and the file metadata Iceberg readers expect. */
export function manifestBytes(files: readonly ManifestFile[], manifestSchema: { table: TableSchema; iceberg: IcebergSchema }, spec: PartitionSpec): Buffer {
  return entryWriter(spec).file(files.map((file) => manifestEntry(file, manifestSchema.table, spec)), {
    schema: JSON.stringify(manifestSchema.iceberg),
    'schema-id': String(manifestSchema.iceberg['schema-id']),
    'partition-spec': JSON.stringify(specJson(spec).fields),
    'partition-spec-id': String(spec['spec-id']),
    'format-version': '2',
    content: 'data',
  });
}

/** One manifest as a manifest list names it. */
export interface ListedManifest {
  path: string;
  length: number;
  /** The snapshot that wrote it, and its sequence number. */
  addedSnapshotId: bigint;
  sequenceNumber: bigint;
  minSequenceNumber: bigint;
  addedFiles: number;
  existingFiles: number;
  deletedFiles: number;
  addedRows: bigint;
  existingRows: bigint;
  deletedRows: bigint;
  /** The partition values of its files (one spec field). */
  partitionLower: number;
  partitionUpper: number;
}

const intBytes = (value: number): Buffer => {
  const out = Buffer.alloc(4);
  out.writeInt32LE(value);
  return out;
};

/** A manifest list's bytes. */
export function manifestListBytes(manifests: readonly ListedManifest[], snapshot: { snapshotId: bigint; parentSnapshotId: bigint | null; sequenceNumber: bigint }, spec: PartitionSpec): Buffer {
  return manifestListWriter.file(
    manifests.map((m) => ({
      manifest_path: m.path,
      manifest_length: m.length,
      partition_spec_id: spec['spec-id'],
      content: 0,
      sequence_number: Number(m.sequenceNumber),
      min_sequence_number: Number(m.minSequenceNumber),
      added_snapshot_id: Number(m.addedSnapshotId),
      added_files_count: m.addedFiles,
      existing_files_count: m.existingFiles,
      deleted_files_count: m.deletedFiles,
      added_rows_count: Number(m.addedRows),
      existing_rows_count: Number(m.existingRows),
      deleted_rows_count: Number(m.deletedRows),
      partitions: [{ contains_null: false, contains_nan: false, lower_bound: intBytes(m.partitionLower), upper_bound: intBytes(m.partitionUpper) }],
      key_metadata: null,
    })),
    {
      'snapshot-id': String(snapshot.snapshotId),
      'parent-snapshot-id': snapshot.parentSnapshotId === null ? 'null' : String(snapshot.parentSnapshotId),
      'sequence-number': String(snapshot.sequenceNumber),
      'format-version': '2',
    },
  );
}
