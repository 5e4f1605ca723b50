import { createHash } from 'node:crypto';
import { inTransaction, type Catalog } from './db.js';
import { catalogSchema, latestCatalogVersion, migrations, type Migration } from './migrations.js';

// Any constant shared by every process that migrates this database.
const migrationLockKey = 0x6f66_6c6b; // "oflk"

export interface MigrationResult {
  applied: number[];
  version: number;
}

/** The sha256 of a migration's SQL, as the catalog records it. */
export function migrationChecksum(migration: Migration): string {
  return createHash('sha256').update(migration.sql).digest('hex');
}

/**
 * Brings the catalog to the newest version. Safe to run again and from several processes
 * at once: a lock on the record of migrations serialises them, and each applies only the
 * versions not yet recorded, all in the same transaction as the record. A version already
 * applied from other SQL than this code's (its recorded checksum differs) is refused: the
 * catalog is not what this code's migrations make.
 */
export async function migrateCatalog(catalog: Catalog, all: readonly Migration[] = migrations): Promise<MigrationResult> {
  return inTransaction(catalog, async (client) => {
    const exists = await client.query<{ found: boolean }>(`SELECT to_regclass('${catalogSchema}.schema_migration') IS NOT NULL AS found`);
    if (!exists.rows[0]?.found) {
      // Only a catalog's first migration takes an advisory lock (any role may take one, but
      // no reader role exists before it): later ones lock a table no reader can reach.
      await client.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${catalogSchema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${catalogSchema}.schema_migration (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    }
    await client.query(`LOCK TABLE ${catalogSchema}.schema_migration IN EXCLUSIVE MODE`);
    await client.query(`ALTER TABLE ${catalogSchema}.schema_migration ADD COLUMN IF NOT EXISTS checksum text`);
    const done = await client.query<{ version: number; name: string; checksum: string | null }>(`SELECT version, name, checksum FROM ${catalogSchema}.schema_migration`);
    const appliedBefore = new Set(done.rows.map((row) => row.version));
    const byVersion = new Map(all.map((migration) => [migration.version, migration]));
    const unknown = [...appliedBefore].filter((version) => !byVersion.has(version));
    if (unknown.length > 0) {
      throw new Error(`catalog has migration versions ${unknown.join(', ')} that this offsetlake does not know: it is older than the catalog`);
    }
    for (const row of done.rows) {
      const checksum = migrationChecksum(byVersion.get(row.version)!);
      if (row.checksum === null) {
        // recorded before checksums were: this code's SQL is taken as what was applied
        await client.query(`UPDATE ${catalogSchema}.schema_migration SET checksum = $2 WHERE version = $1`, [row.version, checksum]);
      } else if (row.checksum !== checksum) {
        throw new Error(`catalog migration ${row.version} ("${row.name}") was applied from other SQL than this offsetlake's (recorded sha256 ${row.checksum.slice(0, 12)}…, this one's ${checksum.slice(0, 12)}…): `
          + 'the catalog is not what these migrations make; use the offsetlake that migrated it, or a catalog of its own');
      }
    }
    const applied: number[] = [];
    for (const migration of [...all].sort((a, b) => a.version - b.version)) {
      if (appliedBefore.has(migration.version)) continue;
      await client.query(`SET LOCAL search_path = ${catalogSchema}, public`);
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${catalogSchema}.schema_migration (version, name, checksum) VALUES ($1, $2, $3)`, [migration.version, migration.name, migrationChecksum(migration)]);
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
