/**
 * Registry-format tables (avro, protobuf, json-schema): from records to the decoded
 * columns of one table-schema version. Everything needed is in the version itself (its
 * columns and the registry schemas merged into it), so a rebuild decodes exactly as
 * indexing did, without asking the registry, whatever the schema became since.
 *
 * Per record:
 *   value  must be in the wire format (magic byte 0 + schema id). Its fields become the
 *          table's columns (a value that is not a record: one column `value`; a field
 *          named like a Kafka column, e.g. `_offset`: column `value__offset`).
 *          `_value` keeps the raw bytes only when the value could not be decoded.
 *   key    is decoded into `_key_decoded` when it looks like the wire format (at least
 *          5 bytes, first byte 0); any other key is just `_key`, not an error.
 *   errors (wrong magic byte, unknown schema id, a schema of another format, bytes the
 *          schema cannot read) leave that side's decoded columns null and go to
 *          `_error`: "value: …", "key: …", joined by "; ".
 */
import { kafkaTableColumns, withReadErrors } from '../parquet/kafka-table.js';
import type { JsonRules } from '../parquet/json-text.js';
import { sameType, validateColumns, type Column, type ColumnType } from '../parquet/schema.js';
import type { ByteSpanColumn, FileRecords, RecordColumns } from '../kafka/record.js';
import { recordColumns } from '../kafka/record-batch.js';
import { ByteSpans, columnValues, SafeInt64s, StructVectors, type ColumnVector } from '../parquet/values.js';
import type { TableFormat } from '../table/settings.js';
import { avroWriter } from './decode-avro.js';
import { jsonSchemaWriter } from './decode-json-schema.js';
import { protobufWriter } from './decode-protobuf.js';
import { converter, routeField, type Convert } from './merge.js';
import type { RegistrySchema, SchemaType } from './registry.js';
import type { Side, TableSchema } from './table-schema.js';
import { readWireHeader } from './wire.js';
import { DecodeError, type ColumnDecoder, type WriterSchema } from './writer.js';
import { dataRecord, ownValue, setOwn } from '../common/objects.js';

export type RegistryFormat = 'avro' | 'protobuf' | 'json-schema';

export const KEY_COLUMN = '_key_decoded';
export const VALUE_COLUMN = 'value';

const schemaTypes: Record<RegistryFormat, SchemaType> = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' };

export function isRegistryFormat(format: TableFormat): format is RegistryFormat {
  return Object.hasOwn(schemaTypes, format);
}

/** Kafka's column names (and the decoded key's): value fields named so are renamed `value_<name>`. */
const reserved = new Set([...kafkaTableColumns('avro').map((c) => c.name), KEY_COLUMN]);

/** Every (schema id, side) the records name that `schema` has not merged yet. */
export function unmergedIds(schema: TableSchema, sets: Iterable<FileRecords>): Map<number, Set<Side>> {
  const known = schema.registrySchemas ?? {};
  const out = new Map<number, Set<Side>>();
  const note = (column: ByteSpanColumn, i: number, side: Side): void => {
    const length = column.lengths[i]!;
    if (length < 0) return;
    const start = column.starts[i]!;
    const header = readWireHeader(column.sources[column.source[i]!]!, start, start + length);
    if (typeof header === 'string' || known[header.schemaId]?.sides.includes(side)) return;
    let sides = out.get(header.schemaId);
    if (!sides) out.set(header.schemaId, (sides = new Set()));
    sides.add(side);
  };
  for (const records of sets) {
    // where the values lie: no view made of each
    const { count, key, value } = recordColumns(records);
    for (let i = 0; i < count; i++) {
      note(value, i, 'value');
      note(key, i, 'key');
    }
  }
  return out;
}

const writers = new Map<string, WriterSchema | string>();

/**
 * The schema read for decoding (cached by id, text and rules), or why it cannot be.
 * `rules`: the file's encoder's (`Encoder.jsonRules`), for what a JSON Schema's untyped
 * value and an Avro record that contains itself may become (JSON text). Protobuf's do not
 * depend on them: protobufjs reads and converts at most 100 messages deep on any thread.
 */
export function writerOf(schema: RegistrySchema, rules: JsonRules = 'engines'): WriterSchema | string {
  const key = `${schema.id}\u0000${schema.type}\u0000${rules}\u0000${schema.schema}\u0000${schema.references.map((r) => r.schema).join('\u0000')}`;
  let writer = writers.get(key);
  if (writer === undefined) {
    try {
      writer = schema.type === 'AVRO' ? avroWriter(schema, rules) : schema.type === 'PROTOBUF' ? protobufWriter(schema) : jsonSchemaWriter(schema, rules);
      // names the column model cannot take (empty, or twice in one struct) make it unreadable too
      validateColumns(sideColumns(writer.type, 'value'), `schema ${schema.id}`);
    } catch {
      writer = `schema ${schema.id} cannot be read as ${schema.type}`;
    }
    if (writers.size > 1000) writers.clear();
    writers.set(key, writer);
  }
  return writer;
}

/** The columns a side of a writer schema asks for. */
export function sideColumns(type: ColumnType, side: Side): Column[] {
  if (side === 'key') return [{ name: KEY_COLUMN, type, nullable: true }];
  if (type.kind !== 'struct') return [{ name: VALUE_COLUMN, type, nullable: true }];
  return type.fields.map((field) => ({ ...field, name: reserved.has(field.name) ? `value_${field.name}` : field.name, nullable: true }));
}

/** Why a merged schema cannot decode this table's records, if it cannot (`unreadable`: why the registry's answer for the id was not one). */
function unusable(format: RegistryFormat, schema: RegistrySchema | undefined, id: number, unreadable: string | undefined): string | undefined {
  if (!schema) return unreadable ?? `schema id ${id} is unknown to the Schema Registry`;
  if (schema.type !== schemaTypes[format]) return `schema ${id} is ${schema.type}, the table's format is ${format}`;
  return undefined;
}

interface Route {
  writer: WriterSchema;
  /**
   * [table column index, field of the decoded value (undefined: the whole value), convert,
   * the field's slot in `decodeColumns`'s values, whether the fast path may give it in
   * `scratch` (into a column vector, ColumnDecoder)]
   */
  targets: [number, string | undefined, Convert, number, boolean][];
  /** The writer's fast path (of a projection: reading only the targets' fields). */
  decodeColumns?: ColumnDecoder;
  /** `decodeColumns`'s values of the payload at hand, reused from record to record. */
  slots: unknown[];
  /** `decodeColumns`'s spans and numbers of the payload at hand (two per slot). */
  scratch: Float64Array;
}

/** Per side, the route of each schema id (or why it cannot decode). */
type Routes = Record<Side, Map<number, Route | string>>;

/** Decodes records for one table-schema version; make one per version and reuse it. */
export class TableDecoder {
  private readonly routes: Routes = { key: new Map(), value: new Map() };
  /** Routes that fill only some columns, by the columns' names. */
  private readonly projections = new Map<string, Routes>();
  /** The decoded columns: everything after Kafka's own. */
  readonly columns: Column[];
  /**
   * Which of them are built as column vectors: an Avro table's nullable string and
   * binary columns as places in the records' bytes (ByteColumn), its nullable int64 and
   * timestamp columns as numbers (Int64Column), whose values the column decoder can give
   * without a view or bigint each (a value they cannot hold turns them back into arrays).
   */
  private readonly vectorColumns: ('bytes' | 'int64' | 'struct' | undefined)[];

  /** `rules`: the encoder's of the files this decoder's rows go into (`Encoder.jsonRules`). */
  constructor(private readonly format: RegistryFormat, private readonly schema: TableSchema, private readonly rules: JsonRules = 'engines') {
    const kafka = new Set(kafkaTableColumns(format).map((c) => c.name));
    this.columns = schema.columns.filter((c) => !kafka.has(c.name));
    this.vectorColumns = this.columns.map((c) => {
      if (format !== 'avro' || !c.nullable) return undefined;
      if (c.type.kind === 'struct') return c.type.fields.every((field) => scratchKinds.has(field.type.kind)) ? 'struct' : undefined;
      return vectorOf(c.type.kind);
    });
  }

  /** The routes of a decode: every column's, or those filling only the columns in `only`. */
  private routesFor(only?: ReadonlySet<string>): Routes {
    if (!only) return this.routes;
    const key = [...only].sort().join(',');
    let routes = this.projections.get(key);
    if (!routes) this.projections.set(key, (routes = { key: new Map(), value: new Map() }));
    return routes;
  }

  private route(id: number, side: Side, routes: Routes, only?: ReadonlySet<string>): Route | string {
    let route = routes[side].get(id);
    if (route === undefined) {
      route = this.makeRoute(id, side);
      if (only && typeof route !== 'string') route = this.projected(route, only);
      routes[side].set(id, route);
    }
    return route;
  }

  /** The route filling only the columns named in `only`, decoding only the fields they come from where the writer can. */
  private projected(route: Route, only: ReadonlySet<string>): Route {
    const targets = route.targets.filter(([column]) => only.has(this.columns[column]!.name));
    const fields = targets.map(([, field]) => field);
    // the fast path of a projection reads the asked fields and skips the others, as `project` does
    const projectedColumns = route.decodeColumns && route.writer.projectColumns?.(targets.map(([, , , slot]) => slot), scratchSlots(targets));
    const fast = { ...(projectedColumns ? { decodeColumns: projectedColumns } : {}), slots: [], scratch: route.scratch };
    if (targets.length === 0 || fields.includes(undefined)) return { writer: route.writer, targets, ...fast };
    return { writer: route.writer.project?.(fields as string[]) ?? route.writer, targets, ...fast };
  }

  private makeRoute(id: number, side: Side): Route | string {
    const merged = this.schema.registrySchemas?.[id];
    const problem = unusable(this.format, merged, id, this.schema.unreadableSchemas?.[id]?.reason);
    if (problem) return problem;
    const writer = writerOf(merged!, this.rules);
    if (typeof writer === 'string') return writer;
    const targets: Route['targets'] = [];
    const whole = side === 'key' || writer.type.kind !== 'struct';
    const fields = sideColumns(writer.type, side);
    const sourceNames = whole ? [undefined] : (writer.type as Extract<ColumnType, { kind: 'struct' }>).fields.map((f) => f.name);
    fields.forEach((field, i) => {
      const column = routeField(this.columns, field.name, field.type);
      // slot i: a key is the whole value (slot 0), a value's field i is struct field i
      if (!column) return;
      const at = this.columns.indexOf(column);
      // a field of the column's own kind (a struct: its very type) is the column's value unconverted: the fast path may give it in its scratch
      const asIs = this.vectorColumns[at] === 'struct' ? sameType(column.type, field.type) : column.type.kind === field.type.kind;
      targets.push([at, sourceNames[i], converter(column.type, field.type), i, !whole && this.vectorColumns[at] !== undefined && asIs]);
    });
    const scratch = new Float64Array(2 * fields.length);
    // the fast path fills a struct's fields, not the struct: a key whose value is a record decodes the usual way
    if (!writer.decodeColumns || (whole && writer.type.kind === 'struct')) return { writer, targets, slots: [], scratch };
    const inScratch = scratchSlots(targets);
    const decodeColumns = (inScratch.size > 0 && writer.projectColumns?.(undefined, inScratch)) || writer.decodeColumns;
    return { writer, targets, decodeColumns, slots: [], scratch };
  }

  /**
   * `_value`, `_error` and every decoded column, one value per record. With `only`, the
   * decoded columns not named there stay null and a side none of whose columns is named
   * is not decoded: only for records known to decode without an error (a file whose
   * statistics say it has no error rows), whose named columns then get the values a full
   * decode gives them, for less work.
   */
  decode(records: FileRecords, only?: ReadonlySet<string>, columns: RecordColumns = recordColumns(records)): Record<string, unknown[] | ColumnVector> {
    const n = columns.count;
    const routes = this.routesFor(only);
    const { key, value } = columns;
    const arrays: Decoded[] = this.columns.map((_, c) => {
      const vector = this.vectorColumns[c];
      const { type } = this.columns[c]!;
      if (vector === 'struct') return new StructColumn(n, type as Extract<ColumnType, { kind: 'struct' }>, value.sources);
      return vector ? decodedColumn(type.kind, n, value.sources) : new Array<unknown>(n).fill(null);
    });
    const values = new Array<Uint8Array | null>(n);
    const errors = new Array<string | null>(n);
    for (let i = 0; i < n; i++) {
      const problems: string[] = [];
      values[i] = null;
      const valueLength = value.lengths[i]!;
      if (valueLength >= 0) {
        const bytes = value.sources[value.source[i]!]!;
        const start = value.starts[i]!;
        const problem = this.decodeSide(bytes, start, start + valueLength, value.source[i]!, 'value', arrays, i, false, routes, only);
        if (problem) {
          problems.push(`value: ${problem}`);
          values[i] = bytes.subarray(start, start + valueLength);
        }
      }
      const keyLength = key.lengths[i]!;
      if (keyLength >= 0) {
        const start = key.starts[i]!;
        const problem = this.decodeSide(key.sources[key.source[i]!]!, start, start + keyLength, -1, 'key', arrays, i, true, routes, only);
        if (problem) problems.push(`key: ${problem}`);
      }
      // toWellFormed: a message may quote a key that holds a lone surrogate
      errors[i] = problems.length > 0 ? problems.join('; ').toWellFormed() : null;
    }
    const out = dataRecord<unknown[] | ColumnVector>();
    out._value = values;
    out._error = withReadErrors(errors, columns);
    this.columns.forEach((column, c) => {
      const decoded = arrays[c]!;
      out[column.name] = Array.isArray(decoded) ? decoded : decoded.values();
    });
    return out;
  }

  /**
   * Fills the record's columns for one side from its bytes [start, end) of `bytes`
   * (`source`: their index among the values' sources, for spans; -1 for a key); the reason
   * when it cannot.
   */
  private decodeSide(
    bytes: Uint8Array, start: number, end: number, source: number, side: Side, arrays: Decoded[], row: number, optional: boolean, routes: Routes, only?: ReadonlySet<string>,
  ): string | undefined {
    const header = readWireHeader(bytes, start, end);
    if (typeof header === 'string') return optional ? undefined : header;
    const route = this.route(header.schemaId, side, routes, only);
    if (typeof route === 'string') return route;
    if (route.targets.length === 0) return undefined;
    if (route.decodeColumns) {
      const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (route.decodeColumns(buf, header.offset, end, route.slots, route.scratch)) return this.fill(route, arrays, row, source, header.schemaId);
    }
    // the usual path: a view of the payload alone
    const payload = bytes.subarray(start, end);
    let decoded: unknown;
    try {
      decoded = route.writer.decode(payload, header.offset - start);
    } catch (error) {
      return error instanceof DecodeError ? error.message : `schema ${header.schemaId} cannot decode the ${payload.byteLength} bytes`;
    }
    const { targets } = route;
    try {
      for (let t = 0; t < targets.length; t++) {
        const [column, field, convert] = targets[t]!;
        put(arrays[column]!, row, convert(field === undefined ? decoded : ownValue(decoded as Record<string, unknown>, field)));
      }
    } catch {
      return this.unfit(route, arrays, row, header.schemaId);
    }
    return undefined;
  }

  /**
   * The fast path's columns: each target takes its field's slot, converted as the usual
   * path converts the decoded value's field; a value in the scratch (its slot undefined)
   * is the field's bytes as they lie or its long as a number, which the usual path's
   * conversion leaves as they are.
   */
  private fill(route: Route, arrays: Decoded[], row: number, source: number, schemaId: number): string | undefined {
    const { targets, slots, scratch } = route;
    try {
      for (let t = 0; t < targets.length; t++) {
        const [column, , convert, slot, inScratch] = targets[t]!;
        const value = slots[slot];
        if (inScratch && value === undefined) {
          const decoded = arrays[column]!;
          if (decoded instanceof ByteColumn) decoded.span(row, source, scratch[2 * slot]!, scratch[2 * slot + 1]!);
          else put(decoded, row, scratch[2 * slot]!);
        } else if (inScratch && value instanceof Float64Array) (arrays[column] as StructColumn).fields(row, source, value);
        else put(arrays[column]!, row, convert(value));
      }
    } catch {
      return this.unfit(route, arrays, row, schemaId);
    }
    return undefined;
  }

  /** All or nothing: the side's columns stay null. */
  private unfit(route: Route, arrays: Decoded[], row: number, schemaId: number): string {
    for (const [column] of route.targets) put(arrays[column]!, row, null);
    return `schema ${schemaId}: the decoded value does not fit the table's columns`;
  }
}

/** The slots of the targets the fast path may give in its scratch. */
function scratchSlots(targets: Route['targets']): Set<number> {
  return new Set(targets.filter(([, , , , inScratch]) => inScratch).map(([, , , slot]) => slot));
}

type Decoded = unknown[] | ByteColumn | Int64Column | StructColumn;

/** The vector a decoded scalar column of `kind` is built as, if any: places in the records' bytes, or numbers. */
function vectorOf(kind: ColumnType['kind']): 'bytes' | 'int64' | undefined {
  return kind === 'string' || kind === 'binary' ? 'bytes' : kind === 'int64' || kind === 'timestamp' ? 'int64' : undefined;
}

/** A decoded scalar column of `kind`, its rows null until set: its vector (`vectorOf`), or an array. */
function decodedColumn(kind: ColumnType['kind'], n: number, shared: readonly Uint8Array[]): ByteColumn | Int64Column | unknown[] {
  const vector = vectorOf(kind);
  return vector === 'bytes' ? new ByteColumn(n, shared) : vector === 'int64' ? new Int64Column(n) : new Array<unknown>(n).fill(null);
}

/** A scalar the column decoder's scratch holds as a number: a boolean as 0 or 1, any other as itself (`prepare` takes a safe long as a number). */
function scratchScalar(kind: ColumnType['kind'], value: number): number | boolean {
  return kind === 'boolean' ? value !== 0 : value;
}

/** The kinds of a struct's fields that the column decoder gives in its scratch (avro-columns.ts structRead). */
const scratchKinds = new Set<ColumnType['kind']>(['string', 'binary', 'int64', 'timestamp', 'int32', 'date', 'float', 'double', 'boolean']);

/**
 * A decoded struct of scalar fields as StructVectors: a field per column (ByteColumn,
 * Int64Column or an array), filled from the column decoder's scratch or from a decoded
 * record; null rows marked, their fields given placeholders. A value it cannot take (not
 * a record, or a null where a field takes none) turns it into an array of the values,
 * which `prepare` normalizes (or refuses) as any other.
 */
class StructColumn {
  private readonly kinds: ColumnType['kind'][];
  private readonly columns: Decoded[];
  private readonly nulls: Uint8Array;
  private array: unknown[] | undefined;

  constructor(n: number, private readonly type: Extract<ColumnType, { kind: 'struct' }>, shared: readonly Uint8Array[]) {
    this.kinds = type.fields.map((field) => field.type.kind);
    this.columns = this.kinds.map((kind) => decodedColumn(kind, n, shared));
    this.nulls = new Uint8Array(n).fill(1);
  }

  /** Row `row` from the column decoder's scratch of a record read at `source`: two numbers per field (a span, or the value). */
  fields(row: number, source: number, nested: Float64Array): void {
    if (this.array) {
      this.array[row] = this.record(nested, source);
      return;
    }
    this.nulls[row] = 0;
    for (let f = 0; f < this.kinds.length; f++) {
      const column = this.columns[f]!;
      const kind = this.kinds[f]!;
      if (column instanceof ByteColumn) column.span(row, source, nested[2 * f]!, nested[2 * f + 1]!);
      else put(column, row, scratchScalar(kind, nested[2 * f]!));
    }
  }

  set(row: number, value: unknown): void {
    if (!this.array) {
      if (value === null || value === undefined) {
        this.nulls[row] = 1;
        return;
      }
      const record = value as Record<string, unknown>;
      const fits = typeof value === 'object' && !Array.isArray(value) && !(value instanceof Uint8Array)
        && this.type.fields.every((field) => field.nullable || (ownValue(record, field.name) ?? null) !== null);
      if (fits) {
        this.nulls[row] = 0;
        this.type.fields.forEach((field, f) => put(this.columns[f]!, row, ownValue(record, field.name) ?? null));
        return;
      }
      this.array = columnValues(this.values()) as unknown[];
    }
    this.array[row] = value;
  }

  values(): unknown[] | StructVectors {
    if (this.array) return this.array;
    // a null row's fields: placeholders (never read), so that a field that takes no null holds none
    const fields = this.columns.map((column, f) => {
      const values = Array.isArray(column) ? column : column.values();
      if (this.type.fields[f]!.nullable) return values;
      for (let row = 0; row < this.nulls.length; row++) {
        if (!this.nulls[row]) continue;
        if (values instanceof ByteSpans) values.lengths[row] = 0;
        else if (values instanceof SafeInt64s) values.numbers[row] = 0;
      }
      return values;
    });
    return new StructVectors(this.type.fields.map((field) => field.name), fields as (unknown[] | ByteSpans | SafeInt64s)[], this.nulls);
  }

  /** The record of a scratch, as the usual path gives it: for a column turned into an array. */
  private record(nested: Float64Array, source: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.type.fields.forEach((field, f) => {
      const column = this.columns[f]!;
      const at = nested[2 * f]!;
      setOwn(out, field.name, column instanceof ByteColumn ? column.sourceBytes(source).subarray(at, at + nested[2 * f + 1]!) : scratchScalar(this.kinds[f]!, at));
    });
    return out;
  }
}

function put(column: Decoded, row: number, value: unknown): void {
  if (Array.isArray(column)) column[row] = value;
  else column.set(row, value);
}

/**
 * A decoded int64 or timestamp column as numbers (SafeInt64s, NaN for null): the column
 * decoder's longs, any bigint or number that is a safe integer. Any other value (one
 * beyond 2^53, or of another kind) turns it into an array of the values, which `prepare`
 * then normalizes (or refuses) as any other.
 */
class Int64Column {
  private readonly numbers: Float64Array;
  private array: unknown[] | undefined;

  constructor(n: number) {
    this.numbers = new Float64Array(n).fill(NaN);
  }

  set(row: number, value: unknown): void {
    if (!this.array) {
      if (value === null || value === undefined) {
        this.numbers[row] = NaN;
        return;
      }
      const number = typeof value === 'bigint' && value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
      if (Number.isSafeInteger(number)) {
        this.numbers[row] = number as number;
        return;
      }
      this.array = columnValues(this.values()) as unknown[];
    }
    this.array[row] = value;
  }

  values(): unknown[] | SafeInt64s {
    return this.array ?? new SafeInt64s(this.numbers);
  }
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A decoded string or binary column as places in bytes (ByteSpans): the column decoder's
 * spans in the records' own bytes, any other byte value as a source of its own, null as
 * -1. A value of another kind (an enum's symbol, JSON text) turns it into an array of
 * the values, which `prepare` then normalizes as any other.
 */
class ByteColumn {
  private readonly sources: Uint8Array[];
  private readonly source: Int32Array;
  private readonly starts: Int32Array;
  private readonly lengths: Int32Array;
  private array: unknown[] | undefined;

  constructor(n: number, shared: readonly Uint8Array[]) {
    this.sources = [...shared];
    this.source = new Int32Array(n);
    this.starts = new Int32Array(n);
    this.lengths = new Int32Array(n).fill(-1);
  }

  /** Source `source` of the records' bytes. */
  sourceBytes(source: number): Uint8Array {
    return this.sources[source]!;
  }

  span(row: number, source: number, start: number, length: number): void {
    if (this.array) this.array[row] = this.sources[source]!.subarray(start, start + length);
    else {
      this.source[row] = source;
      this.starts[row] = start;
      this.lengths[row] = length;
    }
  }

  set(row: number, value: unknown): void {
    if (!this.array) {
      if (value === null || value === undefined) {
        this.lengths[row] = -1;
        return;
      }
      if (value instanceof Uint8Array) {
        this.span(row, this.sources.push(value) - 1, 0, value.byteLength);
        return;
      }
      this.array = columnValues(this.spans()) as unknown[];
    }
    this.array[row] = value;
  }

  values(): unknown[] | ByteSpans {
    return this.array ?? this.spans();
  }


  private spans(): ByteSpans {
    return new ByteSpans(this.sources, this.source, this.starts, this.lengths);
  }
}

const decoders: Record<JsonRules, WeakMap<TableSchema, TableDecoder>> = { engines: new WeakMap(), 'json-parse': new WeakMap() };

/** The decoder of a schema object for files of an encoder with these JSON rules (cached for as long as the object lives). */
export function tableDecoder(format: RegistryFormat, schema: TableSchema, rules: JsonRules = 'engines'): TableDecoder {
  let decoder = decoders[rules].get(schema);
  if (!decoder) {
    decoder = new TableDecoder(format, schema, rules);
    decoders[rules].set(schema, decoder);
  }
  return decoder;
}
