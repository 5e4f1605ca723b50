/**
 * The catalog side of backfill: a partition's plan (target and cursor), the chunk claim,
 * and the commit of a chunk's files at `indexed_start`.
 *
 * Per partition, with I = indexed_start, C = backfill_cursor, T = backfill_target:
 *   - T ≤ C ≤ I while there is work; done when C ≤ T. NULL C: no plan (history `none`,
 *     or not planned yet).
 *   - The next chunk is [max(T, C − backfill_offsets), C).
 *   - [C, I) holds no committed record: chunks that found none there moved C alone.
 *   - T only rises (Kafka's earliest offset passing it); C is then clamped into [T, I]
 *     (retention that expires files sets C to the new I: what Kafka still holds above
 *     the earliest offset is backfilled again).
 *
 * A chunk commits with its claim (owner + epoch, like a lease) and only if I, C and T are
 * still what the chunk was planned from: one UPDATE checks all of it and moves I and C,
 * after the files are inserted, in the same transaction. So a chunk that lost its claim,
 * or whose plan changed under it (retention, another run), adds nothing.
 *
 * The state machine's slots (src/backfill/slot.ts) claim "the next partition with work"
 * instead of a named one, and record each step in `backfill_step` in the same commit, so
 * that a step retried after its answer was lost finds what it did.
 */
import { inTransaction, type Catalog, type CatalogClient } from './db.js';
import { insertRange, type NewRange } from './file-writes.js';

export interface BackfillState {
  tableId: bigint;
  partition: number;
  indexedStart: bigint;
  indexedEnd: bigint;
  cursor: bigint | null;
  target: bigint | null;
}

export interface BackfillClaim {
  tableId: bigint;
  partition: number;
  owner: string;
  epoch: bigint;
}

export class BackfillClaimedError extends Error {
  override name = 'BackfillClaimedError';
  constructor(readonly tableId: bigint, readonly partition: number, readonly holder: string) {
    super(`backfill of partition ${partition} of table ${tableId} is claimed by ${holder}; retry after its claim expires`);
  }
}

export class BackfillClaimLostError extends Error {
  override name = 'BackfillClaimLostError';
  constructor(readonly claim: BackfillClaim, actual: { owner: string | null; epoch: bigint; live: boolean }) {
    super(
      `backfill claim on partition ${claim.partition} of table ${claim.tableId} is lost: this run holds ${claim.owner} epoch ${claim.epoch}, ` +
        `the catalog has ${actual.owner ?? 'no owner'} epoch ${actual.epoch}${actual.live ? '' : ' (expired)'}`,
    );
  }
}

/** The partition's plan moved while the chunk ran (retention raised the target, or another run committed). */
export class BackfillStaleError extends Error {
  override name = 'BackfillStaleError';
  constructor(readonly expected: BackfillState, readonly actual: BackfillState) {
    super(
      `backfill of partition ${expected.partition} of table ${expected.tableId} moved under the chunk: ` +
        `it expected indexed_start ${expected.indexedStart}, cursor ${expected.cursor}, target ${expected.target}; ` +
        `the catalog has ${actual.indexedStart}, ${actual.cursor}, ${actual.target}`,
    );
  }
}

interface StateRow {
  table_id: bigint;
  partition_id: number;
  indexed_start: bigint;
  indexed_end: bigint;
  backfill_cursor: bigint | null;
  backfill_target: bigint | null;
}

const stateColumns = 'table_id, partition_id, indexed_start, indexed_end, backfill_cursor, backfill_target';

function toState(row: StateRow): BackfillState {
  return {
    tableId: row.table_id,
    partition: row.partition_id,
    indexedStart: row.indexed_start,
    indexedEnd: row.indexed_end,
    cursor: row.backfill_cursor,
    target: row.backfill_target,
  };
}

export async function backfillStates(catalog: Catalog | CatalogClient, tableId: bigint, partitions?: number[]): Promise<BackfillState[]> {
  const result = await catalog.query<StateRow>(
    `SELECT ${stateColumns} FROM offsetlake.lake_partition WHERE table_id = $1 AND ($2::int[] IS NULL OR partition_id = ANY($2)) ORDER BY partition_id`,
    [tableId, partitions ?? null],
  );
  return result.rows.map(toState);
}

export async function backfillState(catalog: Catalog | CatalogClient, tableId: bigint, partition: number): Promise<BackfillState> {
  const state = (await backfillStates(catalog, tableId, [partition]))[0];
  if (!state) throw new Error(`table ${tableId} has no partition ${partition} in the catalog`);
  return state;
}

/**
 * Plans a partition: the target becomes `initial` if unset, and never stays below
 * `atLeast` (Kafka's earliest offset); the cursor starts at indexed_start if unset and
 * is clamped into [target, indexed_start]. Idempotent; a target only rises.
 */
export async function planPartition(catalog: Catalog | CatalogClient, tableId: bigint, partition: number, initial: bigint, atLeast: bigint): Promise<BackfillState> {
  const target = 'greatest(coalesce(backfill_target, $3::bigint), $4::bigint)';
  const result = await catalog.query<StateRow>(
    `UPDATE offsetlake.lake_partition SET backfill_target = ${target},
       backfill_cursor = least(greatest(coalesce(backfill_cursor, indexed_start), ${target}), indexed_start)
     WHERE table_id = $1 AND partition_id = $2 RETURNING ${stateColumns}`,
    [tableId, partition, initial, atLeast],
  );
  const row = result.rows[0];
  if (!row) throw new Error(`table ${tableId} has no partition ${partition} in the catalog`);
  return toState(row);
}

/**
 * Raises a planned partition's target to `atLeast` (Kafka's earliest offset) and clamps
 * its cursor; a partition without a plan is left alone.
 */
export async function raiseBackfillTarget(catalog: Catalog | CatalogClient, tableId: bigint, partition: number, atLeast: bigint): Promise<BackfillState> {
  const result = await catalog.query<StateRow>(
    `UPDATE offsetlake.lake_partition SET backfill_target = greatest(backfill_target, $3::bigint),
       backfill_cursor = least(greatest(backfill_cursor, greatest(backfill_target, $3::bigint)), indexed_start)
     WHERE table_id = $1 AND partition_id = $2 AND backfill_target IS NOT NULL AND backfill_target < $3::bigint
     RETURNING ${stateColumns}`,
    [tableId, partition, atLeast],
  );
  return result.rows[0] ? toState(result.rows[0]) : backfillState(catalog, tableId, partition);
}

const ttlSql = (param: string) => `now() + make_interval(secs => ${param}::double precision / 1000)`;

/** The claim is free for `owner`: nobody holds it, it expired, or it is the owner's own. */
const freeFor = (owner: string) => `(backfill_owner IS NULL OR backfill_expires_at IS NULL OR backfill_expires_at <= now() OR backfill_owner = ${owner})`;

/**
 * Takes the partition's claim for `owner` if it is free; the epoch grows unless the claim
 * was the owner's already (nobody else can have committed in between). `withWork`: only
 * while the partition has backfill left.
 */
async function takeClaim(catalog: Catalog, tableId: bigint, partition: number, owner: string, ttlMs: number, withWork: boolean): Promise<{ claim: BackfillClaim; state: BackfillState } | undefined> {
  const result = await catalog.query<StateRow & { backfill_epoch: bigint }>(
    `UPDATE offsetlake.lake_partition SET
       backfill_epoch = CASE WHEN backfill_owner = $3 THEN backfill_epoch ELSE backfill_epoch + 1 END,
       backfill_owner = $3, backfill_expires_at = ${ttlSql('$4')}
     WHERE table_id = $1 AND partition_id = $2 AND ${freeFor('$3')}${withWork ? ' AND backfill_cursor > backfill_target' : ''}
     RETURNING ${stateColumns}, backfill_epoch`,
    [tableId, partition, owner, ttlMs],
  );
  const row = result.rows[0];
  return row && { claim: { tableId, partition, owner, epoch: row.backfill_epoch }, state: toState(row) };
}

/**
 * Claims the partition's backfill for one chunk, if it is free, expired, or ours (then
 * the epoch is kept: nobody else can have committed in between). Returns the plan as the
 * claim found it; throws BackfillClaimedError while another run holds a live claim.
 */
export async function claimBackfill(catalog: Catalog, tableId: bigint, partition: number, owner: string, ttlMs: number): Promise<{ claim: BackfillClaim; state: BackfillState }> {
  const taken = await takeClaim(catalog, tableId, partition, owner, ttlMs, false);
  if (taken) return taken;
  const held = await catalog.query<{ backfill_owner: string | null }>('SELECT backfill_owner FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2', [tableId, partition]);
  if (!held.rows[0]) throw new Error(`table ${tableId} has no partition ${partition} in the catalog`);
  throw new BackfillClaimedError(tableId, partition, held.rows[0].backfill_owner ?? 'another run');
}

/** Extends a live claim; throws BackfillClaimLostError when it expired or another run took it. */
export async function renewBackfillClaim(catalog: Catalog, claim: BackfillClaim, ttlMs: number): Promise<void> {
  const result = await catalog.query(
    `UPDATE offsetlake.lake_partition SET backfill_expires_at = ${ttlSql('$5')}
     WHERE table_id = $1 AND partition_id = $2 AND backfill_owner = $3 AND backfill_epoch = $4 AND backfill_expires_at > now()`,
    [claim.tableId, claim.partition, claim.owner, claim.epoch, ttlMs],
  );
  if ((result.rowCount ?? 0) === 0) throw await lostClaim(catalog, claim);
}

/**
 * Claims, for a slot of a state machine execution (`owner`), the partition whose next
 * chunk it runs: `preferred` (the partition of the slot's last step) if that still has
 * work and nobody took it since, else the free partition with work that has the lowest id
 * (free: no claim, an expired one, or the slot's own). Undefined when no partition with
 * work is free. Two slots that pick the same partition at once: Postgres orders their
 * UPDATEs and checks the second one's WHERE again on the row the first wrote, so it
 * claims nothing and looks again.
 */
export async function claimNextBackfill(
  catalog: Catalog,
  tableId: bigint,
  owner: string,
  ttlMs: number,
  preferred?: number,
): Promise<{ claim: BackfillClaim; state: BackfillState } | undefined> {
  if (preferred !== undefined) {
    const kept = await takeClaim(catalog, tableId, preferred, owner, ttlMs, true);
    if (kept) return kept;
  }
  for (;;) {
    // In partition order along lake_partition_backfill_left: the first free row ends the scan.
    const next = await catalog.query<{ partition_id: number }>(
      `SELECT partition_id FROM offsetlake.lake_partition
       WHERE table_id = $1 AND backfill_cursor > backfill_target AND ${freeFor('$2')}
       ORDER BY table_id, partition_id LIMIT 1`,
      [tableId, owner],
    );
    const partition = next.rows[0]?.partition_id;
    if (partition === undefined) return undefined;
    const claimed = await takeClaim(catalog, tableId, partition, owner, ttlMs, true);
    if (claimed) return claimed;
  }
}

/** Hands the claim back at once (the owner stays recorded, so taking it back keeps the epoch). */
export async function releaseBackfillClaim(catalog: Catalog, claim: BackfillClaim): Promise<void> {
  await catalog.query(
    `UPDATE offsetlake.lake_partition SET backfill_expires_at = now()
     WHERE table_id = $1 AND partition_id = $2 AND backfill_owner = $3 AND backfill_epoch = $4 AND backfill_expires_at > now()`,
    [claim.tableId, claim.partition, claim.owner, claim.epoch],
  );
}

/** Hands back every live claim `owner` holds on the table's partitions (a slot holds at most one). */
export async function releaseSlotClaims(catalog: Catalog, tableId: bigint, owner: string): Promise<void> {
  await catalog.query(
    'UPDATE offsetlake.lake_partition SET backfill_expires_at = now() WHERE table_id = $1 AND backfill_owner = $2 AND backfill_expires_at > now()',
    [tableId, owner],
  );
}

async function lostClaim(catalog: Catalog | CatalogClient, claim: BackfillClaim): Promise<BackfillClaimLostError> {
  const current = await catalog.query<{ backfill_owner: string | null; backfill_epoch: bigint; live: boolean }>(
    `SELECT backfill_owner, backfill_epoch, coalesce(backfill_expires_at > now(), false) AS live FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2`,
    [claim.tableId, claim.partition],
  );
  const row = current.rows[0];
  return new BackfillClaimLostError(claim, { owner: row?.backfill_owner ?? null, epoch: row?.backfill_epoch ?? 0n, live: row?.live ?? false });
}

const UNIQUE_VIOLATION = '23505';

/** A step of a state machine slot: `slot` is '<execution name>/<slot number>', the owner of its claims. */
export interface SlotStep {
  slot: string;
  step: number;
}

/** Records what a slot's step did (the partition it ran a chunk of); a slot keeps only its last step. */
export async function recordBackfillStep(catalog: Catalog | CatalogClient, tableId: bigint, step: SlotStep, partition: number): Promise<void> {
  await catalog.query(
    `INSERT INTO offsetlake.backfill_step (table_id, slot, step, partition_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (table_id, slot) DO UPDATE SET step = excluded.step, partition_id = excluded.partition_id, recorded_at = now()`,
    [tableId, step.slot, step.step, partition],
  );
}

/** A slot's last recorded step and the partition it ran a chunk of (undefined before its first). */
export async function lastSlotStep(catalog: Catalog | CatalogClient, tableId: bigint, slot: string): Promise<{ step: number; partition: number } | undefined> {
  const found = await catalog.query<{ step: number; partition_id: number }>(
    'SELECT step, partition_id FROM offsetlake.backfill_step WHERE table_id = $1 AND slot = $2',
    [tableId, slot],
  );
  const row = found.rows[0];
  return row && { step: row.step, partition: row.partition_id };
}

/** Steps are retried within minutes (8 attempts, at most 2 minutes apart): a day-old record is no longer needed. */
export async function forgetOldBackfillSteps(catalog: Catalog | CatalogClient, tableId: bigint): Promise<void> {
  await catalog.query(`DELETE FROM offsetlake.backfill_step WHERE table_id = $1 AND recorded_at < now() - interval '1 day'`, [tableId]);
}

/**
 * Commits one chunk: its ranges (consecutive, the last ending at `expected.indexedStart`;
 * none when the chunk held no committed record) are inserted, then one UPDATE moves
 * indexed_start to the first range's start and the cursor to `cursor`, only if the claim
 * is live and the plan is still `expected`. The partition row is locked by that UPDATE
 * alone, just before COMMIT, so live commits at indexed_end wait for it only for moments.
 * A slot's `step` is recorded in the same transaction: committed and recorded, or neither.
 */
export async function commitBackfillChunk(
  catalog: Catalog,
  claim: BackfillClaim,
  expected: BackfillState,
  ranges: readonly NewRange[],
  cursor: bigint,
  ttlMs: number,
  step?: SlotStep,
): Promise<BackfillState> {
  for (let i = 0; i < ranges.length; i += 1) {
    const next = ranges[i + 1]?.startOffset ?? expected.indexedStart;
    if (ranges[i]!.endOffset !== next) {
      throw new Error(`backfill ranges of partition ${claim.partition} do not tile: a range ends at ${ranges[i]!.endOffset}, the next starts at ${next}`);
    }
  }
  const indexedStart = ranges[0]?.startOffset ?? expected.indexedStart;
  try {
    return await inTransaction(catalog, async (client) => {
      for (const range of ranges) await insertRange(client, claim, range, 'backfill');
      const moved = await client.query<StateRow>(
        `UPDATE offsetlake.lake_partition SET indexed_start = $7, backfill_cursor = $8, backfill_expires_at = ${ttlSql('$9')}
         WHERE table_id = $1 AND partition_id = $2 AND backfill_owner = $3 AND backfill_epoch = $4 AND backfill_expires_at > now()
           AND indexed_start = $5 AND backfill_cursor = $6 AND backfill_target IS NOT DISTINCT FROM $10
         RETURNING ${stateColumns}`,
        [claim.tableId, claim.partition, claim.owner, claim.epoch, expected.indexedStart, expected.cursor, indexedStart, cursor, ttlMs, expected.target],
      );
      if (!moved.rows[0]) throw await whyNotCommitted(client, claim, expected);
      if (step) await recordBackfillStep(client, claim.tableId, step, claim.partition);
      return toState(moved.rows[0]);
    });
  } catch (error) {
    // Another run inserted the same offsets first: the plan moved.
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw new BackfillStaleError(expected, await backfillState(catalog, claim.tableId, claim.partition));
    throw error;
  }
}

async function whyNotCommitted(client: CatalogClient, claim: BackfillClaim, expected: BackfillState): Promise<Error> {
  const row = await client.query<{ backfill_owner: string | null; backfill_epoch: bigint; live: boolean }>(
    `SELECT backfill_owner, backfill_epoch, coalesce(backfill_expires_at > now(), false) AS live FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2`,
    [claim.tableId, claim.partition],
  );
  const current = row.rows[0];
  if (!current || current.backfill_owner !== claim.owner || current.backfill_epoch !== claim.epoch || !current.live) return lostClaim(client, claim);
  return new BackfillStaleError(expected, await backfillState(client, claim.tableId, claim.partition));
}
