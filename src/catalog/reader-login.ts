/**
 * Logins that can only read the catalog, for the SQL `attach` hands out: whoever pastes it
 * holds the login. The login is in role offsetlake_ducklake_reader (which sees schema
 * ducklake only, migration 6), its transactions are read-only by default, and it is
 * bounded so that it cannot hold a connection, a transaction or a statement for long;
 * and writers wait on nothing it can take (migration 10).
 */
import type pg from 'pg';
import type { Catalog } from './db.js';

/** A pool, or one connection of it or of its own (the stack's superuser's). */
type Queryable = Catalog | pg.ClientBase;

/** The bounds of a reader login (ALTER ROLE … SET, CONNECTION LIMIT). */
export const readerLoginLimits = {
  statement_timeout: '5min',
  idle_in_transaction_session_timeout: '30s',
  default_transaction_read_only: 'on',
  connections: 20,
} as const;

export const readerRole = 'offsetlake_ducklake_reader';

/**
 * Makes `login` a reader login with `password` (created, or brought back to these bounds
 * and this password). Roles belong to the server, not to one database: this needs a role
 * that may create roles. The reader role is made here when no catalog made it yet; each
 * catalog's migrations grant it what it reads.
 */
export async function ensureReaderLogin(client: Queryable, login: string, password: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(login)) throw new Error(`a reader login's name must be lowercase letters, digits and _, got "${login}"`);
  await client.query(`DO $do$
    BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${readerRole}') THEN CREATE ROLE ${readerRole} NOLOGIN; END IF;
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${login}') THEN CREATE ROLE ${login} LOGIN; END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; -- made by a concurrent stack up
    END
  $do$`);
  const setPassword = await client.query<{ sql: string }>(
    `SELECT format('ALTER ROLE %I WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT %s PASSWORD %L', $1::text, $2::int, $3::text) AS sql`,
    [login, readerLoginLimits.connections, password],
  );
  await client.query(setPassword.rows[0]!.sql);
  await client.query(`GRANT ${readerRole} TO ${login}`);
  for (const setting of ['statement_timeout', 'idle_in_transaction_session_timeout', 'default_transaction_read_only'] as const) {
    await client.query(`ALTER ROLE ${login} SET ${setting} = '${readerLoginLimits[setting]}'`);
  }
}

/**
 * Why the connection's role can write the catalog, or undefined when it can only read:
 * a superuser (who can also run programs on the server), or one with INSERT, UPDATE,
 * DELETE or TRUNCATE on a table or view of the catalog's schemas (the first few named).
 */
export async function catalogWriteAccess(client: Queryable): Promise<string | undefined> {
  const answer = await client.query<{ role: string; superuser: boolean; writable: string[] }>(
    `SELECT current_user AS role, r.rolsuper AS superuser,
            coalesce((SELECT array_agg(n.nspname || '.' || c.relname ORDER BY n.nspname, c.relname)
                        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE n.nspname IN ('offsetlake', 'ducklake') AND c.relkind IN ('r', 'v', 'p')
                         AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')), '{}') AS writable
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const row = answer.rows[0];
  if (!row) return undefined;
  if (row.superuser) return `${row.role} is a superuser (it can change or drop the catalog, and run programs on its server)`;
  if (row.writable.length === 0) return undefined;
  const named = row.writable.slice(0, 3).join(', ') + (row.writable.length > 3 ? ` and ${row.writable.length - 3} more` : '');
  return `${row.role} may write ${named}`;
}
