import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { openCatalog, type Catalog, type CatalogClient } from '../../src/catalog/db.js';
import { ContiguityError, commitRanges, type NewRange } from '../../src/catalog/file-writes.js';
import { acquireLease, LeaseLostError, releaseLease, renewLease } from '../../src/catalog/leases.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { createTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { defaultSettings } from '../../src/table/settings.js';
import { freshDatabase } from '../helpers/database.js';

let catalog: Catalog;
/** A second pool: another indexer's connections (and the test's own, to hold locks and watch). */
let other: Catalog;
let drop: () => Promise<void>;
let table: TableRecord;
let races: TableRecord;

beforeAll(async () => {
  const db = await freshDatabase('leases');
  drop = db.drop;
  catalog = openCatalog(db.url, 4);
  other = openCatalog(db.url, 4);
  await migrateCatalog(catalog);
  table = await createTable(
    catalog,
    { name: 'orders', topic: 'orders', topicId: null, format: 'json', settings: { ...defaultSettings, lease_ttl: 1000 }, partitionStarts: new Map([[0, 100n], [1, 0n]]) },
    initialSchema('json'),
  );
  races = await createTable(
    catalog,
    { name: 'races', topic: 'races', topicId: null, format: 'json', settings: { ...defaultSettings, lease_ttl: 1000 }, partitionStarts: new Map([[0, 0n], [1, 0n], [2, 0n], [3, 0n], [4, 0n]]) },
    initialSchema('json'),
  );
});

afterAll(async () => {
  await catalog.end();
  await other.end();
  await drop();
});

function range(start: bigint, end: bigint): NewRange {
  return {
    startOffset: start,
    endOffset: end,
    reason: 'flush',
    files: [{
      bucket: Date.UTC(2026, 10, 29, 10),
      recordCount: Number(end - start),
      fileSizeBytes: 1234,
      footer: new Uint8Array([1, 2, 3]),
      granules: null,
      indexEntries: [],
      sha256: new Uint8Array(32).fill(7),
      schemaVersion: 1,
      encoderVersion: 'test/v1',
      columns: [{ columnId: 1, valueCount: Number(end - start), nullCount: 0, nanCount: 0, min: String(start), max: String(end - 1n) }],
    }],
    indexIds: [],
  };
}

async function partitionRow(partition: number) {
  const result = await catalog.query('SELECT indexed_start, indexed_end, lease_owner, lease_epoch FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2', [table.tableId, partition]);
  return result.rows[0];
}

async function fileCount(partition: number): Promise<number> {
  const result = await catalog.query<{ n: bigint }>('SELECT count(*) AS n FROM offsetlake.data_file WHERE table_id = $1 AND partition_id = $2', [table.tableId, partition]);
  return Number(result.rows[0]!.n);
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('leases and lease-fenced commits (real Postgres)', () => {
  it('one owner at a time; the epoch grows on takeover after lease_ttl; a late commit without the lease adds nothing', async () => {
    const a = await acquireLease(catalog, table.tableId, 0, 'indexer-a', 1000);
    expect(a).toMatchObject({ owner: 'indexer-a', epoch: 1n, indexedEnd: 100n });
    expect(await acquireLease(catalog, table.tableId, 0, 'indexer-b', 1000)).toBeUndefined();

    const committed = await commitRanges(catalog, a!, [range(100n, 110n), range(110n, 125n)], 1000);
    expect(committed).toEqual({ indexedEnd: 125n, added: 2, skipped: 0 });

    await sleep(1100); // lease_ttl passes without renewal
    const b = await acquireLease(catalog, table.tableId, 0, 'indexer-b', 1000);
    expect(b).toMatchObject({ owner: 'indexer-b', epoch: 2n, indexedEnd: 125n });

    const late = commitRanges(catalog, a!, [range(125n, 130n)], 1000);
    await expect(late).rejects.toThrow(LeaseLostError);
    await expect(commitRanges(catalog, a!, [range(125n, 130n)], 1000)).rejects.toThrow(
      'lease on partition 0 of table ' + table.tableId + ' is lost: this indexer holds indexer-a epoch 1, the catalog has indexer-b epoch 2',
    );
    await expect(renewLease(catalog, a!, 1000)).rejects.toThrow(LeaseLostError);
    expect(await fileCount(0)).toBe(2);
    expect(await partitionRow(0)).toMatchObject({ indexed_start: 100n, indexed_end: 125n, lease_owner: 'indexer-b', lease_epoch: 2n });

    // The new holder goes on from indexed_end.
    expect(await commitRanges(catalog, b!, [range(125n, 130n)], 1000)).toEqual({ indexedEnd: 130n, added: 1, skipped: 0 });
  });

  it('refuses a range that does not start at indexed_end, naming both offsets; a redelivered range is skipped', async () => {
    const lease = (await acquireLease(catalog, table.tableId, 1, 'indexer-c', 5000))!;
    await commitRanges(catalog, lease, [range(0n, 10n)], 5000);
    const gap = commitRanges(catalog, lease, [range(12n, 20n)], 5000);
    await expect(gap).rejects.toThrow(ContiguityError);
    await expect(commitRanges(catalog, lease, [range(12n, 20n)], 5000)).rejects.toThrow('starts at offset 12, but the indexed range ends at 10');
    expect(await commitRanges(catalog, lease, [range(0n, 10n), range(10n, 20n)], 5000)).toEqual({ indexedEnd: 20n, added: 1, skipped: 1 });
    expect(await fileCount(1)).toBe(2);
  });

  it('a released lease is taken at once by another (new epoch); its owner taking it back unchanged keeps the epoch', async () => {
    const c = (await acquireLease(catalog, table.tableId, 1, 'indexer-c', 5000))!;
    expect(await releaseLease(catalog, c)).toBe(true);
    const again = (await acquireLease(catalog, table.tableId, 1, 'indexer-c', 5000))!;
    expect(again.epoch).toBe(c.epoch);
    await releaseLease(catalog, again);
    const d = (await acquireLease(catalog, table.tableId, 1, 'indexer-d', 5000))!;
    expect(d.epoch).toBe(c.epoch + 1n);
    await expect(commitRanges(catalog, again, [range(20n, 30n)], 5000)).rejects.toThrow(LeaseLostError);
  });
});

/** The race table's partition row and files, in offset order, with the epoch that added each. */
async function raceState(partition: number) {
  const row = await other.query<{ indexed_end: bigint; lease_owner: string | null; lease_epoch: bigint }>(
    'SELECT indexed_end, lease_owner, lease_epoch FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2',
    [races.tableId, partition],
  );
  const files = await other.query<{ start_offset: bigint; end_offset: bigint; lease_epoch: bigint }>(
    'SELECT start_offset, end_offset, lease_epoch FROM offsetlake.data_file WHERE table_id = $1 AND partition_id = $2 ORDER BY start_offset',
    [races.tableId, partition],
  );
  return { ...row.rows[0]!, files: files.rows.map((f) => `[${f.start_offset}, ${f.end_offset}) epoch ${f.lease_epoch}`) };
}

/** Waits (by Postgres's clock, not by a guess) until the lease of `partition` has expired. */
async function untilLeaseExpired(partition: number, ttlMs: number): Promise<void> {
  await sleep(ttlMs);
  for (;;) {
    const expired = await other.query<{ expired: boolean }>('SELECT lease_expires_at <= now() AS expired FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = $2', [races.tableId, partition]);
    if (expired.rows[0]!.expired) return;
    await sleep(20);
  }
}

/**
 * Waits until a backend of this database whose statement matches `pattern` is waiting for a
 * lock held by `blocker`, and returns its pid: the interleaving is then a fact, not a timing.
 */
async function blockedBy(pattern: string, blocker: number): Promise<{ pid: number; inTransactionSince: Date }> {
  // a wait for a fact, not a timing: generous, since a busy machine (another CI run beside
  // this one) has been seen to take more than 15 s to bring the statement to its lock
  const deadline = Date.now() + 90_000;
  for (;;) {
    const waiting = await other.query<{ pid: number; blockers: number[]; xact_start: Date }>(
      `SELECT pid, pg_blocking_pids(pid) AS blockers, xact_start FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [pattern],
    );
    const found = waiting.rows.find((row) => row.blockers.includes(blocker));
    if (found) return { pid: found.pid, inTransactionSince: found.xact_start };
    if (Date.now() > deadline) throw new Error(`no statement like ${pattern} waits for backend ${blocker}: ${JSON.stringify(waiting.rows)}`);
    await sleep(10);
  }
}

async function backendPid(client: pg.ClientBase): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/** Keeps a promise's rejection for later (so it is not reported unhandled while the test arranges the race). */
function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then((value) => ({ value }), (error: unknown) => ({ error }));
}

const commitSelect = 'SELECT indexed_end, lease_owner, lease_epoch, coalesce(lease_expires_at > now(), false) AS live%FOR NO KEY UPDATE';
// the file's statement inserts its row in a CTE first (src/catalog/file-writes.ts insertRange)
const fileInsert = '%INSERT INTO offsetlake.data_file %';
const leaseTakeover = 'UPDATE offsetlake.lake_partition SET%lease_epoch = CASE WHEN lease_owner = $3%';

describe('a file commit racing a lease takeover on two connections (real Postgres)', () => {
  it('after lease_ttl, B takes the lease on its own connection (epoch 2); A\'s commitRanges under epoch 1 is then refused with LeaseLostError, adds no file and leaves indexed_end and B\'s lease as they were', async () => {
    const a = (await acquireLease(catalog, races.tableId, 0, 'indexer-a', 1000))!;
    expect(await commitRanges(catalog, a, [range(0n, 10n)], 1000)).toEqual({ indexedEnd: 10n, added: 1, skipped: 0 });
    await untilLeaseExpired(0, 1000);
    const b = (await acquireLease(other, races.tableId, 0, 'indexer-b', 30_000))!;
    expect(b).toMatchObject({ owner: 'indexer-b', epoch: 2n, indexedEnd: 10n });

    const late = await settle(commitRanges(catalog, a, [range(10n, 20n)], 1000));
    expect(late.error).toBeInstanceOf(LeaseLostError);
    expect((late.error as Error).message).toBe(`lease on partition 0 of table ${races.tableId} is lost: this indexer holds indexer-a epoch 1, the catalog has indexer-b epoch 2`);
    expect(await raceState(0)).toEqual({ indexed_end: 10n, lease_owner: 'indexer-b', lease_epoch: 2n, files: ['[0, 10) epoch 1'] });
    // The refused commit renewed nothing: B's lease still ends where B's acquisition put it.
    const expiry = await other.query<{ lease_expires_at: Date }>('SELECT lease_expires_at FROM offsetlake.lake_partition WHERE table_id = $1 AND partition_id = 0', [races.tableId]);
    expect(expiry.rows[0]!.lease_expires_at).toEqual(b.expiresAt);
  });

  it('A\'s commit transaction, opened before B\'s takeover committed, waits on the partition row B locked and is refused once B commits: the fence is inside the commit transaction', async () => {
    const a = (await acquireLease(catalog, races.tableId, 1, 'indexer-a', 1000))!;
    await commitRanges(catalog, a, [range(0n, 10n)], 1000);
    await untilLeaseExpired(1, 1000);

    // B takes the lease in a transaction the test keeps open: the row is B's, not yet committed.
    const bClient: CatalogClient = await other.connect();
    try {
      await bClient.query('BEGIN');
      const b = await acquireLease(bClient as unknown as Catalog, races.tableId, 1, 'indexer-b', 30_000);
      expect(b).toMatchObject({ owner: 'indexer-b', epoch: 2n, indexedEnd: 10n });

      // A commits a built range with its old lease: its transaction reads the partition row FOR NO KEY UPDATE and waits for B.
      const late = settle(commitRanges(catalog, a, [range(10n, 20n)], 1000));
      // A's statement waiting for B is the lease check of commitRanges' own transaction (sent after its BEGIN).
      await blockedBy(commitSelect, await backendPid(bClient));
      await bClient.query('COMMIT');

      const outcome = await late;
      expect(outcome.error).toBeInstanceOf(LeaseLostError);
      expect((outcome.error as Error).message).toBe(`lease on partition 1 of table ${races.tableId} is lost: this indexer holds indexer-a epoch 1, the catalog has indexer-b epoch 2`);
      expect(await raceState(1)).toEqual({ indexed_end: 10n, lease_owner: 'indexer-b', lease_epoch: 2n, files: ['[0, 10) epoch 1'] });

      // B goes on from indexed_end: epoch 1's files, then epoch 2's, never interleaved.
      expect(await commitRanges(other, b!, [range(10n, 20n)], 30_000)).toEqual({ indexedEnd: 20n, added: 1, skipped: 0 });
      expect((await raceState(1)).files).toEqual(['[0, 10) epoch 1', '[10, 20) epoch 2']);
    } finally {
      await bClient.query('ROLLBACK').catch(() => {});
      bClient.release();
    }
  });

  it('B\'s takeover, tried while A\'s commit transaction holds the partition row under a live lease, is refused at once (undefined) without waiting for the row; A\'s commit then succeeds and the catalog holds only epoch 1', async () => {
    const a = (await acquireLease(catalog, races.tableId, 2, 'indexer-a', 30_000))!;
    const blocker = await other.connect();
    try {
      // Hold A's commit after it has read (and locked) the partition row: its insert into data_file waits for this lock.
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE offsetlake.data_file IN SHARE MODE');
      const commit = settle(commitRanges(catalog, a, [range(0n, 10n)], 30_000));
      const aBackend = await blockedBy(fileInsert, await backendPid(blocker));

      // B (another connection) tries to take the lease: the row it sees is A's live lease, so it is refused without locking it.
      expect(await acquireLease(other, races.tableId, 2, 'indexer-b', 30_000)).toBeUndefined();
      expect((await blockedBy(fileInsert, await backendPid(blocker))).pid).toBe(aBackend.pid); // A's commit is still held

      await blocker.query('ROLLBACK');
      expect(await commit).toEqual({ value: { indexedEnd: 10n, added: 1, skipped: 0 } });
      expect(await raceState(2)).toEqual({ indexed_end: 10n, lease_owner: 'indexer-a', lease_epoch: 1n, files: ['[0, 10) epoch 1'] });
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
    }
  });

  it('when A\'s lease expires while its commit transaction holds the partition row and the commit renews it past B\'s attempt, B\'s takeover waits for A\'s row lock and is then refused (undefined); A\'s commit (checked while its lease was live) succeeds', async () => {
    // A's lease lasts 1 s; its commit renews for 60 s. The expiry B sees before waiting has passed;
    // the one A's commit writes (60 s from A's transaction start) is far ahead of B's: the order is certain.
    const a = (await acquireLease(catalog, races.tableId, 4, 'indexer-a', 1000))!;
    const blocker = await other.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE offsetlake.data_file IN SHARE MODE');
      const commit = settle(commitRanges(catalog, a, [range(0n, 10n)], 60_000));
      const aBackend = await blockedBy(fileInsert, await backendPid(blocker));
      await untilLeaseExpired(4, 1000);

      const take = settle(acquireLease(other, races.tableId, 4, 'indexer-b', 30_000));
      await blockedBy(leaseTakeover, aBackend.pid);

      await blocker.query('ROLLBACK');
      expect(await commit).toEqual({ value: { indexedEnd: 10n, added: 1, skipped: 0 } });
      expect(await take).toEqual({ value: undefined });
      expect(await raceState(4)).toEqual({ indexed_end: 10n, lease_owner: 'indexer-a', lease_epoch: 1n, files: ['[0, 10) epoch 1'] });
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
    }
  });

  it('when lease_ttl has passed even since A\'s commit transaction began (its renewal counts from there), B\'s takeover waits for A\'s row lock, then takes the partition at A\'s new indexed_end with epoch 2; A\'s commit (checked while its lease was live) succeeds and A\'s next commit is refused', async () => {
    const a = (await acquireLease(catalog, races.tableId, 3, 'indexer-a', 1000))!;
    const blocker = await other.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE offsetlake.data_file IN SHARE MODE');
      const commit = settle(commitRanges(catalog, a, [range(0n, 10n)], 1000));
      const aBackend = await blockedBy(fileInsert, await backendPid(blocker));

      // Wait until lease_ttl has passed since A's commit transaction began: the renewal A's
      // commit writes (lease_ttl from now(), which is its transaction's start) is then in the past.
      await sleep(1000);
      for (;;) {
        const passed = await other.query<{ passed: boolean }>("SELECT now() > $1::timestamptz + interval '1 second' AS passed", [aBackend.inTransactionSince]);
        if (passed.rows[0]!.passed) break;
        await sleep(20);
      }
      const take = settle(acquireLease(other, races.tableId, 3, 'indexer-b', 30_000));
      await blockedBy(leaseTakeover, aBackend.pid);

      await blocker.query('ROLLBACK');
      expect(await commit).toEqual({ value: { indexedEnd: 10n, added: 1, skipped: 0 } });
      expect((await take).value).toMatchObject({ owner: 'indexer-b', epoch: 2n, indexedEnd: 10n });

      await expect(commitRanges(catalog, a, [range(10n, 20n)], 1000)).rejects.toThrow(LeaseLostError);
      await commitRanges(other, (await take).value!, [range(10n, 20n)], 30_000);
      expect(await raceState(3)).toEqual({ indexed_end: 20n, lease_owner: 'indexer-b', lease_epoch: 2n, files: ['[0, 10) epoch 1', '[10, 20) epoch 2'] });
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
    }
  });
});
