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
import type { TableFormat } from '../table/settings.js';
import { jsonValueError } from './json-text.js';
import type { Column, ColumnType } from './schema.js';
import { alreadyNormalized, type ColumnArrays } from './values.js';

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

/** What a rebuild of some columns may leave out (src/build/files.ts, encodeColumns). */
export interface ColumnArrayOptions {
  /** Only these columns are wanted: the others' arrays are not made (a header object per record is not free). */
  only?: ReadonlySet<string>;
  /**
   * Every value is known to be JSON (the file being rebuilt has no error row, and its
   * chunks are checked against their sha256 after): `_value` takes them unchecked.
   */
  valuesAreJson?: boolean;
}

/**
 * Column arrays for `kafkaTableColumns(format)` from one partition's records. A null
 * value (a tombstone) is not an error: `_value` and `_error` are both null.
 */
export function kafkaColumnArrays(partition: number, records: readonly KafkaRecord[], format: TableFormat, options: ColumnArrayOptions = {}): ColumnArrays {
  const n = records.length;
  const wants = (name: string) => options.only === undefined || options.only.has(name);
  const arrays: Record<string, unknown[]> = {};
  if (wants('_partition')) arrays._partition = new Array<number>(n).fill(partition);
  if (wants('_offset')) arrays._offset = records.map((r) => r.offset);
  if (wants('_timestamp')) arrays._timestamp = records.map((r) => r.timestamp);
  if (wants('_key')) arrays._key = records.map((r) => r.key);
  if (wants('_headers')) arrays._headers = headerLists(records);
  const checked = format === 'json' && !options.valuesAreJson;
  if (!checked) {
    if (wants('_value')) arrays._value = records.map((r) => r.value);
    if (format === 'json' && wants('_error')) arrays._error = new Array<string | null>(n).fill(null);
    return arrays;
  }
  if (!wants('_value') && !wants('_error')) return arrays;
  const values = new Array<Uint8Array | null>(n);
  const errors = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const value = records[i]!.value;
    const error = value === null ? null : jsonValueError(value);
    values[i] = error === null ? value : null;
    errors[i] = error;
  }
  if (wants('_value')) arrays._value = values;
  if (wants('_error')) arrays._error = errors;
  return arrays;
}

const utf8 = new TextEncoder();

/**
 * Every record's headers as `_headers` values, normalized as `prepare` would make them
 * (each key its UTF-8 bytes, made once per distinct name and shared: header names repeat
 * record after record). A name that is not well-formed text (a lone surrogate, which no
 * UTF-8 decode makes) leaves the lists to `prepare`, which refuses it in its words.
 */
function headerLists(records: readonly KafkaRecord[]): { key: Uint8Array | string; value: Uint8Array | null }[][] {
  const keys = new Map<string, Uint8Array>();
  let normalized = true;
  const lists = records.map((r) => r.headers.map(([name, value]) => {
    let key: Uint8Array | string | undefined = keys.get(name);
    if (key === undefined) {
      if (name.isWellFormed()) keys.set(name, (key = utf8.encode(name)));
      else {
        normalized = false;
        key = name;
      }
    }
    return { key, value };
  }));
  return normalized ? alreadyNormalized(lists, headersType) : lists;
}
