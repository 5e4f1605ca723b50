/**
 * The WHERE clause as one AND/OR tree of simple conditions: what the planner prunes with,
 * against file and row-group statistics, index entries and the tail alike (src/query).
 * Pure: tokens in, a tree out. Conditions:
 *   `operand op literal` (op = < <= > >=, either side), `operand BETWEEN literal AND
 *   literal`, `operand IN (literal, …)`, `operand IS [NOT] NULL`.
 *
 * A row passes the WHERE only when the whole clause is TRUE; with AND and OR alone (no
 * NOT) that needs every child of an AND and one child of an OR TRUE. So a file or granule
 * can be left out when the tree says no row of it can make the clause TRUE. Anything that
 * is not certainly one of the forms above (NOT, a function of a column, a cast of a
 * column, an operator we do not read, CASE, a subquery) becomes `any`: it restricts
 * nothing, and an OR with such a child restricts nothing either. Each such part is kept
 * as `unread`, so that `--plan` can name what a statistic or an index missed.
 *
 * Literals, as users write them for a column's type: a number, a string, TRUE/FALSE,
 * TIMESTAMP/TIMESTAMPTZ/DATE 'text', a string or number cast with `::TYPE` or
 * `CAST(… AS TYPE)` to BLOB, VARCHAR, an integer type, TIMESTAMP, TIMESTAMPTZ or DATE,
 * and `encode('text')` (its UTF-8 bytes as a BLOB). A cast that could fail or round
 * (`'1.5'::INT`, `'x'::INT`, `TIMESTAMP_MS`, a length or precision) is not read.
 *
 * Operands, as DuckDB writes them over our views:
 *   column   `c`, `t.c` (t the table or its alias), a struct leaf `c.f.g` or `c['f']['g']`
 *   json     `_value->>'$.a.b'` or `_value->>'a'` (plain names only: what json-field.ts reads),
 *            first in the clause or right after `(` (DuckDB's arrows take everything before
 *            them as their left side; see Parser.whole)
 *   header   `list_filter(_headers, h -> h.key = 'NAME')[1].value`: the first header of
 *            that name, as the index takes it (a header's value is a BLOB)
 * What a literal means for a column's type is decided later, against the index's column
 * or the statistic (src/query/literals.ts); here it is only recognised.
 */
import { isSymbol, isWord, nameOf, whereClause, type Comparison, type Token } from './scan.js';

export type Literal =
  | { kind: 'number'; text: string }
  /** An untyped string literal: DuckDB casts it to the column's type. */
  | { kind: 'string'; text: string }
  /** `'…'::VARCHAR`, `CAST('…' AS VARCHAR)`: a typed string. */
  | { kind: 'varchar'; text: string }
  /** `'…'::BLOB`, `CAST('…' AS BLOB)`: DuckDB's cast of the text to bytes (\xNN escapes). */
  | { kind: 'blob'; text: string }
  /** `encode('…')`: the text's UTF-8 bytes. */
  | { kind: 'utf8'; text: string }
  | { kind: 'timestamp'; text: string }
  | { kind: 'timestamptz'; text: string }
  | { kind: 'date'; text: string }
  | { kind: 'boolean'; value: boolean };

export type Operand =
  /** `qualifier`: the table or alias name written before the path (`t.c`), if any. */
  | { kind: 'column'; path: string[]; qualifier?: string }
  | { kind: 'json'; path: string[] }
  | { kind: 'header'; name: string };

export type Condition =
  | { kind: 'compare'; operand: Operand; op: Comparison; value: Literal }
  | { kind: 'between'; operand: Operand; low: Literal; high: Literal }
  | { kind: 'in'; operand: Operand; values: Literal[] }
  | { kind: 'null'; operand: Operand; negated: boolean };

export type PredicateTree = { kind: 'any' } | { kind: 'and'; items: PredicateTree[] } | { kind: 'or'; items: PredicateTree[] } | Condition;

export const anyRow: PredicateTree = { kind: 'any' };

/** A part of the WHERE clause read as `any`: its text, and the names it mentions (lower case). */
export interface Unread {
  text: string;
  names: string[];
}

export interface Where {
  tree: PredicateTree;
  unread: Unread[];
}

/** The tree of the query's WHERE on the table named at tokens[at] (its only mention), and what of it was not read. */
export function readWhere(tokens: Token[], at: number): Where {
  const clause = whereClause(tokens, at);
  if (!clause || clause.where.length === 0) return { tree: anyRow, unread: [] };
  const unread: Unread[] = [];
  const tree = simplify(new Parser(clause.where, clause.qualifiers, unread).whole());
  return { tree, unread };
}

/** The tree alone (see readWhere). */
export function predicateTree(tokens: Token[], at: number): PredicateTree {
  return readWhere(tokens, at).tree;
}

/** Tokens as SQL text again (for messages; spacing is not the user's). */
export function sqlText(tokens: readonly Token[]): string {
  const text = tokens.map((token) =>
    token.kind === 'string' ? `'${token.text.replace(/'/g, "''")}'` : token.kind === 'word' && token.quoted ? `"${token.text.replace(/"/g, '""')}"` : token.text);
  return text.join(' ').replace(/ ?([.[\]()]|::) ?/g, '$1').replace(/([^\s(]) ?\(/g, '$1(').replace(/\( /g, '(');
}

function unreadOf(tokens: readonly Token[]): Unread {
  const names = new Set(tokens.flatMap((token) => (token.kind === 'word' ? [nameOf(token)!.toLowerCase()] : token.kind === 'string' ? [token.text.toLowerCase()] : [])));
  return { text: sqlText(tokens), names: [...names] };
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
  constructor(private readonly tokens: Token[], private readonly qualifiers: ReadonlySet<string>, private readonly unread: Unread[]) {}

  /**
   * The tree of all the tokens, or `any` when some are left over. Also `any` when an
   * arrow (`->>`, `->`) at this level is not one of the json operands read: DuckDB gives
   * arrows the lowest precedence on their left (`a AND _value->>'k' = 'x'` is
   * `(a AND _value)->>'k' = 'x'`), so such an arrow regroups everything before it.
   */
  whole(): PredicateTree {
    const mark = this.unread.length;
    const tree = this.expression();
    const none = (): PredicateTree => {
      this.unread.splice(mark, this.unread.length - mark, unreadOf(this.tokens));
      return anyRow;
    };
    if (this.at !== this.tokens.length) return none();
    let depth = 0;
    for (const [i, token] of this.tokens.entries()) {
      if (isSymbol(token, '(')) depth += 1;
      else if (isSymbol(token, ')')) depth -= 1;
      else if (depth === 0 && (isSymbol(token, '->>') || isSymbol(token, '->')) && !this.arrows.has(i)) return none();
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
        const tree = new Parser(this.tokens.slice(this.at + 1, close), this.qualifiers, this.unread).whole();
        this.at = close + 1;
        return tree;
      }
    } else {
      const condition = this.condition();
      if (condition && this.boundary(this.at)) return condition;
    }
    this.at = start;
    this.skipUnknown();
    this.unread.push(unreadOf(this.tokens.slice(start, this.at)));
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
      if (isWord(this.peek(), 'IS')) {
        const negated = isWord(this.peek(1), 'NOT');
        if (!isWord(this.peek(negated ? 2 : 1), 'NULL')) return undefined;
        this.at += negated ? 3 : 2;
        return { kind: 'null', operand, negated };
      }
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
        const values: Literal[] = [];
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

  /** A literal, cast or not, at the cursor; the cursor moves past it. */
  private literal(): Literal | undefined {
    const start = this.at;
    const found = this.castLiteral() ?? this.encoded() ?? this.plainLiteral();
    if (!found) {
      this.at = start;
      return undefined;
    }
    if (!isSymbol(this.peek(), '::')) return found;
    const type = this.typeName(1);
    const cast = type && castLiteral(found, type.name);
    if (!cast || isSymbol(this.peek(type.next), '::')) {
      this.at = start;
      return undefined;
    }
    this.at += type.next;
    return cast;
  }

  /** A type name at peek(offset): one word, or none when a length, precision or array follows. */
  private typeName(offset: number): { name: string; next: number } | undefined {
    const word = this.peek(offset);
    if (word?.kind !== 'word' || word.quoted || isSymbol(this.peek(offset + 1), '(') || isSymbol(this.peek(offset + 1), '[')) return undefined;
    return { name: word.text.toUpperCase(), next: offset + 1 };
  }

  /** `CAST(literal AS TYPE)`. */
  private castLiteral(): Literal | undefined {
    if (!isWord(this.peek(), 'CAST') || !isSymbol(this.peek(1), '(')) return undefined;
    const start = this.at;
    this.at += 2;
    const inner = this.plainLiteral();
    const type = inner && isWord(this.peek(), 'AS') ? this.typeName(1) : undefined;
    const cast = type && isSymbol(this.peek(type.next), ')') ? castLiteral(inner!, type.name) : undefined;
    if (!cast) {
      this.at = start;
      return undefined;
    }
    this.at += type!.next + 1;
    return cast;
  }

  /** `encode('text')`. */
  private encoded(): Literal | undefined {
    const text = this.peek(2);
    if (!isWord(this.peek(), 'ENCODE') || !isSymbol(this.peek(1), '(') || text?.kind !== 'string' || !isSymbol(this.peek(3), ')')) return undefined;
    return this.take(4, { kind: 'utf8', text: text.text });
  }

  private plainLiteral(): Literal | undefined {
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
    if (isWord(token, 'TIMESTAMPTZ') && next?.kind === 'string') return this.take(2, { kind: 'timestamptz', text: next.text });
    if (isWord(token, 'DATE') && next?.kind === 'string') return this.take(2, { kind: 'date', text: next.text });
    return undefined;
  }

  private take(n: number, literal: Literal): Literal {
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
    if (first?.kind !== 'word' || (!first.quoted && isWord(first, 'TIMESTAMP', 'TIMESTAMPTZ', 'DATE', 'NOT', 'NULL', 'TRUE', 'FALSE', 'INTERVAL', 'CASE', 'EXISTS', 'SELECT', 'CAST'))) return undefined;
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

const blobTypes = ['BLOB', 'BYTEA', 'BINARY', 'VARBINARY'];
const varcharTypes = ['VARCHAR', 'TEXT', 'STRING', 'CHAR', 'BPCHAR'];
const integerTypes = ['TINYINT', 'SMALLINT', 'INTEGER', 'INT', 'BIGINT', 'HUGEINT', 'INT1', 'INT2', 'INT4', 'INT8', 'SHORT', 'LONG', 'SIGNED', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT'];
const integerText = /^-?\d+$/;

/**
 * `literal::type` when the cast certainly yields that value: a string to BLOB, VARCHAR,
 * TIMESTAMP, TIMESTAMPTZ or DATE (checked against the column later), integer digits (a
 * number or a string) to an integer type. Anything else (a fraction to an integer rounds,
 * other types and sources): undefined.
 */
function castLiteral(literal: Literal, type: string): Literal | undefined {
  const text = literal.kind === 'string' ? literal.text : undefined;
  if (blobTypes.includes(type)) return text === undefined ? undefined : { kind: 'blob', text };
  if (varcharTypes.includes(type)) return text === undefined ? undefined : { kind: 'varchar', text };
  if (type === 'TIMESTAMP' || type === 'DATETIME') return text === undefined ? undefined : { kind: 'timestamp', text };
  if (type === 'TIMESTAMPTZ') return text === undefined ? undefined : { kind: 'timestamptz', text };
  if (type === 'DATE') return text === undefined ? undefined : { kind: 'date', text };
  if (integerTypes.includes(type)) {
    const digits = literal.kind === 'number' || literal.kind === 'string' ? literal.text : undefined;
    return digits !== undefined && integerText.test(digits) ? { kind: 'number', text: digits } : undefined;
  }
  return undefined;
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

function operandText(operand: Operand): string {
  if (operand.kind === 'json') return `_value->>'$.${operand.path.join('.')}'`;
  if (operand.kind === 'header') return `list_filter(_headers, h -> h.key = '${operand.name.replace(/'/g, "''")}')[1].value`;
  return [...(operand.qualifier === undefined ? [] : [operand.qualifier]), ...operand.path].join('.');
}

function literalText(literal: Literal): string {
  if (literal.kind === 'boolean') return literal.value ? 'TRUE' : 'FALSE';
  if (literal.kind === 'number') return literal.text;
  const quoted = `'${literal.text.replace(/'/g, "''")}'`;
  switch (literal.kind) {
    case 'string':
      return quoted;
    case 'utf8':
      return `encode(${quoted})`;
    case 'varchar':
    case 'blob':
      return `${quoted}::${literal.kind.toUpperCase()}`;
    default:
      return `${literal.kind.toUpperCase()} ${quoted}`;
  }
}

/** The tree as SQL (for `--plan`): what it read, in a form DuckDB reads the same way. */
export function treeText(tree: PredicateTree): string {
  switch (tree.kind) {
    case 'any':
      return 'TRUE';
    case 'and':
    case 'or':
      return tree.items.map((item) => (item.kind === 'or' || (item.kind === 'and' && tree.kind === 'or') ? `(${treeText(item)})` : treeText(item))).join(` ${tree.kind.toUpperCase()} `);
    case 'compare':
      return `${operandText(tree.operand)} ${tree.op} ${literalText(tree.value)}`;
    case 'between':
      return `${operandText(tree.operand)} BETWEEN ${literalText(tree.low)} AND ${literalText(tree.high)}`;
    case 'in':
      return `${operandText(tree.operand)} IN (${tree.values.map(literalText).join(', ')})`;
    case 'null':
      return `${operandText(tree.operand)} IS ${tree.negated ? 'NOT ' : ''}NULL`;
  }
}
