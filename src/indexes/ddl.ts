/**
 * The index DDL of the specification (docs/design.md, "Secondary indexes"), parsed. Pure.
 *
 *   CREATE INDEX [IF NOT EXISTS] <index> ON <table> (<column>, …)
 *     USING MINMAX | BLOOM | POSTINGS [SCOPE CURRENT | HISTORY | BOTH] [GRANULE <rows>]
 *     [WITH (false_positive_rate = <p>)]                         -- BLOOM only
 *   DROP INDEX [IF EXISTS] <index> ON <table>
 *   SHOW INDEXES [ON <table>]
 *
 * and the inline form of `table create --index`: `<index> (<column>, …) USING … [SCOPE …]
 * [GRANULE …] [WITH (…)]`. Keywords are case-insensitive; names are identifiers or
 * "double quoted". A trailing semicolon is allowed. Columns are as parseIndexColumn reads
 * them. Whether the columns exist and accept the kind is checked against the table
 * (resolveIndexColumn), not here.
 */
import { tokenize, SqlScanError, type Token } from '../sql/scan.js';
import { IndexDefinitionError, indexKinds, parseIndexColumn, type IndexColumn, type IndexKind, type IndexScope } from './definition.js';

const indexNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;

/** What CREATE INDEX (or an inline index) asks for. */
export interface IndexSpec {
  name: string;
  columns: IndexColumn[];
  kind: IndexKind;
  scope: IndexScope;
  /** null: the table's row_group_rows. */
  granuleRows: number | null;
  /** null: the default (1 %). */
  falsePositiveRate: number | null;
}

export type IndexStatement =
  | { kind: 'create'; table: string; ifNotExists: boolean; index: IndexSpec }
  | { kind: 'drop'; table: string; name: string; ifExists: boolean }
  | { kind: 'show'; table: string | null };

const grammar = {
  create: 'CREATE INDEX [IF NOT EXISTS] <index> ON <table> (<column>, …) USING MINMAX | BLOOM | POSTINGS [SCOPE CURRENT | HISTORY | BOTH] [GRANULE <rows>] [WITH (false_positive_rate = <p>)]',
  drop: 'DROP INDEX [IF EXISTS] <index> ON <table>',
  show: 'SHOW INDEXES [ON <table>]',
  inline: '<index> (<column>, …) USING MINMAX | BLOOM | POSTINGS [SCOPE CURRENT | HISTORY | BOTH] [GRANULE <rows>] [WITH (false_positive_rate = <p>)]',
};

export class IndexDdlError extends Error {
  override name = 'IndexDdlError';
}

class Tokens {
  private at = 0;
  constructor(private readonly tokens: Token[], private readonly form: string) {}

  fail(what: string): never {
    const next = this.tokens[this.at];
    throw new IndexDdlError(`${what}${next ? `, found "${next.text}"` : ', found the end of the statement'}; the form is ${this.form}`);
  }

  peekWord(...words: string[]): boolean {
    const next = this.tokens[this.at];
    return next?.kind === 'word' && !next.quoted && words.includes(next.text.toUpperCase());
  }

  peekSymbol(symbol: string): boolean {
    const next = this.tokens[this.at];
    return next?.kind === 'symbol' && next.text === symbol;
  }

  word(...words: string[]): string {
    if (!this.peekWord(...words)) this.fail(`expected ${words.join(' or ')}`);
    return this.tokens[this.at++]!.text.toUpperCase();
  }

  optionalWord(word: string): boolean {
    if (!this.peekWord(word)) return false;
    this.at++;
    return true;
  }

  symbol(symbol: string): void {
    if (!this.peekSymbol(symbol)) this.fail(`expected "${symbol}"`);
    this.at++;
  }

  name(what: string): string {
    const next = this.tokens[this.at];
    if (next?.kind !== 'word') this.fail(`expected the ${what}'s name`);
    this.at++;
    // an index's name is stored and printed: the rules of table names (no empty, huge or
    // control-character names reach the catalog or a terminal)
    if (what === 'index' && !indexNamePattern.test(next.text)) {
      const shown = JSON.stringify(next.text.length > 40 ? `${next.text.slice(0, 40)}…` : next.text).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      throw new IndexDdlError(`index name ${shown} must start with a lowercase letter or _, then lowercase letters, digits or _ (at most 63), as table names do`);
    }
    return next.text;
  }

  number(what: string): string {
    const next = this.tokens[this.at];
    if (next?.kind !== 'number') this.fail(`expected ${what}`);
    this.at++;
    return next.text;
  }

  /** One index column: names joined by dots, as written. */
  column(): IndexColumn {
    const parts: string[] = [];
    for (;;) {
      const next = this.tokens[this.at];
      if (next?.kind !== 'word') this.fail('expected a column');
      parts.push(next.quoted ? `"${next.text.replace(/"/g, '""')}"` : next.text);
      this.at++;
      if (!this.peekSymbol('.')) break;
      this.at++;
    }
    try {
      return parseIndexColumn(parts.join('.'));
    } catch (error) {
      if (error instanceof IndexDefinitionError) throw new IndexDdlError(error.message);
      throw error;
    }
  }

  end(): void {
    if (this.peekSymbol(';')) this.at++;
    if (this.at < this.tokens.length) this.fail('expected the end of the statement');
  }
}

function tokensOf(text: string, form: string): Tokens {
  try {
    return new Tokens(tokenize(text), form);
  } catch (error) {
    if (error instanceof SqlScanError) throw new IndexDdlError(`${error.message}; the form is ${form}`);
    throw error;
  }
}

/** `<index> (<column>, …) USING … [SCOPE …] [GRANULE …] [WITH (…)]`, from `t` on. */
function indexSpec(t: Tokens, name: string): IndexSpec {
  t.symbol('(');
  const columns: IndexColumn[] = [t.column()];
  while (t.peekSymbol(',')) {
    t.symbol(',');
    columns.push(t.column());
  }
  t.symbol(')');
  const seen = new Set<string>();
  for (const column of columns) {
    const key = JSON.stringify(column);
    if (seen.has(key)) throw new IndexDdlError(`index ${name} names a column twice; each column of an index is named once`);
    seen.add(key);
  }
  t.word('USING');
  const kind = t.word(...indexKinds.map((k) => k.toUpperCase())).toLowerCase() as IndexKind;
  let scope: IndexScope = 'history';
  let granuleRows: number | null = null;
  let falsePositiveRate: number | null = null;
  for (;;) {
    if (t.optionalWord('SCOPE')) {
      scope = t.word('CURRENT', 'HISTORY', 'BOTH').toLowerCase() as IndexScope;
    } else if (t.optionalWord('GRANULE')) {
      const text = t.number('a number of rows after GRANULE');
      const rows = Number(text);
      if (!Number.isSafeInteger(rows) || rows < 1) throw new IndexDdlError(`GRANULE ${text} is not a whole number of rows above 0`);
      granuleRows = rows;
    } else if (t.optionalWord('WITH')) {
      t.symbol('(');
      const option = t.name('option').toLowerCase();
      if (option !== 'false_positive_rate') throw new IndexDdlError(`index option ${option} is not known; the one option is false_positive_rate (BLOOM)`);
      t.symbol('=');
      const text = t.number('a rate between 0 and 1, such as 0.01');
      const rate = Number(text);
      if (!(rate > 0 && rate < 1)) throw new IndexDdlError(`false_positive_rate = ${text} is not a rate above 0 and below 1 (0.01 is 1 %)`);
      if (kind !== 'bloom') throw new IndexDdlError(`false_positive_rate is an option of BLOOM indexes; ${kind.toUpperCase()} ${kind === 'postings' ? 'is exact' : 'has no false positives to size'}`);
      falsePositiveRate = rate;
      t.symbol(')');
    } else {
      break;
    }
  }
  return { name, columns, kind, scope, granuleRows, falsePositiveRate };
}

/** One index statement. Anything else is refused with the forms this accepts. */
export function parseIndexStatement(sql: string): IndexStatement {
  const forms = `${grammar.create}; ${grammar.drop}; ${grammar.show}`;
  const t = tokensOf(sql, forms);
  const verb = t.word('CREATE', 'DROP', 'SHOW');
  if (verb === 'SHOW') {
    t.word('INDEXES', 'INDEX');
    const table = t.optionalWord('ON') || t.optionalWord('FROM') ? t.name('table') : null;
    t.end();
    return { kind: 'show', table };
  }
  if (verb === 'DROP') {
    const d = tokensOf(sql, grammar.drop);
    d.word('DROP');
    d.word('INDEX');
    const ifExists = d.optionalWord('IF') ? (d.word('EXISTS'), true) : false;
    const name = d.name('index');
    d.word('ON');
    const table = d.name('table');
    d.end();
    return { kind: 'drop', table, name, ifExists };
  }
  const c = tokensOf(sql, grammar.create);
  c.word('CREATE');
  c.word('INDEX');
  const ifNotExists = c.optionalWord('IF') ? (c.word('NOT'), c.word('EXISTS'), true) : false;
  const name = c.name('index');
  c.word('ON');
  const table = c.name('table');
  const index = indexSpec(c, name);
  c.end();
  return { kind: 'create', table, ifNotExists, index };
}

/** The inline form of `table create --index "…"`. */
export function parseInlineIndex(text: string): IndexSpec {
  const t = tokensOf(text, grammar.inline);
  const name = t.name('index');
  const index = indexSpec(t, name);
  t.end();
  return index;
}
