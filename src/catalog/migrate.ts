import { inTransaction, type Catalog } from './db.js';
import { catalogSchema, latestCatalogVersion, migrations, type Migration } from './migrations.js';

// Any constant shared by every process that migrates this database.
const migrationLockKey = 0x6f66_6c6b; // "oflk"

export interface MigrationResult {
  applied: number[];
  version: number;
}

/**
 * Brings the catalog to the newest version. Safe to run again and from several processes
 * at once: a transaction-scoped advisory lock serialises them, and each applies only the
 * versions not yet recorded, all in the same transaction as the record.
 */
export async function migrateCatalog(catalog: Catalog, all: readonly Migration[] = migrations): Promise<MigrationResult> {
  return inTransaction(catalog, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${catalogSchema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${catalogSchema}.schema_migration (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = await client.query<{ version: number }>(`SELECT version FROM ${catalogSchema}.schema_migration`);
    const appliedBefore = new Set(done.rows.map((row) => row.version));
    const known = new Set(all.map((migration) => migration.version));
    const unknown = [...appliedBefore].filter((version) => !known.has(version));
    if (unknown.length > 0) {
      throw new Error(`catalog has migration versions ${unknown.join(', ')} that this offsetlake does not know: it is older than the catalog`);
    }
    const applied: number[] = [];
    for (const migration of [...all].sort((a, b) => a.version - b.version)) {
      if (appliedBefore.has(migration.version)) continue;
      await client.query(`SET LOCAL search_path = ${catalogSchema}, public`);
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${catalogSchema}.schema_migration (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      applied.push(migration.version);
    }
    const version = Math.max(0, ...appliedBefore, ...applied);
    return { applied, version };
  });
}

/** A catalog older than this code: the deploy's migration has not run (yet). */
export class CatalogVersionError extends Error {
  constructor(readonly version: number, readonly needed: number) {
    super(`the catalog is at version ${version} and this offsetlake needs version ${needed}: its migrations have not run ` +
      '(on AWS the deploy runs them in the CatalogMigrations custom resource; locally `offsetlake stack up` does)');
    this.name = 'CatalogVersionError';
  }
}

/**
 * Checks, without changing anything, that the catalog has every migration this code
 * needs. For processes that must not migrate (the Lambda functions: a deploy migrates once).
 */
export async function requireCatalogVersion(catalog: Catalog, needed = latestCatalogVersion): Promise<number> {
  // Two statements: a query naming a table that does not exist fails when it is planned.
  const exists = await catalog.query<{ found: boolean }>(`SELECT to_regclass('${catalogSchema}.schema_migration') IS NOT NULL AS found`);
  const version = exists.rows[0]?.found
    ? Number((await catalog.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${catalogSchema}.schema_migration`)).rows[0]?.version ?? 0)
    : 0;
  if (version < needed) throw new CatalogVersionError(version, needed);
  return version;
}
