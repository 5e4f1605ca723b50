/**
 * Encoding JSON values with a registry schema, for `offsetlake produce --format`: the
 * value of a JSON line becomes the payload of the Confluent wire format (the header with
 * the schema id is added once the schema is registered, see wire.ts).
 *
 * Every value is checked before anything is written: a value that does not fit the schema
 * is an EncodeError naming where (`value.items[2].price`) and what was expected.
 *
 * - Avro (avsc, through avroType): the JSON forms of Avro's own JSON encoding, and the
 *   plain forms a person writes: a union takes a plain value (the first branch it fits)
 *   or `{"branch": value}`; long is exact (digits as written, up to 2^63); bytes and
 *   fixed are strings whose code points 0–255 are the bytes; timestamp-millis/micros
 *   take epoch numbers or RFC 3339 text, date takes days or YYYY-MM-DD, decimal takes a
 *   number or decimal text (no more digits than its precision and scale allow).
 * - Protobuf (protobufjs, through protobufRoot): the schema's first message (the one a
 *   table decodes), from the JSON mapping of proto3: field names as declared or in
 *   lowerCamelCase, 64-bit integers as numbers or decimal text, bytes as base64, enums
 *   by name or number, google.protobuf.Timestamp as RFC 3339 text, wrapper types as
 *   their plain value, maps as objects.
 * - JSON Schema: the JSON text of the value (numbers with the digits as written),
 *   checked against the schema's shape as a table reads it (jsonSchemaWriter); this is
 *   not a full JSON Schema validator.
 */
import type avro from 'avsc';
import protobuf from 'protobufjs';
import { avroType } from './decode-avro.js';
import { jsonSchemaWriter, dateDays, dateTimeMicros } from './decode-json-schema.js';
import { protoAlias, protobufRoot } from './decode-protobuf.js';
import type { RegistrySchema, SchemaType } from './registry.js';
import { DecodeError } from './writer.js';

export type EncodeFormat = 'avro' | 'protobuf' | 'json-schema';

export const schemaTypes: Record<EncodeFormat, SchemaType> = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' };

/** A value that does not fit the schema; the message starts with where in the value. */
export class EncodeError extends Error {
  override name = 'EncodeError';
}

/**
 * A JSON number whose digits a double does not keep as written (`12345678901234567890`,
 * `1.0`, `1e3`): parseJsonExact keeps its text, so nothing is rounded on the way to Kafka.
 */
export class ExactNumber {
  constructor(readonly source: string, readonly value: number) {}
}

/** JSON.parse, with every number that would not be written back as it was kept as an ExactNumber. */
export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, function (this: unknown, _key: string, value: unknown, context?: { source?: string }) {
    if (typeof value === 'number' && context?.source !== undefined && String(value) !== context.source) return new ExactNumber(context.source, value);
    return value;
  } as (this: unknown, key: string, value: unknown) => unknown);
}

/** JSON text of a value from parseJsonExact: numbers with the digits they were written with. */
export function jsonTextExact(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v instanceof ExactNumber ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(v.source) : v));
}

/** An encoder of JSON values into payloads (what follows the wire header) for one schema. */
export interface ValueEncoder {
  format: EncodeFormat;
  /** Protobuf's message indexes (always the first message); undefined for the other formats. */
  messageIndexes?: readonly number[];
  /** The payload of `value`; throws EncodeError. */
  encode(value: unknown): Buffer;
}

/**
 * The schema text read as the registry and a table will read it; a schema that does not
 * parse is an Error saying why (before anything is registered). `id` is a placeholder.
 */
export function localSchema(format: EncodeFormat, text: string): RegistrySchema {
  const schema: RegistrySchema = { id: 0, type: schemaTypes[format], schema: text, references: [] };
  try {
    valueEncoder(format, schema);
  } catch (error) {
    const reason = (error as Error).message;
    if (format === 'avro') throw new Error(`it is not an Avro schema: ${reason}`);
    if (format === 'protobuf') throw new Error(`it is not a Protobuf schema (.proto text): ${reason}`);
    throw new Error(`it is not a JSON Schema: ${reason}`);
  }
  return schema;
}

export function valueEncoder(format: EncodeFormat, schema: RegistrySchema): ValueEncoder {
  if (format === 'avro') return avroEncoder(schema);
  if (format === 'protobuf') return protobufEncoder(schema);
  return jsonSchemaEncoder(schema);
}

// ---------------------------------------------------------------------------------------
// shared

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof ExactNumber) return `the number ${value.source}`;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value === 'number' ? 'the number' : 'the boolean'} ${String(value)}`;
}

function refuse(path: string, expected: string, value: unknown): never {
  throw new EncodeError(`${path}: expected ${expected}, got ${describe(value)}`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof ExactNumber) && !Buffer.isBuffer(v);

/** A number's value, or undefined when `v` is not a JSON number. */
function numberOf(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof ExactNumber) return v.value;
  return undefined;
}

/** An integer written as a JSON number (any number of digits) or, with `text`, as decimal text. */
function integerOf(v: unknown, text: boolean): bigint | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  if (v instanceof ExactNumber) {
    if (/^-?\d+$/.test(v.source)) return BigInt(v.source);
    // 1.0, 1e3: an integer written otherwise; exact when the double holds it
    return Number.isSafeInteger(v.value) ? BigInt(v.value) : undefined;
  }
  if (text && typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  return undefined;
}

function integerIn(path: string, v: unknown, min: bigint, max: bigint, what: string, text: boolean): bigint {
  const n = integerOf(v, text);
  if (n === undefined) return refuse(path, what, v);
  if (n < min || n > max) throw new EncodeError(`${path}: ${n} is out of range for ${what} (${min} to ${max})`);
  return n;
}

const INT32: [bigint, bigint] = [-(2n ** 31n), 2n ** 31n - 1n];
const UINT32: [bigint, bigint] = [0n, 2n ** 32n - 1n];
const INT64: [bigint, bigint] = [-(2n ** 63n), 2n ** 63n - 1n];
const UINT64: [bigint, bigint] = [0n, 2n ** 64n - 1n];

function dateTime(path: string, text: string): bigint {
  try {
    return dateTimeMicros(text, path);
  } catch (error) {
    if (error instanceof DecodeError) throw new EncodeError(error.message);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------
// Avro

type AvroType = avro.Type & Record<string, unknown>;

function avroEncoder(schema: RegistrySchema): ValueEncoder {
  const type = avroType(schema) as AvroType;
  // decode-avro reads a field named `__proto__` under an alias that appears nowhere in the schema texts
  const texts = [schema.schema, ...schema.references.map((r) => r.schema)].join('\n');
  let alias = 'proto_field';
  for (let n = 0; texts.includes(alias); n++) alias = `proto_field_${n}`;
  const convert = (t: AvroType, v: unknown, path: string): unknown => avroValue(t, v, path, alias, convert);
  return {
    format: 'avro',
    encode(value) {
      const converted = convert(type, value, 'value');
      const problems: string[] = [];
      if (!type.isValid(converted, { errorHook: (at: string[]) => problems.push(at.join('.')) })) {
        throw new EncodeError(`value${problems[0] ? `.${problems[0]}` : ''}: does not fit the Avro schema`);
      }
      return type.toBuffer(converted);
    },
  };
}

function latin1Bytes(path: string, v: unknown, what: string): Buffer {
  if (typeof v !== 'string') return refuse(path, what, v);
  for (let i = 0; i < v.length; i++) {
    if (v.charCodeAt(i) > 255) throw new EncodeError(`${path}: ${what} is a string whose characters are the bytes (code points 0 to 255, as in Avro's JSON encoding); character ${i + 1} is not`);
  }
  return Buffer.from(v, 'latin1');
}

/** A decimal's unscaled value from a JSON number or decimal text, checked against precision and scale. */
function decimalUnscaled(path: string, v: unknown, precision: number, scale: number): bigint {
  const text = typeof v === 'string' ? v.trim() : v instanceof ExactNumber ? v.source : typeof v === 'number' ? String(v) : undefined;
  const m = text === undefined ? null : /^([+-])?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return refuse(path, `a decimal (a number or decimal text such as "12.34") with scale ${scale}`, v);
  let digits = (m[2] ?? '') + (m[3] ?? '');
  let exponent = -(m[3]?.length ?? 0) + Number(m[4] ?? 0);
  // scale it to `scale` fraction digits; dropping digits is allowed only when they are zeros
  while (exponent > -scale) {
    digits += '0';
    exponent -= 1;
  }
  while (exponent < -scale) {
    if (!digits.endsWith('0')) throw new EncodeError(`${path}: ${text} has more than ${scale} digits after the point (the decimal's scale)`);
    digits = digits.slice(0, -1);
    exponent += 1;
  }
  const unscaled = BigInt(digits || '0') * (m[1] === '-' ? -1n : 1n);
  const limit = 10n ** BigInt(precision);
  if (unscaled >= limit || unscaled <= -limit) throw new EncodeError(`${path}: ${text} has more than ${precision} digits (the decimal's precision)`);
  return unscaled;
}

/** Two's-complement big-endian bytes of `n`, in `size` bytes or the fewest that hold it. */
function twosComplement(path: string, n: bigint, size?: number): Buffer {
  let length = 1;
  while (n >= 1n << BigInt(8 * length - 1) || n < -(1n << BigInt(8 * length - 1))) length += 1;
  if (size !== undefined) {
    if (length > size) throw new EncodeError(`${path}: the decimal needs ${length} bytes, its fixed type has ${size}`);
    length = size;
  }
  let u = n < 0n ? (1n << BigInt(8 * length)) + n : n;
  const out = Buffer.alloc(length);
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(u & 0xffn);
    u >>= 8n;
  }
  return out;
}

function avroValue(t: AvroType, v: unknown, path: string, alias: string, convert: (t: AvroType, v: unknown, path: string) => unknown): unknown {
  const name = t.typeName as string;
  switch (name) {
    case 'null':
      return v === null ? null : refuse(path, 'null', v);
    case 'boolean':
      return typeof v === 'boolean' ? v : refuse(path, 'true or false', v);
    case 'int':
      return Number(integerIn(path, v, ...INT32, 'an int (32-bit integer)', false));
    case 'long':
    case 'abstract:long': {
      const n = integerIn(path, v, ...INT64, 'a long (64-bit integer)', false);
      return name === 'long' ? Number(n) : n;
    }
    case 'float':
    case 'double': {
      const n = numberOf(v);
      return n === undefined ? refuse(path, `a ${name}`, v) : n;
    }
    case 'string':
      return typeof v === 'string' ? v : refuse(path, 'a string', v);
    case 'bytes':
      return latin1Bytes(path, v, 'bytes');
    case 'fixed': {
      const bytes = latin1Bytes(path, v, `fixed(${t.size as number})`);
      if (bytes.length !== t.size) throw new EncodeError(`${path}: fixed ${String(t.name)} has ${t.size as number} bytes, got ${bytes.length}`);
      return bytes;
    }
    case 'enum': {
      const symbols = t.symbols as string[];
      return typeof v === 'string' && symbols.includes(v) ? v : refuse(path, `one of ${symbols.map((s) => JSON.stringify(s)).join(', ')}`, v);
    }
    case 'array': {
      if (!Array.isArray(v)) return refuse(path, 'an array', v);
      return v.map((item, i) => convert(t.itemsType as AvroType, item, `${path}[${i}]`));
    }
    case 'map': {
      if (!isObject(v)) return refuse(path, 'an object (an Avro map)', v);
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(v)) Object.defineProperty(out, key, { value: convert(t.valuesType as AvroType, item, `${path}.${key}`), enumerable: true, writable: true, configurable: true });
      return out;
    }
    case 'record':
    case 'error': {
      if (!isObject(v)) return refuse(path, `an object (record ${String(t.name)})`, v);
      const fields = t.fields as { name: string; type: AvroType; defaultValue(): unknown }[];
      const keyOf = (field: string) => (field === alias ? '__proto__' : field);
      const known = new Set(fields.map((f) => keyOf(f.name)));
      for (const key of Object.keys(v)) {
        if (!known.has(key)) throw new EncodeError(`${path}: record ${String(t.name)} has no field "${key}" (its fields: ${[...known].join(', ')})`);
      }
      const out: Record<string, unknown> = {};
      for (const field of fields) {
        const key = keyOf(field.name);
        let value: unknown;
        if (Object.hasOwn(v, key)) value = convert(field.type, v[key], `${path}.${key}`);
        else {
          value = field.defaultValue();
          if (value === undefined) throw new EncodeError(`${path}: field "${key}" of record ${String(t.name)} is missing and has no default`);
        }
        Object.defineProperty(out, field.name, { value, enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    case 'union:wrapped':
    case 'union:unwrapped': {
      const branches = t.types as AvroType[];
      const wrap = (branch: AvroType, value: unknown) => (name === 'union:unwrapped' || value === null ? value : { [branch.branchName as string]: value });
      if (v === null) {
        const nullBranch = branches.find((b) => b.typeName === 'null');
        return nullBranch ? null : refuse(path, `one of the union's types ${branchList(branches)}`, v);
      }
      // Avro's JSON encoding: {"branch name": value}
      if (isObject(v)) {
        const keys = Object.keys(v);
        if (keys.length === 1) {
          const branch = branches.find((b) => b.branchName === keys[0] || (typeof b.branchName === 'string' && b.branchName.split('.').pop() === keys[0] && b.name !== undefined));
          if (branch) return wrap(branch, convert(branch, v[keys[0]!], `${path}.${keys[0]}`));
        }
      }
      for (const branch of branches) {
        if (branch.typeName === 'null') continue;
        try {
          return wrap(branch, convert(branch, v, path));
        } catch (error) {
          if (!(error instanceof EncodeError)) throw error;
        }
      }
      return refuse(path, `one of the union's types ${branchList(branches)}`, v);
    }
    default:
      if (name.startsWith('logical:')) return avroLogical(t, v, path, convert);
      throw new EncodeError(`${path}: the Avro type ${name} is not supported by produce`);
  }
}

function branchList(branches: AvroType[]): string {
  return `[${branches.map((b) => b.branchName as string).join(', ')}]`;
}

function avroLogical(t: AvroType, v: unknown, path: string, convert: (t: AvroType, v: unknown, path: string) => unknown): unknown {
  const attrs = t.attrs as Record<string, unknown>;
  const logical = attrs.logicalType as string;
  const under = t.underlyingType as AvroType;
  if (typeof v === 'string' && /timestamp-(millis|micros)$/.test(logical)) {
    // local-* timestamps have no zone: text without an offset is taken as it reads
    const text = logical.startsWith('local-') && !/([Zz]|[+-]\d{2}:\d{2})$/.test(v) ? `${v}Z` : v;
    const micros = dateTime(path, text);
    if (logical.endsWith('millis')) {
      if (micros % 1000n !== 0n) throw new EncodeError(`${path}: ${v} is finer than the milliseconds of ${logical}`);
      return convert(under, new ExactNumber(String(micros / 1000n), Number(micros / 1000n)), path);
    }
    return convert(under, new ExactNumber(String(micros), Number(micros)), path);
  }
  if (logical === 'date' && typeof v === 'string') {
    try {
      return dateDays(v, path);
    } catch (error) {
      if (error instanceof DecodeError) throw new EncodeError(error.message);
      throw error;
    }
  }
  if (logical === 'decimal') {
    const unscaled = decimalUnscaled(path, v, Number(attrs.precision), Number(attrs.scale ?? 0));
    return twosComplement(path, unscaled, under.typeName === 'fixed' ? (under.size as number) : undefined);
  }
  return convert(under, v, path);
}

// ---------------------------------------------------------------------------------------
// Protobuf

function protobufEncoder(schema: RegistrySchema): ValueEncoder {
  const { file } = protobufRoot(schema);
  const alias = protoAlias(schema);
  // the schema's first top-level message is the one message indexes [0] name (and the one a table decodes)
  const first = file.nestedArray.find((n): n is protobuf.Type => n instanceof protobuf.Type);
  if (!first) throw new Error('the schema declares no message');
  return {
    format: 'protobuf',
    messageIndexes: [0],
    encode(value) {
      const object = protoMessage(first, value, 'value', alias);
      return Buffer.from(first.encode(first.fromObject(object)).finish());
    },
  };
}

const lowerCamel = (name: string) => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

function protoMessage(type: protobuf.Type, v: unknown, path: string, alias: string): Record<string, unknown> {
  if (!isObject(v)) return refuse(path, `an object (message ${type.fullName.slice(1)})`, v);
  const byKey = new Map<string, protobuf.Field>();
  for (const field of type.fieldsArray) {
    const name = field.name === alias ? '__proto__' : field.name;
    byKey.set(name, field);
    byKey.set(lowerCamel(name), field);
  }
  const out: Record<string, unknown> = {};
  const oneofs = new Map<protobuf.OneOf, string>();
  for (const [key, item] of Object.entries(v)) {
    const field = byKey.get(key);
    if (!field) throw new EncodeError(`${path}: message ${type.fullName.slice(1)} has no field "${key}" (its fields: ${type.fieldsArray.map((f) => (f.name === alias ? '__proto__' : f.name)).join(', ')})`);
    if (item === null) continue; // proto3 JSON: null is the field's default, i.e. not written
    if (Object.hasOwn(out, field.name)) throw new EncodeError(`${path}: field "${field.name}" is given twice (as "${field.name}" and as "${lowerCamel(field.name)}")`);
    if (field.partOf && !field.partOf.name.startsWith('_')) {
      const other = oneofs.get(field.partOf);
      if (other !== undefined) throw new EncodeError(`${path}: "${other}" and "${key}" are members of oneof ${field.partOf.name}; give at most one`);
      oneofs.set(field.partOf, key);
    }
    const at = `${path}.${key}`;
    let value: unknown;
    if (field instanceof protobuf.MapField) {
      if (!isObject(item)) refuse(at, 'an object (a Protobuf map)', item);
      const map: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(item)) {
        protoMapKey(field.keyType, k, `${at}.${k}`);
        Object.defineProperty(map, k, { value: protoSingle(field, x, `${at}.${k}`, alias), enumerable: true, writable: true, configurable: true });
      }
      value = map;
    } else if (field.repeated) {
      if (!Array.isArray(item)) refuse(at, 'an array (a repeated field)', item);
      value = (item as unknown[]).map((x, i) => protoSingle(field, x, `${at}[${i}]`, alias));
    } else {
      value = protoSingle(field, item, at, alias);
    }
    out[field.name] = value;
  }
  return out;
}

function protoMapKey(keyType: string, key: string, path: string): void {
  if (keyType === 'string') return;
  if (keyType === 'bool') {
    if (key !== 'true' && key !== 'false') throw new EncodeError(`${path}: a map key of type bool is "true" or "false"`);
    return;
  }
  protoScalar(keyType, key, path);
}

const wrapperTypes = new Set(['DoubleValue', 'FloatValue', 'Int64Value', 'UInt64Value', 'Int32Value', 'UInt32Value', 'BoolValue', 'StringValue', 'BytesValue'].map((n) => `.google.protobuf.${n}`));

function protoSingle(field: protobuf.Field, v: unknown, path: string, alias: string): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) {
    if (typeof v === 'string') {
      const name = v === '__proto__' ? alias : v;
      if (Object.hasOwn(resolved.values, name)) return name;
      return refuse(path, `one of enum ${resolved.name}'s names ${Object.keys(resolved.values).map((n) => JSON.stringify(n === alias ? '__proto__' : n)).join(', ')} or a number`, v);
    }
    return Number(integerIn(path, v, ...INT32, `an enum ${resolved.name} name or number`, false));
  }
  if (resolved instanceof protobuf.Type) {
    if (resolved.fullName === '.google.protobuf.Timestamp' && typeof v === 'string') {
      const micros = dateTime(path, v);
      const seconds = micros >= 0n ? micros / 1_000_000n : -((-micros + 999_999n) / 1_000_000n);
      return { seconds: String(seconds), nanos: Number((micros - seconds * 1_000_000n) * 1000n) };
    }
    if (wrapperTypes.has(resolved.fullName) && !isObject(v)) return { value: protoSingle(resolved.fields.value!, v, path, alias) };
    return protoMessage(resolved, v, path, alias);
  }
  return protoScalar(field.type, v, path);
}

function protoScalar(type: string, v: unknown, path: string): unknown {
  switch (type) {
    case 'int32':
    case 'sint32':
    case 'sfixed32':
      return Number(integerIn(path, v, ...INT32, `an ${type} (32-bit integer)`, true));
    case 'uint32':
    case 'fixed32':
      return Number(integerIn(path, v, ...UINT32, `a ${type} (unsigned 32-bit integer)`, true));
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return String(integerIn(path, v, ...INT64, `an ${type} (64-bit integer, a number or decimal text)`, true));
    case 'uint64':
    case 'fixed64':
      return String(integerIn(path, v, ...UINT64, `a ${type} (unsigned 64-bit integer, a number or decimal text)`, true));
    case 'double':
    case 'float': {
      if (v === 'NaN') return Number.NaN;
      if (v === 'Infinity') return Number.POSITIVE_INFINITY;
      if (v === '-Infinity') return Number.NEGATIVE_INFINITY;
      const n = numberOf(v);
      return n === undefined ? refuse(path, `a ${type} (a number, "NaN", "Infinity" or "-Infinity")`, v) : n;
    }
    case 'bool':
      return typeof v === 'boolean' ? v : refuse(path, 'true or false', v);
    case 'string':
      return typeof v === 'string' ? v : refuse(path, 'a string', v);
    case 'bytes': {
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(v)) return refuse(path, 'bytes as base64 text', v);
      return Buffer.from(v, v.includes('-') || v.includes('_') ? 'base64url' : 'base64');
    }
    default:
      throw new EncodeError(`${path}: the Protobuf type ${type} is not supported by produce`);
  }
}

// ---------------------------------------------------------------------------------------
// JSON Schema

function jsonSchemaEncoder(schema: RegistrySchema): ValueEncoder {
  const writer = jsonSchemaWriter(schema);
  return {
    format: 'json-schema',
    encode(value) {
      const payload = Buffer.from(jsonTextExact(value));
      try {
        writer.decode(payload, 0);
      } catch (error) {
        if (error instanceof DecodeError) throw new EncodeError(`value${error.message.replace(/^\$/, '')}`);
        throw error;
      }
      return payload;
    },
  };
}
