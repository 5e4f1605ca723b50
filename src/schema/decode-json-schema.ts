/**
 * JSON Schema: the payload is JSON text read against the schema's shape (not validated
 * by a JSON Schema validator: a value that does not fit its column is an error row).
 * object with properties → struct (properties in declaration order); object with only
 * additionalProperties → list of {key, value}; array → list; integer → int64 (exact up
 * to 2^53, as JSON.parse reads it); number → double; boolean; string → string, with
 * format date-time → timestamp (micros, UTC) and date → date; enum of strings →
 * string; `["T", "null"]`, or anyOf/oneOf of one schema and null → nullable T; local
 * `$ref`s (#/definitions/…, #/$defs/…) are followed; anything else (no type, several
 * types, a schema that contains itself) → JSON text of the value.
 */
import type { Column, ColumnType } from '../parquet/schema.js';
import type { RegistrySchema } from './registry.js';
import { DecodeError, mapType, type WriterSchema } from './writer.js';
import { ownValue, setOwn } from '../common/objects.js';
import { JSON_NESTING_LIMIT, untypedJsonProblem, type JsonRules } from '../parquet/json-text.js';

type JsonSchema = Record<string, unknown> | boolean;

interface Shape {
  type: ColumnType;
  convert: (value: unknown, path: string) => unknown;
}

const textDecoder = new TextDecoder('utf-8', { fatal: true });

/** `rules`: the file's encoder's (`Encoder.jsonRules`), which decide what an untyped value's JSON text may be. */
export function jsonSchemaWriter(schema: RegistrySchema, rules: JsonRules = 'engines'): WriterSchema {
  const root = JSON.parse(schema.schema) as JsonSchema;
  const payload: PayloadTraits = { harmless: false };
  const shape = walk(root, { root, json: untyped(rules, payload) }, new Set());
  return {
    type: shape.type,
    decode(bytes, offset) {
      let value: unknown;
      try {
        value = JSON.parse(textDecoder.decode(bytes.subarray(offset)));
      } catch {
        throw new DecodeError(`JSON Schema ${schema.id}: the payload is not UTF-8 JSON text`);
      }
      // nesting d takes 2d bytes, and a lone surrogate an escape: a short payload without a backslash has neither
      payload.harmless = bytes.length - offset <= 2 * JSON_NESTING_LIMIT && bytes.indexOf(0x5c, offset) < 0;
      return shape.convert(value, '$');
    },
  };
}

/** What the payload being decoded is known not to hold (decode sets it, the untyped values' conversion reads it: a decode runs to its end). */
interface PayloadTraits {
  /** It nests at most JSON_NESTING_LIMIT deep and holds no escape, so no lone surrogate. */
  harmless: boolean;
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function mismatch(path: string, expected: string, value: unknown): DecodeError {
  return new DecodeError(`${path}: expected ${expected}, got ${describe(value)}`);
}

/**
 * What an untyped value becomes: JSON text. By the `json-parse` rules (encoders before v4)
 * JSON.stringify's text, however deep (JSON.stringify recurses: how deep it got depended
 * on the thread's stack); by the `engines` rules the same text of a value that nests at
 * most JSON_NESTING_LIMIT deep and holds no lone surrogate, else an error row (a value
 * walked only when its payload could hold either: `PayloadTraits`).
 */
function untyped(rules: JsonRules, payload: PayloadTraits): Shape {
  if (rules === 'json-parse') return { type: { kind: 'json' }, convert: (v) => JSON.stringify(v) };
  return {
    type: { kind: 'json' },
    convert: (v, p) => {
      const problem = payload.harmless ? null : untypedJsonProblem(v);
      if (problem) throw new DecodeError(`${p}: ${problem}`);
      return JSON.stringify(v);
    },
  };
}

/** What a registry schema walk reads its `$ref`s in, and what it makes of an untyped value. */
interface Walk {
  root: JsonSchema;
  json: Shape;
}

function resolveRef(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    node = node && typeof node === 'object' ? ownValue(node as Record<string, unknown>, key) : undefined;
  }
  return node as JsonSchema | undefined;
}

function walk(node: JsonSchema, ctx: Walk, path: Set<unknown>): Shape {
  if (typeof node !== 'object' || node === null) return ctx.json;
  if (path.has(node)) return ctx.json;
  const inner = new Set(path).add(node);
  if (typeof node.$ref === 'string') {
    const target = resolveRef(ctx.root, node.$ref);
    return target === undefined ? ctx.json : walk(target, ctx, inner);
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = node[key];
    if (Array.isArray(options)) {
      const notNull = options.filter((o) => !(o && typeof o === 'object' && (o as Record<string, unknown>).type === 'null'));
      return notNull.length === 1 ? walk(notNull[0] as JsonSchema, ctx, inner) : ctx.json;
    }
  }
  let type = node.type;
  if (Array.isArray(type)) {
    const notNull = type.filter((t) => t !== 'null');
    type = notNull.length === 1 ? notNull[0] : undefined;
  }
  if (type === undefined && Array.isArray(node.enum) && node.enum.every((e) => typeof e === 'string')) type = 'string';
  if (type === undefined && node.properties && typeof node.properties === 'object') type = 'object';
  switch (type) {
    case 'integer':
      return {
        type: { kind: 'int64' },
        convert: (v, p) => {
          if (typeof v !== 'number' || !Number.isInteger(v)) throw mismatch(p, 'an integer', v);
          if (!Number.isSafeInteger(v)) throw new DecodeError(`${p}: integer beyond 2^53 cannot be read exactly from JSON`);
          return BigInt(v);
        },
      };
    case 'number':
      return { type: { kind: 'double' }, convert: (v, p) => (typeof v === 'number' ? v : fail(p, 'a number', v)) };
    case 'boolean':
      return { type: { kind: 'boolean' }, convert: (v, p) => (typeof v === 'boolean' ? v : fail(p, 'a boolean', v)) };
    case 'string':
      if (node.format === 'date-time') {
        return {
          type: { kind: 'timestamp', unit: 'micros', utc: true },
          convert: (v, p) => (typeof v === 'string' ? dateTimeMicros(v, p) : fail(p, 'an RFC 3339 date-time string', v)),
        };
      }
      if (node.format === 'date') {
        return { type: { kind: 'date' }, convert: (v, p) => (typeof v === 'string' ? dateDays(v, p) : fail(p, 'a date string YYYY-MM-DD', v)) };
      }
      return { type: { kind: 'string' }, convert: (v, p) => (typeof v === 'string' ? wellFormed(v, p) : fail(p, 'a string', v)) };
    case 'array': {
      const items = node.items && typeof node.items === 'object' && !Array.isArray(node.items) ? walk(node.items as JsonSchema, ctx, inner) : ctx.json;
      return {
        type: { kind: 'list', element: { nullable: true, type: items.type } },
        convert: (v, p) => (Array.isArray(v) ? v.map((e, i) => (e === null ? null : items.convert(e, `${p}[${i}]`))) : fail(p, 'an array', v)),
      };
    }
    case 'object':
      return object(node, ctx, inner);
    default:
      return ctx.json;
  }
}

/** JSON text may escape a lone surrogate (`"\\ud800"`); UTF-8, and so a string column, cannot hold it. */
function wellFormed(text: string, path: string): string {
  if (text.isWellFormed()) return text;
  throw new DecodeError(`${path}: the string holds a lone surrogate, which UTF-8 text cannot hold`);
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** A calendar date's days, or undefined when the date does not exist (2026-02-30). */
function civilDays(year: number, month: number, day: number): number | undefined {
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  return daysFromCivil(year, month, day);
}

/** RFC 3339 full-date: exactly `YYYY-MM-DD`, a day that exists. */
export function dateDays(text: string, path: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const days = m ? civilDays(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
  if (days === undefined) throw new DecodeError(`${path}: expected a date YYYY-MM-DD that exists, got ${JSON.stringify(text.slice(0, 40))}`);
  return days;
}

/**
 * RFC 3339 date-time to microseconds since the epoch, UTC, exactly: a day and time that
 * exist, an offset within ±23:59, at most microsecond precision (further digits must be
 * zeros). A leap second (:60) has no instant of its own and is refused.
 */
export function dateTimeMicros(text: string, path: string): bigint {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(text);
  const refuse = (why: string): never => {
    throw new DecodeError(`${path}: expected an RFC 3339 date-time, got ${JSON.stringify(text.slice(0, 40))} (${why})`);
  };
  if (!m) return refuse('not of the form YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)');
  const days = civilDays(Number(m[1]), Number(m[2]), Number(m[3]));
  if (days === undefined) return refuse('no such day');
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6])];
  if (hour > 23 || minute > 59) return refuse('no such time');
  if (second > 59) return refuse(second === 60 ? 'a leap second' : 'no such time');
  const fraction = m[7] ?? '';
  if (/[1-9]/.test(fraction.slice(6))) return refuse('finer than microseconds');
  let offsetMinutes = 0;
  if (!m[8]) {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) return refuse('no such offset');
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const seconds = BigInt(days) * 86_400n + BigInt(hour * 3600 + minute * 60 + second - offsetMinutes * 60);
  return seconds * 1_000_000n + BigInt(fraction.slice(0, 6).padEnd(6, '0'));
}

function fail(path: string, expected: string, value: unknown): never {
  throw mismatch(path, expected, value);
}

function object(node: Record<string, unknown>, ctx: Walk, path: Set<unknown>): Shape {
  const properties = node.properties && typeof node.properties === 'object' ? (node.properties as Record<string, JsonSchema>) : {};
  const names = Object.keys(properties);
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (names.length === 0) {
    const extra = node.additionalProperties;
    if (extra && typeof extra === 'object') {
      const values = walk(extra as JsonSchema, ctx, path);
      return {
        type: mapType(values.type),
        convert: (v, p) =>
          isObject(v)
            ? Object.entries(v).map(([key, value]) => ({ key: wellFormed(key, `${p} key`), value: value === null ? null : values.convert(value, `${p}.${key}`) }))
            : fail(p, 'an object', v),
      };
    }
    return ctx.json;
  }
  const fields: Column[] = [];
  const converters: [string, Shape['convert']][] = [];
  for (const name of names) {
    const shape = walk(properties[name]!, ctx, path);
    fields.push({ name, type: shape.type, nullable: true });
    converters.push([name, shape.convert]);
  }
  return {
    type: { kind: 'struct', fields },
    convert: (v, p) => {
      if (!isObject(v)) fail(p, 'an object', v);
      const out: Record<string, unknown> = {};
      for (const [name, convert] of converters) {
        const value = ownValue(v, name);
        setOwn(out, name, value === null || value === undefined ? null : convert(value, `${p}.${name}`));
      }
      return out;
    },
  };
}
