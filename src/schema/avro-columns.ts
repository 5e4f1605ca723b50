/**
 * The Avro column decoder: reads a payload field by field straight into the values its
 * columns take, with no record object per payload and no value tree to convert after.
 * It gives, for every payload it accepts, exactly the value decode-avro.ts's path gives
 * (avsc's decode, then the shape's conversion): the same walk of the same avsc types, the
 * same reads (avro-binary.ts). A payload it does not accept (malformed, an invalid UTF-8
 * string, a decimal out of its precision, a map with a key twice, a count larger than the
 * bytes left) it hands back: the usual path then gives that payload's value or its error,
 * in its words. A schema it does not read (a record that contains itself, a type it does
 * not know) gets no column decoder at all, and decodes the usual way.
 */
import { isUtf8 } from 'node:buffer';
import type avro from 'avsc';
import { notColumnar, readBlockCount, readBoolean, readBytes, readDouble, readFixed, readFloat, readInt, readLong, readLongOrNumber, readSpan, type AvroCursor } from './avro-binary.js';
import { skipperOf } from './avro-skip.js';
import { signedBigInt, type ColumnDecoder } from './writer.js';
import { setOwn } from '../common/objects.js';
import { firstInvalidUtf8 } from '../parquet/json-text.js';

type Read = (c: AvroCursor) => unknown;

/** A type's reader; `column: false` when the type has no column (Avro null, a union of nulls only); `bytes`: the fewest bytes a value takes. */
interface Reader {
  read: Read;
  column: boolean;
  bytes: number;
  /** A record's, when every field of it is a scalar primitive with a column: their readers, which a scratch read takes one by one. */
  flatFields?: readonly Reader[];
}

/** How the walk sees the types decode-avro.ts makes: its logical types' attributes, and the alias of a `__proto__` field. */
export interface AvroTypeView {
  logicalAttrs(type: avro.Type): Record<string, unknown> | undefined;
  protoAlias: string | undefined;
}

/**
 * The column decoder of a (non-recursive) writer type, or undefined where there is none.
 * `slots`: only these of a record's slots are wanted (a projection); the other fields
 * are skipped by their lengths (avro-skip.ts), their slots left as they were.
 * `scratchSlots`: of these, a field that is an Avro string or bytes is given as a span,
 * its place in the payload's bytes (`scratch[2 * slot]` its start, `scratch[2 * slot + 1]`
 * its length), and a long that is a safe integer as a number in `scratch[2 * slot]`, with
 * `out[slot]` left undefined, so that no view or bigint is made of it (issue 27); a
 * string's UTF-8 is checked where it lies, as for the view.
 */
export function columnDecoder(type: avro.Type, view: AvroTypeView, slots?: ReadonlySet<number>, scratchSlots?: ReadonlySet<number>): ColumnDecoder | undefined {
  const compile = new Compiler(view);
  const cursor: AvroCursor = { bytes: empty, pos: 0, end: 0 };
  let scratch: Float64Array = noScratch;
  const finish = (ok: boolean): boolean => {
    cursor.bytes = empty; // keeps no payload alive
    scratch = noScratch;
    return ok;
  };
  if (type.typeName === 'record' || type.typeName === 'error') {
    const fields = compile.fields(type, new Set());
    if (!fields || !fields.some((field) => field.column)) return wholeValue(compile.reader(type, new Set()), cursor, finish);
    const slotOf = slotsOf(fields);
    const fieldTypes = (type as unknown as { fields: { type: avro.Type }[] }).fields.map((field) => field.type);
    const underlying = (t: avro.Type): avro.Type | undefined => (view.logicalAttrs(t) ? (t as unknown as { underlyingType: avro.Type }).underlyingType : undefined);
    const spanRead = (slot: number, utf8: boolean): Read => (c) => {
      const start = checkedSpan(c, utf8);
      scratch[2 * slot] = start;
      scratch[2 * slot + 1] = c.pos - start;
      return undefined;
    };
    const numberRead = (slot: number): Read => (c) => {
      const value = readLongOrNumber(c);
      if (typeof value !== 'number') return value; // beyond 2^53: the bigint, in its slot
      scratch[2 * slot] = value;
      return undefined;
    };
    // a record of scalar fields: its own scratch (two per field) in its slot, reused from payload to payload
    const structRead = (fields: readonly Reader[]): Read => {
      const nested = new Float64Array(2 * fields.length);
      return (c) => {
        for (let k = 0; k < fields.length; k++) {
          const field = fields[k]!;
          if (field === primitives.string || field === primitives.bytes) {
            const start = checkedSpan(c, field === primitives.string);
            nested[2 * k] = start;
            nested[2 * k + 1] = c.pos - start;
          } else if (field === primitives['abstract:long']) {
            const value = readLongOrNumber(c);
            if (typeof value !== 'number') throw notColumnar; // beyond 2^53: the usual path gives the record
            nested[2 * k] = value;
          } else if (field === primitives.boolean) nested[2 * k] = readBoolean(c) ? 1 : 0;
          else nested[2 * k] = field.read(c) as number; // int, float, double
        }
        return nested;
      };
    };
    const reads = fields.map((field, i) => {
      const slot = slotOf[i]!;
      if (!slots || (slot >= 0 && slots.has(slot))) {
        if (scratchSlots?.has(slot) && (field === primitives.string || field === primitives.bytes)) return spanRead(slot, field === primitives.string);
        if (scratchSlots?.has(slot) && field === primitives['abstract:long']) return numberRead(slot);
        if (scratchSlots?.has(slot) && field.flatFields) return structRead(field.flatFields);
        return field.read;
      }
      const skip = skipperOf(fieldTypes[i]!, underlying);
      return skip ?? field.read; // a skip's value, undefined, goes to no slot
    });
    const wanted = slotOf.map((slot) => (slot >= 0 && (!slots || slots.has(slot)) ? slot : -1));
    return (bytes, offset, end, out, fieldScratch) => {
      cursor.bytes = bytes;
      cursor.pos = offset;
      cursor.end = end;
      scratch = fieldScratch;
      try {
        for (let i = 0; i < reads.length; i++) {
          const value = reads[i]!(cursor);
          const slot = wanted[i]!;
          if (slot >= 0) out[slot] = value;
        }
      } catch {
        // notColumnar, or anything else unforeseen: the usual path decides, so no payload stops a build here
        return finish(false);
      }
      return finish(cursor.pos === end);
    };
  }
  return wholeValue(compile.reader(type, new Set()), cursor, finish);
}

/** A string's or bytes' place in the payload (`readSpan`), a string's UTF-8 checked where it lies. */
function checkedSpan(c: AvroCursor, utf8: boolean): number {
  const start = readSpan(c);
  if (utf8 && firstInvalidUtf8(c.bytes, start, c.pos) >= 0) throw notColumnar; // the usual path says "a string is not valid UTF-8"
  return start;
}

const empty = Buffer.alloc(0);
const noScratch = new Float64Array(0);

/** Each field's slot in `out` (−1: no column). */
function slotsOf(fields: readonly Reader[]): number[] {
  let next = 0;
  return fields.map((field) => (field.column ? next++ : -1));
}

function wholeValue(reader: Reader | undefined, cursor: AvroCursor, finish: (ok: boolean) => boolean): ColumnDecoder | undefined {
  if (!reader) return undefined;
  const { read } = reader;
  return (bytes, offset, end, out) => {
    cursor.bytes = bytes;
    cursor.pos = offset;
    cursor.end = end;
    try {
      out[0] = read(cursor);
    } catch {
      return finish(false); // as above: the usual path decides
    }
    return finish(cursor.pos === end);
  };
}

const readNull: Read = () => null;
const readString: Read = (c) => {
  const bytes = readBytes(c);
  if (!isUtf8(bytes)) throw notColumnar; // the usual path says "a string is not valid UTF-8"
  return bytes;
};

/**
 * Avro's primitives as decode-avro.ts makes them: `abstract:long` is its bigint long
 * (avsc's own long, of numbers, is never made, so it has no reader here), `string` its
 * BytesString (UTF-8 bytes, checked; JS strings only in a recursive schema, which has no
 * column decoder).
 */
const primitives: Record<string, Reader> = {
  null: { read: readNull, column: false, bytes: 0 },
  boolean: { read: readBoolean, column: true, bytes: 1 },
  int: { read: readInt, column: true, bytes: 1 },
  'abstract:long': { read: readLong, column: true, bytes: 1 },
  float: { read: readFloat, column: true, bytes: 4 },
  double: { read: readDouble, column: true, bytes: 8 },
  bytes: { read: readBytes, column: true, bytes: 1 },
  string: { read: readString, column: true, bytes: 1 },
};

/** The primitives a record's field may be for the record to be read into a scratch (structRead). */
const scalarPrimitives = new Set(['string', 'bytes', 'abstract:long', 'int', 'float', 'double', 'boolean'].map((name) => primitives[name]!));

/** avsc's type tree as decode-avro.ts's `shapeOf` walks it, one reader per type. */
class Compiler {
  constructor(private readonly view: AvroTypeView) {}

  reader(type: avro.Type, path: Set<avro.Type>): Reader | undefined {
    const attrs = this.view.logicalAttrs(type);
    if (attrs) return this.logical(type, attrs, path);
    const t = type as unknown as Record<string, unknown>;
    if (Object.hasOwn(primitives, type.typeName)) return primitives[type.typeName];
    switch (type.typeName) {
      case 'fixed': {
        const size = t.size as number;
        return { read: (c) => readFixed(c, size), column: true, bytes: size };
      }
      case 'enum': {
        const symbols = t.symbols as string[];
        return {
          read: (c) => {
            const symbol = symbols[readInt(c)];
            if (symbol === undefined) throw notColumnar;
            return symbol;
          },
          column: true,
          bytes: 1,
        };
      }
      case 'array':
        return this.array(t.itemsType as avro.Type, path);
      case 'map':
        return this.map(t.valuesType as avro.Type, path);
      case 'union:wrapped':
        return this.union(t.types as avro.Type[], path);
      case 'record':
      case 'error':
        return this.record(type, path);
      default:
        return undefined;
    }
  }

  /** A record's fields' readers, in order; undefined for a record that contains itself (it becomes JSON text). */
  fields(type: avro.Type, path: Set<avro.Type>): Reader[] | undefined {
    if (path.has(type)) return undefined;
    const inner = new Set(path).add(type);
    const readers: Reader[] = [];
    for (const field of (type as unknown as { fields: { type: avro.Type }[] }).fields) {
      const reader = this.reader(field.type, inner);
      if (!reader) return undefined;
      readers.push(reader);
    }
    return readers;
  }

  private record(type: avro.Type, path: Set<avro.Type>): Reader | undefined {
    const readers = this.fields(type, path);
    if (!readers) return undefined;
    const fields = (type as unknown as { fields: { name: string }[] }).fields;
    const reads = readers.map((r) => r.read);
    const bytes = readers.reduce((sum, r) => sum + r.bytes, 0);
    const columns = readers.map((r, i) => (r.column ? (fields[i]!.name === this.view.protoAlias ? '__proto__' : fields[i]!.name) : undefined));
    if (!columns.some((column) => column !== undefined)) {
      // no field with a column: the record is JSON text `{}` (shapeOf), its fields still read
      return { read: (c) => { for (const read of reads) read(c); return '{}'; }, column: true, bytes };
    }
    const flat = readers.every((r) => scalarPrimitives.has(r));
    return {
      read: (c) => {
        const out: Record<string, unknown> = {};
        for (let i = 0; i < reads.length; i++) {
          const value = reads[i]!(c);
          const column = columns[i];
          if (column !== undefined) setOwn(out, column, value);
        }
        return out;
      },
      column: true,
      bytes,
      ...(flat ? { flatFields: readers } : {}),
    };
  }

  private array(itemsType: avro.Type, path: Set<avro.Type>): Reader | undefined {
    const items = this.reader(itemsType, path);
    if (!items) return undefined;
    const { read, column, bytes } = items;
    return {
      read: (c) => {
        const out: unknown[] = [];
        for (let n = readBlockCount(c, bytes); n > 0; n = readBlockCount(c, bytes)) {
          for (; n > 0; n--) {
            const value = read(c);
            out.push(column ? value : null);
            if (c.pos > c.end) throw notColumnar;
          }
        }
        return out;
      },
      column: true,
      bytes: 1,
    };
  }

  /** A map: a list of {key, value}, keys in the order first written (a key twice: the usual path's Map decides). */
  private map(valuesType: avro.Type, path: Set<avro.Type>): Reader | undefined {
    const values = this.reader(valuesType, path);
    if (!values) return undefined;
    const { read, column } = values;
    const entryBytes = 1 + values.bytes; // the key's length, then the value
    return {
      read: (c) => {
        const out: { key: string; value: unknown }[] = [];
        let keys: Set<string> | undefined;
        for (let n = readBlockCount(c, entryBytes); n > 0; n = readBlockCount(c, entryBytes)) {
          for (; n > 0; n--) {
            const keyBytes = readBytes(c);
            if (!isUtf8(keyBytes)) throw notColumnar;
            const key = keyBytes.toString('utf8');
            const value = read(c);
            if (c.pos > c.end) throw notColumnar;
            keys ??= new Set();
            if (keys.has(key)) throw notColumnar;
            keys.add(key);
            out.push({ key, value: column ? value : null });
          }
        }
        return out;
      },
      column: true,
      bytes: 1,
    };
  }

  /** A wrapped union, as shapeOf: one branch with a column → that branch's value; more → a struct of the branch read. */
  private union(types: avro.Type[], path: Set<avro.Type>): Reader | undefined {
    const branches: (Reader & { name: string })[] = [];
    for (const branch of types) {
      const reader = this.reader(branch, path);
      if (!reader) return undefined;
      branches.push({ ...reader, name: branch.branchName!.replace(/\./g, '_') });
    }
    const withColumn = branches.filter((b) => b.column).length;
    const pick = (c: AvroCursor): (Reader & { name: string }) => {
      const branch = branches[readInt(c)];
      if (branch === undefined) throw notColumnar;
      return branch;
    };
    if (withColumn <= 1) {
      // a branch without a column is Avro null: its value null
      return { read: (c) => { const branch = pick(c); const value = branch.read(c); return branch.column ? value : null; }, column: withColumn === 1, bytes: 1 };
    }
    return {
      read: (c) => {
        const branch = pick(c);
        const value = branch.read(c);
        if (!branch.column) return null;
        const out: Record<string, unknown> = {};
        setOwn(out, branch.name, value);
        return out;
      },
      column: true,
      bytes: 1,
    };
  }

  /** decode-avro.ts's logical types: timestamps and dates are their underlying values, decimals bigints, others their underlying type. */
  private logical(type: avro.Type, attrs: Record<string, unknown>, path: Set<avro.Type>): Reader | undefined {
    const name = attrs.logicalType as string;
    const underlyingType = (type as unknown as { underlyingType: avro.Type }).underlyingType;
    const underlying = underlyingType.typeName;
    if (name === 'decimal' && (underlying === 'bytes' || underlying === 'fixed')) {
      const { precision, scale = 0 } = attrs as { precision?: number; scale?: number };
      if (Number.isInteger(precision) && precision! >= 1 && Number.isInteger(scale) && scale >= 0 && scale <= precision!) {
        const bytes = this.reader(underlyingType, path);
        if (!bytes) return undefined;
        const limit = 10n ** BigInt(precision!);
        return {
          read: (c) => {
            const value = signedBigInt(bytes.read(c) as Uint8Array);
            if (value >= limit || value <= -limit) throw notColumnar; // the usual path: "decimal has more than p digits"
            return value;
          },
          column: true,
          bytes: bytes.bytes,
        };
      }
    }
    // timestamps, dates, uuids and the rest: the underlying value as it is (shapeOf's conversions are the identity)
    return this.reader(underlyingType, path);
  }
}
