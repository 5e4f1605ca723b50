/**
 * Leases: the right to index one partition. A lease is the partition row's owner, epoch
 * and expiry; Postgres's clock decides expiry, so indexers need not agree on time.
 * The epoch grows on every takeover (a new owner), so a commit that names an old epoch
 * is refused. An owner that takes back its own released or expired lease keeps the
 * epoch: nobody else can have committed in between, since taking it would have changed
 * the owner. Owner names are unique per process.
 */
import type { Catalog, CatalogClient } from './db.js';

export interface Lease {
  tableId: bigint;
  partition: number;
  owner: string;
  epoch: bigint;
  expiresAt: Date;
  /** The partition's indexed end when the lease was taken or renewed: where indexing resumes. */
  indexedEnd: bigint;
  /** When the last holder first read the open range from `indexedEnd` (it may be gone). */
  openRangeSince: Date | null;
  /** How many records that holder last reported in its open range. */
  openRangeRecords: number;
}

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(
    readonly tableId: bigint,
    readonly partition: number,
    readonly expected: { owner: string; epoch: bigint },
    readonly actual: { owner: string | null; epoch: bigint; expired: boolean },
  ) {
    super(
      `lease on partition ${partition} of table ${tableId} is lost: this indexer holds ${expected.owner} epoch ${expected.epoch}, ` +
        `the catalog has ${actual.owner ?? 'no owner'} epoch ${actual.epoch}${actual.expired ? ' (expired)' : ''}`,
    );
  }
}

interface LeaseRow {
  lease_owner: string;
  lease_epoch: bigint;
  lease_expires_at: Date;
  indexed_end: bigint;
  open_range_since: Date | null;
  open_range_records: number;
}

const ttl = 'make_interval(secs => $TTL::double precision / 1000)';

/**
 * Takes the lease if it is free, expired, released, or ours (then it is renewed under
 * the same epoch). Returns undefined while another owner holds a live lease.
 */
export async function acquireLease(catalog: Catalog, tableId: bigint, partition: number, owner: string, ttlMs: number): Promise<Lease | undefined> {
  const result = await catalog.query<LeaseRow>(
    `UPDATE offsetlake.lake_partition SET
       lease_epoch = CASE WHEN lease_owner = $3 THEN lease_epoch ELSE lease_epoch + 1 END,
       lease_owner = $3,
       lease_expires_at = now() + ${ttl.replace('$TTL', '$4')}
     WHERE table_id = $1 AND partition_id = $2
       AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= now() OR lease_owner = $3)
     RETURNING lease_owner, lease_epoch, lease_expires_at, indexed_end, open_range_since, open_range_records`,
    [tableId, partition, owner, ttlMs],
  );
  const row = result.rows[0];
  return row ? toLease(tableId, partition, row) : undefined;
}

/** What the holder keeps in memory, for `status`. */
export interface OpenRangeReport {
  bytes: number;
  records: number;
  /** When its first record was read (epoch ms), if it has one. */
  since: number | undefined;
  waitingReason?: string | undefined;
}

/**
 * Extends a live lease, and reports what the holder keeps in memory; throws
 * LeaseLostError when the lease expired or another took it.
 */
export async function renewLease(catalog: Catalog | CatalogClient, lease: Lease, ttlMs: number, open?: OpenRangeReport): Promise<Lease> {
  const result = await catalog.query<LeaseRow>(
    `UPDATE offsetlake.lake_partition SET lease_expires_at = now() + ${ttl.replace('$TTL', '$5')},
       open_range_bytes = coalesce($6, open_range_bytes), open_range_records = coalesce($7, open_range_records),
       open_range_since = CASE WHEN $6::bigint IS NULL THEN open_range_since ELSE to_timestamp($8::double precision / 1000) END,
       waiting_reason = CASE WHEN $6::bigint IS NULL THEN waiting_reason ELSE $9 END
     WHERE table_id = $1 AND partition_id = $2 AND lease_owner = $3 AND lease_epoch = $4 AND lease_expires_at > now()
     RETURNING lease_owner, lease_epoch, lease_expires_at, indexed_end, open_range_since, open_range_records`,
    [lease.tableId, lease.partition, lease.owner, lease.epoch, ttlMs, open?.bytes ?? null, open?.records ?? null, open?.since ?? null, open?.waitingReason ?? null],
  );
  const row = result.rows[0];
  if (!row) throw await lostLease(catalog, lease);
  return toLease(lease.tableId, lease.partition, row);
}

/**
 * Lets another indexer take the lease at once instead of after `lease_ttl`. The owner
 * stays recorded: taking it back unchanged keeps the epoch and what was held in memory.
 */
export async function releaseLease(catalog: Catalog, lease: Lease): Promise<boolean> {
  const result = await catalog.query(
    `UPDATE offsetlake.lake_partition SET lease_expires_at = now()
     WHERE table_id = $1 AND partition_id = $2 AND lease_owner = $3 AND lease_epoch = $4 AND lease_expires_at > now()`,
    [lease.tableId, lease.partition, lease.owner, lease.epoch],
  );
  return (result.rowCount ?? 0) > 0;
}

/** The LeaseLostError describing what the catalog holds instead of `lease`. */
export async function lostLease(catalog: Catalog | CatalogClient, lease: Pick<Lease, 'tableId' | 'partition' | 'owner' | 'epoch'>): Promise<LeaseLostError> {
  const current = await catalog.query<{ lease_owner: string | null; lease_epoch: bigint; live: boolean }>(
    `SELECT lease_owner, lease_epoch, coalesce(lease_expires_at > now(), false) AS live
     FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2`,
    [lease.tableId, lease.partition],
  );
  const row = current.rows[0];
  return new LeaseLostError(lease.tableId, lease.partition, { owner: lease.owner, epoch: lease.epoch }, {
    owner: row?.lease_owner ?? null,
    epoch: row?.lease_epoch ?? 0n,
    expired: !row?.live,
  });
}

function toLease(tableId: bigint, partition: number, row: LeaseRow): Lease {
  return {
    tableId,
    partition,
    owner: row.lease_owner,
    epoch: row.lease_epoch,
    expiresAt: row.lease_expires_at,
    indexedEnd: row.indexed_end,
    openRangeSince: row.open_range_since,
    openRangeRecords: Number(row.open_range_records),
  };
}

/**
 * Why a partition is not indexing (null: it is), for `status`. With `holder`, only while
 * that owner and epoch hold the lease; without, only while no live lease of another
 * owner is on it (a failure seen by whoever was about to take it).
 */
export async function setWaitingReason(
  catalog: Catalog | CatalogClient,
  tableId: bigint,
  partition: number,
  reason: string | null,
  holder: { owner: string; epoch?: bigint },
): Promise<void> {
  await catalog.query(
    `UPDATE offsetlake.lake_partition SET waiting_reason = $3
     WHERE table_id = $1 AND partition_id = $2 AND waiting_reason IS DISTINCT FROM $3
       AND CASE WHEN $5::bigint IS NULL
                THEN lease_owner IS NULL OR lease_owner = $4 OR lease_expires_at IS NULL OR lease_expires_at <= now()
                ELSE lease_owner = $4 AND lease_epoch = $5 END`,
    [tableId, partition, reason, holder.owner, holder.epoch ?? null],
  );
}
