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
import type { FileRecords, KafkaRecord, RecordColumns } from '../kafka/record.js';
import { recordColumns } from '../kafka/record-batch.js';
import type { TableFormat } from '../table/settings.js';
import { jsonSpanError, type JsonRules } from './json-text.js';
import type { Column, ColumnType } from './schema.js';
import { ByteSpans, type ColumnArrays, type ColumnVector, KeyValueLists, SafeInt64s } from './values.js';

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

/** What a rebuild of some columns may leave out (src/files/files.ts, encodeColumns). */
export interface ColumnArrayOptions {
  /** Only these columns are wanted: the others' arrays are not made (a header object per record is not free). */
  only?: ReadonlySet<string>;
  /**
   * Every value is known to be JSON (the file being rebuilt has no error row, and its
   * chunks are checked against their sha256 after): `_value` takes them unchecked.
   */
  valuesAreJson?: boolean;
  /** What a json table's values must be to be JSON text: the file's encoder's (`Encoder.jsonRules`); absent, the newest encoders'. */
  jsonRules?: JsonRules;
  /** `recordColumns(records)`, when the caller made them already (a registry table's decoder reads them too). */
  columns?: RecordColumns;
}

/**
 * Columns for `kafkaTableColumns(format)` from one partition's records, made from the
 * records as columns (`recordColumns`): keys, values and headers as places in the bytes
 * the records lie in, offsets and timestamps as numbers, so that nothing is made per
 * record (issue 27). A null value (a tombstone) is not an error: `_value` and `_error`
 * are both null. A json value that is not JSON leaves `_value` null and `_error` its
 * reason.
 */
export function kafkaColumnArrays(partition: number, records: FileRecords, format: TableFormat, options: ColumnArrayOptions = {}): ColumnArrays {
  const wants = (name: string) => options.only === undefined || options.only.has(name);
  const columns = options.columns ?? recordColumns(records);
  const n = columns.count;
  const arrays: Record<string, ArrayLike<unknown> | ColumnVector> = {};
  if (wants('_partition')) arrays._partition = new Array<number>(n).fill(partition);
  if (wants('_offset')) arrays._offset = columns.offsets ? new SafeInt64s(columns.offsets) : theRecords(records).map((r) => r.offset);
  if (wants('_timestamp')) arrays._timestamp = new SafeInt64s(columns.timestamps);
  if (wants('_key')) arrays._key = ByteSpans.of(columns.key);
  if (wants('_headers')) {
    arrays._headers = columns.headerNames
      ? new KeyValueLists(columns.headerStarts, ByteSpans.of(columns.headerNames), ByteSpans.of(columns.headerValues))
      : headerLists(theRecords(records));
  }
  const checked = format === 'json' && !options.valuesAreJson;
  if (!checked) {
    if (wants('_value')) arrays._value = ByteSpans.of(columns.value);
    if (format === 'json' && wants('_error')) arrays._error = withReadErrors(new Array<string | null>(n).fill(null), columns);
    return arrays;
  }
  if (!wants('_value') && !wants('_error')) return arrays;
  const { sources, source, starts } = columns.value;
  const lengths = new Int32Array(columns.value.lengths);
  const errors = new Array<string | null>(n).fill(null);
  const rules = options.jsonRules ?? 'engines';
  for (let i = 0; i < n; i++) {
    if (lengths[i]! < 0) continue;
    const error = jsonSpanError(sources[source[i]!]!, starts[i]!, lengths[i]!, rules);
    if (error === null) continue;
    errors[i] = error;
    lengths[i] = -1;
  }
  if (wants('_value')) arrays._value = new ByteSpans(sources, source, starts, lengths);
  if (wants('_error')) arrays._error = withReadErrors(errors, columns);
  return arrays;
}

/**
 * `_error` with the records' read errors (a batch no process can read, src/kafka/unreadable-batch.ts)
 * in their rows: such a row has no key or value, so no decoding error of its own. A raw
 * table has no `_error`: its rows of such a batch are null `_key` and `_value`.
 */
export function withReadErrors(errors: (string | null)[], columns: RecordColumns): (string | null)[] {
  const readErrors = columns.readErrors;
  if (readErrors) for (let i = 0; i < errors.length; i++) if (readErrors[i]) errors[i] = readErrors[i]!;
  return errors;
}

/** The records beside columns that need them (an offset beyond 2^53, a header name that is not UTF-8): self-contained columns never do. */
function theRecords(records: FileRecords): readonly KafkaRecord[] {
  if ('count' in records) throw new Error('self-contained record columns lack an offset or a header name');
  return records;
}


const utf8 = new TextEncoder();

/**
 * Every record's headers as `_headers` values, for records whose header names are not all
 * well-formed text (a lone surrogate, which no UTF-8 decode makes): `prepare` refuses them
 * in its words. The names that are, as their UTF-8 bytes, made once per distinct name.
 */
function headerLists(records: readonly KafkaRecord[]): { key: Uint8Array | string; value: Uint8Array | null }[][] {
  const keys = new Map<string, Uint8Array>();
  return records.map((r) => r.headers.map(([name, value]) => {
    let key: Uint8Array | string | undefined = keys.get(name);
    if (key === undefined) key = name.isWellFormed() ? keys.set(name, utf8.encode(name)).get(name)! : name;
    return { key, value };
  }));
}
