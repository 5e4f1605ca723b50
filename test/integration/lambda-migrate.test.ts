import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCatalog } from '../../src/catalog/db.js';
import { migrations } from '../../src/catalog/migrations.js';
import { freshDatabase } from '../helpers/database.js';

let db: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  db = await freshDatabase('deploy');
  process.env.DATABASE_URL = db.url;
});
afterAll(() => db.drop());

async function appliedVersions(): Promise<number[]> {
  const catalog = openCatalog(db.url, 1);
  try {
    const exists = await catalog.query<{ found: boolean }>("SELECT to_regclass('offsetlake.schema_migration') IS NOT NULL AS found");
    if (!exists.rows[0]!.found) return [];
    return (await catalog.query<{ version: number }>('SELECT version FROM offsetlake.schema_migration ORDER BY version')).rows.map((row) => row.version);
  } finally {
    await catalog.end();
  }
}

describe('a deploy migrates the catalog once; the functions only check its version', () => {
  it('a function on an empty catalog refuses to start, names the version it needs and the migration step, and creates nothing', async () => {
    const { handler } = await import('../../functions/tick/index.js');
    const latest = Math.max(...migrations.map((m) => m.version));
    await expect(handler()).rejects.toThrow(`the catalog is at version 0 and this offsetlake needs version ${latest}: its migrations have not run (on AWS the deploy runs them in the CatalogMigrations custom resource`);
    expect(await appliedVersions()).toEqual([]);
  });

  it('functions/migrate, as the custom resource calls it: Create applies every migration, Update applies none, Delete leaves the catalog', async () => {
    const { handler } = await import('../../functions/migrate/index.js');
    const all = migrations.map((m) => m.version);
    const latest = Math.max(...all);
    expect(await handler({ RequestType: 'Create' })).toEqual({ PhysicalResourceId: 'offsetlake-catalog', Data: { version: latest, applied: all.join(',') } });
    expect(await handler({ RequestType: 'Update', PhysicalResourceId: 'offsetlake-catalog' })).toEqual({ PhysicalResourceId: 'offsetlake-catalog', Data: { version: latest, applied: '' } });
    expect(await handler({ RequestType: 'Delete', PhysicalResourceId: 'offsetlake-catalog' })).toEqual({ PhysicalResourceId: 'offsetlake-catalog' });
    expect(await appliedVersions()).toEqual(all);
  });

  it('once migrated, the same function starts: the tick runs over an empty catalog', async () => {
    const { handler } = await import('../../functions/tick/index.js');
    expect(await handler()).toEqual({ partitions: [] });
  });
});
