/**
 * From a sealed range to the catalog's files: one Parquet file per time bucket, built in
 * memory only to take its exact statistics, footer and checksum; then the bytes go.
 * `encodeFile` is also what a rebuild runs, so both sides build the same way.
 */
import type { NewDataFile, NewRange } from '../catalog/files.js';
import type { Catalog } from '../catalog/db.js';
import type { TableRecord } from '../catalog/tables.js';
import { buildDataFile, encoderVersion as currentEncoder, kafkaColumnArrays, type DataFile } from '../parquet/index.js';
import type { SealedRange } from '../ranges/sealer.js';
import type { KafkaRecord } from '../record.js';
import type { TableSchema } from '../schema/table-schema.js';
import { currentSchema } from '../schema/versions.js';
import type { RangeBuilder } from './partition.js';

/** Builds one file's bytes and statistics: the same inputs give the same bytes. */
export function encodeFile(table: TableRecord, schema: TableSchema, partition: number, records: readonly KafkaRecord[], encoderVersion: string): DataFile {
  const data = kafkaColumnArrays(partition, records, table.format);
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

/** The indexer's builder: the table's current schema and the current encoder. */
export function rangeBuilder(catalog: Catalog): RangeBuilder {
  return async (table, partition, range: SealedRange): Promise<NewRange> => {
    const { version, schema } = await currentSchema(catalog, table.tableId);
    const files = range.files.map((file) =>
      toNewDataFile(encodeFile(table, schema, partition, file.records, currentEncoder), schema, version, file.bucket, file.records.length),
    );
    return { startOffset: range.startOffset, endOffset: range.endOffset, reason: range.reason, files };
  };
}
