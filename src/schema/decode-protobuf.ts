/**
 * Protobuf (protobufjs): the message the record's message indexes name → a struct.
 * Scalars: int32/sint32/sfixed32 → int32; uint32/fixed32 and int64/sint64/sfixed64 →
 * int64; uint64/fixed64 → decimal(20, 0) (no signed 64-bit column holds it); float,
 * double, bool, string; bytes → binary; enums → strings (the value's name, or its
 * number as text when the schema does not know it); repeated → lists; maps → lists of
 * {key, value} with keys as text; google.protobuf.Timestamp → timestamp (micros, UTC);
 * a message that contains itself → JSON text. Unset proto3 scalars have their default
 * value (Protobuf cannot tell them from set ones); unset messages and unset `optional`
 * or oneof members are null.
 */
import protobuf from 'protobufjs';
import type { ColumnType } from '../parquet/schema.js';
import type { RegistrySchema } from './registry.js';
import { readMessageIndexes } from './wire.js';
import { aliasAbsentFrom, DecodeError, jsonText, listOf, mapType, storedAsDecoded, structOf, type Shape, type WriterSchema } from './writer.js';


/**
 * protobufjs keeps fields, enum values and types in plain objects, where the name
 * `__proto__` (a valid Protobuf identifier) would set a prototype and vanish. Before
 * parsing, that identifier is renamed to an alias that appears nowhere in the schema
 * texts; the alias becomes `__proto__` again in column names and enum names. Field
 * numbers, not names, are on the wire, so decoding is unchanged.
 */
export function protoAlias(schema: RegistrySchema): string {
  return aliasAbsentFrom(schema, 'proto_name');
}

function safeText(text: string, alias: string): string {
  return text.replace(/(?<![A-Za-z0-9_])__proto__(?![A-Za-z0-9_])/g, alias);
}

export function protobufRoot(schema: RegistrySchema): { root: protobuf.Root; file: protobuf.Namespace } {
  const root = new protobuf.Root();
  const imports = new Set<string>();
  const alias = protoAlias(schema);
  for (const reference of schema.references) {
    const parsed = protobuf.parse(safeText(reference.schema, alias), root, { keepCase: true });
    for (const name of parsed.imports ?? []) imports.add(name);
    imports.delete(reference.name);
  }
  const parsed = protobuf.parse(safeText(schema.schema, alias), root, { keepCase: true });
  for (const name of [...(parsed.imports ?? []), ...imports]) {
    if (schema.references.some((r) => r.name === name)) continue;
    const common = protobuf.common.get(name);
    if (!common) throw new Error(`schema ${schema.id} imports ${name}, which is neither a reference nor a well-known type`);
    root.addJSON(common.nested as Record<string, protobuf.AnyNestedObject>);
  }
  root.resolveAll();
  const file = parsed.package ? (root.lookup(parsed.package) as protobuf.Namespace) : root;
  return { root, file };
}

/** Top-level messages of the schema's own file in declaration order, then nested ones, as message indexes count. */
function messageAt(file: protobuf.Namespace, indexes: readonly number[], ownNames: ReadonlySet<string>): protobuf.Type | undefined {
  let candidates = file.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type && ownNames.has(n.fullName));
  let found: protobuf.Type | undefined;
  for (const index of indexes) {
    found = candidates[index];
    if (!found) return undefined;
    candidates = found.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);
  }
  return found;
}

/** Names of the top-level messages the schema's own text declares (references share the root). */
function ownMessages(schema: RegistrySchema): Set<string> {
  const parsed = protobuf.parse(safeText(schema.schema, protoAlias(schema)), { keepCase: true });
  const file = parsed.package ? (parsed.root.lookup(parsed.package) as protobuf.Namespace) : parsed.root;
  return new Set(file.nestedArray.filter((n) => n instanceof protobuf.Type).map((n) => n.fullName));
}

/** One writer per message type of the schema; the message indexes pick which. */
export function protobufWriter(schema: RegistrySchema): WriterSchema & { messageType(indexes: readonly number[]): string | undefined } {
  const { file } = protobufRoot(schema);
  const own = ownMessages(schema);
  const alias = protoAlias(schema);
  const nameOf = (name: string): string => (name === alias ? '__proto__' : name);
  const shapes = new Map<protobuf.Type, Shape>();
  const shapeOf = (type: protobuf.Type): Shape => {
    let shape = shapes.get(type);
    if (!shape) {
      shape = message(type, new Set(), nameOf);
      shapes.set(type, shape);
    }
    return shape;
  };
  // The table's columns come from the first message; other messages of the same schema
  // are routed through the same merge, so a schema is described by its first message.
  const first = messageAt(file, [0], own);
  if (!first) throw new Error(`Protobuf schema ${schema.id} declares no message`);
  return {
    type: shapeOf(first).type,
    messageType: (indexes) => messageAt(file, indexes, own)?.fullName.slice(1),
    decode(bytes, offset) {
      const head = readMessageIndexes(bytes, offset);
      if (typeof head === 'string') throw new DecodeError(`Protobuf schema ${schema.id}: ${head}`);
      const type = messageAt(file, head.indexes, own);
      if (!type) throw new DecodeError(`Protobuf schema ${schema.id} has no message at indexes [${head.indexes.join(', ')}]`);
      if (type !== first) throw new DecodeError(`Protobuf schema ${schema.id}: message ${type.fullName.slice(1)} is not the schema's first message ${first.fullName.slice(1)}`);
      let decoded: protobuf.Message;
      try {
        decoded = type.decode(bytes.subarray(head.offset));
      } catch {
        throw new DecodeError(`Protobuf schema ${schema.id}: the payload is not a valid ${type.fullName.slice(1)} message`);
      }
      return shapeOf(type).convert(decoded);
    },
  };
}

type NameOf = (name: string) => string;

function message(type: protobuf.Type, path: Set<protobuf.Type>, nameOf: NameOf): Shape {
  if (type.fullName === '.google.protobuf.Timestamp') {
    return {
      type: { kind: 'timestamp', unit: 'micros', utc: true },
      convert: (v) => {
        const m = v as { seconds?: unknown; nanos?: number };
        return toBigInt(m.seconds ?? 0, false) * 1_000_000n + BigInt(Math.trunc((m.nanos ?? 0) / 1000));
      },
    };
  }
  if (path.has(type)) return { type: { kind: 'json' }, convert: (v) => jsonText((type.toObject(v as protobuf.Message, { longs: String, enums: String, bytes: String }))) };
  const inner = new Set(path).add(type);
  // members of a oneof (and proto3 `optional`) are null when unset, not their default;
  // other unset fields have their default (protobufjs keeps defaults on the prototype,
  // where a field named like an Object.prototype member cannot be told from it)
  const members = type.fieldsArray.map((field) => ({ name: field.name, column: nameOf(field.name), shape: fieldShape(field, inner, nameOf), unset: field.partOf !== null ? null : field.defaultValue as unknown }));
  return structOf(members, (source, member) => {
    const value = Object.hasOwn(source, member.name) ? source[member.name] : member.unset;
    return value === null || value === undefined ? null : member.shape.convert(value);
  });
}

/** 64-bit map keys: protobufjs keys its object by the 8 bytes of the value as text. */
const longKeyTypes = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

function fieldShape(field: protobuf.Field, path: Set<protobuf.Type>, nameOf: NameOf): Shape {
  field.resolve();
  if (field instanceof protobuf.MapField) {
    const value = single(field, path, nameOf);
    const unsigned = field.keyType === 'uint64' || field.keyType === 'fixed64';
    const keyText = longKeyTypes.has(field.keyType)
      ? (key: string): string => toBigInt(protobuf.util.longFromHash(key, unsigned), unsigned).toString()
      : (key: string): string => key;
    return {
      type: mapType(value.type),
      convert: (v) => Object.entries(v as Record<string, unknown>).map(([key, value1]) => ({ key: keyText(key), value: value1 === null ? null : value.convert(value1) })),
    };
  }
  const element = single(field, path, nameOf);
  if (field.repeated) return listOf(element);
  return element;
}

/** Protobuf's scalar types whose decoded values a column stores as they are, by type name. */
const storedAsRead: Readonly<Record<string, ColumnType['kind']>> = {
  double: 'double', float: 'float', int32: 'int32', sint32: 'int32', sfixed32: 'int32', bool: 'boolean', string: 'string',
};

function single(field: protobuf.Field, path: Set<protobuf.Type>, nameOf: NameOf): Shape {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return message(resolved, path, nameOf);
  if (resolved instanceof protobuf.Enum) {
    const names = resolved.valuesById;
    return { type: { kind: 'string' }, convert: (v) => (Object.hasOwn(names, v as number) ? nameOf(names[v as number]!) : String(v)) };
  }
  if (Object.hasOwn(storedAsRead, field.type)) return storedAsDecoded({ kind: storedAsRead[field.type] } as ColumnType);
  switch (field.type) {
    case 'uint32':
    case 'fixed32':
      return { type: { kind: 'int64' }, convert: (v) => BigInt(v as number) };
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return { type: { kind: 'int64' }, convert: (v) => toBigInt(v, false) };
    case 'uint64':
    case 'fixed64':
      return { type: { kind: 'decimal', precision: 20, scale: 0 }, convert: (v) => toBigInt(v, true) };
    case 'bytes':
      // an empty or unset proto3 `bytes` is protobufjs's shared empty array, not bytes
      return { type: { kind: 'binary' }, convert: (v) => (v instanceof Uint8Array ? v : Uint8Array.from(v as ArrayLike<number>)) };
    default:
      throw new Error(`Protobuf field ${field.name} has type ${field.type}, which has no column mapping`);
  }
}

/** protobufjs gives 64-bit values as Long objects (or numbers when small). */
function toBigInt(value: unknown, unsigned: boolean): bigint {
  if (typeof value === 'number') return BigInt(value);
  if (typeof value === 'bigint') return value;
  const long = value as { low: number; high: number; unsigned?: boolean };
  const low = BigInt(long.low >>> 0);
  const high = BigInt(unsigned ? long.high >>> 0 : long.high | 0);
  return (high << 32n) | low;
}
