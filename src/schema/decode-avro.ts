/**
 * Avro (avsc): records → structs, arrays → lists, maps → lists of {key, value}, enums →
 * strings, fixed and bytes → binary, `[null, T]` → nullable T, other unions → a struct
 * with one field per branch (named by the branch), a record that contains itself →
 * JSON text. Logical types: timestamp-millis/micros (and local-*) → timestamp, date →
 * date, decimal → decimal, uuid → string; others are their underlying type.
 * Longs are read as bigint, never rounded.
 */
import { isUtf8 } from 'node:buffer';
import avro from 'avsc';
import type { ColumnType } from '../parquet/schema.js';
import type { RegistrySchema } from './registry.js';
import { aliasAbsentFrom, checkDecimal, DecodeError, jsonText, listOf, mapType, signedBigInt, storedAsDecoded, structOf, type Shape, type StructMember, type WriterSchema } from './writer.js';
import { ownValue, setOwn } from '../common/objects.js';
import { columnDecoder } from './avro-columns.js';
import { JSON_NESTING_LIMIT, NESTED_TOO_DEEP, untypedJsonProblem, type JsonRules } from '../parquet/json-text.js';

type AvroType = avro.Type;

/** A long as bigint, never rounded: avsc unpacks the varint's 8 bytes, Node reads them. */
export const BigLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: number | string) => BigInt(n),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint' || Number.isSafeInteger(n),
  compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
});

/**
 * A string read as its UTF-8 bytes: the column takes bytes as they are, so the text is
 * neither decoded here nor encoded again by the writer (a third of the build's time on
 * string-heavy records). Still a `string` to avsc (union branches keep their names);
 * writing (producers in tests) takes JS strings as usual.
 */
const BytesString: AvroType = Object.create(avro.Type.forSchema('string'), {
  _read: { value: (tap: { readBytes(): Buffer }) => tap.readBytes() },
});

/** Logical types keep their decoded underlying value; the walk below converts. */
class Marked extends avro.types.LogicalType {
  readonly attrs: Record<string, unknown>;
  constructor(schema: avro.Schema, opts?: unknown) {
    super(schema, opts);
    this.attrs = schema as unknown as Record<string, unknown>;
  }
  protected override _fromValue(value: unknown): unknown {
    return value;
  }
  protected override _toValue(value: unknown): unknown {
    return value;
  }
  protected override _resolve(type: AvroType): unknown {
    return avro.Type.isType(type, this.underlyingType.typeName) ? (value: unknown) => value : undefined;
  }
}

const logicalNames = ['timestamp-millis', 'timestamp-micros', 'local-timestamp-millis', 'local-timestamp-micros', 'date', 'decimal', 'uuid'];

/**
 * avsc's options for our schemas: bigint longs, every union wrapped (so branches are named).
 * `nestingBounded`: unions, arrays and maps count how deep they nest while a payload is
 * read, and one nested deeper than JSON_NESTING_LIMIT ends the read (a record that contains
 * itself, by the `engines` rules): every way a record contains itself passes one of them,
 * so the read's depth, and with it its stack, is bounded the same on every thread.
 */
export function avroOptions(registry: Record<string, AvroType> = {}, bytesStrings = false, nestingBounded = false): Partial<avro.ForSchemaOptions> {
  // `"long"` resolves through the registry, but `{"type": "long"}` (with or without a
  // logical type) makes a plain number long; the hook makes every long a bigint one. A
  // logical long is seen twice: first to make the logical type, then for its underlying type.
  const logicalSeen = new WeakSet<object>();
  const mapSeen = new WeakSet<object>();
  const typeHook = (schema: unknown, options: avro.ForSchemaOptions): AvroType | undefined => {
    if (bytesStrings && schema === 'string') return BytesString;
    if (typeof schema !== 'object' || schema === null) return undefined;
    const primitive = (schema as { type?: unknown }).type;
    if ((primitive === 'map' || primitive === 'array') && !mapSeen.has(schema)) {
      // avsc reads a map into a plain object, where a key `__proto__` is lost and
      // integer-like keys move first; ours keeps every key, in the order written
      mapSeen.add(schema);
      const read = (primitive === 'map' ? readMap : readArray) as (this: object, tap: AvroTap) => unknown;
      return Object.create(avro.Type.forSchema(schema as avro.Schema, options), { _read: { value: nestingBounded ? counted(read) : read } }) as AvroType;
    }
    if (nestingBounded && Array.isArray(schema) && !mapSeen.has(schema)) {
      mapSeen.add(schema);
      const union = avro.Type.forSchema(schema as avro.Schema, options) as unknown as { _read(tap: AvroTap): unknown };
      return Object.create(union, { _read: { value: counted(union._read) } }) as AvroType;
    }
    if (primitive !== 'long' && !(bytesStrings && primitive === 'string')) return undefined;
    const logicalType = (schema as { logicalType?: unknown }).logicalType;
    if (typeof logicalType === 'string' && logicalNames.includes(logicalType) && !logicalSeen.has(schema)) {
      logicalSeen.add(schema);
      return undefined;
    }
    return primitive === 'long' ? BigLong : BytesString;
  };
  return {
    wrapUnions: true,
    typeHook: typeHook as avro.ForSchemaOptions['typeHook'],
    registry: { long: BigLong, ...(bytesStrings ? { string: BytesString } : {}), ...registry } as Record<string, AvroType>,
    logicalTypes: Object.fromEntries(logicalNames.map((name) => [name, Marked])) as avro.ForSchemaOptions['logicalTypes'],
  };
}

/** avsc's type for the schema; `bytesStrings`: strings decode to their UTF-8 bytes; `nestingBounded`: see avroOptions. */
export function avroType(schema: RegistrySchema, bytesStrings = false, nestingBounded = false): AvroType {
  const registry: Record<string, AvroType> = {};
  const options = avroOptions(registry, bytesStrings, nestingBounded);
  // referenced schemas define named types that the main schema names
  for (const reference of schema.references) avro.Type.forSchema(renameProtoFields(JSON.parse(reference.schema), schema).json as avro.Schema, options);
  const { json, alias } = renameProtoFields(JSON.parse(schema.schema), schema);
  const type = avro.Type.forSchema(json as avro.Schema, options);
  if (alias) protoAliases.set(type, alias);
  return type;
}

/**
 * avsc assigns a record's fields as properties, so a field named `__proto__` (a valid
 * Avro name) would set the record's prototype and vanish. Such a field is read under an
 * alias that appears nowhere in the schema texts (Avro decodes by position, so the name
 * changes nothing on the wire), and becomes the column `__proto__` again.
 */
const protoAliases = new WeakMap<AvroType, string>();

function renameProtoFields(json: unknown, schema: RegistrySchema): { json: unknown; alias?: string } {
  const alias = aliasAbsentFrom(schema, 'proto_field');
  let renamed = false;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (Array.isArray(record.fields)) {
      for (const field of record.fields as Record<string, unknown>[]) {
        if (field && field.name === '__proto__') {
          field.name = alias;
          renamed = true;
        }
      }
    }
    for (const value of Object.values(record)) visit(value);
  };
  visit(json);
  return renamed ? { json, alias } : { json };
}

/** How deep the payload being read nests in counted unions, arrays and maps (reads never interleave: each runs to its end). */
let nesting = 0;

/** `read` counting one level of nesting, refusing a level beyond JSON_NESTING_LIMIT. */
function counted<T extends object>(read: (this: T, tap: AvroTap) => unknown): (this: T, tap: AvroTap) => unknown {
  return function (this: T, tap: AvroTap) {
    if (nesting >= JSON_NESTING_LIMIT) throw new DecodeError(NESTED_TOO_DEEP);
    nesting++;
    try {
      return read.call(this, tap);
    } finally {
      nesting--;
    }
  };
}

/** Reads an Avro map block by block into a Map: keys in the order written, none of them special. */
function readMap(this: { valuesType: AvroType }, tap: AvroTap): Map<string, unknown> {
  const values = this.valuesType as unknown as { _read(tap: AvroTap): unknown };
  const map = new Map<string, unknown>();
  for (let n = readBlockCount(tap); n > 0; n = readBlockCount(tap)) {
    for (; n > 0; n--) {
      const key = tap.readBytes();
      if (!tap.isValid()) throw endsEarly();
      if (!isUtf8(key)) throw new DecodeError('a map key is not valid UTF-8');
      map.set(key.toString('utf8'), values._read(tap));
    }
  }
  return map;
}

/**
 * Reads an Avro array like avsc, but stops as soon as the payload has ended: avsc reads
 * on past the end, so a corrupt block count (up to 2^63) would keep a partition busy.
 */
function readArray(this: { itemsType: AvroType }, tap: AvroTap): unknown[] {
  const items = this.itemsType as unknown as { _read(tap: AvroTap): unknown };
  const out: unknown[] = [];
  for (let n = readBlockCount(tap); n > 0; n = readBlockCount(tap)) {
    for (; n > 0; n--) {
      out.push(items._read(tap));
      if (!tap.isValid()) throw endsEarly();
    }
  }
  return out;
}

interface AvroTap {
  readLong(): number;
  skipLong(): void;
  readBytes(): Buffer;
  isValid(): boolean;
}

/** The largest block count we read: items of no size (nulls) are the only way to more. */
const MAX_BLOCK_ITEMS = 10_000_000;

/** The payload ended inside an array or map; avroWriter says so with the schema id and size. */
class EndsEarly extends DecodeError {}
const endsEarly = (): DecodeError => new EndsEarly('the payload ends early');

/** A block's item count; a negative count is followed by the block's size in bytes. */
function readBlockCount(tap: AvroTap): number {
  let n = tap.readLong();
  if (n < 0) {
    tap.skipLong();
    n = -n;
  }
  if (!tap.isValid()) throw endsEarly();
  if (n > MAX_BLOCK_ITEMS) throw new DecodeError(`an array or map block claims ${n} items`);
  return n;
}


/** A string as read: its UTF-8 bytes (checked, the column promises UTF-8), or a JS string. */
function utf8Text(value: unknown): unknown {
  if (typeof value === 'string' || isUtf8(value as Uint8Array)) return value;
  throw new DecodeError('a string is not valid UTF-8');
}

/**
 * `rules`: the file's encoder's (`Encoder.jsonRules`). A record that contains itself becomes
 * JSON text; by the `engines` rules its read is bounded (avroOptions' `nestingBounded`) and
 * the value it reads nests at most JSON_NESTING_LIMIT deep as JSON text, else the row is an
 * error row, the same on every thread. The `json-parse` rules (files of v3 and before) read
 * as deep as the thread's stack took.
 */
export function avroWriter(schema: RegistrySchema, rules: JsonRules = 'engines'): WriterSchema {
  let type = avroType(schema, true);
  let walked = walk(type, new Set());
  // A record that contains itself becomes JSON text, whose strings must be strings.
  const bounded = walked.recursive && rules === 'engines';
  if (walked.recursive) {
    type = avroType(schema, false, bounded);
    walked = walk(type, new Set());
  }
  const shape = walked.shape ?? { type: { kind: 'string' }, convert: () => null };
  const writer = type;
  const recursive = walked.recursive;
  // The usual path, for the whole schema: a recursive one (its self-containing records
  // become JSON text of avsc's value), and a union of several branches at the top (a
  // struct whose fields are branches, not fields: rare, and not worth a second contract).
  const columnar = !recursive && (writer.typeName === 'record' || shape.type.kind !== 'struct');
  const view = { logicalAttrs: (t: AvroType) => (t instanceof Marked ? t.attrs : undefined), protoAlias: protoAliases.get(type) };
  const decodeColumns = columnar ? columnDecoder(type, view) : undefined;
  return {
    type: shape.type,
    decode: payloadDecoder(schema.id, type, shape, undefined, bounded),
    ...(decodeColumns ? { decodeColumns, projectColumns: (slots, scratchSlots) => columnDecoder(type, view, slots && new Set(slots), scratchSlots) } : {}),
    project(columns) {
      if (recursive || writer.typeName !== 'record') return undefined;
      const alias = protoAliases.get(writer);
      const fields = (writer as unknown as { name: string; fields: { name: string; type: AvroType }[] }).fields;
      const kept = fields.filter((field) => columns.includes(field.name === alias ? '__proto__' : field.name));
      if (kept.length === fields.length) return undefined;
      try {
        // The same field types, so the same values; Avro's schema resolution skips the rest.
        const reader = avro.Type.forSchema({ type: 'record', name: (writer as unknown as { name: string }).name, fields: kept.map((field) => ({ name: field.name, type: field.type })) } as unknown as avro.Schema);
        if (alias) protoAliases.set(reader, alias);
        const projected = walk(reader, new Set());
        if (!projected.shape || projected.recursive) return undefined;
        return { type: projected.shape.type, decode: payloadDecoder(schema.id, reader, projected.shape, reader.createResolver(writer)) };
      } catch {
        return undefined; // a projection avsc cannot make: decode in full
      }
    },
  };
}

/**
 * Decodes one payload with `type` (through `resolver`: writer to a projection of it) into
 * its column shape. `bounded`: a nesting-bounded type (avroOptions) whose value must nest at
 * most JSON_NESTING_LIMIT deep as JSON text, checked before anything else of the value.
 */
function payloadDecoder(schemaId: number, type: AvroType, shape: Shape, resolver?: avro.Resolver, bounded = false): WriterSchema['decode'] {
  return (bytes, offset) => {
    const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let decoded: { value: unknown; offset: number };
    try {
      decoded = type.decode(buf, offset, resolver);
      const problem = bounded ? untypedJsonProblem(decoded.value) : null;
      if (problem) throw new DecodeError(problem);
    } catch (error) {
      if (error instanceof EndsEarly) throw new DecodeError(`Avro schema ${schemaId}: the payload ends early (${buf.byteLength - offset} bytes)`);
      if (error instanceof DecodeError) throw new DecodeError(`Avro schema ${schemaId}: ${error.message}`);
      throw new DecodeError(`Avro schema ${schemaId}: the payload is not valid for the schema`);
    }
    if (decoded.offset < 0) throw new DecodeError(`Avro schema ${schemaId}: the payload ends early (${buf.byteLength - offset} bytes)`);
    if (decoded.offset !== buf.byteLength) throw new DecodeError(`Avro schema ${schemaId}: ${buf.byteLength - decoded.offset} bytes left after the value`);
    return shape.convert(decoded.value);
  };
}

let sawRecursion = false;

/** The alias a `__proto__` field is read under in the schema being walked. */
let protoAlias: string | undefined;

function walk(type: AvroType, path: Set<AvroType>): { shape: Shape | null; recursive: boolean } {
  sawRecursion = false;
  protoAlias = protoAliases.get(type);
  const shape = shapeOf(type, path);
  return { shape, recursive: sawRecursion };
}

/** Avro's types whose decoded values a column stores as they are, by type name. */
const storedAsRead: Readonly<Record<string, ColumnType['kind']>> = {
  boolean: 'boolean', int: 'int32', long: 'int64', 'abstract:long': 'int64' /* our bigint long */, float: 'float', double: 'double', bytes: 'binary', fixed: 'binary', enum: 'string',
};

function shapeOf(type: AvroType, path: Set<AvroType>): Shape | null {
  if (type instanceof Marked) return logical(type, path);
  if (Object.hasOwn(storedAsRead, type.typeName)) return storedAsDecoded({ kind: storedAsRead[type.typeName] } as ColumnType);
  switch (type.typeName) {
    case 'null':
      return null;
    case 'string':
      return { type: { kind: 'string' }, convert: utf8Text };
    case 'array': {
      const items = shapeOf((type as unknown as { itemsType: AvroType }).itemsType, path);
      if (!items) return { type: { kind: 'list', element: { nullable: true, type: { kind: 'boolean' } } }, convert: (v) => (v as unknown[]).map(() => null) };
      return listOf(items);
    }
    case 'map': {
      const values = shapeOf((type as unknown as { valuesType: AvroType }).valuesType, path);
      const convert = values?.convert ?? (() => null);
      return {
        type: mapType(values?.type ?? { kind: 'boolean' }),
        convert: (v) => Array.from(v as Map<string, unknown>, ([key, value]) => ({ key, value: convert(value) })),
      };
    }
    case 'union:wrapped':
      return union(type, path);
    case 'record':
    case 'error':
      return record(type, path);
    default:
      throw new Error(`Avro type ${type.typeName} has no column mapping`);
  }
}

function record(type: AvroType, path: Set<AvroType>): Shape {
  if (path.has(type)) {
    sawRecursion = true;
    return { type: { kind: 'json' }, convert: (v) => jsonText(v) };
  }
  const inner = new Set(path).add(type);
  const members: StructMember[] = [];
  for (const field of (type as unknown as { fields: { name: string; type: AvroType }[] }).fields) {
    const shape = shapeOf(field.type, inner);
    if (shape) members.push({ name: field.name, column: field.name === protoAlias ? '__proto__' : field.name, shape });
  }
  return structOf(members, (source, member) => member.shape.convert(ownValue(source, member.name)));
}

function union(type: AvroType, path: Set<AvroType>): Shape | null {
  const branches = (type as unknown as { types: AvroType[] }).types
    .map((branch) => ({ name: branch.branchName!, shape: shapeOf(branch, path) }))
    .filter((b): b is { name: string; shape: Shape } => b.shape !== null);
  if (branches.length === 0) return null;
  if (branches.length === 1) {
    const [{ name, shape }] = branches as [{ name: string; shape: Shape }];
    return { type: shape.type, convert: (v) => (v === null ? null : shape.convert((v as Record<string, unknown>)[name])) };
  }
  const named = branches.map((b) => ({ ...b, column: b.name.replace(/\./g, '_') }));
  return {
    type: { kind: 'struct', fields: named.map((b) => ({ name: b.column, type: b.shape.type, nullable: true })) },
    convert: (v) => {
      if (v === null) return null;
      const wrapped = v as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const b of named) if (Object.hasOwn(wrapped, b.name)) setOwn(out, b.column, b.shape.convert(wrapped[b.name]));
      return out;
    },
  };
}

function logical(type: Marked, path: Set<AvroType>): Shape | null {
  const name = type.attrs.logicalType as string;
  const underlying = type.underlyingType.typeName;
  if (name.endsWith('timestamp-millis') || name.endsWith('timestamp-micros')) {
    if (underlying === 'long' || underlying === 'abstract:long') return storedAsDecoded({ kind: 'timestamp', unit: name.endsWith('millis') ? 'millis' : 'micros', utc: !name.startsWith('local-') });
  } else if (name === 'date') {
    if (underlying === 'int') return storedAsDecoded({ kind: 'date' });
  } else if (name === 'decimal') {
    const { precision, scale = 0 } = type.attrs as { precision?: number; scale?: number };
    if ((underlying === 'bytes' || underlying === 'fixed') && Number.isInteger(precision) && precision! >= 1 && Number.isInteger(scale) && scale >= 0 && scale <= precision!) {
      return { type: { kind: 'decimal', precision: precision!, scale }, convert: (v) => checkDecimal(signedBigInt(v as Uint8Array), precision!, 'decimal') };
    }
  } else if (name === 'uuid') {
    if (underlying === 'string') return shapeOf(type.underlyingType, path);
  }
  return shapeOf(type.underlyingType, path);
}
