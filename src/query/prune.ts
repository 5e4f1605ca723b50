/**
 * Whether a file, a row group or a partition's unindexed tail may hold a row that makes
 * the WHERE tree (src/sql/where.ts) TRUE, from what the catalog and the footers know: its
 * partition, its offsets, the exact min/max of `_offset` and `_timestamp` (epoch
 * milliseconds), and the null counts of top-level columns. An AND may match when every
 * child may; an OR when one child may (so a file is skipped when every branch rules it
 * out); `any`, and a condition whose column or literal no statistic can decide
 * (src/query/literals.ts), may always match. Pruning never changes an answer: DuckDB
 * still applies the whole WHERE clause to every row it reads.
 */
import type { FileMetaData, SchemaElement } from 'hyparquet';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { Granule } from '../catalog/file-writes.js';
import { anyRow, simplify, type Condition, type Operand, type PredicateTree } from '../sql/where.js';
import { statisticColumns, statisticValue } from './literals.js';

/** Inclusive bounds of a column's values, where known. */
export type Bounds = Map<string, { min: bigint; max: bigint }>;
/** Null counts of top-level columns (lower-case names), where known. */
export type NullCounts = Map<string, bigint>;

/**
 * The column a statistic is kept for that the operand names (lower case), or undefined:
 * a top-level column, unqualified or qualified by the table or its alias, where the
 * qualifier is not also a column's name (then DuckDB's rules decide, which we do not
 * repeat). `tableColumns`: the table's top-level names, lower case.
 */
export function statisticColumn(operand: Operand, tableColumns?: ReadonlySet<string>): string | undefined {
  if (operand.kind !== 'column' || operand.path.length !== 1) return undefined;
  if (operand.qualifier !== undefined && tableColumns?.has(operand.qualifier.toLowerCase())) return undefined;
  return operand.path[0]!.toLowerCase();
}

export function mayHold(condition: Condition, bounds: Bounds, nulls: NullCounts | undefined, tableColumns?: ReadonlySet<string>): boolean {
  const column = statisticColumn(condition.operand, tableColumns);
  if (column === undefined) return true;
  if (condition.kind === 'null') {
    const count = nulls?.get(column);
    // IS NOT NULL could be ruled out only by a column all null: not worth knowing.
    return condition.negated || count === undefined || count > 0n;
  }
  const known = bounds.get(column);
  if (!known) return true;
  const { min, max } = known;
  const value = (literal: Parameters<typeof statisticValue>[1]) => statisticValue(column, literal);
  if (condition.kind === 'between') {
    const low = value(condition.low);
    const high = value(condition.high);
    return low === undefined || high === undefined || (max >= low && min <= high);
  }
  if (condition.kind === 'in') {
    const values = condition.values.map(value);
    return values.some((v) => v === undefined || (min <= v && v <= max));
  }
  const v = value(condition.value);
  if (v === undefined) return true;
  switch (condition.op) {
    case '=':
      return min <= v && v <= max;
    case '<':
      return min < v;
    case '<=':
      return min <= v;
    case '>':
      return max > v;
    case '>=':
      return max >= v;
  }
}

/**
 * Whether the tree may be TRUE when each condition may be as `leaf` says: AND needs every
 * child, OR one, `any` always may.
 */
export function mayBeTrue(tree: PredicateTree, leaf: (condition: Condition) => boolean): boolean {
  switch (tree.kind) {
    case 'any':
      return true;
    case 'and':
      return tree.items.every((item) => mayBeTrue(item, leaf));
    case 'or':
      return tree.items.some((item) => mayBeTrue(item, leaf));
    default:
      return leaf(tree);
  }
}

/** Whether some row within `bounds` (and `nulls`) may make the tree TRUE. */
export function mayMatch(bounds: Bounds, tree: PredicateTree, nulls?: NullCounts, tableColumns?: ReadonlySet<string>): boolean {
  return mayBeTrue(tree, (condition) => mayHold(condition, bounds, nulls, tableColumns));
}

/** Whether statistics can decide the condition: a statistic column with literals each reads, or IS NULL of a top-level column. */
export function statisticDecides(condition: Condition, tableColumns?: ReadonlySet<string>): boolean {
  const column = statisticColumn(condition.operand, tableColumns);
  if (column === undefined) return false;
  if (condition.kind === 'null') return !condition.negated;
  if (!statisticColumns.includes(column)) return false;
  const literals = condition.kind === 'in' ? condition.values : condition.kind === 'between' ? [condition.low, condition.high] : [condition.value];
  return literals.every((literal) => statisticValue(column, literal) !== undefined);
}

/** The tree with only what statistics decide (the rest `any`): what pruning by statistics uses, for the plan. */
export function statisticTree(tree: PredicateTree, tableColumns?: ReadonlySet<string>): PredicateTree {
  if (tree.kind === 'any') return tree;
  if (tree.kind === 'and' || tree.kind === 'or') return simplify({ kind: tree.kind, items: tree.items.map((item) => statisticTree(item, tableColumns)) });
  return statisticDecides(tree, tableColumns) ? tree : anyRow;
}

/** Whether the tree has an IS [NOT] NULL condition (only then are null counts worth reading). */
export function asksNulls(tree: PredicateTree): boolean {
  if (tree.kind === 'and' || tree.kind === 'or') return tree.items.some(asksNulls);
  return tree.kind === 'null';
}

/** What the catalog knows of a file's values. */
export function fileBounds(file: CatalogFile): Bounds {
  const bounds: Bounds = new Map([
    ['_partition', { min: BigInt(file.partition), max: BigInt(file.partition) }],
    ['_offset', { min: file.startOffset, max: file.endOffset - 1n }],
  ]);
  for (const column of file.columns) {
    if ((column.columnName === '_offset' || column.columnName === '_timestamp') && column.min !== null && column.max !== null) {
      bounds.set(column.columnName, { min: BigInt(column.min), max: BigInt(column.max) });
    }
  }
  return bounds;
}

/**
 * The unit of a footer leaf's epoch timestamps, where it is one the predicates' literals
 * (milliseconds) compare with: MILLIS, or MICROS (encoder v5 stores `_timestamp`, Kafka's
 * milliseconds, times 1000, so its bounds are whole milliseconds).
 */
function timestampUnit(element: SchemaElement): 'millis' | 'micros' | undefined {
  if (element.type !== 'INT64') return undefined;
  const logical = element.logical_type;
  const unit = logical ? (logical.type === 'TIMESTAMP' ? logical.unit : undefined) : element.converted_type === 'TIMESTAMP_MILLIS' ? 'MILLIS' : element.converted_type === 'TIMESTAMP_MICROS' ? 'MICROS' : undefined;
  return unit === 'MILLIS' ? 'millis' : unit === 'MICROS' ? 'micros' : undefined;
}

/** A statistics value as an integer (a timestamp in milliseconds), or undefined when it is not one we can compare exactly. */
function statisticInteger(value: unknown, unit: 'millis' | 'micros' | undefined): bigint | undefined {
  if (typeof value === 'bigint') return unit === 'micros' ? (value % 1000n === 0n ? value / 1000n : undefined) : value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return unit === 'micros' ? (value % 1000 === 0 ? BigInt(value / 1000) : undefined) : BigInt(value);
  // hyparquet turns TIMESTAMP statistics into Dates (micros divided by 1000, toward zero): exact for
  // milliseconds, and for `_timestamp` in micros, which is whole milliseconds by construction
  if (unit && value instanceof Date && !Number.isNaN(value.getTime())) return BigInt(value.getTime());
  return undefined;
}

/** The footer schema's top-level columns by name (a nested field of the same name is not one). */
function topLevelElements(schema: readonly SchemaElement[]): Map<string, SchemaElement> {
  const out = new Map<string, SchemaElement>();
  let at = 1;
  const skip = (): void => {
    const children = schema[at++]?.num_children ?? 0;
    for (let c = 0; c < children; c++) skip();
  };
  for (let c = 0; c < (schema[0]?.num_children ?? 0) && at < schema.length; c++) {
    out.set(schema[at]!.name, schema[at]!);
    skip();
  }
  return out;
}

/**
 * Null counts of the top-level columns of row group `rowGroup` (or, without one, of the
 * whole file: the sum over its row groups), from the footer's statistics; a column whose
 * count is missing in a row group it sums is left out.
 */
export function footerNulls(metadata: FileMetaData, rowGroup?: number): NullCounts {
  const sums = new Map<string, bigint | null>();
  const groups = rowGroup === undefined ? metadata.row_groups : metadata.row_groups.slice(rowGroup, rowGroup + 1);
  for (const group of groups) {
    for (const chunk of group.columns) {
      const meta = chunk.meta_data;
      if (meta?.path_in_schema.length !== 1) continue;
      const name = meta.path_in_schema[0]!.toLowerCase();
      const count = meta.statistics?.null_count;
      const before = sums.has(name) ? sums.get(name)! : 0n;
      sums.set(name, before === null || count === undefined || count === null ? null : before + BigInt(count));
    }
  }
  return new Map([...sums].filter((entry): entry is [string, bigint] => entry[1] !== null));
}

/**
 * What one row group of a file can hold, for the columns the predicates may name: the
 * file's partition; `_offset` and `_timestamp` from the row group's footer statistics
 * where they are present and exact, and `_offset` from the granule's offset span when
 * they are not. A column without a trustworthy bound is left out, so it keeps the row
 * group.
 */
export function rowGroupBounds(file: CatalogFile, metadata: FileMetaData, rowGroup: number, granule?: Granule): Bounds {
  const bounds: Bounds = new Map([['_partition', { min: BigInt(file.partition), max: BigInt(file.partition) }]]);
  if (granule) bounds.set('_offset', { min: granule.startOffset, max: granule.endOffset - 1n });
  const elements = topLevelElements(metadata.schema);
  for (const chunk of metadata.row_groups[rowGroup]?.columns ?? []) {
    const meta = chunk.meta_data;
    const name = meta?.path_in_schema.length === 1 ? meta.path_in_schema[0]! : undefined;
    if (name !== '_offset' && name !== '_timestamp') continue;
    const element = elements.get(name);
    const stats = meta?.statistics;
    if (!element || !stats || stats.is_min_value_exact === false || stats.is_max_value_exact === false) continue;
    const unit = name === '_timestamp' ? timestampUnit(element) : undefined;
    if (name === '_timestamp' && !unit) continue;
    if (name === '_offset' && element.type !== 'INT64') continue;
    const min = statisticInteger(stats.min_value, unit);
    const max = statisticInteger(stats.max_value, unit);
    if (min !== undefined && max !== undefined && min <= max) bounds.set(name, { min, max });
  }
  return bounds;
}
