/**
 * The rows of a table file: Kafka's columns first, then the value's. Every committed
 * record becomes a row, whatever its value holds (invariant 4): a `json` value that is
 * not JSON leaves `_value` null and says why in `_error`.
 *
 * `_headers` is a LIST of STRUCT{key STRING, value BYTE_ARRAY nullable}, not JSON text:
 * header values are bytes (JSON would need base64 inside a string), order and
 * duplicate keys survive, engines query it natively (DuckDB: `_headers[1].key`,
 * `unnest`), and hyparquet-writer writes it deterministically. Its statistics are those
 * of its leaves `_headers.list.element.key` / `.value`. A record without headers has
 * an empty list, never null.
 */
import type { KafkaRecord } from '../kafka/record.js';
import type { TableFormat } from '../catalog/settings.js';
import { jsonValueError } from './json-text.js';
import type { Column, ColumnType } from './schema.js';
import type { ColumnArrays } from './values.js';

export const headersType: ColumnType = {
  kind: 'list',
  element: {
    nullable: false,
    type: {
      kind: 'struct',
      fields: [
        { name: 'key', type: { kind: 'string' }, nullable: false },
        { name: 'value', type: { kind: 'binary' }, nullable: true },
      ],
    },
  },
};

const kafkaColumns: readonly Column[] = [
  { name: '_partition', type: { kind: 'int32' }, nullable: false },
  { name: '_offset', type: { kind: 'int64' }, nullable: false },
  { name: '_timestamp', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: false },
  { name: '_key', type: { kind: 'binary' }, nullable: true },
  { name: '_headers', type: headersType, nullable: false },
];

/** The columns of a table file before any decoded value columns are added. */
export function kafkaTableColumns(format: TableFormat): Column[] {
  if (format === 'json') {
    return [...kafkaColumns, { name: '_value', type: { kind: 'json' }, nullable: true }, { name: '_error', type: { kind: 'string' }, nullable: true }];
  }
  if (format === 'raw') return [...kafkaColumns, { name: '_value', type: { kind: 'binary' }, nullable: true }];
  // Registry formats (src/schema/decode.ts): `_value` holds the raw bytes of a value that
  // could not be decoded, `_error` why; the decoded columns follow, merged from the
  // registry schemas the records name.
  return [...kafkaColumns, { name: '_value', type: { kind: 'binary' }, nullable: true }, { name: '_error', type: { kind: 'string' }, nullable: true }];
}

/**
 * Column arrays for `kafkaTableColumns(format)` from one partition's records. A null
 * value (a tombstone) is not an error: `_value` and `_error` are both null.
 */
export function kafkaColumnArrays(partition: number, records: readonly KafkaRecord[], format: TableFormat): ColumnArrays {
  const n = records.length;
  const partitions = new Array<number>(n).fill(partition);
  const offsets = new Array<bigint>(n);
  const timestamps = new Array<number>(n);
  const keys = new Array<Uint8Array | null>(n);
  const headers = new Array<{ key: string; value: Uint8Array | null }[]>(n);
  const values = new Array<Uint8Array | null>(n);
  const errors = format === 'json' ? new Array<string | null>(n) : undefined;
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    offsets[i] = r.offset;
    timestamps[i] = r.timestamp;
    keys[i] = r.key;
    headers[i] = r.headers.map(([key, value]) => ({ key, value }));
    if (!errors || r.value === null) {
      values[i] = r.value;
      if (errors) errors[i] = null;
    } else {
      const error = jsonValueError(r.value);
      values[i] = error === null ? r.value : null;
      errors[i] = error;
    }
  }
  const arrays: Record<string, unknown[]> = {
    _partition: partitions,
    _offset: offsets,
    _timestamp: timestamps,
    _key: keys,
    _headers: headers,
    _value: values,
  };
  if (errors) arrays._error = errors;
  return arrays;
}

