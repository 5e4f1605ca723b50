/**
 * What `--plan` says the planner missed: a statistic or an index that a predicate of the
 * WHERE clause names but that prunes nothing with it, because the predicate is not a
 * form the tree reads (src/sql/where.ts: it became `any`), or because the index kind or
 * the literal cannot answer it (src/query/literals.ts). Pure; one line per miss.
 */
import type { IndexColumn } from '../indexes/definition.js';
import { conditionsOf, treeText, type Where } from '../sql/where.js';
import { conditionProbes, names, type BindableIndex } from './index-binding.js';
import { statisticColumns } from './literals.js';
import { statisticColumn, statisticDecides } from './prune.js';

/** The top-level name a SQL fragment must mention to mean the index column. */
function columnWord(column: IndexColumn): string {
  if (column.kind === 'json') return '_value';
  if (column.kind === 'header') return '_headers';
  return column.path[0]!.toLowerCase();
}

function indexLabel({ definition }: BindableIndex): string {
  return `index ${definition.name} (${definition.kind.toUpperCase()})`;
}

export function missedUses(where: Where, indexes: readonly BindableIndex[], tableColumns: ReadonlySet<string>): string[] {
  const lines: string[] = [];
  for (const unread of where.unread) {
    const mentioned = new Set(unread.names);
    const missers = [
      ...statisticColumns.filter((column) => mentioned.has(column)).map((column) => `the ${column} statistics`),
      ...indexes.filter((index) => index.definition.columns.some((column) => mentioned.has(columnWord(column)))).map(indexLabel),
    ];
    if (missers.length) lines.push(`\`${unread.text}\` is not a form the planner reads (see docs/querying.md#predicates-the-planner-reads): ${missers.join(', ')} could not use it`);
  }
  for (const condition of conditionsOf(where.tree)) {
    const text = treeText(condition);
    const column = statisticColumn(condition.operand, tableColumns);
    if (column !== undefined && statisticColumns.includes(column) && !statisticDecides(condition, tableColumns)) {
      lines.push(`\`${text}\`: its literal is not certain for the ${column} statistics, so they could not use it`);
    }
    for (const index of indexes) {
      const { definition } = index;
      const single = definition.kind === 'minmax' || definition.columns.length === 1;
      if (!single || !definition.columns.some((c) => names(condition.operand, c, tableColumns))) continue;
      if (conditionProbes(condition, [index], tableColumns).length === 0) {
        lines.push(`\`${text}\`: ${indexLabel(index)} does not answer this form or literal for its column, so it could not use it`);
      }
    }
  }
  return lines;
}
