/**
 * A registry schema read for decoding: the shape its values take on the column model
 * (src/parquet/schema.ts), and a decoder that turns payload bytes into a value of that
 * shape (the representation src/parquet/values.ts accepts). merge.ts folds shapes into
 * the table schema and routes decoded values to the table's columns.
 *
 * Error texts end up in the `_error` column, i.e. in the file's bytes, so they are our
 * own words, never a library's message (which may change with its version).
 */
import type { ColumnType } from '../parquet/schema.js';
import type { RegistrySchema } from './registry.js';
import { setOwn } from '../common/objects.js';

export interface WriterSchema {
  /** What a decoded value looks like; a struct's fields become the table's columns. */
  type: ColumnType;
  /** Decodes the payload that starts at `offset` (after the wire header); throws DecodeError. */
  decode(bytes: Uint8Array, offset: number): unknown;
  /**
   * A writer that decodes only these fields of a struct value (by column name), the same
   * values as `decode` gives them, skipping the rest; undefined when it cannot (not a
   * struct, or every field asked). Only for payloads `decode` takes without an error: a
   * payload that fails in a skipped field may pass.
   */
  project?(columns: readonly string[]): WriterSchema | undefined;
  /**
   * The fast path, where a format has one (Avro, avro-columns.ts): fills `out` with the
   * value `decode` gives each field of a struct `type` (slot i: field i), or with the whole
   * value in slot 0, without a value object in between; false when it does not take this
   * payload, and `decode` then gives the value or the error.
   */
  decodeColumns?: ColumnDecoder;
  /**
   * `decodeColumns` for some of a struct's slots only (all of them: undefined), the other
   * fields skipped by their lengths: the same values in those slots, for payloads `decode`
   * takes without an error (as `project`). Of `scratchSlots`, the byte and string fields
   * are given as spans and the longs as numbers (ColumnDecoder).
   */
  projectColumns?(slots: readonly number[] | undefined, scratchSlots?: ReadonlySet<number>): ColumnDecoder | undefined;
}

/**
 * Fills `out` with the values of the writer's columns (a struct: slot i for field i;
 * any other type: the whole value in slot 0) from the payload in `bytes` [offset, end);
 * false when it does not take the payload. A slot given in `scratch` is left undefined in
 * `out`: a string or bytes value is `bytes` from `scratch[2 * slot]`, `scratch[2 * slot + 1]`
 * long; a long is the number `scratch[2 * slot]`.
 */
export type ColumnDecoder = (bytes: Buffer, offset: number, end: number, out: unknown[], scratch: Float64Array) => boolean;

export class DecodeError extends Error {
  override name = 'DecodeError';
}

/** Schema constructs with no column of their own become JSON text of the decoded value. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
    if (v instanceof Map) return Object.fromEntries(v);
    if (v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) {
      return Buffer.from((v as { data: number[] }).data).toString('base64');
    }
    return v;
  });
}

/** Two's-complement big-endian bytes as a bigint (Avro decimals, JSON-free). */
export function signedBigInt(bytes: Uint8Array): bigint {
  if (bytes.byteLength === 0) return 0n;
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return bytes[0]! & 0x80 ? value - (1n << BigInt(8 * bytes.byteLength)) : value;
}

export function checkDecimal(value: bigint, precision: number, where: string): bigint {
  const limit = 10n ** BigInt(precision);
  if (value >= limit || value <= -limit) throw new DecodeError(`${where}: decimal has more than ${precision} digits`);
  return value;
}

/** What a registry type becomes: its column type, and how a decoded value becomes a value of that type. */
export interface Shape {
  type: ColumnType;
  convert: (value: unknown) => unknown;
}

const identity = (value: unknown): unknown => value;

/** A type whose decoded values are already what the column stores (Avro's and Protobuf's primitives, mostly). */
export function storedAsDecoded(type: ColumnType): Shape {
  return { type, convert: identity };
}

/** A repeated type (Avro array, Protobuf repeated): a list of nullable elements of the item's shape. */
export function listOf(item: Shape): Shape {
  return { type: { kind: 'list', element: { nullable: true, type: item.type } }, convert: (v) => (v as unknown[]).map(item.convert) };
}

/** One member of a record or message: its name in the decoded object, its column's name, and its shape. */
export interface StructMember {
  name: string;
  column: string;
  shape: Shape;
}

/**
 * A record or message: a struct of its members' columns, in order, each column's value what
 * `valueOf` makes of the decoded object for that member (the formats differ in how a member
 * absent or unset reads); no member at all: the JSON text `{}`.
 */
export function structOf<M extends StructMember>(members: readonly M[], valueOf: (source: Record<string, unknown>, member: M) => unknown): Shape {
  if (members.length === 0) return { type: { kind: 'json' }, convert: () => '{}' };
  return {
    type: { kind: 'struct', fields: members.map((member) => ({ name: member.column, type: member.shape.type, nullable: true })) },
    convert: (v) => {
      const source = v as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const member of members) setOwn(out, member.column, valueOf(source, member));
      return out;
    },
  };
}

/** The struct entry type that maps become: a list of {key, value}, keys as strings. */
export function mapType(value: ColumnType): ColumnType {
  return {
    kind: 'list',
    element: {
      nullable: true,
      type: { kind: 'struct', fields: [{ name: 'key', type: { kind: 'string' }, nullable: true }, { name: 'value', type: value, nullable: true }] },
    },
  };
}

/**
 * A name that appears nowhere in the schema's texts (its own and its references'): what a
 * decoder reads a `__proto__` name under, which the libraries would otherwise lose.
 */
export function aliasAbsentFrom(schema: RegistrySchema, base: string): string {
  const texts = [schema.schema, ...schema.references.map((r) => r.schema)].join('\n');
  let alias = base;
  for (let n = 0; texts.includes(alias); n++) alias = `${base}_${n}`;
  return alias;
}
