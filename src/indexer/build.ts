/**
 * From a sealed range to the catalog's files: one Parquet file per time bucket, built in
 * memory only to take its exact statistics, footer and checksum; then the bytes go.
 * `encodeFile` is also what a rebuild runs, so both sides build the same way. Registry
 * formats first merge every schema the range's records name into the table schema
 * (src/schema/evolve.ts), then decode with that version (src/schema/decode.ts).
 */
import type { NewDataFile, NewRange } from '../catalog/files.js';
import type { Catalog } from '../catalog/db.js';
import type { TableRecord } from '../catalog/tables.js';
import { buildDataFile, encoderVersion as currentEncoder, kafkaColumnArrays, type DataFile } from '../parquet/index.js';
import type { SealedRange } from '../ranges/sealer.js';
import type { KafkaRecord } from '../record.js';
import type { TableSchema } from '../schema/table-schema.js';
import { isRegistryFormat, tableDecoder } from '../schema/decode.js';
import { schemaForRecords } from '../schema/evolve.js';
import { defaultRegistry, type SchemaRegistry } from '../schema/registry.js';
import { currentSchema } from '../schema/versions.js';
import type { RangeBuilder } from './partition.js';

/** Builds one file's bytes and statistics: the same inputs give the same bytes. */
export function encodeFile(table: TableRecord, schema: TableSchema, partition: number, records: readonly KafkaRecord[], encoderVersion: string): DataFile {
  let data = kafkaColumnArrays(partition, records, table.format);
  if (isRegistryFormat(table.format)) data = { ...data, ...tableDecoder(table.format, schema).decode(records) };
  return buildDataFile(schema.columns, data, { rowGroupRows: table.settings.row_group_rows, encoderVersion });
}

export function toNewDataFile(built: DataFile, schema: TableSchema, schemaVersion: number, bucket: number, recordCount: number): NewDataFile {
  return {
    bucket,
    recordCount,
    fileSizeBytes: built.file.byteLength,
    footer: built.file.footer,
    sha256: built.file.sha256,
    schemaVersion,
    encoderVersion: built.file.encoderVersion,
    columns: built.statistics.map((stats) => {
      const columnId = schema.leafIds[stats.column];
      if (columnId === undefined) throw new Error(`no column id for leaf ${stats.column} in the table schema`);
      return { columnId, valueCount: stats.valueCount, nullCount: stats.nullCount, nanCount: stats.nanCount, min: stats.min, max: stats.max };
    }),
  };
}

function* recordsOf(range: SealedRange): Iterable<KafkaRecord> {
  for (const file of range.files) yield* file.records;
}

/**
 * The indexer's builder: the table's current schema (merged with the range's registry
 * schemas) and the current encoder. `registry` defaults to SCHEMA_REGISTRY_URL (else the
 * local stack's), made on first need.
 */
export function rangeBuilder(catalog: Catalog, registry?: SchemaRegistry): RangeBuilder {
  return async (table, partition, range: SealedRange): Promise<NewRange> => {
    let current = await currentSchema(catalog, table.tableId);
    if (isRegistryFormat(table.format)) {
      current = await schemaForRecords(catalog, table, current, recordsOf(range), registry ?? defaultRegistry());
    }
    const { version, schema } = current;
    const files = range.files.map((file) =>
      toNewDataFile(encodeFile(table, schema, partition, file.records, currentEncoder), schema, version, file.bucket, file.records.length),
    );
    return { startOffset: range.startOffset, endOffset: range.endOffset, reason: range.reason, files };
  };
}
