/**
 * What a secondary index is (docs/design.md, "Secondary indexes"): a kind, the expressions it
 * indexes, a scope and a granule size. Pure: no I/O. The catalog keeps definitions in
 * `secondary_index` (migration 8), the DDL (src/indexes/ddl.ts) makes them, the builder
 * (src/indexes/entries.ts) takes keys with them, and the query matches predicates on them.
 *
 * An indexed expression names one value per row:
 *   column   a table column, or a nested leaf of a struct by path (`who.addr.city`);
 *            Kafka's own columns are table columns (`_key`, `_timestamp`, `_offset`, …)
 *   header   the value of a record's first header with that name (`_headers.trace_id`)
 *   json     a field of a `json` table's value by path (`_value.user.id`): the text that
 *            DuckDB's `_value->>'$.user.id'` gives, so its type is VARCHAR
 */

export type IndexKind = 'minmax' | 'bloom' | 'postings';
export type IndexScope = 'history' | 'current' | 'both';
/** The scope an entry is kept under: BOTH keeps both kinds of entries. */
export type EntryScope = 'history' | 'current';
export type IndexState = 'declared' | 'building' | 'backfilling' | 'catching_up' | 'active';

export const indexKinds: readonly IndexKind[] = ['minmax', 'bloom', 'postings'];
/** States in which every file committed must carry the index's entries. */
export const statesWithEntries: readonly IndexState[] = ['building', 'backfilling', 'catching_up', 'active'];

export type IndexColumn =
  | { kind: 'column'; path: string[] }
  | { kind: 'header'; name: string }
  | { kind: 'json'; path: string[] };

export interface IndexDefinition {
  indexId: bigint;
  tableId: bigint;
  name: string;
  kind: IndexKind;
  columns: IndexColumn[];
  scope: IndexScope;
  /** Rows per index granule: a multiple of the table's row_group_rows. */
  granuleRows: number;
  /** BLOOM only: the false-positive rate each granule's filter is sized for. */
  falsePositiveRate: number | null;
  /** POSTINGS only: how many hash buckets a file's postings are split into. */
  postingBuckets: number | null;
  state: IndexState;
}

/** BLOOM's false-positive rate when the DDL does not give one. */
export const defaultFalsePositiveRate = 0.01;
/** POSTINGS' bucket count: a lookup reads 1/256 of each file's postings. */
export const defaultPostingBuckets = 256;

/** The scopes entries are kept under for an index of `scope`. */
export function entryScopes(scope: IndexScope): EntryScope[] {
  return scope === 'both' ? ['history', 'current'] : [scope];
}

export class IndexDefinitionError extends Error {
  override name = 'IndexDefinitionError';
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * An index column as the DDL writes it: `a`, `a.b.c` (a nested leaf), `_headers.NAME`
 * (a header's value), `_value.a.b` (a field of a json table's value). Segments are plain
 * identifiers, or "double quoted" for any other name.
 */
export function parseIndexColumn(text: string): IndexColumn {
  const segments = splitPath(text.trim());
  if (segments.length === 0) throw new IndexDefinitionError(`index column "${text}" is empty: name a column, a nested field (a.b), a header (_headers.NAME) or a json field (_value.a.b)`);
  if (segments[0] === '_headers') {
    if (segments.length !== 2) throw new IndexDefinitionError(`index column "${text}": a header is named as _headers.NAME (one name; quote it if it has dots: _headers."a.b")`);
    return { kind: 'header', name: segments[1]! };
  }
  if (segments[0] === '_value' && segments.length > 1) return { kind: 'json', path: segments.slice(1) };
  return { kind: 'column', path: segments };
}

function splitPath(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      let name = '';
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new IndexDefinitionError(`index column ${text}: a quoted name is never closed`);
        if (text[j] === '"') {
          if (text[j + 1] === '"') {
            name += '"';
            j += 2;
            continue;
          }
          break;
        }
        name += text[j++];
      }
      out.push(name);
      i = j + 1;
    } else {
      const dot = text.indexOf('.', i);
      const name = text.slice(i, dot === -1 ? text.length : dot);
      if (!identifier.test(name)) throw new IndexDefinitionError(`index column ${text}: "${name}" is not a name (letters, digits and _, or "quoted")`);
      out.push(name);
      i = dot === -1 ? text.length : dot;
    }
    if (i < text.length) {
      if (text[i] !== '.') throw new IndexDefinitionError(`index column ${text}: expected a dot after "${out.at(-1)}"`);
      if (i === text.length - 1) throw new IndexDefinitionError(`index column ${text} ends with a dot`);
      i += 1;
    }
  }
  return out;
}

function quoted(segment: string): string {
  return identifier.test(segment) ? segment : `"${segment.replace(/"/g, '""')}"`;
}

/** The column as the DDL and SHOW INDEXES write it. */
export function indexColumnText(column: IndexColumn): string {
  switch (column.kind) {
    case 'column':
      return column.path.map(quoted).join('.');
    case 'header':
      return `_headers.${quoted(column.name)}`;
    case 'json':
      return ['_value', ...column.path].map(quoted).join('.');
  }
}
