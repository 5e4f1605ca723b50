/**
 * Logins that can only read the catalog, for the SQL `attach` hands out: whoever pastes it
 * holds the login, so each person or tool gets one of their own (`offsetlake login
 * create`). A login is in role offsetlake_ducklake_reader (which sees schema ducklake
 * only, migration 6), writes nothing, creates no temporary table and no large object
 * (migration 16), and writers wait on nothing it can take (migration 10).
 *
 * Its bounds, and who can lift them. Postgres lets any login SET, or ALTER ROLE itself
 * SET, a parameter of context user (statement_timeout, idle_in_transaction_session_timeout,
 * default_transaction_read_only, work_mem) and change its own password; so those set here
 * are defaults, and the login's own ALTER ROLE reaches no other login. What it cannot
 * lift: its CONNECTION LIMIT and temp_file_limit (a superuser's parameter), set here;
 * and the watch (endOverdueDuckLakeSessions), run by serve and the AWS tick as the owner,
 * which cancels a statement and ends a session idle in a transaction past the bounds
 * whatever the session set. Its transactions are read-only by the grants, not by the
 * default. work_mem it can raise: no setting caps it (say so; connections bound how many).
 */
import { randomBytes } from 'node:crypto';
import type { Catalog } from './db.js';
import { ensureCatalogLogin, type CatalogLogin } from './logins.js';
import { log } from '../common/log.js';

/** The bounds of a reader login (ALTER ROLE … SET, CONNECTION LIMIT, and the watch's). */
export const readerLoginLimits = {
  statement_timeout: '5min',
  statementMs: 5 * 60_000,
  // DuckLake holds one read-only transaction open while DuckDB scans (its file list and
  // statistics stay one snapshot): a scan that rebuilds from Kafka for minutes must not be
  // cut off at its COMMIT. It holds no lock a writer waits on (migration 10).
  idle_in_transaction_session_timeout: '1h',
  idleInTransactionMs: 60 * 60_000,
  default_transaction_read_only: 'on',
  // A superuser's parameter: the login cannot raise it. The spill of one session at most.
  temp_file_limit: '1GB',
  connections: 20,
} as const;

/** How often serve runs the watch: a bound holds to within this much. */
export const overdueWatchEveryMs = 15_000;

export const duckLakeReaderRole = 'offsetlake_ducklake_reader';

/**
 * Makes `login` a reader login of the DuckLake (created, or its password set again), and
 * brings it to the bounds above. Run after the migrations (migration 6 makes the role).
 * temp_file_limit needs a superuser (or SET granted on it); without, it is left to the
 * server's (on AWS the parameter group's) and a warning says so.
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
  const tempLimit = (await catalog.query<{ sql: string }>(`SELECT format('ALTER ROLE %I SET temp_file_limit = %L', $1::text, $2::text) AS sql`, [login.username, readerLoginLimits.temp_file_limit])).rows[0]!.sql;
  try {
    await catalog.query(tempLimit);
  } catch (error) {
    if ((error as { code?: string }).code !== '42501') throw error;
    log('warn', `the login "${login.username}" keeps the server's temp_file_limit: ${(error as Error).message} (set temp_file_limit on the server, as the AWS stack's parameter group does)`);
  }
}

/** What a login's name may be: the identifier rule of table names, so it needs no quoting. */
export function loginNameProblem(name: string): string | undefined {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) return `a login's name is 1 to 63 lowercase letters, digits and _, not starting with a digit; got "${name}"`;
  if (name.startsWith('pg_')) return `a login's name cannot start with pg_ (Postgres keeps those); got "${name}"`;
  return undefined;
}

/**
 * A DuckLake reader login of one's own (`offsetlake login create`), with a new password:
 * created, or, when it is a DuckLake reader login already, its password set anew. A role of
 * that name that is anything else (the owner, a function's login) is refused.
 */
export async function createDuckLakeReaderLogin(catalog: Catalog, name: string): Promise<{ login: CatalogLogin; created: boolean }> {
  const problem = loginNameProblem(name);
  if (problem) throw new Error(problem);
  const exists = (await catalog.query('SELECT FROM pg_roles WHERE rolname = $1', [name])).rowCount !== 0;
  if (exists && !(await duckLakeReaderLogins(catalog)).some((login) => login.name === name)) {
    throw new Error(`a role "${name}" exists and is not a DuckLake reader login: choose another name`);
  }
  const login = { username: name, password: randomBytes(18).toString('base64url') };
  await ensureDuckLakeReaderLogin(catalog, login);
  return { login, created: !exists };
}

/** A DuckLake reader login as `offsetlake login list` shows it. */
export interface DuckLakeReaderLogin {
  name: string;
  connectionLimit: number;
  connections: number;
  /** Its ALTER ROLE … SET defaults (name=value), its own changes included. */
  settings: string[];
}

/** Every login that is a direct member of offsetlake_ducklake_reader, by name. */
export async function duckLakeReaderLogins(catalog: Catalog): Promise<DuckLakeReaderLogin[]> {
  const result = await catalog.query<{ name: string; connection_limit: number; connections: number; settings: string[] | null }>(
    `SELECT r.rolname AS name, r.rolconnlimit AS connection_limit,
            (SELECT count(*)::int FROM pg_stat_activity a WHERE a.usesysid = r.oid) AS connections,
            (SELECT s.setconfig FROM pg_db_role_setting s WHERE s.setrole = r.oid AND s.setdatabase = 0) AS settings
       FROM pg_roles r JOIN pg_auth_members m ON m.member = r.oid AND NOT m.admin_option
      WHERE m.roleid = (SELECT oid FROM pg_roles WHERE rolname = $1) AND r.rolcanlogin
      ORDER BY r.rolname`,
    [duckLakeReaderRole],
  );
  return result.rows.map((row) => ({ name: row.name, connectionLimit: row.connection_limit, connections: row.connections, settings: row.settings ?? [] }));
}

/**
 * Drops a DuckLake reader login and ends its sessions; false when there was none. A login
 * of another kind (not a direct member of offsetlake_ducklake_reader) is refused.
 */
export async function dropDuckLakeReaderLogin(catalog: Catalog, name: string): Promise<boolean> {
  const exists = await catalog.query('SELECT FROM pg_roles WHERE rolname = $1', [name]);
  if (exists.rowCount === 0) return false;
  if (!(await duckLakeReaderLogins(catalog)).some((login) => login.name === name)) {
    throw new Error(`"${name}" is not a DuckLake reader login (not in role ${duckLakeReaderRole}): not dropping it`);
  }
  const drop = (await catalog.query<{ sql: string }>(`SELECT format('DROP ROLE %I', $1::text) AS sql`, [name])).rows[0]!.sql;
  // NOLOGIN first, so that no new session starts between ending its sessions and the drop.
  await catalog.query((await catalog.query<{ sql: string }>(`SELECT format('ALTER ROLE %I NOLOGIN', $1::text) AS sql`, [name])).rows[0]!.sql);
  await catalog.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]);
  await catalog.query(drop);
  return true;
}

export interface OverdueSession {
  pid: number;
  login: string;
  overdue: 'statement' | 'idle in transaction';
}

/**
 * The watch: cancels each DuckLake reader login's statement running past the bound and
 * ends each of its sessions idle in a transaction past the bound, whatever the session
 * SET (migration 16's end_overdue_ducklake_sessions, run as the migrating login).
 */
export async function endOverdueDuckLakeSessions(catalog: Catalog, limits: { statementMs: number; idleInTransactionMs: number } = readerLoginLimits): Promise<OverdueSession[]> {
  const result = await catalog.query<OverdueSession>('SELECT pid, login, overdue FROM offsetlake.end_overdue_ducklake_sessions($1, $2)', [limits.statementMs, limits.idleInTransactionMs]);
  return result.rows;
}

/** What the watch says of a session it signalled. */
export function overdueSessionText(session: OverdueSession): string {
  return `ended the ${session.overdue === 'statement' ? 'statement' : 'session'} of DuckLake reader login "${session.login}" (pid ${session.pid}): ${session.overdue} past its bound`;
}

/**
 * Runs the watch every `everyMs` until stopped, logging what it ended; a failed run is
 * logged and the next one tried, except a refusal (this login may not run it): then it stops.
 */
export function watchDuckLakeSessions(catalog: Catalog, everyMs = overdueWatchEveryMs, limits: { statementMs: number; idleInTransactionMs: number } = readerLoginLimits): { stop: () => void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    endOverdueDuckLakeSessions(catalog, limits)
      .then((ended) => {
        for (const session of ended) log('warn', overdueSessionText(session));
      })
      .catch((error: Error & { code?: string }) => {
        // A login that may not run it (not the catalog's owner) never will: said once.
        if (error.code === '42501' || error.code === '42883') {
          clearInterval(timer);
          log('warn', `the DuckLake reader logins' bounds are not watched by this process: ${error.message}`);
        } else log('warn', `the DuckLake reader logins' watch failed: ${error.message}`);
      })
      .finally(() => { running = false; });
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
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
