import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCatalog, type Catalog } from '../../src/catalog/db.js';
import { ContiguityError, commitRanges, type NewRange } from '../../src/catalog/file-writes.js';
import { acquireLease, LeaseLostError, releaseLease, renewLease } from '../../src/catalog/leases.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { createTable, type TableRecord } from '../../src/catalog/tables.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { defaultSettings } from '../../src/catalog/settings.js';
import { freshDatabase } from '../helpers/database.js';

let catalog: Catalog;
let drop: () => Promise<void>;
let table: TableRecord;

beforeAll(async () => {
  const db = await freshDatabase('leases');
  drop = db.drop;
  catalog = openCatalog(db.url, 4);
  await migrateCatalog(catalog);
  table = await createTable(
    catalog,
    { name: 'orders', topic: 'orders', format: 'json', settings: { ...defaultSettings, lease_ttl: 1000 }, partitionStarts: new Map([[0, 100n], [1, 0n]]) },
    initialSchema('json'),
  );
});

afterAll(async () => {
  await catalog.end();
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
      sha256: new Uint8Array(32).fill(7),
      schemaVersion: 1,
      encoderVersion: 'test/v1',
      columns: [{ columnId: 1, valueCount: Number(end - start), nullCount: 0, nanCount: 0, min: String(start), max: String(end - 1n) }],
    }],
  };
}

async function partitionRow(partition: number) {
  const result = await catalog.query('SELECT indexed_start, indexed_end, lease_owner, lease_epoch FROM lake_partition WHERE table_id = $1 AND partition_id = $2', [table.tableId, partition]);
  return result.rows[0];
}

async function fileCount(partition: number): Promise<number> {
  const result = await catalog.query<{ n: bigint }>('SELECT count(*) AS n FROM data_file WHERE table_id = $1 AND partition_id = $2', [table.tableId, partition]);
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
