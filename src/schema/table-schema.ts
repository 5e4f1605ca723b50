/**
 * A table's schema: Kafka's columns first, then the value's. Versioned in the catalog;
 * a column keeps its id for life (statistics are keyed by it), new columns get new ids.
 */
import type { TableFormat } from '../settings.js';

export type ColumnType =
  | 'int32'
  | 'int64'
  | 'double'
  | 'boolean'
  | 'string'
  | 'json'
  | 'binary'
  | 'timestamp_ms'
  /** Kafka record headers: a list of (key string, value bytes) pairs. */
  | 'headers';

export interface TableColumn {
  id: number;
  name: string;
  type: ColumnType;
  nullable: boolean;
}

export interface TableSchema {
  columns: TableColumn[];
}

/** Every row carries these, whatever the format. */
export const kafkaColumns: readonly TableColumn[] = [
  { id: 0, name: '_partition', type: 'int32', nullable: false },
  { id: 1, name: '_offset', type: 'int64', nullable: false },
  { id: 2, name: '_timestamp', type: 'timestamp_ms', nullable: false },
  { id: 3, name: '_key', type: 'binary', nullable: true },
  { id: 4, name: '_headers', type: 'headers', nullable: false },
];

/**
 * The schema a table starts with. `json`: the value as JSON text when it parses, else
 * null with the reason in `_error`. `raw`: the value's bytes as they are.
 */
export function initialSchema(format: TableFormat): TableSchema {
  const value: TableColumn[] =
    format === 'json'
      ? [
          { id: 5, name: '_value', type: 'json', nullable: true },
          { id: 6, name: '_error', type: 'string', nullable: true },
        ]
      : [{ id: 5, name: '_value', type: 'binary', nullable: true }];
  return { columns: [...kafkaColumns, ...value] };
}
