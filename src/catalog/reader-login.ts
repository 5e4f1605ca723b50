/**
 * The reader's own database login (AWS: the secret ReaderDatabaseLogin, set by the
 * deploy's migration, functions/migrate). The reader serves what the catalog holds and
 * writes only what reads write, so its login joins `offsetlake_catalog_reader`
 * (migration 10) and holds nothing of its own: a leaked reader credential cannot change
 * a table, a partition or a lease.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { inTransaction, type Catalog } from './db.js';

export const catalogReaderRole = 'offsetlake_catalog_reader';

// Postgres's own default (scram_iterations); the verifier carries its count.
const scramIterations = 4096;

/**
 * A SCRAM-SHA-256 verifier as Postgres stores it (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`,
 * RFC 5802/7677). Given to CREATE/ALTER ROLE … PASSWORD, so the password itself never
 * reaches the server, its statement log or pg_stat_statements.
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = scramIterations): string {
  // Postgres SASLpreps the password at login; printable ASCII is left as it is, so the
  // verifier made here from the raw bytes is the one it checks against.
  if (!/^[\x21-\x7e]+$/.test(password)) throw new Error('the reader login password must be printable ASCII without spaces');
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface ReaderLogin {
  username: string;
  password: string;
}

/**
 * Creates the reader's login, or sets its password, as a member of the catalog reader
 * role. Run after the migrations, on every deploy: the password is the secret's current
 * one (rotation changes it; a deploy after a rotation sets it to what it already is).
 */
export async function ensureReaderLogin(catalog: Catalog, login: ReaderLogin): Promise<'created' | 'updated'> {
  const verifier = scramVerifier(login.password);
  return inTransaction(catalog, async (client) => {
    const self = await client.query<{ user: string }>('SELECT current_user AS user');
    // The reader's secret naming the migrating login would hand the reader its password.
    if (self.rows[0]?.user === login.username) throw new Error(`the reader login "${login.username}" is the login that migrates the catalog: give the reader a login of its own`);
    const group = await client.query(`SELECT FROM pg_roles WHERE rolname = $1`, [catalogReaderRole]);
    if (group.rowCount === 0) {
      throw new Error(`role ${catalogReaderRole} does not exist: migration 10 could not create it (the migrating login needs CREATEROLE), so the reader has no login`);
    }
    const existing = await client.query<{ rolsuper: boolean; rolcreaterole: boolean; rolcreatedb: boolean; rolbypassrls: boolean }>(
      'SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = $1', [login.username]);
    const found = existing.rows[0];
    if (found && (found.rolsuper || found.rolcreaterole || found.rolcreatedb || found.rolbypassrls)) {
      throw new Error(`the reader login "${login.username}" exists with more rights than reading (superuser, createrole, createdb or bypassrls): not reusing it`);
    }
    // Utility statements take no bind parameters: format() quotes the name and the verifier.
    const statement = found
      ? `SELECT format('ALTER ROLE %I WITH LOGIN INHERIT PASSWORD %L', $1::text, $2::text) AS sql`
      : `SELECT format('CREATE ROLE %I WITH LOGIN INHERIT PASSWORD %L', $1::text, $2::text) AS sql`;
    const sql = (await client.query<{ sql: string }>(statement, [login.username, verifier])).rows[0]!.sql;
    await client.query(sql);
    const grant = (await client.query<{ sql: string }>(`SELECT format('GRANT %I TO %I', $1::text, $2::text) AS sql`, [catalogReaderRole, login.username])).rows[0]!.sql;
    await client.query(grant);
    return found ? 'updated' : 'created';
  });
}
