/**
 * Turns caller values into the one representation the writer and the statistics both
 * see, so that a file's statistics describe exactly the bytes it holds, and so that
 * the same logical input always reaches the writer in the same form (the writer's
 * page sizing and dictionary choices depend on the JS representation: a string and
 * its UTF-8 bytes would give different files).
 *
 * Accepted values, per kind (null or undefined is null):
 *   int32, date      number (integer; date = days since 1970-01-01)
 *   int64            bigint, or a safe-integer number
 *   timestamp        bigint or safe-integer number, epoch in the column's unit
 *   float, double    number (float is rounded to float32 here, as stored)
 *   boolean          boolean
 *   string, json     string (well-formed UTF-16: a lone surrogate is refused) or Uint8Array of
 *                    UTF-8 taken as is (the caller guarantees it is valid UTF-8);
 *                    json is JSON text, never an object: the text is kept as written
 *   binary           Uint8Array
 *   decimal          bigint (the unscaled value), or a safe-integer number
 *   list             array of element values;  struct  object keyed by field name
 * Normalized: int64/timestamp/decimal → bigint, string/json → Uint8Array.
 */
import { type Column, type ColumnType, type FieldType, isScalar, sameColumns, type ScalarType, validateColumns } from './schema.js';
import { ownValue, setOwn } from '../common/objects.js';

export type Row = Readonly<Record<string, unknown>>;
export type ColumnArrays = Readonly<Record<string, ArrayLike<unknown> | ColumnVector>>;
export type RowData = readonly Row[] | ColumnArrays | PreparedData;

/**
 * Column arrays already normalized for `columns`; build once, encode and take statistics
 * from it. A column is an array of values, or a vector that holds them without an object
 * per value (the Kafka columns of a committed read's records): `columnValues` gives any
 * column as an array, for code that wants one.
 */
export class PreparedData {
  constructor(
    readonly columns: readonly Column[],
    readonly arrays: readonly (unknown[] | ColumnVector)[],
    readonly rowCount: number,
  ) {}
}

/**
 * Byte strings (binary, or UTF-8 for string and json columns) as places in bytes they
 * already lie in: value i is `sources[source[i]]` from `starts[i]`, `lengths[i]` bytes
 * long, -1 for null. The writer copies them from there, so a column of a million values
 * is four arrays, not a million views.
 */
export class ByteSpans {
  readonly length: number;
  constructor(
    readonly sources: readonly Uint8Array[],
    readonly source: Int32Array,
    readonly starts: Int32Array,
    readonly lengths: Int32Array,
  ) {
    this.length = starts.length;
  }

  /** The spans of a column of places (a record column's keys, values or header parts). */
  static of(column: { sources: readonly Uint8Array[]; source: Int32Array; starts: Int32Array; lengths: Int32Array }): ByteSpans {
    return new ByteSpans(column.sources, column.source, column.starts, column.lengths);
  }

  /** Value i as a view (null for null). */
  at(i: number): Uint8Array | null {
    const length = this.lengths[i]!;
    if (length < 0) return null;
    const start = this.starts[i]!;
    return this.sources[this.source[i]!]!.subarray(start, start + length);
  }
}

/** int64 or timestamp values that are safe integers, as numbers: no bigint per value. NaN is null. */
export class SafeInt64s {
  readonly length: number;
  constructor(readonly numbers: Float64Array) {
    this.length = numbers.length;
  }

  at(i: number): bigint | null {
    const v = this.numbers[i]!;
    return Number.isNaN(v) ? null : BigInt(v);
  }
}

/**
 * A non-null list of non-null {key: string, value: binary nullable} structs per row (Kafka
 * headers): row i's entries are [starts[i], starts[i + 1]) of `keys` and `values`.
 */
export class KeyValueLists {
  readonly length: number;
  constructor(
    readonly starts: Int32Array,
    readonly keys: ByteSpans,
    readonly values: ByteSpans,
  ) {
    this.length = starts.length - 1;
  }

  at(i: number): { key: Uint8Array; value: Uint8Array | null }[] {
    const list: { key: Uint8Array; value: Uint8Array | null }[] = [];
    for (let e = this.starts[i]!; e < this.starts[i + 1]!; e++) list.push({ key: this.keys.at(e)!, value: this.values.at(e) });
    return list;
  }
}

/**
 * A struct of scalar fields as one column per field (a registry table's record field,
 * decoded without an object per row): row i is null where `nulls[i]` is 1, else its field
 * f is value i of `fields[f]`, an array or a vector. A null row's field values are
 * placeholders, never read.
 */
export class StructVectors {
  readonly length: number;
  constructor(
    readonly names: readonly string[],
    readonly fields: readonly (unknown[] | ByteSpans | SafeInt64s)[],
    readonly nulls: Uint8Array,
  ) {
    this.length = nulls.length;
  }

  at(i: number): Record<string, unknown> | null {
    if (this.nulls[i]) return null;
    const out: Record<string, unknown> = {};
    this.names.forEach((name, f) => setOwn(out, name, valueAt(this.fields[f]!, i)));
    return out;
  }
}

export type ColumnVector = ByteSpans | SafeInt64s | KeyValueLists | StructVectors;

export function isColumnVector(values: unknown): values is ColumnVector {
  return values instanceof ByteSpans || values instanceof SafeInt64s || values instanceof KeyValueLists || values instanceof StructVectors;
}

/** A column's values as an array (a vector's made now). */
export function columnValues(values: ArrayLike<unknown> | ColumnVector): readonly unknown[] {
  if (!isColumnVector(values)) return values as readonly unknown[];
  const out = new Array<unknown>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values.at(i);
  return out;
}

/** Value i of a column, whatever holds it. */
export function valueAt(values: ArrayLike<unknown> | ColumnVector, i: number): unknown {
  return isColumnVector(values) ? values.at(i) : values[i];
}

/** The data with every column an array: for encoders written before vectors (their bytes stay theirs). */
export function withArrays(data: PreparedData): PreparedData {
  if (!data.arrays.some(isColumnVector)) return data;
  return new PreparedData(data.columns, data.arrays.map((values) => columnValues(values) as unknown[]), data.rowCount);
}

/** Whether a vector holds values of the column's type as `prepare` would make them (a struct's array fields: once normalized). */
function vectorFits(column: FieldType, vector: ColumnVector): boolean {
  const { type } = column;
  if (vector instanceof StructVectors) {
    if (type.kind !== 'struct' || type.fields.length !== vector.names.length || (!column.nullable && vector.nulls.includes(1))) return false;
    return type.fields.every((field, f) => {
      const values = vector.fields[f]!;
      return field.name === vector.names[f] && isScalar(field.type) && (Array.isArray(values) || vectorFits(field, values));
    });
  }
  if (vector instanceof SafeInt64s) return (type.kind === 'int64' || type.kind === 'timestamp') && (column.nullable || !vector.numbers.some(Number.isNaN));
  if (vector instanceof ByteSpans) {
    if (type.kind !== 'binary' && type.kind !== 'string' && type.kind !== 'json') return false;
    return column.nullable || !vector.lengths.some((length) => length < 0);
  }
  if (type.kind !== 'list' || type.element.nullable || type.element.type.kind !== 'struct') return false;
  const [key, value, ...rest] = type.element.type.fields;
  return rest.length === 0 && key?.name === 'key' && !key.nullable && key.type.kind === 'string' && value?.name === 'value' && value.type.kind === 'binary'
    && (value.nullable || !vector.values.lengths.some((length) => length < 0));
}

const utf8 = new TextEncoder();

/** A value the column cannot take: `column` is the top-level column, `path` the leaf within it. */
export class ValueError extends Error {
  override name = 'ValueError';
  column = '';
  constructor(readonly path: string, readonly row: number, readonly expected: string, got: string) {
    super(`${path} (row ${row}) must be ${expected}, got ${got}`);
  }
}
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function prepare(columns: readonly Column[], data: RowData): PreparedData {
  if (data instanceof PreparedData) {
    if (data.columns !== columns && !sameColumns(data.columns, columns)) {
      throw new Error('prepared data was built for other columns');
    }
    return data;
  }
  validateColumns(columns);
  const rows = Array.isArray(data) ? (data as readonly Row[]) : undefined;
  const arrays = rows ? undefined : (data as ColumnArrays);
  let rowCount = rows ? rows.length : -1;
  const out = columns.map((column) => {
    const source = arrays ? ownValue(arrays, column.name) : undefined;
    if (arrays) {
      if (!source) throw new Error(`no values given for column ${column.name}`);
      if (rowCount === -1) rowCount = source.length;
      else if (source.length !== rowCount) {
        throw new Error(`column ${column.name} has ${source.length} values, other columns have ${rowCount}`);
      }
    }
    if (isColumnVector(source)) {
      if (!vectorFits(column, source)) throw new Error(`column ${column.name} (${column.type.kind}) cannot take the values given as ${source.constructor.name}`);
      return source instanceof StructVectors ? normalizedStruct(column, source) : source;
    }
    const n = rows ? rows.length : source!.length;
    const values = new Array<unknown>(n);
    const normalize = fieldNormalizer(column, column.name);
    try {
      for (let i = 0; i < n; i++) {
        const value = rows ? ownValue(rows[i]!, column.name) : source![i];
        values[i] = normalize(value, i);
      }
    } catch (error) {
      if (error instanceof ValueError) error.column = column.name;
      throw error;
    }
    return values;
  });
  return new PreparedData(columns, out, Math.max(rowCount, 0));
}

/** A struct's array fields normalized as its rows' fields would be (a null row's left null); its vectors as they are. */
function normalizedStruct(column: Column, struct: StructVectors): StructVectors {
  const { fields } = column.type as Extract<ColumnType, { kind: 'struct' }>;
  try {
    return new StructVectors(struct.names, struct.fields.map((values, f) => {
      if (!Array.isArray(values)) return values;
      const normalize = fieldNormalizer(fields[f]!, `${column.name}.${fields[f]!.name}`);
      return values.map((value, row) => (struct.nulls[row] ? null : normalize(value, row)));
    }), struct.nulls);
  } catch (error) {
    if (error instanceof ValueError) error.column = column.name;
    throw error;
  }
}

/** Normalizes one value of a field at `row`; throws a ValueError naming the leaf's path. */
type Normalizer = (value: unknown, row: number) => unknown;

/**
 * The normalizer of a field, built once per column: the type is walked and the leaf
 * paths (only needed for errors) are made once, not per value.
 */
function fieldNormalizer(field: FieldType, path: string): Normalizer {
  const normalize = valueNormalizer(field.type, path);
  if (field.nullable) return (value, row) => (value === null || value === undefined ? null : normalize(value, row));
  return (value, row) => {
    if (value === null || value === undefined) throw new ValueError(path, row, 'a value (the column is not nullable)', 'null');
    return normalize(value, row);
  };
}

function valueNormalizer(type: ColumnType, path: string): Normalizer {
  if (type.kind === 'list') {
    const element = fieldNormalizer(type.element, `${path}.element`);
    return (value, row) => {
      if (!Array.isArray(value)) throw bad(path, row, 'an array', value);
      return value.map((item) => element(item, row));
    };
  }
  if (type.kind === 'struct') {
    const fields = type.fields.map((f) => ({ name: f.name, normalize: fieldNormalizer(f, `${path}.${f.name}`) }));
    return (value, row) => {
      if (typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) {
        throw bad(path, row, 'an object', value);
      }
      const record = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const f of fields) setOwn(out, f.name, f.normalize(ownValue(record, f.name), row));
      return out;
    };
  }
  return (value, row) => normalizeScalar(type, value, path, row);
}

function normalizeScalar(type: ScalarType, value: unknown, path: string, row: number): unknown {
  switch (type.kind) {
    case 'int32':
    case 'date':
      if (typeof value === 'number' && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647) return value;
      throw bad(path, row, 'a 32-bit integer', value);
    case 'int64':
    case 'timestamp': {
      const v = toBigInt(value);
      if (v !== undefined && v >= INT64_MIN && v <= INT64_MAX) return v;
      throw bad(path, row, 'a 64-bit integer (bigint)', value);
    }
    case 'decimal': {
      const v = toBigInt(value);
      const limit = 10n ** BigInt(type.precision);
      if (v !== undefined && v < limit && v > -limit) return v;
      throw bad(path, row, `an unscaled decimal of at most ${type.precision} digits (bigint)`, value);
    }
    case 'float':
    case 'double':
      // one NaN: a NaN's payload bits are whatever produced it, and would reach the file
      if (typeof value === 'number') return Number.isNaN(value) ? NaN : type.kind === 'float' ? Math.fround(value) : value;
      throw bad(path, row, 'a number', value);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw bad(path, row, 'a boolean', value);
    case 'string':
    case 'json':
      if (typeof value === 'string') return encodeText(value, path, row);
      if (value instanceof Uint8Array) return value;
      throw bad(path, row, type.kind === 'json' ? 'JSON text (string or UTF-8 bytes)' : 'a string', value);
    case 'binary':
      if (value instanceof Uint8Array) return value;
      throw bad(path, row, 'bytes (Uint8Array)', value);
  }
}

/**
 * UTF-8 of a string, as TextEncoder makes it (a Uint8Array of its own). A short ASCII
 * string, such as a header key, is copied byte by byte: a TextEncoder call costs ~300 ns
 * whatever the length, the copy ~40 ns for 8 characters; up to 64 bytes the array also
 * lives in V8's heap, not in an ArrayBuffer of its own.
 */
function encodeText(value: string, path: string, row: number): Uint8Array {
  const n = value.length;
  if (n <= 64) {
    const out = new Uint8Array(n);
    let i = 0;
    for (; i < n; i++) {
      const c = value.charCodeAt(i);
      if (c > 0x7f) break;
      out[i] = c;
    }
    if (i === n) return out;
  }
  // TextEncoder would turn a lone surrogate into U+FFFD: a silent change of the value
  if (!value.isWellFormed()) throw bad(path, row, 'well-formed text (it holds a lone surrogate)', value);
  return utf8.encode(value);
}

function toBigInt(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return undefined;
}

function bad(path: string, row: number, expected: string, value: unknown): ValueError {
  const got = value instanceof Uint8Array ? 'bytes' : Array.isArray(value) ? 'an array' : `${typeof value} ${String(value).slice(0, 40).toWellFormed()}`;
  return new ValueError(path, row, expected, got);
}
