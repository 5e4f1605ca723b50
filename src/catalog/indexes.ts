/**
 * Secondary indexes in the catalog (migration 8): their definitions and their entries per
 * data file. An index entry never exists without its file (a foreign key, cascading),
 * and from `building` on no file is committed without its entries: the commit reads the
 * table's indexes after locking the partition row, and refuses a file that lacks an
 * index's entries (IndexesChangedError); the builder then builds again with them.
 * A state change that starts requiring entries takes the same partition locks, so no
 * commit that read the index list before it can land after it.
 */
import type { CatalogClient, Catalog } from './db.js';
import { liveFile } from './live-files.js';
import { statesWithEntries, type IndexColumn, type IndexDefinition, type IndexKind, type IndexScope, type IndexState, type EntryScope } from '../indexes/definition.js';
import type { IndexEntryRow } from '../indexes/entries.js';

interface IndexRow {
  index_id: bigint;
  table_id: bigint;
  index_name: string;
  kind: IndexKind;
  columns: IndexColumn[];
  scope: IndexScope;
  granule_rows: number;
  false_positive_rate: number | null;
  posting_buckets: number | null;
  state: IndexState;
}

export const indexColumnsSql = 'index_id, table_id, index_name, kind, columns, scope, granule_rows, false_positive_rate, posting_buckets, state';

export function toIndexDefinition(row: IndexRow): IndexDefinition {
  return {
    indexId: BigInt(row.index_id), tableId: BigInt(row.table_id), name: row.index_name, kind: row.kind, columns: row.columns, scope: row.scope,
    granuleRows: row.granule_rows, falsePositiveRate: row.false_positive_rate, postingBuckets: row.posting_buckets, state: row.state,
  };
}

/** The table's indexes (every state), by name. */
export async function tableIndexes(client: Catalog | CatalogClient, tableId: bigint): Promise<IndexDefinition[]> {
  const rows = await client.query<IndexRow>(`SELECT ${indexColumnsSql} FROM offsetlake.secondary_index WHERE table_id = $1 ORDER BY index_name`, [tableId]);
  return rows.rows.map(toIndexDefinition);
}

/** The indexes every new file of the table must carry entries for. */
export async function indexesWithEntries(client: Catalog | CatalogClient, tableId: bigint): Promise<IndexDefinition[]> {
  return (await tableIndexes(client, tableId)).filter((index) => statesWithEntries.includes(index.state));
}

/** A file's entries were built for another set of indexes than the table now has: build again. */
export class IndexesChangedError extends Error {
  override name = 'IndexesChangedError';
  constructor(readonly table: bigint, readonly missing: string[]) {
    super(`the table's indexes changed while its files were built (no entries for ${missing.join(', ')}): building them again`);
  }
}

/**
 * Checks, inside a commit, that the files carry entries for every index that needs them
 * (`covered`: the index ids the builder built entries for); returns the ids of the
 * table's indexes now, so that entries of an index dropped since the build are left out.
 */
export async function checkIndexCoverage(client: CatalogClient, tableId: bigint, covered: readonly bigint[]): Promise<Set<string>> {
  const indexes = await tableIndexes(client, tableId);
  const have = new Set(covered.map(String));
  const missing = indexes.filter((index) => statesWithEntries.includes(index.state) && !have.has(String(index.indexId)));
  if (missing.length > 0) throw new IndexesChangedError(tableId, missing.map((index) => index.name));
  return new Set(indexes.map((index) => String(index.indexId)));
}

export async function insertIndexEntries(client: Catalog | CatalogClient, dataFileId: bigint, entries: readonly IndexEntryRow[]): Promise<void> {
  if (entries.length === 0) return;
  await client.query(
    `INSERT INTO offsetlake.index_entry (index_id, scope, part, data_file_id, payload)
     SELECT i, s, p, $1, b FROM unnest($2::bigint[], $3::text[], $4::int[], $5::bytea[]) AS e(i, s, p, b)
     ON CONFLICT DO NOTHING`,
    [dataFileId, entries.map((e) => e.indexId), entries.map((e) => e.scope), entries.map((e) => e.part), entries.map((e) => Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.byteLength))],
  );
}

/** Every index entry the catalog keeps for one file (every index, scope and part), in that order. */
export async function fileIndexEntryRows(client: Catalog | CatalogClient, dataFileId: bigint): Promise<IndexEntryRow[]> {
  const rows = await client.query<{ index_id: bigint; scope: EntryScope; part: number; payload: Buffer }>(
    'SELECT index_id, scope, part, payload FROM offsetlake.index_entry WHERE data_file_id = $1 ORDER BY index_id, scope, part',
    [dataFileId],
  );
  return rows.rows.map((row) => ({ indexId: BigInt(row.index_id), scope: row.scope, part: row.part, payload: new Uint8Array(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength) }));
}

/** One part of an index's entries for the given files (all the index's files when `files` is omitted). */
export async function indexEntryParts(client: Catalog | CatalogClient, indexId: bigint, scope: EntryScope, part: number, files?: readonly bigint[]): Promise<Map<bigint, Uint8Array>> {
  const rows = await client.query<{ data_file_id: bigint; payload: Buffer }>(
    `SELECT data_file_id, payload FROM offsetlake.index_entry WHERE index_id = $1 AND scope = $2 AND part = $3${files ? ' AND data_file_id = ANY($4::bigint[])' : ''}`,
    files ? [indexId, scope, part, files] : [indexId, scope, part],
  );
  return new Map(rows.rows.map((row) => [BigInt(row.data_file_id), new Uint8Array(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength)]));
}

/** Several parts of an index's entries for the given files, in one read: by file, then by part. */
export async function indexEntryPartsOf(client: Catalog | CatalogClient, indexId: bigint, scope: EntryScope, parts: readonly number[], files: readonly bigint[]): Promise<Map<bigint, Map<number, Uint8Array>>> {
  const out = new Map<bigint, Map<number, Uint8Array>>();
  if (parts.length === 0 || files.length === 0) return out;
  const rows = await client.query<{ data_file_id: bigint; part: number; payload: Buffer }>(
    'SELECT data_file_id, part, payload FROM offsetlake.index_entry WHERE index_id = $1 AND scope = $2 AND part = ANY($3::int[]) AND data_file_id = ANY($4::bigint[])',
    [indexId, scope, parts, files],
  );
  for (const row of rows.rows) {
    const file = BigInt(row.data_file_id);
    if (!out.has(file)) out.set(file, new Map());
    out.get(file)!.set(row.part, new Uint8Array(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength));
  }
  return out;
}

export class IndexCatalogError extends Error {
  override name = 'IndexCatalogError';
}

export type NewIndex = Omit<IndexDefinition, 'indexId'>;

/** Adds an index definition; a taken name is refused with a sentence. */
export async function insertIndex(client: CatalogClient, tableName: string, index: NewIndex): Promise<IndexDefinition> {
  const taken = await client.query('SELECT 1 FROM offsetlake.secondary_index WHERE table_id = $1 AND index_name = $2', [index.tableId, index.name]);
  if (taken.rowCount) throw new IndexCatalogError(`table ${tableName} already has an index called ${index.name}: drop it first (DROP INDEX ${index.name} ON ${tableName}) or choose another name`);
  if (statesWithEntries.includes(index.state)) await lockPartitions(client, index.tableId);
  const row = await client.query<IndexRow>(
    `INSERT INTO offsetlake.secondary_index (table_id, index_name, kind, columns, scope, granule_rows, false_positive_rate, posting_buckets, state)
     VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9) RETURNING ${indexColumnsSql}`,
    [index.tableId, index.name, index.kind, JSON.stringify(index.columns), index.scope, index.granuleRows, index.falsePositiveRate, index.postingBuckets, index.state],
  );
  return toIndexDefinition(row.rows[0]!);
}

/**
 * Takes every partition row of the table FOR UPDATE: a commit in flight (which holds its
 * partition row) finishes first, and every later commit reads the index list after us.
 */
async function lockPartitions(client: CatalogClient, tableId: bigint): Promise<void> {
  await client.query('SELECT 1 FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id FOR UPDATE', [tableId]);
}

/**
 * Moves an index from `from` to `to`; false when it is no longer in `from` (another
 * driver moved it, or it was dropped). A move into a state with entries takes the
 * partition locks first (see the top of this file).
 */
export async function moveIndexState(client: CatalogClient, indexId: bigint, from: IndexState, to: IndexState): Promise<boolean> {
  const index = await client.query<{ table_id: bigint }>('SELECT table_id FROM offsetlake.secondary_index WHERE index_id = $1', [indexId]);
  if (!index.rowCount) return false;
  if (!statesWithEntries.includes(from) && statesWithEntries.includes(to)) await lockPartitions(client, BigInt(index.rows[0]!.table_id));
  const moved = await client.query(
    'UPDATE offsetlake.secondary_index SET state = $3, state_since = now(), last_error = NULL WHERE index_id = $1 AND state = $2',
    [indexId, from, to],
  );
  return (moved.rowCount ?? 0) > 0;
}

/** Removes an index and all its entries; false when the table has none of that name. */
export async function deleteIndex(client: Catalog | CatalogClient, tableId: bigint, name: string): Promise<boolean> {
  const deleted = await client.query('DELETE FROM offsetlake.secondary_index WHERE table_id = $1 AND index_name = $2', [tableId, name]);
  return (deleted.rowCount ?? 0) > 0;
}

export async function findIndex(client: Catalog | CatalogClient, tableId: bigint, name: string): Promise<IndexDefinition | undefined> {
  const rows = await client.query<IndexRow>(`SELECT ${indexColumnsSql} FROM offsetlake.secondary_index WHERE table_id = $1 AND index_name = $2`, [tableId, name]);
  return rows.rows[0] ? toIndexDefinition(rows.rows[0]) : undefined;
}

export async function indexById(client: Catalog | CatalogClient, indexId: bigint): Promise<IndexDefinition | undefined> {
  const rows = await client.query<IndexRow>(`SELECT ${indexColumnsSql} FROM offsetlake.secondary_index WHERE index_id = $1`, [indexId]);
  return rows.rows[0] ? toIndexDefinition(rows.rows[0]) : undefined;
}

/**
 * Live files of the index's table that have no entries of the index yet, oldest first;
 * `exceptSkipped`: not those its backfill gave up on (secondary_index.backfill_skipped).
 */
export async function filesWithoutEntries(client: Catalog | CatalogClient, index: Pick<IndexDefinition, 'indexId' | 'tableId'>, limit: number, options: { exceptSkipped?: boolean } = {}): Promise<bigint[]> {
  const rows = await client.query<{ data_file_id: bigint }>(
    `SELECT f.data_file_id FROM offsetlake.data_file f
     WHERE f.table_id = $1 AND ${liveFile('f')}
       AND NOT EXISTS (SELECT 1 FROM offsetlake.index_entry e WHERE e.index_id = $2 AND e.part = -1 AND e.data_file_id = f.data_file_id)
       ${options.exceptSkipped ? 'AND f.data_file_id <> ALL ((SELECT backfill_skipped FROM offsetlake.secondary_index WHERE index_id = $2)::bigint[])' : ''}
     ORDER BY f.data_file_id LIMIT $3`,
    [index.tableId, index.indexId, limit],
  );
  return rows.rows.map((row) => BigInt(row.data_file_id));
}

/** Live files of the table with entries of the index, and without. */
export async function indexCoverage(client: Catalog | CatalogClient, index: Pick<IndexDefinition, 'indexId' | 'tableId'>): Promise<{ withEntries: number; without: number }> {
  const rows = await client.query<{ with_entries: bigint; total: bigint }>(
    `SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM offsetlake.index_entry e WHERE e.index_id = $2 AND e.part = -1 AND e.data_file_id = f.data_file_id)) AS with_entries,
            count(*) AS total
     FROM offsetlake.data_file f WHERE f.table_id = $1 AND ${liveFile('f')}`,
    [index.tableId, index.indexId],
  );
  const withEntries = Number(rows.rows[0]!.with_entries);
  return { withEntries, without: Number(rows.rows[0]!.total) - withEntries };
}

/**
 * Adds one older file's entries (a backfill of the index), unless the file expired or
 * already has them; counts the progress. False when the file was not given entries.
 */
export async function addFileEntries(client: CatalogClient, indexId: bigint, dataFileId: bigint, entries: readonly IndexEntryRow[], progress: { granules: number; bytesRead: number }): Promise<boolean> {
  const live = await client.query(`SELECT 1 FROM offsetlake.data_file f WHERE f.data_file_id = $1 AND ${liveFile('f')} FOR KEY SHARE`, [dataFileId]);
  if (!live.rowCount) return false;
  const has = await client.query('SELECT 1 FROM offsetlake.index_entry WHERE index_id = $1 AND part = -1 AND data_file_id = $2', [indexId, dataFileId]);
  if (has.rowCount) return false;
  await insertIndexEntries(client, dataFileId, entries);
  await client.query(
    'UPDATE offsetlake.secondary_index SET files_done = files_done + 1, granules_done = granules_done + $2, bytes_read = bytes_read + $3 WHERE index_id = $1',
    [indexId, progress.granules, progress.bytesRead],
  );
  return true;
}

export async function setIndexBackfillTotal(client: Catalog | CatalogClient, indexId: bigint, filesTotal: number): Promise<void> {
  await client.query('UPDATE offsetlake.secondary_index SET files_total = $2 WHERE index_id = $1', [indexId, filesTotal]);
}

export async function setIndexError(client: Catalog | CatalogClient, indexId: bigint, error: string | null): Promise<void> {
  await client.query('UPDATE offsetlake.secondary_index SET last_error = $2 WHERE index_id = $1', [indexId, error]);
}

/** Counts reads that used the index to choose granules, and reads that could not use it. */
export async function countIndexReads(client: Catalog | CatalogClient, counts: ReadonlyMap<bigint, { used: number; skipped: number }>): Promise<void> {
  for (const [indexId, { used, skipped }] of counts) {
    if (used === 0 && skipped === 0) continue;
    await client.query('UPDATE offsetlake.secondary_index SET reads_used = reads_used + $2, reads_skipped = reads_skipped + $3 WHERE index_id = $1', [indexId, used, skipped]);
  }
}

/** What SHOW INDEXES, `status` and /metrics say of an index. */
export interface IndexReport extends IndexDefinition {
  table: string;
  stateSince: Date;
  filesDone: number;
  granulesDone: number;
  bytesRead: number;
  filesTotal: number;
  readsUsed: number;
  readsSkipped: number;
  lastError: string | null;
  /** Files its backfill could not give entries (they are read without the index). */
  filesSkipped: bigint[];
  /** The backfill driver holding its lease, while one does. */
  owner: string | null;
  leaseExpiresAt: Date | null;
  /** Bytes of its entries in the catalog, and how many entry rows. */
  entryBytes: number;
  entryRows: number;
  /** Live files with entries, and without. */
  filesWithEntries: number;
  filesWithout: number;
}

export async function indexReports(client: Catalog | CatalogClient, tableId?: bigint): Promise<IndexReport[]> {
  const rows = await client.query<IndexRow & {
    table_name: string; state_since: Date; files_done: bigint; granules_done: bigint; bytes_read: bigint; files_total: bigint;
    reads_used: bigint; reads_skipped: bigint; last_error: string | null; entry_bytes: bigint | null; entry_rows: bigint;
    backfill_skipped: bigint[]; backfill_owner: string | null; backfill_expires_at: Date | null;
  }>(
    `SELECT ${indexColumnsSql.split(', ').map((c) => `i.${c}`).join(', ')}, t.table_name, i.state_since, i.files_done, i.granules_done, i.bytes_read,
            i.files_total, i.reads_used, i.reads_skipped, i.last_error, i.backfill_skipped,
            CASE WHEN i.backfill_expires_at > now() THEN i.backfill_owner END AS backfill_owner,
            CASE WHEN i.backfill_expires_at > now() THEN i.backfill_expires_at END AS backfill_expires_at,
            (SELECT sum(length(e.payload)) FROM offsetlake.index_entry e WHERE e.index_id = i.index_id) AS entry_bytes,
            (SELECT count(*) FROM offsetlake.index_entry e WHERE e.index_id = i.index_id) AS entry_rows
     FROM offsetlake.secondary_index i JOIN offsetlake.lake_table t ON t.table_id = i.table_id
     WHERE t.dropped_at IS NULL ${tableId === undefined ? '' : 'AND i.table_id = $1'}
     ORDER BY t.table_name, i.index_name`,
    tableId === undefined ? [] : [tableId],
  );
  const out: IndexReport[] = [];
  for (const row of rows.rows) {
    const definition = toIndexDefinition(row);
    const coverage = await indexCoverage(client, definition);
    out.push({
      ...definition, table: row.table_name, stateSince: row.state_since,
      filesDone: Number(row.files_done), granulesDone: Number(row.granules_done), bytesRead: Number(row.bytes_read), filesTotal: Number(row.files_total),
      readsUsed: Number(row.reads_used), readsSkipped: Number(row.reads_skipped), lastError: row.last_error,
      filesSkipped: row.backfill_skipped.map(BigInt), owner: row.backfill_owner, leaseExpiresAt: row.backfill_expires_at,
      entryBytes: Number(row.entry_bytes ?? 0n), entryRows: Number(row.entry_rows),
      filesWithEntries: coverage.withEntries, filesWithout: coverage.without,
    });
  }
  return out;
}
