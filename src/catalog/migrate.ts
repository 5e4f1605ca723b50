import { inTransaction, type Catalog } from './db.js';
import { catalogSchema, migrations, type Migration } from './migrations.js';

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
