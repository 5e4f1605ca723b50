/**
 * Just enough of SQL to plan a query, never to change it: its tokens, which catalog
 * tables it names, the columns it may read, and the WHERE clause of a plain query on one
 * table (read as a tree by where.ts). DuckDB parses and runs the statement itself;
 * anything unclear here reads as "every file, every column". Shared by src/query (the
 * planner) and src/indexes (the DDL).
 */

export type Token =
  | { kind: 'word'; text: string; quoted: boolean }
  | { kind: 'string'; text: string }
  | { kind: 'number'; text: string }
  | { kind: 'symbol'; text: string };

export type Comparison = '=' | '<' | '<=' | '>' | '>=';

export class SqlScanError extends Error {
  override name = 'SqlScanError';
}

const symbols = ['<=', '>=', '<>', '!=', '::', '||', '->>', '->'];

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i += 1;
    } else if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      if (end === -1) throw new SqlScanError('the SQL has a /* comment that is never closed');
      i = end + 2;
    } else if (c === "'" || c === '"') {
      let text = '';
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new SqlScanError(`the SQL has a ${c === "'" ? 'string' : 'quoted name'} that is never closed (from character ${i + 1})`);
        if (sql[j] === c) {
          if (sql[j + 1] === c) {
            text += c;
            j += 2;
            continue;
          }
          break;
        }
        text += sql[j];
        j += 1;
      }
      tokens.push(c === "'" ? { kind: 'string', text } : { kind: 'word', text, quoted: true });
      i = j + 1;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      const match = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(sql.slice(i))!;
      tokens.push({ kind: 'number', text: match[0] });
      i += match[0].length;
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      const match = /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/.exec(sql.slice(i))!;
      tokens.push({ kind: 'word', text: match[0], quoted: false });
      i += match[0].length;
    } else {
      const symbol = symbols.find((s) => sql.startsWith(s, i)) ?? c;
      tokens.push({ kind: 'symbol', text: symbol });
      i += symbol.length;
    }
  }
  return tokens;
}

export const isWord = (token: Token | undefined, ...words: string[]): boolean =>
  token?.kind === 'word' && !token.quoted && words.includes(token.text.toUpperCase());
export const isSymbol = (token: Token | undefined, text: string): boolean => token?.kind === 'symbol' && token.text === text;

/** A name as DuckDB resolves it: unquoted names are case-insensitive. */
export function nameOf(token: Token): string | undefined {
  if (token.kind !== 'word') return undefined;
  return token.quoted ? token.text : token.text.toLowerCase();
}

/** Where each catalog table is named (a word not called as a function nor qualified by a schema). */
export function tableReferences(tokens: Token[], tables: ReadonlySet<string>): Map<string, number[]> {
  const found = new Map<string, number[]>();
  tokens.forEach((token, i) => {
    const name = nameOf(token);
    if (name === undefined || !tables.has(name)) return;
    if (isSymbol(tokens[i + 1], '(') || isSymbol(tokens[i - 1], '.')) return;
    found.set(name, [...(found.get(name) ?? []), i]);
  });
  return found;
}

function depths(tokens: Token[]): number[] {
  let depth = 0;
  return tokens.map((token) => {
    if (isSymbol(token, ')')) depth -= 1;
    const at = depth;
    if (isSymbol(token, '(')) depth += 1;
    return at;
  });
}

const clauseEnds = ['GROUP', 'ORDER', 'LIMIT', 'HAVING', 'WINDOW', 'QUALIFY', 'OFFSET', 'UNION', 'INTERSECT', 'EXCEPT', 'USING', 'FETCH'];
const fromItemEnds = ['WHERE', ...clauseEnds];

/** The alias of a FROM item named at tokens[at] (where it is, if it has one), and the token after it. */
function aliasAfter(tokens: Token[], at: number): { at?: number; next: number } {
  let i = at + 1;
  if (isWord(tokens[i], 'AS')) i += 1;
  if (tokens[i]?.kind === 'word' && !isWord(tokens[i], ...fromItemEnds, 'AS', 'JOIN', 'ON', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS', 'NATURAL', 'ASOF', 'SEMI', 'ANTI', 'POSITIONAL', 'LATERAL')) return { at: i, next: i + 1 };
  return { next: at + 1 };
}

/** Words that make a statement read columns it does not name. */
const unnamedColumnWords = ['COLUMNS', 'NATURAL', 'EXCLUDE', 'REPLACE', 'RENAME', 'PIVOT', 'UNPIVOT', 'SUMMARIZE', 'DESCRIBE'];

/**
 * The columns (of `columns`, as the table names them) that a statement may read, or
 * null when it may read every column. A safe over-approximation: every column whose name
 * appears as a word or string anywhere in the statement (DuckDB matches names without
 * regard to case). Null whenever a column could be read without being named: the
 * statement is not a SELECT or WITH, a `*` other than `count(*)` or a multiplication,
 * `#n` positions, COLUMNS(), NATURAL joins, EXCLUDE/REPLACE/RENAME, PIVOT, a table or
 * its alias used as a value (a row as a struct), or column aliases given to a table.
 */
export function usedColumns(tokens: Token[], columns: readonly string[], tables: ReadonlySet<string>): Set<string> | null {
  if (!isWord(tokens[0], 'SELECT', 'WITH') && !isSymbol(tokens[0], '(')) return null;
  const byName = new Map(columns.map((column) => [column.toLowerCase(), column]));
  const named = (token: Token | undefined): string | undefined => (token?.kind === 'word' || token?.kind === 'string' ? byName.get(token.text.toLowerCase()) : undefined);
  // Where each table is named and its alias: a row of the table as a value reads every column.
  const rowNames = new Set<string>();
  const ownPositions = new Set<number>();
  for (const positions of tableReferences(tokens, tables).values()) {
    for (const at of positions) {
      rowNames.add(nameOf(tokens[at]!)!.toLowerCase());
      // Only a mention right after FROM or JOIN is the table as a FROM item (any other one, even `FROM a, t`, reads all).
      if (!isWord(tokens[at - 1], 'FROM', 'JOIN')) continue;
      ownPositions.add(at);
      const alias = aliasAfter(tokens, at);
      if (alias.at !== undefined) {
        rowNames.add(nameOf(tokens[alias.at]!)!.toLowerCase());
        ownPositions.add(alias.at);
      }
      if (isSymbol(tokens[alias.next], '(')) return null; // `t AS a(x, y)` renames columns by position
    }
  }
  const used = new Set<string>();
  for (const [i, token] of tokens.entries()) {
    if (isWord(token, ...unnamedColumnWords) || isSymbol(token, '#')) return null;
    if (isSymbol(token, '*')) {
      const countStar = isSymbol(tokens[i - 1], '(') && isWord(tokens[i - 2], 'COUNT') && isSymbol(tokens[i + 1], ')');
      const before = tokens[i - 1];
      const operand = (t: Token | undefined) => t?.kind === 'number' || isSymbol(t, ')') || named(t) !== undefined;
      const product = operand(before) && (operand(tokens[i + 1]) || isSymbol(tokens[i + 1], '('));
      if (!countStar && !product) return null;
      continue;
    }
    const column = named(token);
    if (column !== undefined) used.add(column);
    if (token.kind === 'word' && !ownPositions.has(i) && rowNames.has(token.text.toLowerCase()) && !isSymbol(tokens[i + 1], '.')) return null;
  }
  return used;
}

/**
 * The WHERE clause of a query on `table` (its tokens after WHERE, up to the clause's end)
 * and the names that qualify the table's columns, or undefined when the statement is not
 * a plain `SELECT … FROM <table> [[AS] alias] WHERE …` with the table alone in FROM. `at`
 * is where the table is named (it must be its only mention).
 */
export function whereClause(tokens: Token[], at: number): { where: Token[]; qualifiers: Set<string> } | undefined {
  const depth = depths(tokens);
  if (depth[at] !== 0 || !isWord(tokens[at - 1], 'FROM')) return undefined;
  const top = tokens.map((token, i) => ({ token, i })).filter(({ i }) => depth[i] === 0);
  if (top.some(({ token }) => isWord(token, 'UNION', 'INTERSECT', 'EXCEPT', 'WITH', 'JOIN', 'POSITIONAL', 'PIVOT', 'UNPIVOT') || isSymbol(token, ';'))) return undefined;
  // After the table: an optional alias, then WHERE (or nothing to prune with).
  const alias = aliasAfter(tokens, at);
  let i = alias.next;
  const qualifiers = new Set([nameOf(tokens[at]!)!]);
  if (alias.at !== undefined) qualifiers.add(nameOf(tokens[alias.at]!)!);
  if (!isWord(tokens[i], 'WHERE')) return undefined;
  const where: Token[] = [];
  for (i += 1; i < tokens.length; i += 1) {
    if (depth[i] === 0 && isWord(tokens[i], ...clauseEnds)) break;
    where.push(tokens[i]!);
  }
  return { where, qualifiers };
}
