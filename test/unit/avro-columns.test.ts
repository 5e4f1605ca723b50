/**
 * The Avro column decoder (src/schema/avro-columns.ts) against avsc's own decode of the
 * same bytes: random schemas (nested records, arrays, maps, unions of every kind, enums,
 * fixed, logical types, 64-bit longs) and random values, encoded by avsc; what each
 * column must hold is avsc's decoded value mapped by the rules of docs/formats.md
 * ("Schema Registry formats"), written here from those rules, not from our decoder. Then
 * mutated payloads: the fast path either gives the usual path's value or hands the
 * payload back, never a value of its own; and the shapes it leaves to the usual path.
 */
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { buildFile, fileRows } from '../../src/files/files.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { columnValues, isColumnVector, encoderOf } from '../../src/parquet/index.js';
import { readLong } from '../../src/schema/avro-binary.js';
// the bigint long: avsc's LongType.__with hook as avsc documents it; the varint is avsc's to unpack
import { avroWriter, BigLong as bigLong } from '../../src/schema/decode-avro.js';
import { writerOf } from '../../src/schema/decode.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import type { WriterSchema } from '../../src/schema/writer.js';
import type { TableRecord } from '../../src/table/record.js';
import { resolveSettings, defaultSettings } from '../../src/table/settings.js';
import { fuzzSchemas, mutatedValue } from '../helpers/fuzz.js';
import { seededRandom } from '../helpers/random.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

type Json = Record<string, unknown> | string | unknown[];

/** avsc as a user would call it: wrapped unions, bigint longs (also where a long carries a logical type), no logical types of ours. */
function referenceType(schema: Json): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, {
    wrapUnions: true,
    registry: { long: bigLong },
    typeHook: ((s: unknown) => (typeof s === 'object' && s !== null && (s as { type?: unknown }).type === 'long' ? bigLong : undefined)) as avro.ForSchemaOptions['typeHook'],
  });
}

class Gen {
  private names = 0;
  constructor(readonly rnd: () => number) {}
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rnd() * items.length)]!;
  }
  int(max: number): number {
    return Math.floor(this.rnd() * max);
  }
  name(base: string): string {
    return `${base}${this.names++}`;
  }

  /** A random schema: the shapes the column mapping names, nested up to `depth`. */
  schema(depth: number): Json {
    const kinds = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string', 'enum', 'fixed', 'logical', 'logical', 'long'];
    if (depth > 0) kinds.push('record', 'array', 'map', 'nullable', 'union', 'record');
    switch (this.pick(kinds)) {
      case 'enum':
        return { type: 'enum', name: this.name('E'), symbols: Array.from({ length: 1 + this.int(4) }, (_, i) => `S${i}`) };
      case 'fixed':
        return { type: 'fixed', name: this.name('F'), size: this.int(7) };
      case 'logical':
        return this.logical();
      case 'record':
        return this.record(depth - 1);
      case 'array':
        return { type: 'array', items: this.schema(depth - 1) };
      case 'map':
        return { type: 'map', values: this.schema(depth - 1) };
      case 'nullable': {
        let inner = this.nonUnion(depth - 1);
        while (inner === 'null') inner = this.nonUnion(depth - 1);
        return this.rnd() < 0.5 ? ['null', inner] : [inner, 'null'];
      }
      case 'union': {
        // distinct branches: at most one of each unnamed kind, any named ones
        const branches: Json[] = [];
        const seen = new Set<string>();
        for (let i = 0; i < 2 + this.int(3); i++) {
          const branch = this.nonUnion(depth - 1);
          const key = typeof branch === 'string' ? branch : Array.isArray(branch) ? 'union' : ['record', 'enum', 'fixed'].includes(String(branch.type)) ? String(branch.name) : String(branch.type);
          if (!seen.has(key)) branches.push(branch);
          seen.add(key);
        }
        return branches;
      }
      default:
        return this.pick(kinds.slice(0, 8)) === 'long' ? { type: 'long' } : this.pick(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);
    }
  }

  private nonUnion(depth: number): Json {
    for (;;) {
      const schema = this.schema(depth);
      if (!Array.isArray(schema)) return schema;
    }
  }

  private logical(): Json {
    switch (this.int(8)) {
      case 0:
        return { type: 'long', logicalType: this.pick(['timestamp-millis', 'timestamp-micros', 'local-timestamp-millis', 'local-timestamp-micros']) };
      case 1:
        return { type: 'int', logicalType: 'date' };
      case 2:
        return { type: 'string', logicalType: 'uuid' };
      case 3: {
        const precision = 1 + this.int(30);
        return { type: 'bytes', logicalType: 'decimal', precision, scale: this.int(precision + 1) };
      }
      case 4: {
        const size = 1 + this.int(8);
        const precision = 1 + this.int(Math.floor(Math.log10(2) * (8 * size - 1)));
        return { type: 'fixed', name: this.name('D'), size, logicalType: 'decimal', precision, scale: 0 };
      }
      case 5:
        return { type: 'int', logicalType: 'time-millis' };
      case 6:
        return { type: 'long', logicalType: 'date' }; // not a date: its underlying long
      default:
        return { type: 'bytes', logicalType: 'decimal', precision: 0 }; // not a decimal: bytes
    }
  }

  record(depth: number): Record<string, unknown> {
    const n = this.int(6);
    return { type: 'record', name: this.name('R'), fields: Array.from({ length: n }, (_, i) => ({ name: `f${i}_${this.name('x')}`, type: this.schema(depth) })) };
  }

  /** A random value of `schema` in avsc's input form (wrapped unions, bigint longs, Buffers). */
  value(schema: Json, named: Map<string, Json>): unknown {
    if (typeof schema === 'string') {
      if (named.has(schema)) return this.value(named.get(schema)!, named);
      return this.primitive(schema);
    }
    if (Array.isArray(schema)) {
      const branch = this.pick(schema) as Json;
      if (branch === 'null') return null;
      const name = typeof branch === 'string' ? branch : ['record', 'enum', 'fixed'].includes(String((branch as Record<string, unknown>).type)) ? String((branch as Record<string, unknown>).name) : String((branch as Record<string, unknown>).type);
      return { [name]: this.value(branch, named) };
    }
    const type = schema.type as Json;
    if (typeof schema.name === 'string') named.set(schema.name, schema);
    if (schema.logicalType === 'decimal') {
      const precision = schema.precision as number;
      if (typeof precision === 'number' && precision >= 1) {
        const digits = this.rnd() < 0.05 ? precision + 1 : 1 + this.int(precision); // now and then too many: the usual path's error
        let magnitude = 0n;
        for (let i = 0; i < digits; i++) magnitude = magnitude * 10n + BigInt(i === 0 ? 1 + this.int(9) : this.int(10));
        const unscaled = this.rnd() < 0.5 ? -magnitude : magnitude;
        const size = type === 'fixed' ? (schema.size as number) : undefined;
        const bytes = twosComplement(unscaled, size);
        if (size !== undefined && bytes.length !== size) return Buffer.alloc(size); // out of the fixed's range: zero
        return bytes;
      }
    }
    switch (type) {
      case 'record':
        return Object.fromEntries((schema.fields as { name: string; type: Json }[]).map((f) => [f.name, this.value(f.type, named)]));
      case 'enum':
        return this.pick(schema.symbols as string[]);
      case 'fixed':
        return Buffer.from(Array.from({ length: schema.size as number }, () => this.int(256)));
      case 'array':
        return Array.from({ length: this.int(4) }, () => this.value(schema.items as Json, named));
      case 'map':
        return Object.fromEntries(Array.from({ length: this.int(4) }, (_, i) => [`k${i}${this.pick(['', 'é', '\u{1F600}', '__proto__'])}`, this.value(schema.values as Json, named)]));
      default:
        return this.value(type, named);
    }
  }

  private primitive(name: string): unknown {
    switch (name) {
      case 'null':
        return null;
      case 'boolean':
        return this.rnd() < 0.5;
      case 'int':
        return this.pick([0, -1, 1, 2147483647, -2147483648, this.int(2 ** 31) - 2 ** 30]);
      case 'long':
        return this.pick([0n, -1n, 2n ** 63n - 1n, -(2n ** 63n), BigInt(this.int(2 ** 31)) * BigInt(this.int(2 ** 31)) * (this.rnd() < 0.5 ? -1n : 1n), BigInt(this.int(1000)), 2n ** 49n, -(2n ** 48n) - 1n]);
      case 'float':
      case 'double':
        return this.pick([0, -0, 1.5, NaN, Infinity, -Infinity, this.rnd() * 1e6 - 5e5]);
      case 'bytes':
        return Buffer.from(Array.from({ length: this.int(6) }, () => this.int(256)));
      case 'string':
        return this.pick(['', 'a', 'héllo', '\u{1F600}x', `s${this.int(100)}`]);
      default:
        throw new Error(`no primitive ${name}`);
    }
  }
}

function twosComplement(value: bigint, size?: number): Buffer {
  let n = 1;
  while (value >= 1n << BigInt(8 * n - 1) || value < -(1n << BigInt(8 * n - 1))) n++;
  const width = size ?? n;
  const bits = BigInt.asUintN(8 * width, value);
  return Buffer.from(bits.toString(16).padStart(2 * width, '0'), 'hex').subarray(0, width);
}

/** Whether a type has a column (docs/formats.md: Avro null, and a union of nulls only, have none). */
function hasColumn(schema: Json, named: Map<string, Json>): boolean {
  if (typeof schema === 'string') return named.has(schema) ? hasColumn(named.get(schema)!, named) : schema !== 'null';
  if (Array.isArray(schema)) return schema.some((branch) => hasColumn(branch as Json, named));
  if (schema.type === 'null') return false;
  return true;
}

/** What a column holds for avsc's decoded value `v` of `schema`, by docs/formats.md's mapping; bytes as hex. */
function expected(schema: Json, v: unknown, named: Map<string, Json>): unknown {
  if (typeof schema === 'string') {
    if (named.has(schema)) return expected(named.get(schema)!, v, named);
    if (schema === 'string') return { bytes: Buffer.from(v as string, 'utf8').toString('hex') };
    if (schema === 'bytes') return { bytes: (v as Buffer).toString('hex') };
    return v;
  }
  if (Array.isArray(schema)) {
    if (v === null) return null;
    const [name, inner] = Object.entries(v as Record<string, unknown>)[0]!;
    const branch = schema.find((b) => branchName(b as Json) === name) as Json;
    const withColumns = schema.filter((b) => hasColumn(b as Json, named));
    if (withColumns.length === 1) return expected(branch, inner, named);
    return { [name.replace(/\./g, '_')]: expected(branch, inner, named) };
  }
  if (typeof schema.name === 'string') named.set(schema.name, schema);
  if (schema.logicalType === 'decimal' && (schema.type === 'bytes' || schema.type === 'fixed') && Number.isInteger(schema.precision) && (schema.precision as number) >= 1) {
    const bytes = v as Buffer;
    return bytes.length === 0 ? 0n : BigInt.asIntN(8 * bytes.length, BigInt(`0x${bytes.toString('hex')}`));
  }
  switch (schema.type) {
    case 'record': {
      const fields = (schema.fields as { name: string; type: Json }[]).filter((f) => hasColumn(f.type, named));
      if (fields.length === 0) return '{}';
      return Object.fromEntries(fields.map((f) => [f.name, expected(f.type, (v as Record<string, unknown>)[f.name], named)]));
    }
    case 'fixed':
      return { bytes: (v as Buffer).toString('hex') };
    case 'enum':
      return v;
    case 'array':
      return (v as unknown[]).map((item) => (hasColumn(schema.items as Json, named) ? expected(schema.items as Json, item, named) : null));
    case 'map':
      return Object.entries(v as Record<string, unknown>).map(([key, value]) => ({ key, value: hasColumn(schema.values as Json, named) ? expected(schema.values as Json, value, named) : null }));
    default:
      return expected(schema.type as Json, v, named);
  }
}

function branchName(branch: Json): string {
  if (typeof branch === 'string') return branch;
  if (Array.isArray(branch)) return 'union';
  return ['record', 'enum', 'fixed'].includes(String(branch.type)) ? String(branch.name) : String(branch.type);
}

/** Our values with bytes as hex, for comparing with `expected`. */
function comparable(v: unknown): unknown {
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v).toString('hex') };
  if (isColumnVector(v)) return comparable(columnValues(v));
  if (Array.isArray(v)) return v.map(comparable);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, comparable(x)]));
  return v;
}

const header = (id: number): Buffer => Buffer.from([0, 0, 0, 0, id]);

/** Whether a record field of scalars holds a long: read into a scratch, a long beyond 2^53 there hands its payload back (the usual path then gives it). */
const nestedLong = (writer: WriterSchema): boolean =>
  writer.type.kind === 'struct' && writer.type.fields.some((f) => f.type.kind === 'struct' && f.type.fields.some((g) => g.type.kind === 'int64' || g.type.kind === 'timestamp'));

const noiseRandom = seededRandom(4099);
/** Up to 8 bytes, mostly with the varint continuation bit set: what a payload read past its end would run into. */
const noise = (): Buffer => Buffer.from(Array.from({ length: Math.floor(noiseRandom() * 9) }, () => Math.floor(noiseRandom() * 256) | (noiseRandom() < 0.7 ? 0x80 : 0)));

/** The fast path's values of one payload as a struct (by column name), or undefined when it hands it back. */
function fastValue(writer: WriterSchema, payload: Buffer): unknown {
  const slots: unknown[] = [];
  if (!writer.decodeColumns!(payload, 5, payload.length, slots, new Float64Array(0))) return undefined;
  if (writer.type.kind !== 'struct') return slots[0];
  return Object.fromEntries(writer.type.fields.map((f, i) => [f.name, slots[i]]));
}

/**
 * The fast path of a struct writer asked for every slot in its scratch, reading the
 * payload where it lies among other bytes (`before` and `after` it, as a record's value
 * lies in its batch): the values (a string's or bytes' taken from the bytes at its span, a
 * long's from its number), or undefined when handed back.
 */
function spannedValue(writer: WriterSchema, payload: Buffer, before: Buffer, after: Buffer): unknown[] | undefined {
  const fields = (writer.type as Extract<WriterSchema['type'], { kind: 'struct' }>).fields;
  const all = new Set(fields.map((_, i) => i));
  const bytes = Buffer.concat([before, payload, after]);
  const slots: unknown[] = [];
  const scratch = new Float64Array(2 * fields.length);
  if (!writer.projectColumns!(undefined, all)!(bytes, before.length + 5, before.length + payload.length, slots, scratch)) return undefined;
  const fromScratch = (type: Extract<WriterSchema['type'], { kind: 'struct' }>, nested: Float64Array) => Object.fromEntries(type.fields.map((field, k) => {
    const kind = field.type.kind;
    if (kind === 'string' || kind === 'binary') return [field.name, bytes.subarray(nested[2 * k]!, nested[2 * k]! + nested[2 * k + 1]!)];
    if (kind === 'int64' || kind === 'timestamp') return [field.name, BigInt(nested[2 * k]!)];
    return [field.name, kind === 'boolean' ? nested[2 * k] !== 0 : nested[2 * k]];
  }));
  return slots.map((value, slot) => {
    // a record of scalar fields: its fields in the decoder's own scratch, two numbers each
    if (value instanceof Float64Array) return fromScratch(fields[slot]!.type as Extract<WriterSchema['type'], { kind: 'struct' }>, value);
    if (value !== undefined) return value;
    const kind = fields[slot]!.type.kind;
    if (kind === 'string' || kind === 'binary') return bytes.subarray(scratch[2 * slot]!, scratch[2 * slot]! + scratch[2 * slot + 1]!);
    expect(kind === 'int64' || kind === 'timestamp', `slot ${slot} (${kind}) left undefined`).toBe(true);
    return BigInt(scratch[2 * slot]!);
  });
}

/** The usual path's value (avsc's decode, then the shape's conversion), or its error text. */
function usualValue(writer: WriterSchema, payload: Buffer): { value: unknown } | { error: string } {
  try {
    return { value: writer.decode(payload, 5) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('Avro column decoder: avsc decodes the same bytes', () => {
  it('600 random schemas × 20 values: each column holds avsc\'s value by the mapping; the usual path agrees; a projection reads the same', () => {
    const rnd = seededRandom(2027);
    const gen = new Gen(rnd);
    let fast = 0;
    let handedBack = 0;
    let projected = 0;
    for (let s = 0; s < 600; s++) {
      const schema = gen.rnd() < 0.85 ? gen.record(3) : gen.schema(3);
      const text = JSON.stringify(schema);
      const writer = avroWriter({ id: s + 1, type: 'AVRO', schema: text, references: [] });
      // every shape but one has a fast path: a union of several branches at the top
      if (!writer.decodeColumns) {
        expect(Array.isArray(schema) && schema.filter((b) => hasColumn(b as Json, new Map())).length > 1, text).toBe(true);
        continue;
      }
      const reference = referenceType(JSON.parse(text) as Json);
      for (let v = 0; v < 20; v++) {
        const payload = Buffer.concat([header(s + 1), reference.toBuffer(gen.value(JSON.parse(text) as Json, new Map()))]);
        const decodedByAvsc = reference.fromBuffer(payload.subarray(5));
        const model = expected(JSON.parse(text) as Json, decodedByAvsc, new Map());
        const usual = usualValue(writer, payload);
        const ours = fastValue(writer, payload);
        // among other bytes, with strings and bytes as spans: the same values, or handed back alike
        const spanned = writer.type.kind === 'struct' ? spannedValue(writer, payload, noise(), noise()) : undefined;
        if (writer.type.kind === 'struct') {
          expect(spanned === undefined && ours !== undefined && !nestedLong(writer), `${text}: spans and values hand back alike`).toBe(false);
          if (spanned !== undefined) expect(comparable(spanned), text).toEqual(comparable(Object.values(ours as Record<string, unknown>)));
        }
        if (ours === undefined) {
          // handed back: only a payload the usual path refuses (here: a decimal over its precision)
          expect('error' in usual, `${text}: handed back a payload the usual path decodes`).toBe(true);
          handedBack++;
          continue;
        }
        fast++;
        expect('value' in usual, text).toBe(true);
        expect(comparable(ours), text).toEqual(model);
        expect(comparable(ours), text).toEqual(comparable((usual as { value: unknown }).value));
        if (writer.type.kind === 'struct') {
          // a projection: some fields read, the others skipped; the read ones hold the same values
          const fieldCount = writer.type.fields.length;
          const asked = Array.from({ length: fieldCount }, (_, i) => i).filter(() => gen.rnd() < 0.4);
          const slots: unknown[] = [];
          expect(writer.projectColumns!(asked)!(payload, 5, payload.length, slots, new Float64Array(0)), text).toBe(true);
          const all = Object.values(ours as Record<string, unknown>);
          for (const slot of asked) expect(comparable(slots[slot]), text).toEqual(comparable(all[slot]));
          for (let slot = 0; slot < fieldCount; slot++) if (!asked.includes(slot)) expect(slots[slot]).toBeUndefined();
          projected++;
        }
      }
    }
    expect(fast).toBeGreaterThan(10_000);
    expect(projected).toBeGreaterThan(5_000);
    expect(handedBack).toBeGreaterThan(10);
  });

  it('mutated payloads: the fast path gives the usual path\'s value, or hands the payload back; never a value where the usual path has an error', () => {
    const rnd = seededRandom(99);
    const gen = new Gen(rnd);
    let agreed = 0;
    let handedBack = 0;
    for (let s = 0; s < 300; s++) {
      const schema = gen.record(3);
      const text = JSON.stringify(schema);
      const writer = avroWriter({ id: s + 1, type: 'AVRO', schema: text, references: [] });
      const reference = referenceType(schema);
      for (let v = 0; v < 20; v++) {
        const payload = Buffer.concat([header(s + 1), reference.toBuffer(gen.value(schema, new Map()))]);
        const mutated = Buffer.from(payload);
        const how = gen.int(4);
        let bytes: Buffer = mutated;
        if (how === 0 && mutated.length > 5) bytes = mutated.subarray(0, 5 + gen.int(mutated.length - 5));
        else if (how === 1 && mutated.length > 5) mutated[5 + gen.int(mutated.length - 5)] = gen.int(256);
        else if (how === 2) bytes = Buffer.concat([mutated, Buffer.from([gen.int(256)])]);
        else if (mutated.length > 5) {
          const at = 5 + gen.int(mutated.length - 5);
          mutated[at] = mutated[at]! ^ 0x80;
        }
        const usual = usualValue(writer, bytes);
        const ours = fastValue(writer, bytes);
        if (writer.type.kind === 'struct') {
          // where it lies among other bytes, strings and bytes as spans: read past its end, it is handed back as alone
          const spanned = spannedValue(writer, bytes, noise(), noise());
          expect(spanned === undefined && ours !== undefined && !nestedLong(writer), `${text} ${bytes.toString('hex')}`).toBe(false);
          if (spanned !== undefined) expect(comparable(spanned)).toEqual(comparable(Object.values(ours as Record<string, unknown>)));
        }
        if (ours === undefined) {
          handedBack++;
          continue;
        }
        expect('value' in usual, `${text} ${bytes.toString('hex')}: ${'error' in usual ? usual.error : 'a value'}`).toBe(true);
        expect(comparable(ours)).toEqual(comparable((usual as { value: unknown }).value));
        agreed++;
      }
    }
    expect(agreed).toBeGreaterThan(1000);
    expect(handedBack).toBeGreaterThan(500);
  });

  it('longs: every varint of 1 to 10 bytes reads as avsc\'s bigint long reads it', () => {
    const rnd = seededRandom(7);
    const reference = referenceType({ type: 'long' });
    for (let i = 0; i < 20_000; i++) {
      const length = 1 + Math.floor(rnd() * 10);
      const bytes = Buffer.from(Array.from({ length }, (_, j) => (j < length - 1 ? 0x80 : 0) | Math.floor(rnd() * 128)));
      const cursor = { bytes, pos: 0, end: length };
      expect(readLong(cursor)).toBe(reference.decode(bytes, 0).value);
      expect(cursor.pos).toBe(length);
    }
  });

  it('the shapes it leaves to the usual path: a record that contains itself has no column decoder', () => {
    const recursive = JSON.stringify({ type: 'record', name: 'Node', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'Node'] }] });
    expect(avroWriter({ id: 1, type: 'AVRO', schema: recursive, references: [] }).decodeColumns).toBeUndefined();
    // an array of nulls takes no bytes per item: read as the usual path reads it
    const nulls = JSON.stringify({ type: 'record', name: 'N', fields: [{ name: 'a', type: { type: 'array', items: 'null' } }, { name: 'b', type: { type: 'array', items: 'int' } }] });
    const writer = avroWriter({ id: 2, type: 'AVRO', schema: nulls, references: [] });
    const payload = Buffer.concat([header(2), referenceType(JSON.parse(nulls) as Json).toBuffer({ a: Array(50).fill(null), b: [] })]);
    expect(fastValue(writer, payload)).toEqual({ a: Array(50).fill(null), b: [] });
    // a count of ints larger than the bytes left is handed back; the usual path says the payload ends early
    const corrupt = Buffer.concat([payload.subarray(0, payload.length - 1), Buffer.from([0xfe, 0x01, 0x02])]);
    expect(fastValue(writer, corrupt)).toBeUndefined();
    expect(usualValue(writer, corrupt)).toEqual({ error: 'Avro schema 2: the payload ends early (5 bytes)' });
  });
});

describe('Avro column decoder: the rows and the file are the usual path\'s', () => {
  /** `build` with the usual path only: the writers' fast path set aside, and fresh decoders. */
  function usualOnly<T>(registry: RegistrySchema[], build: () => T): T {
    const writers = registry.map((schema) => writerOf(schema) as WriterSchema);
    const saved = writers.map((writer) => writer.decodeColumns);
    for (const writer of writers) delete writer.decodeColumns;
    try {
      return build();
    } finally {
      writers.forEach((writer, i) => {
        if (saved[i]) writer.decodeColumns = saved[i];
      });
    }
  }

  it('random and mutated payloads of random schemas, as values and keys, and the fuzz corpus: the same _error, rows and bytes', () => {
    const rnd = seededRandom(4242);
    const gen = new Gen(rnd);
    const table = { tableId: 1n, name: 'a', topic: 'a', format: 'avro', settings: resolveSettings({ row_group_rows: '64' }) } as unknown as TableRecord;
    let errorRows = 0;
    let rows = 0;
    let projectedFiles = 0;
    for (let s = 0; s < 40; s++) {
      const text = s === 0 ? fuzzSchemas.avro.text : JSON.stringify(gen.rnd() < 0.8 ? gen.record(3) : gen.schema(2));
      const registry: RegistrySchema[] = [{ id: 7, type: 'AVRO', schema: text, references: [] }];
      const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: registry[0]!, sides: new Set(['value', 'key']) }]);
      const reference = referenceType(JSON.parse(text) as Json);
      const payload = (): Buffer => {
        const bytes = Buffer.concat([header(7), s === 0 ? mutatedValue('avro', 7, rnd).subarray(5) : reference.toBuffer(gen.value(JSON.parse(text) as Json, new Map()))]);
        if (rnd() < 0.3 && bytes.length > 5) bytes[5 + gen.int(bytes.length - 5)] = gen.int(256);
        return rnd() < 0.1 ? bytes.subarray(0, Math.max(5, bytes.length - 1)) : bytes;
      };
      const records: KafkaRecord[] = Array.from({ length: 200 }, (_, i) => ({ offset: BigInt(i), timestamp: Date.UTC(2026, 0, 1) + i, key: rnd() < 0.3 ? payload() : null, value: payload(), headers: [] }));
      const fast = buildFile(table, { ...schema }, 0, records, encoderVersion);
      const fastRows = fileRows(table, { ...schema }, 0, records, encoderVersion);
      const usual = usualOnly(registry, () => buildFile(table, { ...schema }, 0, records, encoderVersion));
      const usualRows = usualOnly(registry, () => fileRows(table, { ...schema }, 0, records, encoderVersion));
      expect(comparable(fastRows.arrays), text).toEqual(comparable(usualRows.arrays));
      expect(Buffer.from(fast.file.sha256).toString('hex'), text).toBe(Buffer.from(usual.file.sha256).toString('hex'));
      const errors = columnValues(usualRows.arrays[usualRows.columns.findIndex((c) => c.name === '_error')]!);
      errorRows += errors.filter((e) => e !== null).length;
      rows += records.length;
      // a rebuild of some columns of a file without error rows: the fast path of a projection against avsc's resolver
      const valid: KafkaRecord[] = records.map((record) => ({ ...record, key: null, value: s === 0 ? record.value : Buffer.concat([header(7), reference.toBuffer(gen.value(JSON.parse(text) as Json, new Map()))]) })).filter((_, i) => i % 2 === 0);
      const decodedNames = schema.columns.map((c) => c.name).filter((name) => !name.startsWith('_'));
      const only = new Set(decodedNames.filter(() => rnd() < 0.4));
      if (s > 0 && usualOnly(registry, () => fileRows(table, { ...schema }, 0, valid, encoderVersion)).arrays.some((column, c) => schema.columns[c]!.name === '_error' && columnValues(column).some((e) => e !== null))) continue;
      if (s === 0) continue;
      expect(comparable(fileRows(table, { ...schema }, 0, valid, encoderVersion, { decodedOnly: only }).arrays), text).toEqual(comparable(usualOnly(registry, () => fileRows(table, { ...schema }, 0, valid, encoderVersion, { decodedOnly: only })).arrays));
      projectedFiles++;
    }
    expect(projectedFiles).toBeGreaterThan(15);
    // both paths reached: rows that decode, and rows with an error
    expect(errorRows).toBeGreaterThan(rows / 10);
    expect(errorRows).toBeLessThan(rows * 0.9);
  });
});
