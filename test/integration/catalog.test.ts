import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { migrations } from '../../src/catalog/migrations.js';
import { freshDatabase } from '../helpers/database.js';

const run = promisify(execFile);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function catalogTables(url: string): Promise<string[]> {
  const catalog = openCatalog(url, 1);
  try {
    const result = await catalog.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'offsetlake' ORDER BY table_name",
    );
    return result.rows.map((row) => row.table_name);
  } finally {
    await catalog.end();
  }
}

async function appliedVersions(url: string): Promise<number[]> {
  const catalog = openCatalog(url, 1);
  try {
    return (await catalog.query<{ version: number }>('SELECT version FROM schema_migration ORDER BY version')).rows.map((row) => row.version);
  } finally {
    await catalog.end();
  }
}

const expectedTables = ['data_file', 'file_column_stats', 'job', 'lake_partition', 'lake_table', 'lost_interval', 'schema_migration', 'table_column', 'table_schema'];
const latest = Math.max(...migrations.map((m) => m.version));

describe('catalog migrations', () => {
  it('applied twice leave one catalog at the newest version', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 2);
    try {
      const first = await migrateCatalog(catalog);
      const second = await migrateCatalog(catalog);
      expect(first).toEqual({ applied: migrations.map((m) => m.version), version: latest });
      expect(second).toEqual({ applied: [], version: latest });
    } finally {
      await catalog.end();
    }
    expect(await catalogTables(db.url)).toEqual(expectedTables);
    expect(await appliedVersions(db.url)).toEqual(migrations.map((m) => m.version));
  });

  it('applied by three processes at once leave one catalog, applied by exactly one of them', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const node = process.execPath;
    const migrateOnce = () => run(node, ['--import', 'tsx', 'test/helpers/migrate-once.ts', db.url]);
    const results = (await Promise.all([migrateOnce(), migrateOnce(), migrateOnce()])).map((r) => JSON.parse(r.stdout));
    const appliers = results.filter((r) => r.applied.length > 0);
    expect(appliers).toHaveLength(1);
    expect(appliers[0].applied).toEqual(migrations.map((m) => m.version));
    expect(results.every((r) => r.version === latest)).toBe(true);
    expect(await catalogTables(db.url)).toEqual(expectedTables);
    expect(await appliedVersions(db.url)).toEqual(migrations.map((m) => m.version));
  });

  it('refuses a catalog newer than this offsetlake, naming the versions', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 1);
    try {
      await migrateCatalog(catalog);
      await catalog.query("INSERT INTO schema_migration (version, name) VALUES (999, 'from the future')");
      await expect(migrateCatalog(catalog)).rejects.toThrow('catalog has migration versions 999 that this offsetlake does not know');
    } finally {
      await catalog.end();
    }
  });
});
