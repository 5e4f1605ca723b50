import { localReaderDatabaseUrl } from '../../src/stack/postgres.js';
import { stackConfig } from '../../src/stack/config.js';
import { randomUUID } from 'node:crypto';
import pg from 'pg';

/**
 * A new, empty database on the test Postgres, so a test sees a catalog no other test
 * touches. `drop()` removes it.
 */
export async function freshDatabase(prefix = 'test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('DATABASE_URL is not set: the test stack did not start');
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A test catalog's URL as the local stack's reader login (made by `stack up`), straight to
 * Postgres: PgBouncer logs in with the passwords of its own user list, the owner's only.
 */
export function asStackReader(databaseUrl: string): string {
  const reader = new URL(localReaderDatabaseUrl(stackConfig())!);
  const url = new URL(databaseUrl);
  url.username = reader.username;
  url.password = reader.password;
  url.port = String(stackConfig().postgresPort);
  return url.toString();
}
