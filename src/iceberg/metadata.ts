/**
 * Table metadata (Iceberg table spec, format v2) as of one snapshot, from what the
 * catalog keeps: the table-schema versions as Iceberg schemas, the partition spec, the
 * snapshots still in the history then, their log and the metadata files before. Pure:
 * nothing in it depends on the clock or on the request, so the metadata of a snapshot
 * is the same bytes every time it is given.
 */
import type { TableSchema } from '../schema/table-schema.js';
import type { SnapshotRecord } from '../catalog/iceberg-snapshots.js';
import { highestFieldId, icebergSchema, nameMapping, type IcebergSchema } from './schema.js';
import { specJson, type PartitionSpec } from './partition.js';

export interface MetadataInput {
  tableUuid: string;
  /** The table's location: its data files and metadata lie below it. */
  location: string;
  createdAt: Date;
  /** Every table-schema version up to the snapshot's, in order. */
  schemas: readonly { version: number; schema: TableSchema }[];
  spec: PartitionSpec;
  properties: Record<string, string>;
  /** The snapshots in the history as of the current one, oldest first; the last is current (none: a table without files yet). */
  snapshots: readonly (SnapshotRecord & { manifestList: string })[];
  /** The metadata files of the earlier snapshots in the history, oldest first. */
  metadataLog: readonly { timestampMs: number; file: string }[];
}

export function snapshotJson(snapshot: SnapshotRecord & { manifestList: string }) {
  return {
    'snapshot-id': Number(snapshot.snapshotId),
    ...(snapshot.parentSnapshotId === null ? {} : { 'parent-snapshot-id': Number(snapshot.parentSnapshotId) }),
    'sequence-number': Number(snapshot.sequenceNumber),
    'timestamp-ms': snapshot.cutAt.getTime(),
    'manifest-list': snapshot.manifestList,
    summary: snapshot.summary,
    'schema-id': snapshot.schemaVersion,
  };
}

export function tableMetadata(input: MetadataInput) {
  const schemas: IcebergSchema[] = input.schemas.map(({ version, schema }) => icebergSchema(schema, version));
  const current = input.snapshots.at(-1);
  const currentSchema = schemas.at(-1)!;
  return {
    'format-version': 2,
    'table-uuid': input.tableUuid,
    location: input.location,
    'last-sequence-number': current ? Number(current.sequenceNumber) : 0,
    'last-updated-ms': current ? current.cutAt.getTime() : input.createdAt.getTime(),
    'last-column-id': highestFieldId(schemas),
    'current-schema-id': currentSchema['schema-id'],
    schemas,
    'default-spec-id': input.spec['spec-id'],
    'partition-specs': [specJson(input.spec)],
    'last-partition-id': Math.max(...input.spec.fields.map((field) => field['field-id'])),
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { ...input.properties, 'schema.name-mapping.default': JSON.stringify(nameMapping(currentSchema)) },
    'current-snapshot-id': current ? Number(current.snapshotId) : -1,
    refs: current ? { main: { 'snapshot-id': Number(current.snapshotId), type: 'branch' } } : {},
    snapshots: input.snapshots.map(snapshotJson),
    'snapshot-log': input.snapshots.map((s) => ({ 'timestamp-ms': s.cutAt.getTime(), 'snapshot-id': Number(s.snapshotId) })),
    'metadata-log': input.metadataLog.map((m) => ({ 'timestamp-ms': m.timestampMs, 'metadata-file': m.file })),
    statistics: [],
    'partition-statistics': [],
  };
}

export type TableMetadata = ReturnType<typeof tableMetadata>;
