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
import { type Column, type ColumnType, type FieldType, sameColumns, sameType, type ScalarType, validateColumns } from './schema.js';
import { ownValue, setOwn } from '../common/objects.js';

export type Row = Readonly<Record<string, unknown>>;
export type ColumnArrays = Readonly<Record<string, ArrayLike<unknown>>>;
export type RowData = readonly Row[] | ColumnArrays | PreparedData;

/** Column arrays already normalized for `columns`; build once, encode and take statistics from it. */
export class PreparedData {
  constructor(
    readonly columns: readonly Column[],
    readonly arrays: readonly unknown[][],
    readonly rowCount: number,
  ) {}
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
/**
 * Column arrays their maker built already normalized for a type, which `prepare` then
 * takes as they are: the Kafka columns' headers (kafka-table.ts) come out of the records
 * in the normalized form, so normalizing them again was a new list, struct and key bytes
 * per header per row for nothing.
 */
const normalizedFor = new WeakMap<readonly unknown[], ColumnType>();

/** Marks `values` as normalized for `type` (a non-nullable column's values, none null). */
export function alreadyNormalized<T extends readonly unknown[]>(values: T, type: ColumnType): T {
  normalizedFor.set(values, type);
  return values;
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
    const n = rows ? rows.length : source!.length;
    const marked = source && Array.isArray(source) ? normalizedFor.get(source) : undefined;
    if (marked && !column.nullable && sameType(marked, column.type)) return source as unknown[];
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
