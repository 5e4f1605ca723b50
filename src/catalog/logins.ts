/**
 * The functions' own database logins (AWS: the secrets ReaderDatabaseLogin and
 * WriterDatabaseLogin, set by the deploy's migration, functions/migrate). Each joins a
 * role the migrations make and holds nothing of its own. The reader serves what the
 * catalog holds and writes only its counters (`offsetlake_catalog_reader`, migrations 11
 * and 15; Iceberg snapshots it cuts through the owner's function): a leaked reader
 * credential cannot change a table, a partition, a lease, or a byte served. The
 * writers change rows but own no table (`offsetlake_catalog_writer`, migration 12): they
 * cannot change the schema or the migrations' record. Only migrate logs in as the owner.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { inTransaction, type Catalog } from './db.js';

export const catalogReaderRole = 'offsetlake_catalog_reader';
export const catalogWriterRole = 'offsetlake_catalog_writer';

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
  if (!/^[\x21-\x7e]+$/.test(password)) throw new Error('a login password must be printable ASCII without spaces');
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface CatalogLogin {
  username: string;
  password: string;
}

/** The reader's login, in `offsetlake_catalog_reader`. */
export function ensureReaderLogin(catalog: Catalog, login: CatalogLogin): Promise<'created' | 'updated'> {
  return ensureCatalogLogin(catalog, catalogReaderRole, login);
}

/** The writing functions' login, in `offsetlake_catalog_writer`. */
export function ensureWriterLogin(catalog: Catalog, login: CatalogLogin): Promise<'created' | 'updated'> {
  return ensureCatalogLogin(catalog, catalogWriterRole, login);
}

/**
 * Creates a login, or sets its password, as a member of `group`. Run after the
 * migrations, on every deploy: the password is the secret's current one (rotation
 * changes it; a deploy after a rotation sets it to what it already is).
 */
export async function ensureCatalogLogin(catalog: Catalog, group: string, login: CatalogLogin): Promise<'created' | 'updated'> {
  const verifier = scramVerifier(login.password);
  return inTransaction(catalog, async (client) => {
    const self = await client.query<{ user: string }>('SELECT current_user AS user');
    // A function's secret naming the migrating login would hand that function its password.
    if (self.rows[0]?.user === login.username) throw new Error(`the login "${login.username}" for ${group} is the login that migrates the catalog: give it a login of its own`);
    const groupRow = await client.query(`SELECT FROM pg_roles WHERE rolname = $1`, [group]);
    if (groupRow.rowCount === 0) {
      throw new Error(`role ${group} does not exist: the migrations could not create it (the migrating login needs CREATEROLE), so "${login.username}" cannot join it`);
    }
    const existing = await client.query<{ rolsuper: boolean; rolcreaterole: boolean; rolcreatedb: boolean; rolbypassrls: boolean }>(
      'SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = $1', [login.username]);
    const found = existing.rows[0];
    if (found && (found.rolsuper || found.rolcreaterole || found.rolcreatedb || found.rolbypassrls)) {
      throw new Error(`the login "${login.username}" exists with rights of its own (superuser, createrole, createdb or bypassrls): not making it a ${group} login`);
    }
    // Utility statements take no bind parameters: format() quotes the name and the verifier.
    const statement = found
      ? `SELECT format('ALTER ROLE %I WITH LOGIN INHERIT PASSWORD %L', $1::text, $2::text) AS sql`
      : `SELECT format('CREATE ROLE %I WITH LOGIN INHERIT PASSWORD %L', $1::text, $2::text) AS sql`;
    const sql = (await client.query<{ sql: string }>(statement, [login.username, verifier])).rows[0]!.sql;
    await client.query(sql);
    const grant = (await client.query<{ sql: string }>(`SELECT format('GRANT %I TO %I', $1::text, $2::text) AS sql`, [group, login.username])).rows[0]!.sql;
    await client.query(grant);
    return found ? 'updated' : 'created';
  });
}
