/**
 * Who drives an index's backfill (src/index-backfill): a lease on its `secondary_index`
 * row (backfill_owner, backfill_expires_at, Postgres's clock), so one driver works at a
 * time and a crashed one is replaced once its lease lapses. Every write of a driver runs
 * in a transaction that first takes the row FOR NO KEY UPDATE and checks the lease is
 * still its own: two drivers never both count a file, and a driver whose lease was taken
 * over commits nothing. FOR NO KEY UPDATE, not FOR UPDATE: live commits inserting this
 * index's entries take FOR KEY SHARE on the row (their foreign key), which it leaves free,
 * so live indexing never waits for a backfill.
 */
import type { Catalog, CatalogClient } from './db.js';
import type { IndexState } from '../indexes/definition.js';

export interface IndexBackfillLease {
  indexId: bigint;
  owner: string;
  ttlMs: number;
}

export type LeaseClaim =
  | { claimed: true; state: IndexState }
  /** Another live driver holds it (`holder`), or the index is gone (`state` null). */
  | { claimed: false; state: IndexState | null; holder: string | null; expiresAt: Date | null };

const ttl = 'make_interval(secs => $3::double precision / 1000)';

/** Takes the lease if it is free, lapsed or ours (then renews it). */
export async function claimIndexBackfill(catalog: Catalog | CatalogClient, lease: IndexBackfillLease): Promise<LeaseClaim> {
  const taken = await catalog.query<{ state: IndexState }>(
    `UPDATE offsetlake.secondary_index SET backfill_owner = $2, backfill_expires_at = now() + ${ttl}
     WHERE index_id = $1 AND (backfill_owner IS NULL OR backfill_owner = $2 OR backfill_expires_at <= now())
     RETURNING state`,
    [lease.indexId, lease.owner, lease.ttlMs],
  );
  if (taken.rowCount) return { claimed: true, state: taken.rows[0]!.state };
  const held = await catalog.query<{ state: IndexState; backfill_owner: string | null; backfill_expires_at: Date | null }>(
    'SELECT state, backfill_owner, backfill_expires_at FROM offsetlake.secondary_index WHERE index_id = $1',
    [lease.indexId],
  );
  const row = held.rows[0];
  return { claimed: false, state: row?.state ?? null, holder: row?.backfill_owner ?? null, expiresAt: row?.backfill_expires_at ?? null };
}

/** Gives the lease back (the next driver need not wait for it to lapse). */
export async function releaseIndexBackfill(catalog: Catalog | CatalogClient, lease: IndexBackfillLease): Promise<void> {
  await catalog.query('UPDATE offsetlake.secondary_index SET backfill_owner = NULL, backfill_expires_at = NULL WHERE index_id = $1 AND backfill_owner = $2', [lease.indexId, lease.owner]);
}

export class IndexBackfillLeaseLostError extends Error {
  override name = 'IndexBackfillLeaseLostError';
  constructor(readonly indexId: bigint, owner: string) {
    super(`index ${indexId}: the backfill lease of ${owner} lapsed or was taken over; nothing of this step was committed (the next step claims it again)`);
  }
}

/**
 * Inside a transaction: locks the index row and checks the lease is `lease`'s and live
 * (renewing it). Returns the index's state; undefined when the index is gone (dropped).
 */
export async function lockOwnedIndex(client: CatalogClient, lease: IndexBackfillLease): Promise<IndexState | undefined> {
  const row = await client.query<{ state: IndexState; mine: boolean }>(
    `SELECT state, backfill_owner = $2 AND backfill_expires_at > now() AS mine FROM offsetlake.secondary_index WHERE index_id = $1 FOR NO KEY UPDATE`,
    [lease.indexId, lease.owner],
  );
  if (!row.rowCount) return undefined;
  if (!row.rows[0]!.mine) throw new IndexBackfillLeaseLostError(lease.indexId, lease.owner);
  await client.query(`UPDATE offsetlake.secondary_index SET backfill_expires_at = now() + ${ttl} WHERE index_id = $1 AND backfill_owner = $2`, [lease.indexId, lease.owner, lease.ttlMs]);
  return row.rows[0]!.state;
}

/** Files the backfill gave up on: kept out of its cursor, and counted. */
export async function skipBackfillFiles(client: CatalogClient, indexId: bigint, files: readonly bigint[]): Promise<void> {
  if (files.length === 0) return;
  await client.query(
    `UPDATE offsetlake.secondary_index SET backfill_skipped = ARRAY(SELECT DISTINCT unnest(backfill_skipped || $2::bigint[]) ORDER BY 1) WHERE index_id = $1`,
    [indexId, files],
  );
}

/** Indexes whose backfill is not finished (every table's): what a driver looks for. */
export async function unfinishedIndexes(catalog: Catalog | CatalogClient): Promise<{ indexId: bigint; label: string }[]> {
  const rows = await catalog.query<{ index_id: bigint; index_name: string; table_name: string }>(
    `SELECT i.index_id, i.index_name, t.table_name FROM offsetlake.secondary_index i JOIN offsetlake.lake_table t ON t.table_id = i.table_id
     WHERE i.state <> 'active' ORDER BY i.index_id`,
  );
  return rows.rows.map((row) => ({ indexId: BigInt(row.index_id), label: `index ${row.index_name} on ${row.table_name}` }));
}

/** Unfinished indexes no driver holds a live lease on, with the number of their last execution: what the scheduled check resumes. */
export async function unattendedIndexes(catalog: Catalog | CatalogClient): Promise<{ indexId: bigint; lastExecution: number }[]> {
  const rows = await catalog.query<{ index_id: bigint; backfill_execution: number }>(
    `SELECT index_id, backfill_execution FROM offsetlake.secondary_index
     WHERE state <> 'active' AND (backfill_owner IS NULL OR backfill_expires_at <= now()) ORDER BY index_id`,
  );
  return rows.rows.map((row) => ({ indexId: BigInt(row.index_id), lastExecution: row.backfill_execution }));
}

/** Execution n of the index's backfill was started (numbers only grow). */
export async function recordIndexExecution(catalog: Catalog | CatalogClient, indexId: bigint, execution: number): Promise<void> {
  await catalog.query('UPDATE offsetlake.secondary_index SET backfill_execution = GREATEST(backfill_execution, $2) WHERE index_id = $1', [indexId, execution]);
}

/** The files an index's backfill could not give entries (not rebuildable from Kafka): reads scan them. */
export async function filesSkippedByBackfill(catalog: Catalog | CatalogClient, indexId: bigint): Promise<bigint[]> {
  const row = await catalog.query<{ skipped: bigint[] }>('SELECT backfill_skipped AS skipped FROM offsetlake.secondary_index WHERE index_id = $1', [indexId]);
  return row.rows[0]?.skipped ?? [];
}
