/**
 * A column's values of one row group as its leaves' entries: repetition and definition
 * levels, and where each entry's value lies (Dremel shredding; flat columns and vectors
 * are read where they lie). Its own module because it is the one step that knows the
 * shape of the values (values.ts), and pages only see entries.
 */
import { type Column, type ColumnType, type FieldType, isScalar, leafCount } from './schema.js';
import { ByteSpans, KeyValueLists, type PreparedData, SafeInt64s, StructVectors } from './values.js';

/** One row group's entries of a leaf: levels, and the value of each entry that has one. */
export interface LeafChunk {
  count: number;
  /** An array, or a vector of byte spans or safe-integer int64s (values.ts): its values are written from where they lie. */
  values: ArrayLike<unknown> | ByteSpans | SafeInt64s;
  /** Entry i's value is values[offset + i]; null or undefined where it has none. */
  offset: number;
  def: Uint8Array | null;
  rep: Uint8Array | null;
}

/** Each leaf's entries of rows [start, end) of a column, in the leaves' order. */
export function leafChunks(column: Column, values: PreparedData['arrays'][number], start: number, end: number): LeafChunk[] {
  return isScalar(column.type)
    ? [flatChunk(column, values as ArrayLike<unknown> | ByteSpans | SafeInt64s, start, end)]
    : values instanceof KeyValueLists ? shredKeyValueLists(values, start, end)
      : values instanceof StructVectors ? structChunks(column, values, start, end) : shred(column, values as readonly unknown[], start, end);
}

function flatChunk(column: Column, values: ArrayLike<unknown> | ByteSpans | SafeInt64s, start: number, end: number): LeafChunk {
  const count = end - start;
  let def: Uint8Array | null = null;
  if (column.nullable) def = presence(values, start, end);
  return { count, values, offset: start, def, rep: null };
}

/** Per value of [start, end): 1 where it holds one, 0 where it is null (whatever holds the values). */
function presence(values: ArrayLike<unknown> | ByteSpans | SafeInt64s, start: number, end: number): Uint8Array {
  const present = new Uint8Array(end - start);
  if (values instanceof ByteSpans) for (let i = start; i < end; i++) present[i - start] = values.lengths[i]! < 0 ? 0 : 1;
  else if (values instanceof SafeInt64s) for (let i = start; i < end; i++) present[i - start] = Number.isNaN(values.numbers[i]) ? 0 : 1;
  else for (let i = start; i < end; i++) present[i - start] = values[i] === null ? 0 : 1;
  return present;
}

/**
 * `shred` of a KeyValueLists column (`list<struct<key, value>>`, neither list nor element
 * null): per row one entry per pair (repetition 0 for the first, 1 after), or one empty
 * entry for an empty list; the key's definition level is 1, the value's 2 (1 when null).
 */
function shredKeyValueLists(lists: KeyValueLists, start: number, end: number): LeafChunk[] {
  const { starts } = lists;
  let count = 0;
  for (let row = start; row < end; row++) count += Math.max(1, starts[row + 1]! - starts[row]!);
  const rep = new Uint8Array(count);
  const keyDef = new Uint8Array(count);
  const valueDef = new Uint8Array(count);
  const keys = entrySpans(count);
  const values = entrySpans(count);
  let at = 0;
  for (let row = start; row < end; row++) {
    const first = starts[row]!;
    const last = starts[row + 1]!;
    if (first === last) {
      keys.lengths[at] = values.lengths[at] = -1;
      at++;
      continue;
    }
    for (let e = first; e < last; e++, at++) {
      rep[at] = e === first ? 0 : 1;
      keyDef[at] = 1;
      copySpan(lists.keys, e, keys, at);
      copySpan(lists.values, e, values, at);
      valueDef[at] = values.lengths[at]! < 0 ? 1 : 2;
    }
  }
  return [
    { count, values: new ByteSpans(lists.keys.sources, keys.source, keys.starts, keys.lengths), offset: 0, def: keyDef, rep },
    { count, values: new ByteSpans(lists.values.sources, values.source, values.starts, values.lengths), offset: 0, def: valueDef, rep },
  ];
}

function entrySpans(count: number): { source: Int32Array; starts: Int32Array; lengths: Int32Array } {
  return { source: new Int32Array(count), starts: new Int32Array(count), lengths: new Int32Array(count) };
}

function copySpan(from: ByteSpans, i: number, to: { source: Int32Array; starts: Int32Array; lengths: Int32Array }, at: number): void {
  to.source[at] = from.source[i]!;
  to.starts[at] = from.starts[i]!;
  to.lengths[at] = from.lengths[i]!;
}

/** Growable level and value lists of one leaf while a nested column is shredded. */
class Shredded {
  def: number[] = [];
  rep: number[] = [];
  values: unknown[] = [];
  add(rep: number, def: number, value: unknown): void {
    this.rep.push(rep);
    this.def.push(def);
    this.values.push(value);
  }
}

/**
 * Dremel shredding of a nested column's rows into its leaves' levels. `def` counts the
 * optional and repeated nodes present above, `rep` is the level the next entry carries,
 * `depth` the repeated nodes entered. An absent (null, or empty list) node gives one
 * entry to every leaf under it.
 */
function shred(column: Column, rows: readonly unknown[], start: number, end: number): LeafChunk[] {
  const outs = Array.from({ length: leafCount(column) }, () => new Shredded());
  const absent = (at: number, n: number, rep: number, def: number): void => {
    for (let k = at; k < at + n; k++) outs[k]!.add(rep, def, null);
  };
  const visit = (field: FieldType, value: unknown, def: number, rep: number, depth: number, at: number): void => {
    if (field.nullable) {
      if (value === null || value === undefined) return absent(at, leafCount(field), rep, def);
      def++;
    }
    const { type } = field;
    if (type.kind === 'list') {
      const list = value as readonly unknown[];
      if (list.length === 0) return absent(at, leafCount(type.element), rep, def);
      for (let i = 0; i < list.length; i++) visit(type.element, list[i], def + 1, i === 0 ? rep : depth + 1, depth + 1, at);
    } else if (type.kind === 'struct') {
      const record = value as Record<string, unknown>;
      let k = at;
      for (const f of type.fields) {
        visit(f, Object.hasOwn(record, f.name) ? record[f.name] : null, def, rep, depth, k);
        k += leafCount(f);
      }
    } else outs[at]!.add(rep, def, value);
  };
  for (let row = start; row < end; row++) visit(column, rows[row], 0, 0, 0, 0);
  return outs.map((s) => ({ count: s.values.length, values: s.values, offset: 0, def: Uint8Array.from(s.def), rep: Uint8Array.from(s.rep) }));
}

/**
 * `shred` of a struct of scalar fields given as StructVectors: the same levels (a null
 * struct 0; else the struct's level, and the field's if it holds a value), each field's
 * values read where they lie.
 */
function structChunks(column: Column, struct: StructVectors, start: number, end: number): LeafChunk[] {
  const { fields } = column.type as Extract<ColumnType, { kind: 'struct' }>;
  const count = end - start;
  const structLevel = column.nullable ? 1 : 0;
  return fields.map((field, f) => {
    const values = struct.fields[f]!;
    const present = field.nullable ? presence(values, start, end) : null;
    const def = new Uint8Array(count);
    for (let i = 0; i < count; i++) if (!struct.nulls[start + i]) def[i] = structLevel + (present ? present[i]! : 0);
    return { count, values, offset: start, def, rep: null };
  });
}
