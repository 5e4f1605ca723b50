/**
 * The WHERE clause as an AND/OR tree of simple conditions that secondary indexes can
 * answer: `operand op literal` (op = < <= > >=, either side), `operand BETWEEN literal
 * AND literal`, `operand IN (literal, …)`. Pure: tokens in, a tree out.
 *
 * A row passes the WHERE only when the whole clause is TRUE; with AND and OR alone (no
 * NOT) that needs every child of an AND and one child of an OR TRUE. So a granule can be
 * left out when the tree says no row of it can make the clause TRUE. Anything that is not
 * certainly one of the forms above (NOT, IS NULL, a function of a column, a cast, an
 * operator we do not read, CASE, a subquery) becomes `any`: it restricts nothing, and
 * an OR with such a child restricts nothing either.
 *
 * Operands, as DuckDB writes them over our views:
 *   column   `c`, `t.c` (t the table or its alias), a struct leaf `c.f.g` or `c['f']['g']`
 *   json     `_value->>'$.a.b'` or `_value->>'a'` (plain names only: what json-field.ts reads),
 *            first in the clause or right after `(` (DuckDB's arrows take everything before
 *            them as their left side; see Parser.whole)
 *   header   `list_filter(_headers, h -> h.key = 'NAME')[1].value`: the first header of
 *            that name, as the index takes it (a header's value is a BLOB)
 * What a literal means for a column's type is decided later, against the index's column
 * (src/indexes/candidates.ts); here it is only recognised.
 */
import { isSymbol, isWord, nameOf, whereClause, type Comparison, type Token } from './sql-scan.js';

export type IndexLiteral =
  | { kind: 'number'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'timestamp'; text: string }
  | { kind: 'date'; text: string }
  | { kind: 'boolean'; value: boolean };

export type Operand =
  /** `qualifier`: the table or alias name written before the path (`t.c`), if any. */
  | { kind: 'column'; path: string[]; qualifier?: string }
  | { kind: 'json'; path: string[] }
  | { kind: 'header'; name: string };

export type Condition =
  | { kind: 'compare'; operand: Operand; op: Comparison; value: IndexLiteral }
  | { kind: 'between'; operand: Operand; low: IndexLiteral; high: IndexLiteral }
  | { kind: 'in'; operand: Operand; values: IndexLiteral[] };

export type PredicateTree = { kind: 'any' } | { kind: 'and'; items: PredicateTree[] } | { kind: 'or'; items: PredicateTree[] } | Condition;

export const anyRow: PredicateTree = { kind: 'any' };

/** The tree of the query's WHERE on the table named at tokens[at] (its only mention), or `any`. */
export function indexPredicates(tokens: Token[], at: number): PredicateTree {
  const clause = whereClause(tokens, at);
  if (!clause || clause.where.length === 0) return anyRow;
  return simplify(new Parser(clause.where, clause.qualifiers).whole());
}

/** Drops `any` from ANDs, makes an OR with an `any` child `any`, and flattens. */
export function simplify(tree: PredicateTree): PredicateTree {
  if (tree.kind !== 'and' && tree.kind !== 'or') return tree;
  const items: PredicateTree[] = [];
  for (const item of tree.items.map(simplify)) {
    if (item.kind === 'any') {
      if (tree.kind === 'or') return anyRow;
      continue;
    }
    if (item.kind === tree.kind) items.push(...item.items);
    else items.push(item);
  }
  if (items.length === 0) return anyRow;
  return items.length === 1 ? items[0]! : { kind: tree.kind, items };
}

const comparisons: readonly string[] = ['=', '<', '<=', '>', '>='];
const mirrored: Record<Comparison, Comparison> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
const plainName = /^[A-Za-z_][A-Za-z0-9_]*$/;

class Parser {
  at = 0;
  /** Where the `->>` of json operands read here are. */
  private readonly arrows = new Set<number>();
  constructor(private readonly tokens: Token[], private readonly qualifiers: ReadonlySet<string>) {}

  /**
   * The tree of all the tokens, or `any` when some are left over. Also `any` when an
   * arrow (`->>`, `->`) at this level is not one of the json operands read: DuckDB gives
   * arrows the lowest precedence on their left (`a AND _value->>'k' = 'x'` is
   * `(a AND _value)->>'k' = 'x'`), so such an arrow regroups everything before it.
   */
  whole(): PredicateTree {
    const tree = this.expression();
    if (this.at !== this.tokens.length) return anyRow;
    let depth = 0;
    for (const [i, token] of this.tokens.entries()) {
      if (isSymbol(token, '(')) depth += 1;
      else if (isSymbol(token, ')')) depth -= 1;
      else if (depth === 0 && (isSymbol(token, '->>') || isSymbol(token, '->')) && !this.arrows.has(i)) return anyRow;
    }
    return tree;
  }

  private peek(offset = 0): Token | undefined {
    return this.tokens[this.at + offset];
  }

  /** OR has the lowest precedence, then AND (NOT, comparisons and the rest bind tighter). */
  expression(): PredicateTree {
    const items = [this.conjunction()];
    while (isWord(this.peek(), 'OR')) {
      this.at += 1;
      items.push(this.conjunction());
    }
    return items.length === 1 ? items[0]! : { kind: 'or', items };
  }

  private conjunction(): PredicateTree {
    const items = [this.primary()];
    while (isWord(this.peek(), 'AND')) {
      this.at += 1;
      items.push(this.primary());
    }
    return items.length === 1 ? items[0]! : { kind: 'and', items };
  }

  /** Whether tokens[at] ends a primary: AND, OR, a closing parenthesis, or the end. */
  private boundary(at: number): boolean {
    const token = this.tokens[at];
    return token === undefined || isWord(token, 'AND', 'OR') || isSymbol(token, ')');
  }

  private primary(): PredicateTree {
    const start = this.at;
    if (isSymbol(this.peek(), '(')) {
      const close = this.matching(this.at);
      if (close !== undefined && this.boundary(close + 1)) {
        const tree = new Parser(this.tokens.slice(this.at + 1, close), this.qualifiers).whole();
        this.at = close + 1;
        return tree;
      }
    } else {
      const condition = this.condition();
      if (condition && this.boundary(this.at)) return condition;
    }
    this.at = start;
    this.skipUnknown();
    return anyRow;
  }

  /** Where the parenthesis opened at `open` closes. */
  private matching(open: number): number | undefined {
    let depth = 0;
    for (let i = open; i < this.tokens.length; i++) {
      if (isSymbol(this.tokens[i], '(')) depth += 1;
      else if (isSymbol(this.tokens[i], ')') && --depth === 0) return i;
    }
    return undefined;
  }

  /**
   * Skips an expression we do not read, up to the AND or OR that ends it at its own
   * level: parentheses and CASE … END nest, and the AND of a BETWEEN belongs to it.
   */
  private skipUnknown(): void {
    let depth = 0;
    let between = 0;
    for (; this.at < this.tokens.length; this.at++) {
      const token = this.tokens[this.at]!;
      if (isSymbol(token, '(') || isWord(token, 'CASE')) depth += 1;
      else if (isSymbol(token, ')') || isWord(token, 'END')) {
        if (depth === 0) return;
        depth -= 1;
      } else if (depth === 0 && isWord(token, 'BETWEEN')) between += 1;
      else if (depth === 0 && isWord(token, 'AND') && between > 0) between -= 1;
      else if (depth === 0 && isWord(token, 'AND', 'OR')) return;
    }
  }

  private condition(): Condition | undefined {
    const operand = this.operand();
    if (operand) {
      if (isWord(this.peek(), 'BETWEEN')) {
        this.at += 1;
        const low = this.literal();
        if (!low || !isWord(this.peek(), 'AND')) return undefined;
        this.at += 1;
        const high = this.literal();
        return high && { kind: 'between', operand, low, high };
      }
      if (isWord(this.peek(), 'IN') && isSymbol(this.peek(1), '(')) {
        this.at += 2;
        const values: IndexLiteral[] = [];
        for (;;) {
          const value = this.literal();
          if (!value) return undefined;
          values.push(value);
          if (isSymbol(this.peek(), ',')) this.at += 1;
          else if (isSymbol(this.peek(), ')')) break;
          else return undefined;
        }
        this.at += 1;
        return { kind: 'in', operand, values };
      }
      const op = this.comparison();
      const value = op && this.literal();
      return value && { kind: 'compare', operand, op: op!, value };
    }
    const value = this.literal();
    const op = value && this.comparison();
    const right = op && this.operand();
    return right ? { kind: 'compare', operand: right, op: mirrored[op!], value: value! } : undefined;
  }

  private comparison(): Comparison | undefined {
    const token = this.peek();
    if (token?.kind !== 'symbol' || !comparisons.includes(token.text)) return undefined;
    this.at += 1;
    return token.text as Comparison;
  }

  private literal(): IndexLiteral | undefined {
    const token = this.peek();
    const next = this.peek(1);
    if (isSymbol(token, '-') && next?.kind === 'number') {
      this.at += 2;
      return { kind: 'number', text: `-${next.text}` };
    }
    if (token?.kind === 'number') return this.take(1, { kind: 'number', text: token.text });
    if (token?.kind === 'string') return this.take(1, { kind: 'string', text: token.text });
    if (isWord(token, 'TRUE', 'FALSE')) return this.take(1, { kind: 'boolean', value: isWord(token, 'TRUE') });
    if (isWord(token, 'TIMESTAMP') && next?.kind === 'string') return this.take(2, { kind: 'timestamp', text: next.text });
    if (isWord(token, 'DATE') && next?.kind === 'string') return this.take(2, { kind: 'date', text: next.text });
    return undefined;
  }

  private take(n: number, literal: IndexLiteral): IndexLiteral {
    this.at += n;
    return literal;
  }

  /** A column, struct leaf, json field or header value at the cursor; the cursor moves past it. */
  private operand(): Operand | undefined {
    const start = this.at;
    const found = this.header() ?? this.columnOrJson();
    if (!found) this.at = start;
    return found;
  }

  private columnOrJson(): Operand | undefined {
    const first = this.peek();
    if (first?.kind !== 'word' || (!first.quoted && isWord(first, 'TIMESTAMP', 'DATE', 'NOT', 'NULL', 'TRUE', 'FALSE', 'INTERVAL', 'CASE', 'EXISTS', 'SELECT'))) return undefined;
    const path = [nameOf(first)!];
    this.at += 1;
    for (;;) {
      if (isSymbol(this.peek(), '.') && this.peek(1)?.kind === 'word') {
        path.push(nameOf(this.peek(1)!)!);
        this.at += 2;
      } else if (isSymbol(this.peek(), '[') && this.peek(1)?.kind === 'string' && isSymbol(this.peek(2), ']')) {
        path.push(this.peek(1)!.text);
        this.at += 3;
      } else break;
    }
    // A function call or anything else that goes on is not a plain column.
    if (isSymbol(this.peek(), '(')) return undefined;
    // `t.c`: t qualifies when it is the table or its alias. A name that could be both a
    // qualifier and a column is left to DuckDB's rules, which we do not repeat: the
    // binding refuses a qualifier that is also a column's name.
    const qualifier = path.length > 1 && this.qualifiers.has(path[0]!) ? path.shift() : undefined;
    if (isSymbol(this.peek(), '->>')) {
      const field = this.peek(1);
      if (path.length !== 1 || path[0] !== '_value' || qualifier !== undefined || field?.kind !== 'string') return undefined;
      // The arrow takes everything before it at its level as its left side: only `_value`
      // first in the clause or right after an opening parenthesis is `_value` alone.
      const start = this.at - 1;
      if (start !== 0 && !isSymbol(this.tokens[start - 1], '(')) return undefined;
      const jsonPath = jsonPathOf(field.text);
      if (!jsonPath) return undefined;
      this.arrows.add(this.at);
      this.at += 2;
      return { kind: 'json', path: jsonPath };
    }
    if (isSymbol(this.peek(), '->') || isSymbol(this.peek(), '::') || isSymbol(this.peek(), '[')) return undefined;
    return qualifier === undefined ? { kind: 'column', path } : { kind: 'column', path, qualifier };
  }

  /** `list_filter(_headers, h -> h.key = 'NAME')[1].value` exactly. */
  private header(): Operand | undefined {
    const t = (i: number) => this.peek(i);
    if (!isWord(t(0), 'LIST_FILTER') || !isSymbol(t(1), '(')) return undefined;
    let i = 2;
    if (this.qualifiers.has(nameOf(t(i)!) ?? '') && isSymbol(t(i + 1), '.')) i += 2;
    if (t(i)?.kind !== 'word' || nameOf(t(i)!) !== '_headers' || !isSymbol(t(i + 1), ',')) return undefined;
    const lambda = t(i + 2);
    if (lambda?.kind !== 'word' || lambda.quoted) return undefined;
    const variable = nameOf(lambda)!;
    if (variable === '_headers' || this.qualifiers.has(variable)) return undefined;
    const shape = [
      (x?: Token) => isSymbol(x, '->'),
      (x?: Token) => x?.kind === 'word' && nameOf(x) === variable,
      (x?: Token) => isSymbol(x, '.'),
      (x?: Token) => x?.kind === 'word' && nameOf(x) === 'key',
      (x?: Token) => isSymbol(x, '='),
      (x?: Token) => x?.kind === 'string',
      (x?: Token) => isSymbol(x, ')'),
      (x?: Token) => isSymbol(x, '['),
      (x?: Token) => x?.kind === 'number' && x.text === '1',
      (x?: Token) => isSymbol(x, ']'),
      (x?: Token) => isSymbol(x, '.'),
      (x?: Token) => x?.kind === 'word' && nameOf(x) === 'value',
    ];
    if (!shape.every((test, k) => test(t(i + 3 + k)))) return undefined;
    const name = t(i + 8)!.text;
    this.at += i + 3 + shape.length;
    return { kind: 'header', name };
  }
}

/**
 * The field path of `_value->>'…'` when it is one json-field.ts reads the same way:
 * `$.a.b` with plain names, or a bare plain name (DuckDB takes text not starting with
 * `$` or `/` as one key). Anything else (quotes, wildcards, array steps): undefined.
 */
export function jsonPathOf(text: string): string[] | undefined {
  if (plainName.test(text)) return [text];
  if (!text.startsWith('$.')) return undefined;
  const path = text.slice(2).split('.');
  return path.every((name) => plainName.test(name)) ? path : undefined;
}

/** Every condition of the tree. */
export function conditionsOf(tree: PredicateTree): Condition[] {
  if (tree.kind === 'any') return [];
  if (tree.kind === 'and' || tree.kind === 'or') return tree.items.flatMap(conditionsOf);
  return [tree];
}
