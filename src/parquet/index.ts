/**
 * Data files: rows in, one deterministic Parquet file out, with exact statistics and
 * its footer. Nothing here touches disk or network; the bytes live only in memory.
 */
import { encodeParquet, type EncodedFile, type EncodeOptions } from './encoder.js';
import type { Column } from './schema.js';
import { type ColumnStatistics, columnStatistics } from './statistics.js';
import { prepare, type RowData } from './values.js';

export * from './encoder.js';
export * from './footer.js';
export * from './json-text.js';
export * from './kafka-table.js';
export * from './layout.js';
export * from './schema.js';
export * from './stat-text.js';
export * from './statistics.js';
export * from './values.js';

export interface DataFile {
  file: EncodedFile;
  statistics: ColumnStatistics[];
}

/** Encode and take statistics from one normalization of the data. */
export function buildDataFile(
  columns: readonly Column[],
  data: RowData,
  options: EncodeOptions & { encoderVersion?: string },
): DataFile {
  const prepared = prepare(columns, data);
  const file = encodeParquet(columns, prepared, options);
  return { file, statistics: file.statistics ?? columnStatistics(columns, prepared) };
}
