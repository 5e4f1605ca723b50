/**
 * Logins that can only read the catalog, for the SQL `attach` hands out: whoever pastes it
 * holds the login. The login is in role offsetlake_ducklake_reader (which sees schema
 * ducklake only, migration 6), its transactions are read-only by default, and it is
 * bounded so that it cannot hold a connection, a transaction or a statement for long;
 * and writers wait on nothing it can take (migration 10).
 */
import type { Catalog } from './db.js';
import { ensureCatalogLogin, type CatalogLogin } from './logins.js';

/** The bounds of a reader login (ALTER ROLE … SET, CONNECTION LIMIT). */
export const readerLoginLimits = {
  statement_timeout: '5min',
  // DuckLake holds one read-only transaction open while DuckDB scans (its file list and
  // statistics stay one snapshot): a scan that rebuilds from Kafka for minutes must not be
  // cut off at its COMMIT. It holds no lock a writer waits on (migration 10).
  idle_in_transaction_session_timeout: '1h',
  default_transaction_read_only: 'on',
  connections: 20,
} as const;

export const duckLakeReaderRole = 'offsetlake_ducklake_reader';

/**
 * Makes `login` a reader login of the DuckLake (created, or its password set again), and
 * brings it to the bounds above. Run after the migrations (migration 6 makes the role).
 */
export async function ensureDuckLakeReaderLogin(catalog: Catalog, login: CatalogLogin): Promise<void> {
  await ensureCatalogLogin(catalog, duckLakeReaderRole, login);
  const statements = await catalog.query<{ sql: string }>(
    `SELECT format('ALTER ROLE %I CONNECTION LIMIT %s', $1::text, $2::int) AS sql
     UNION ALL SELECT format('ALTER ROLE %I SET %s = %L', $1::text, s.name, s.value)
       FROM (VALUES ('statement_timeout', $3::text), ('idle_in_transaction_session_timeout', $4::text), ('default_transaction_read_only', $5::text)) AS s(name, value)`,
    [login.username, readerLoginLimits.connections, readerLoginLimits.statement_timeout, readerLoginLimits.idle_in_transaction_session_timeout, readerLoginLimits.default_transaction_read_only],
  );
  for (const { sql } of statements.rows) await catalog.query(sql);
}

/**
 * Why the connection's role can write the catalog, or undefined when it can only read:
 * a superuser (who can also run programs on the server), or one with INSERT, UPDATE,
 * DELETE or TRUNCATE on a table or view of the catalog's schemas (the first few named).
 */
export async function catalogWriteAccess(client: Catalog): Promise<string | undefined> {
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
