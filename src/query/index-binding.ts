/**
 * The WHERE tree (src/sql/where.ts) against a table's indexes: each condition on an
 * indexed column becomes probes of the indexes that can answer it (src/indexes/
 * candidates.ts). Pure.
 *
 *   MINMAX             =, IN, <, <=, >, >=, BETWEEN on any of its columns
 *   BLOOM / POSTINGS   = and IN; a composite key only inside an AND whose direct children
 *                      fix every one of its columns with = or IN
 * A condition several indexes answer becomes the AND of their probes (each is a superset
 * of the matching granules, so their intersection is too). A literal whose meaning for
 * the column is not certain (literals.ts) gives no probe.
 */
import type { ResolvedColumn } from '../indexes/columns.js';
import { encodeKey } from '../indexes/keys.js';
import type { IndexColumn, IndexDefinition } from '../indexes/definition.js';
import type { Bound, Probe, ProbeTree } from '../indexes/candidates.js';
import type { KeyValue } from '../indexes/columns.js';
import { literalKey } from './literals.js';
import type { Condition, Operand, PredicateTree } from '../sql/where.js';

export interface BindableIndex {
  definition: IndexDefinition;
  /** Its columns against the table's current schema. */
  columns: ResolvedColumn[];
}

/** A composite key's cross product of IN lists beyond this is not worth a probe. */
const maxKeys = 4096;

/** Whether the operand names the index column (names of columns and fields without regard to case, as DuckDB does). */
export function names(operand: Operand, column: IndexColumn, tableColumns: ReadonlySet<string>): boolean {
  if (operand.kind !== column.kind) return false;
  if (operand.kind === 'header') return column.kind === 'header' && column.name === operand.name;
  if (operand.kind === 'json') return column.kind === 'json' && operand.path.length === column.path.length && operand.path.every((name, i) => name === column.path[i]);
  if (column.kind !== 'column') return false;
  if (operand.qualifier !== undefined && tableColumns.has(operand.qualifier.toLowerCase())) return false;
  return operand.path.length === column.path.length && operand.path.every((name, i) => name.toLowerCase() === column.path[i]!.toLowerCase());
}

/** The key values an = or IN condition allows for the column, or undefined. */
function equalValues(condition: Condition, column: ResolvedColumn): KeyValue[] | undefined {
  const literals = condition.kind === 'in' ? condition.values : condition.kind === 'compare' && condition.op === '=' ? [condition.value] : undefined;
  if (!literals) return undefined;
  const values = literals.map((literal) => literalKey(column, literal));
  return values.every((v) => v !== undefined) ? (values as KeyValue[]) : undefined;
}

function rangeProbes(condition: Condition, column: ResolvedColumn, c: number): ProbeTree[] | undefined {
  if (condition.kind === 'null') return undefined;
  const probe = (low?: Bound, high?: Bound): Probe => ({ kind: 'range', column: c, keyType: column.keyType, ...(low ? { low } : {}), ...(high ? { high } : {}) });
  if (condition.kind === 'between') {
    const low = literalKey(column, condition.low);
    const high = literalKey(column, condition.high);
    return low === undefined || high === undefined ? undefined : [{ kind: 'probe', index: -1, probe: probe({ value: low, inclusive: true }, { value: high, inclusive: true }) }];
  }
  if (condition.kind === 'in') {
    const values = equalValues(condition, column);
    return values && [{ kind: 'or', items: values.map((value) => ({ kind: 'probe', index: -1, probe: probe({ value, inclusive: true }, { value, inclusive: true }) })) }];
  }
  const value = literalKey(column, condition.value);
  if (value === undefined) return undefined;
  switch (condition.op) {
    case '=':
      return [{ kind: 'probe', index: -1, probe: probe({ value, inclusive: true }, { value, inclusive: true }) }];
    case '<':
      return [{ kind: 'probe', index: -1, probe: probe(undefined, { value, inclusive: false }) }];
    case '<=':
      return [{ kind: 'probe', index: -1, probe: probe(undefined, { value, inclusive: true }) }];
    case '>':
      return [{ kind: 'probe', index: -1, probe: probe({ value, inclusive: false }) }];
    case '>=':
      return [{ kind: 'probe', index: -1, probe: probe({ value, inclusive: true }) }];
  }
}

/** Gives the probes of a sub-tree built for one index that index's position. */
function at(tree: ProbeTree, index: number): ProbeTree {
  if (tree.kind === 'probe') return { ...tree, index };
  if (tree.kind === 'any') return tree;
  return { kind: tree.kind, items: tree.items.map((item) => at(item, index)) };
}

function keysProbe(index: number, keys: Uint8Array[]): ProbeTree {
  return { kind: 'probe', index, probe: { kind: 'keys', keys } };
}

/** The probes every index gives one condition. */
export function conditionProbes(condition: Condition, indexes: readonly BindableIndex[], tableColumns: ReadonlySet<string>): ProbeTree[] {
  const out: ProbeTree[] = [];
  indexes.forEach((index, position) => {
    const { definition, columns } = index;
    if (definition.kind === 'minmax') {
      definition.columns.forEach((column, c) => {
        if (!names(condition.operand, column, tableColumns)) return;
        const probes = rangeProbes(condition, columns[c]!, c);
        if (probes) out.push(...probes.map((probe) => at(probe, position)));
      });
      return;
    }
    if (definition.columns.length !== 1 || !names(condition.operand, definition.columns[0]!, tableColumns)) return;
    const values = equalValues(condition, columns[0]!);
    if (values) out.push(keysProbe(position, values.map((value) => encodeKey([columns[0]!.keyType], [value]))));
  });
  return out;
}

/** Composite BLOOM/POSTINGS keys fixed by the direct children of an AND. */
function compositeProbes(children: readonly PredicateTree[], indexes: readonly BindableIndex[], tableColumns: ReadonlySet<string>): ProbeTree[] {
  const conditions = children.filter((child): child is Condition => child.kind === 'compare' || child.kind === 'in' || child.kind === 'between');
  const out: ProbeTree[] = [];
  indexes.forEach(({ definition, columns }, position) => {
    if (definition.kind === 'minmax' || definition.columns.length < 2) return;
    const perColumn: KeyValue[][] = [];
    for (const [c, column] of definition.columns.entries()) {
      const values = conditions.map((condition) => (names(condition.operand, column, tableColumns) ? equalValues(condition, columns[c]!) : undefined)).find((v) => v !== undefined);
      if (!values) return;
      perColumn.push(values);
    }
    if (perColumn.reduce((n, values) => n * values.length, 1) > maxKeys) return;
    let combinations: KeyValue[][] = [[]];
    for (const values of perColumn) combinations = combinations.flatMap((prefix) => values.map((value) => [...prefix, value]));
    const keyTypes = columns.map((column) => column.keyType);
    out.push(keysProbe(position, combinations.map((values) => encodeKey(keyTypes, values))));
  });
  return out;
}

/**
 * The probe tree of `tree` over `indexes` (positions in that array are the probes'
 * `index`). `tableColumns`: the table's top-level column names, lower case (a qualifier
 * that is also a column's name is not trusted to be a qualifier). `leaves`, when given,
 * gets each condition's own probes (sub-trees of the result), so that a read can weigh
 * them with the statistics condition by condition.
 */
export function bindIndexes(tree: PredicateTree, indexes: readonly BindableIndex[], tableColumns: ReadonlySet<string>, leaves?: Map<Condition, ProbeTree>): ProbeTree {
  switch (tree.kind) {
    case 'any':
      return tree;
    case 'or':
      return { kind: 'or', items: tree.items.map((item) => bindIndexes(item, indexes, tableColumns, leaves)) };
    case 'and':
      return {
        kind: 'and',
        items: [...tree.items.map((item) => bindIndexes(item, indexes, tableColumns, leaves)), ...compositeProbes(tree.items, indexes, tableColumns)],
      };
    default: {
      const probes = [...conditionProbes(tree, indexes, tableColumns), ...compositeProbes([tree], indexes, tableColumns)];
      const bound: ProbeTree = probes.length === 0 ? { kind: 'any' } : probes.length === 1 ? probes[0]! : { kind: 'and', items: probes };
      leaves?.set(tree, bound);
      return bound;
    }
  }
}
