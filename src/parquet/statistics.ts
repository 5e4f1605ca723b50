/**
 * Exact per-column statistics, computed by us from the very values the writer gets
 * (values.ts), never read back from a writer's footer: writers disagree on string
 * order, truncate bounds and drop NaN counts.
 *
 * One entry per primitive column, named by its Parquet path joined with "." (as in
 * the footer's `path_in_schema`: a flat column is its name, a list's values are
 * `col.list.element`, a struct's fields `col.field`). Counts follow Parquet's own
 * meaning, so they agree with any engine's view of the file:
 *   valueCount  values plus nulls of the column (for a flat column, the row count;
 *               for a nested leaf, one per list element, and one for a null or
 *               empty list or a null struct above it)
 *   nullCount   of those, the ones without a value
 *   nanCount    NaN values of float/double columns (0 for every other kind)
 * min/max skip nulls and NaN, and are null when nothing is left. Order and text form
 * (text is what the catalog stores) are in stat-text.ts.
 *
 * Two ways to the same figures: `columnStatistics` walks the values, and
 * `writtenStatistics` gathers what our writer counted and bounded in its own pass over
 * them (each column chunk's exact, uncut bounds), so that indexing does not walk every
 * value a second time (issue 27). test/unit/parquet.statistics.test.ts holds both to a
 * naive model written from the definitions above.
 */
import { type Column, type ColumnType, leafCount, leaves, type ScalarKind, type ScalarType } from './schema.js';
import { compareBytes, compareFloats, statText } from './stat-text.js';
import { columnValues, prepare, type RowData } from './values.js';
import type { ChunkMeta } from './column-chunk.js';

export interface ColumnStatistics {
  /** Parquet path of the primitive column, joined with "." */
  column: string;
  valueCount: number;
  nullCount: number;
  nanCount: number;
  min: string | null;
  max: string | null;
}

type Compare = (a: never, b: never) => number;

class Accumulator {
  valueCount = 0;
  nullCount = 0;
  nanCount = 0;
  min: unknown = undefined;
  max: unknown = undefined;
  private readonly compare: (a: unknown, b: unknown) => number;
  private readonly floating: boolean;

  constructor(readonly column: string, readonly type: ScalarType) {
    this.compare = comparatorFor(type.kind) as (a: unknown, b: unknown) => number;
    this.floating = type.kind === 'float' || type.kind === 'double';
  }

  add(value: unknown): void {
    this.valueCount++;
    if (value === null) {
      this.nullCount++;
      return;
    }
    if (this.floating && Number.isNaN(value)) {
      this.nanCount++;
      return;
    }
    if (this.min === undefined) {
      this.min = value;
      this.max = value;
    } else if (this.compare(value, this.min) < 0) this.min = value;
    else if (this.compare(value, this.max) > 0) this.max = value;
  }

  /** A chunk's figures at once: its entries, nulls, NaNs and bounds (undefined when it has no value to bound). */
  addChunk(count: number, nulls: number, nans: number, min: unknown, max: unknown): void {
    this.valueCount += count;
    this.nullCount += nulls;
    this.nanCount += nans;
    if (min === undefined) return;
    if (this.min === undefined) {
      this.min = min;
      this.max = max;
      return;
    }
    if (this.compare(min, this.min) < 0) this.min = min;
    if (this.compare(max, this.max) > 0) this.max = max;
  }

  result(): ColumnStatistics {
    const has = this.min !== undefined;
    return {
      column: this.column,
      valueCount: this.valueCount,
      nullCount: this.nullCount,
      nanCount: this.nanCount,
      min: has ? statText(this.type, this.min) : null,
      max: has ? statText(this.type, this.max) : null,
    };
  }
}

function comparatorFor(kind: ScalarKind): Compare {
  switch (kind) {
    case 'int32':
    case 'date':
      return (a: number, b: number) => a - b;
    case 'int64':
    case 'timestamp':
    case 'decimal':
      return (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
    case 'float':
    case 'double':
      return compareFloats;
    case 'boolean':
      return (a: boolean, b: boolean) => Number(a) - Number(b);
    case 'string':
    case 'json':
    case 'binary':
      // unsigned byte order, which for UTF-8 is code point order (not JS's UTF-16 order)
      return compareBytes;
  }
}

/** Routes one value of a field to the accumulators of the leaves under it. */
type Feeder = (value: unknown) => void;

/**
 * The feeder of a value of `type` whose leaves' accumulators start at `accs[at]`, built
 * once per column: leaf counts and positions are worked out here, not per value.
 */
function feeder(type: ColumnType, accs: Accumulator[], at: number): Feeder {
  if (type.kind === 'list') {
    const element = feeder(type.element.type, accs, at);
    const width = leafCount(type.element);
    return (value) => {
      const list = value as unknown[] | null;
      if (list === null || list.length === 0) addNulls(accs, at, width);
      else for (const item of list) element(item);
    };
  }
  if (type.kind === 'struct') {
    const fields: { name: string; feed: Feeder }[] = [];
    let offset = at;
    for (const f of type.fields) {
      fields.push({ name: f.name, feed: feeder(f.type, accs, offset) });
      offset += leafCount(f);
    }
    const width = offset - at;
    return (value) => {
      if (value === null) {
        addNulls(accs, at, width);
        return;
      }
      const record = value as Record<string, unknown>;
      for (const f of fields) f.feed(record[f.name]);
    };
  }
  const acc = accs[at]!;
  return (value) => acc.add(value);
}

function addNulls(accs: Accumulator[], at: number, width: number): void {
  for (let i = at; i < at + width; i++) accs[i]!.add(null);
}


export function columnStatistics(columns: readonly Column[], data: RowData): ColumnStatistics[] {
  const prepared = prepare(columns, data);
  const accs = leaves(columns).map((leaf) => new Accumulator(leaf.path.join('.'), leaf.type));
  let at = 0;
  prepared.columns.forEach((column, c) => {
    const values = columnValues(prepared.arrays[c]!);
    if (column.type.kind === 'list' || column.type.kind === 'struct') {
      const feed = feeder(column.type, accs, at);
      for (const value of values) feed(value);
    } else {
      const acc = accs[at]!;
      for (const value of values) acc.add(value);
    }
    at += leafCount(column);
  });
  return accs.map((acc) => acc.result());
}

/** What the writer kept of one column chunk: its entries, nulls, NaNs and exact (uncut) bounds. */
export type WrittenChunk = Pick<ChunkMeta, 'count' | 'nulls' | 'nans' | 'min' | 'max'>;

/**
 * A file's statistics from its row groups' column chunks as the writer left them (one per
 * leaf, in leaf order): the figures `columnStatistics` takes from the same values. Bounds
 * are combined in the column's order, the earliest of equals kept, as the accumulator
 * does (a decimal the writer bounded as an INT32 number orders and prints as its bigint).
 */
export function writtenStatistics(columns: readonly Column[], rowGroups: readonly { chunks: readonly WrittenChunk[] }[]): ColumnStatistics[] {
  return leaves(columns).map((leaf, at) => {
    const acc = new Accumulator(leaf.path.join('.'), leaf.type);
    for (const group of rowGroups) {
      const chunk = group.chunks[at];
      if (!chunk) throw new Error(`a row group has no column chunk for leaf ${acc.column}`);
      acc.addChunk(chunk.count, chunk.nulls, chunk.nans, chunk.min, chunk.max);
    }
    return acc.result();
  });
}
