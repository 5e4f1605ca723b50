/**
 * Iceberg snapshots: when one is cut, which files it names, which are still in the
 * history (their rows: src/catalog/iceberg-snapshots.ts).
 *
 * A snapshot is cut when a client loads a table (LoadTable) and the table's live files
 * are no longer those of its newest snapshot: at once when retention expired one of
 * them (the newest snapshot names a file that can no longer be read), otherwise at most
 * once per `intervalMs` (between cuts a client sees the newest snapshot, up to one
 * interval behind the catalog). A table no one loads cuts none. Each cut has the next
 * sequence number of its table and a random id (below 2^53, so every JSON reader reads it
 * exactly); file memberships are written in the cut's transaction: a file is in the
 * snapshots numbered [added_sequence, removed_sequence).
 * Nothing of a snapshot changes afterwards, so its id always names the same files.
 *
 * The history: a snapshot leaves it when retention expires one of its files (it could no
 * longer be read), or when more than `maxSnapshots` are kept (the oldest leaves first).
 *
 * A file a merge replaced leaves the newest snapshot: as a `replace` snapshot when the
 * merged file holds only records the newest snapshot named, otherwise with the other
 * changes (migration 19; docs/design.md, "Merged files in DuckLake, Iceberg and retention").
 *
 * All of it is the catalog's function cut_iceberg_snapshot (migrations 16 and 18), run as the
 * catalog's owner: the reader's login may call it but write none of the snapshots' rows,
 * so it cannot forge which files a snapshot names (src/catalog/iceberg-snapshots.ts).
 */
import type { Catalog } from '../catalog/db.js';
import { cutIcebergSnapshot } from '../catalog/iceberg-snapshots.js';

export interface CutOptions {
  /** The least time between two cuts that only add files (ms). */
  intervalMs: number;
  /** Snapshots the history keeps at most. */
  maxSnapshots: number;
}

export const defaultSnapshotIntervalMs = 60_000;
export const defaultMaxSnapshots = 100;

/**
 * Cuts a snapshot of the table if its live files changed (see the module's opening);
 * returns the newest snapshot's sequence number afterwards (0: none yet).
 */
export function cutSnapshotIfChanged(catalog: Catalog, tableId: bigint, options: CutOptions): Promise<bigint> {
  return cutIcebergSnapshot(catalog, tableId, options.intervalMs, options.maxSnapshots);
}
