/**
 * Iceberg snapshots: when one is cut, which files it names, which are still in the
 * history (their rows: src/catalog/iceberg-snapshots.ts).
 *
 * A snapshot is cut when a client loads a table (LoadTable) and the table's live files
 * are no longer those of its newest snapshot: at once when retention expired one of
 * them (the newest snapshot names a file that can no longer be read), otherwise at most
 * once per `intervalMs` (between cuts a client sees the newest snapshot, up to one
 * interval behind the catalog). A table no one loads cuts none. Each cut has the next
 * sequence number of its table and a random id; file memberships are written in the cut's
 * transaction: a file is in the snapshots numbered [added_sequence, removed_sequence).
 * Nothing of a snapshot changes afterwards, so its id always names the same files.
 *
 * The history: a snapshot leaves it when retention expires one of its files (it could no
 * longer be read), or when more than `maxSnapshots` are kept (the oldest leaves first).
 */
import { randomBytes } from 'node:crypto';
import type { Catalog } from '../catalog/db.js';
import { cutIcebergSnapshot, type SnapshotFile } from '../catalog/iceberg-snapshots.js';

export interface CutOptions {
  /** The least time between two cuts that only add files (ms). */
  intervalMs: number;
  /** Snapshots the history keeps at most. */
  maxSnapshots: number;
  now?: () => Date;
}

export const defaultSnapshotIntervalMs = 60_000;
export const defaultMaxSnapshots = 100;

/** A positive id below 2^53 (so that every JSON reader reads it exactly), random as Iceberg's are. */
function newSnapshotId(): bigint {
  const id = randomBytes(8).readBigUInt64BE() % 2n ** 53n;
  return id === 0n ? 1n : id;
}

const summaryTotals = ['total-data-files', 'total-records', 'total-files-size'] as const;

/**
 * Cuts a snapshot of the table if its live files changed (see the module's opening);
 * returns the newest snapshot's sequence number afterwards (0: none yet).
 */
export async function cutSnapshotIfChanged(catalog: Catalog, tableId: bigint, options: CutOptions): Promise<bigint> {
  return cutIcebergSnapshot(catalog, tableId, ({ newest, added, removed }) => {
    const now = options.now?.() ?? new Date();
    const due = removed.length > 0 || (added.length > 0 && (!newest || now.getTime() - newest.cutAt.getTime() >= options.intervalMs));
    if (!due) return undefined;
    const sum = (files: SnapshotFile[], count: 'recordCount' | 'fileSizeBytes') => files.reduce((total, file) => total + file[count], 0n);
    const before = (name: (typeof summaryTotals)[number]) => BigInt(newest?.summary[name] ?? '0');
    const summary: Record<string, string> = {
      operation: removed.length === 0 ? 'append' : added.length === 0 ? 'delete' : 'overwrite',
      'added-data-files': String(added.length),
      'deleted-data-files': String(removed.length),
      'added-records': String(sum(added, 'recordCount')),
      'deleted-records': String(sum(removed, 'recordCount')),
      'added-files-size': String(sum(added, 'fileSizeBytes')),
      'removed-files-size': String(sum(removed, 'fileSizeBytes')),
      'total-data-files': String(before('total-data-files') + BigInt(added.length) - BigInt(removed.length)),
      'total-records': String(before('total-records') + sum(added, 'recordCount') - sum(removed, 'recordCount')),
      'total-files-size': String(before('total-files-size') + sum(added, 'fileSizeBytes') - sum(removed, 'fileSizeBytes')),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    };
    return { snapshotId: newSnapshotId(), cutAt: now, summary, maxSnapshots: options.maxSnapshots };
  });
}
