/**
 * CREATE INDEX and DROP INDEX against the catalog: the index is checked against the
 * table (its columns and their types, the kind's rules, the scope, the granule) before
 * anything is written, and every refusal says what was wrong and what to write instead.
 *
 * A new index's first state: `active` when no file of the table exists yet (an inline
 * index at table creation, or a table not indexed yet) — every file from now on carries
 * its entries, since it is inserted under the partition locks (src/catalog/indexes.ts);
 * `declared` otherwise, for the index backfill to drive through building, backfilling
 * and catching_up while the table stays readable and writable.
 */
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { liveFile } from './live-files.js';
import { findTable } from './tables.js';
import { type TableRecord } from '../table/record.js';
import { deleteIndex, findIndex, insertIndex, IndexCatalogError, type NewIndex } from './indexes.js';
import { currentSchema } from './schema-versions.js';
import { resolveIndexColumn } from '../indexes/columns.js';
import { defaultFalsePositiveRate, defaultPostingBuckets, IndexDefinitionError, indexColumnText, type IndexDefinition } from '../indexes/definition.js';
import type { IndexSpec } from '../indexes/ddl.js';
import type { Column } from '../parquet/schema.js';
import type { TableFormat } from '../table/settings.js';

/** An index granule is a run of whole row groups, at most this many. */
export const maxRowGroupsPerGranule = 100;

/** Checks `spec` against the table's columns; returns the index to insert (state left to the caller). */
export function checkIndexSpec(table: Pick<TableRecord, 'tableId' | 'name' | 'format' | 'settings'>, columns: readonly Column[], spec: IndexSpec): Omit<NewIndex, 'state'> {
  if (spec.scope !== 'history') {
    throw new IndexDefinitionError(
      `index ${spec.name}: SCOPE ${spec.scope.toUpperCase()} indexes the latest record per key, which needs a table that keeps current state; ` +
        `offsetlake's tables keep every retained record (append tables), so SCOPE HISTORY (the default) is the scope they have for now`,
    );
  }
  for (const column of spec.columns) resolveIndexColumn(columns, table.format as TableFormat, column, spec.kind);
  const rowGroupRows = table.settings.row_group_rows;
  const granuleRows = spec.granuleRows ?? rowGroupRows;
  if (granuleRows % rowGroupRows !== 0 || granuleRows / rowGroupRows > maxRowGroupsPerGranule) {
    throw new IndexDefinitionError(
      `index ${spec.name}: GRANULE ${granuleRows} is not a whole number of the table's row groups (row_group_rows ${rowGroupRows}) from 1 to ${maxRowGroupsPerGranule}: ` +
        `a read rebuilds whole row groups, so a smaller granule would skip nothing more; write GRANULE ${rowGroupRows} or a multiple of it up to ${rowGroupRows * maxRowGroupsPerGranule}`,
    );
  }
  return {
    tableId: table.tableId,
    name: spec.name,
    kind: spec.kind,
    columns: spec.columns,
    scope: spec.scope,
    granuleRows,
    falsePositiveRate: spec.kind === 'bloom' ? (spec.falsePositiveRate ?? defaultFalsePositiveRate) : null,
    postingBuckets: spec.kind === 'postings' ? defaultPostingBuckets : null,
  };
}

export interface CreatedIndex {
  index: IndexDefinition;
  /** False when IF NOT EXISTS found one of that name: nothing changed. */
  created: boolean;
  /** Live files that need entries from Kafka before the index is active. */
  filesToBackfill: number;
}

/** CREATE INDEX on `tableName`, in one transaction (with `client`, inside the caller's). */
export async function createIndexOn(client: CatalogClient, table: TableRecord, spec: IndexSpec, options: { ifNotExists?: boolean } = {}): Promise<CreatedIndex> {
  const existing = await findIndex(client, table.tableId, spec.name);
  if (existing && options.ifNotExists) return { index: existing, created: false, filesToBackfill: 0 };
  const { schema } = await currentSchema(client, table.tableId);
  let checked: Omit<NewIndex, 'state'>;
  try {
    checked = checkIndexSpec(table, schema.columns, spec);
  } catch (error) {
    if (error instanceof IndexDefinitionError && /has no column/.test(error.message) && table.format !== 'json' && table.format !== 'raw') {
      throw new IndexDefinitionError(`${error.message}; a ${table.format} table's decoded columns appear with the first records that name their schema: create the index once they are indexed`);
    }
    throw error;
  }
  const files = await client.query<{ n: bigint }>(`SELECT count(*) AS n FROM offsetlake.data_file f WHERE f.table_id = $1 AND ${liveFile('f')}`, [table.tableId]);
  const filesToBackfill = Number(files.rows[0]!.n);
  const index = await insertIndex(client, table.name, { ...checked, state: filesToBackfill === 0 ? 'active' : 'declared' });
  return { index, created: true, filesToBackfill };
}

export async function createIndex(catalog: Catalog, tableName: string, spec: IndexSpec, options: { ifNotExists?: boolean } = {}): Promise<CreatedIndex> {
  return inTransaction(catalog, async (client) => createIndexOn(client, await findTable(client, tableName), spec, options));
}

/** DROP INDEX: the definition and every entry of it. False when there was none and IF EXISTS was given. */
export async function dropIndex(catalog: Catalog, tableName: string, name: string, options: { ifExists?: boolean } = {}): Promise<boolean> {
  const table = await findTable(catalog, tableName);
  const dropped = await deleteIndex(catalog, table.tableId, name);
  if (!dropped && !options.ifExists) throw new IndexCatalogError(`table ${tableName} has no index called ${name} (DROP INDEX IF EXISTS ${name} ON ${tableName} accepts that)`);
  return dropped;
}

/** The index as the DDL writes it: what SHOW INDEXES prints. */
export function indexDdlText(table: string, index: IndexDefinition): string {
  const options = index.kind === 'bloom' && index.falsePositiveRate !== null ? ` WITH (false_positive_rate = ${index.falsePositiveRate})` : '';
  return `CREATE INDEX ${index.name} ON ${table} (${index.columns.map(indexColumnText).join(', ')}) USING ${index.kind.toUpperCase()} SCOPE ${index.scope.toUpperCase()} GRANULE ${index.granuleRows}${options}`;
}
