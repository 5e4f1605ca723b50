import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openCatalog, type Catalog } from '../../src/catalog/db.js';
import { insertGranules } from '../../src/catalog/file-writes.js';
import { migrateCatalog, requireCatalogVersion } from '../../src/catalog/migrate.js';
import { latestCatalogVersion } from '../../src/catalog/migrations.js';
import { publishReaderCounters } from '../../src/catalog/reader-counters.js';
import { ensureReaderLogin, ensureWriterLogin, type CatalogLogin } from '../../src/catalog/logins.js';
import { createDuckLakeReaderLogin, dropDuckLakeReaderLogin, duckLakeReaderLogins, endOverdueDuckLakeSessions, ensureDuckLakeReaderLogin, watchDuckLakeSessions } from '../../src/catalog/reader-login.js';
import { acquireLease, releaseLease } from '../../src/catalog/leases.js';
import { defaultSettings } from '../../src/table/settings.js';
import { createTable, dropTable } from '../../src/catalog/tables.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { freshDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';
import { setLogSink } from '../../src/common/log.js';
import { cutSnapshotIfChanged } from '../../src/iceberg/snapshots.js';
import { stackConfig } from '../../src/stack/config.js';

// Logins belong to the server: one of this run's own, so parallel runs do not share it.
const username = `offsetlake_reader_${randomBytes(4).toString('hex')}`;
const writerName = `offsetlake_writer_${randomBytes(4).toString('hex')}`;
const password = randomBytes(18).toString('base64url');
let db: Awaited<ReturnType<typeof freshDatabase>>;
let owner: Catalog;
let reader: Catalog;

beforeAll(async () => {
  db = await freshDatabase('reader_login');
  owner = openCatalog(db.url, 1);
  await migrateCatalog(owner);
});
afterAll(async () => {
  await reader?.end();
  await owner.query(`DROP ROLE IF EXISTS ${username}`).catch(() => {});
  await owner.query(`DROP OWNED BY ${writerName}`).catch(() => {});
  await owner.query(`DROP ROLE IF EXISTS ${writerName}`).catch(() => {});
  await owner.end();
  await db.drop();
});

// Straight to Postgres: the test pooler logs in with the passwords of its own user list, the owner's only.
const readerUrl = (secret: string, login = username): string => {
  const url = new URL(db.url);
  url.username = login;
  url.password = secret;
  url.port = String(stackConfig().postgresPort);
  return url.toString();
};

describe('the reader\'s own login (AWS: the ReaderDatabaseLogin secret, made by the deploy\'s migration)', () => {
  it('is created, then its password set again, idempotently; the migrating login is refused as the reader\'s', async () => {
    expect(await ensureReaderLogin(owner, { username, password })).toBe('created');
    expect(await ensureReaderLogin(owner, { username, password })).toBe('updated');
    const self = (await owner.query<{ user: string }>('SELECT current_user AS user')).rows[0]!.user;
    await expect(ensureReaderLogin(owner, { username: self, password })).rejects.toThrow('is the login that migrates the catalog');
    reader = openCatalog(readerUrl(password), 1);
    expect(await requireCatalogVersion(reader)).toBe(latestCatalogVersion);
  });

  it('reads every catalog table and writes only its counters: a forged granule, page index or Iceberg row is refused by Postgres', async () => {
    for (const table of ['lake_table', 'lake_partition', 'data_file', 'file_column_stats', 'granule', 'table_schema', 'table_column', 'secondary_index', 'index_entry', 'reader_counters', 'iceberg_table', 'iceberg_snapshot', 'iceberg_file']) {
      await reader.query(`SELECT count(*) FROM offsetlake.${table}`);
    }
    await publishReaderCounters(reader, 'reader-1', new Date(), { reads: 1 });
    await publishReaderCounters(reader, 'reader-1', new Date(), { reads: 2 });
    expect((await reader.query('SELECT counters FROM offsetlake.reader_counters')).rows).toEqual([{ counters: { reads: 2 } }]);
    // Issue 46: each of these changed what serve hands out as a file's bytes or which files a snapshot names.
    await expect(insertGranules(reader, 1n, { granules: [{ rowGroup: 0, startOffset: 0n, endOffset: 1n, rowCount: 1, kafkaBytes: 1, chunkSha256: new Uint8Array(32) }], pageIndex: new Uint8Array(), tailSha256: new Uint8Array(32) }))
      .rejects.toMatchObject({ code: '42501' });
    for (const sql of [
      'UPDATE offsetlake.data_file SET page_index = NULL WHERE page_index IS NULL',
      "UPDATE offsetlake.data_file SET tail_sha256 = decode(repeat('00', 32), 'hex')",
      "UPDATE offsetlake.data_file SET page_index = '\\x00' WHERE data_file_id = 1 AND page_index IS NULL",
      'UPDATE offsetlake.iceberg_file SET removed_sequence = added_sequence + 1',
      'INSERT INTO offsetlake.iceberg_file (data_file_id, table_id, added_sequence) VALUES (1, 1, 1)',
      "INSERT INTO offsetlake.iceberg_snapshot (table_id, sequence_number, snapshot_id, cut_at, schema_version, summary) VALUES (1, 1, 1, now(), 1, '{}')",
      'UPDATE offsetlake.iceberg_table SET last_sequence = 0',
      'INSERT INTO offsetlake.iceberg_table (table_id) VALUES (1)',
    ]) {
      await expect(reader.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
  });

  it('holds, by Postgres\'s own account, no write on any relation but reader_counters (INSERT, UPDATE), and runs no function with its owner\'s rights but the snapshot cut; no temp table, no large object', async () => {
    const writable = await reader.query<{ relation: string; privilege: string }>(
      `SELECT n.nspname || '.' || c.relname AS relation, p.privilege
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(privilege)
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
          AND (has_table_privilege(c.oid, p.privilege) OR (p.privilege IN ('INSERT', 'UPDATE', 'REFERENCES') AND has_any_column_privilege(c.oid, p.privilege)))
        ORDER BY 1, 2`);
    expect(writable.rows).toEqual([{ relation: 'offsetlake.reader_counters', privilege: 'INSERT' }, { relation: 'offsetlake.reader_counters', privilege: 'UPDATE' }]);
    // information_schema says the same of the role's grants (column grants included)
    const granted = await reader.query<{ table_name: string; privilege_type: string }>(
      `SELECT DISTINCT table_name, privilege_type FROM information_schema.column_privileges
        WHERE grantee = 'offsetlake_catalog_reader' AND privilege_type <> 'SELECT' ORDER BY 1, 2`);
    expect(granted.rows).toEqual([{ table_name: 'reader_counters', privilege_type: 'INSERT' }, { table_name: 'reader_counters', privilege_type: 'UPDATE' }]);
    const functions = await reader.query<{ name: string }>(
      `SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.prosecdef AND has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1`);
    expect(functions.rows).toEqual([{ name: 'cut_iceberg_snapshot' }]);
    expect((await reader.query('SELECT has_database_privilege(current_database(), \'TEMPORARY\') AS temp')).rows).toEqual([{ temp: false }]);
    await expect(reader.query('CREATE TEMP TABLE scratch (a int)')).rejects.toMatchObject({ code: '42501' });
    await expect(reader.query('SELECT lo_create(0)')).rejects.toMatchObject({ code: '42501' });
    await expect(reader.query('SELECT offsetlake.end_overdue_ducklake_sessions(0, 0)')).rejects.toMatchObject({ code: '42501' });
  });

  it('cuts Iceberg snapshots (the catalog on serve\'s HTTP face does, on LoadTable) through the owner\'s function: files and summary from data_file', async () => {
    const table = await createTable(owner, { name: 'iceberg_cut', topic: 'iceberg_cut', topicId: null, format: 'json', settings: { ...defaultSettings }, partitionStarts: new Map([[0, 0n]]) }, initialSchema('json'));
    await owner.query(
      `INSERT INTO offsetlake.data_file (table_id, partition_id, start_offset, end_offset, time_bucket, record_count, file_size_bytes, footer_size, footer, sha256, seal_reason, schema_version, encoder_version, source, lease_epoch)
       VALUES ($1, 0, 0, 1, now(), 1, 100, 8, '\\x0000000050415231', $2, 'flush', 1, 'test', 'live', 0)`, [table.tableId, Buffer.alloc(32)]);
    expect(await cutSnapshotIfChanged(reader, table.tableId, { intervalMs: 0, maxSnapshots: 10 })).toBe(1n);
    expect((await reader.query('SELECT count(*)::int AS n FROM offsetlake.iceberg_file WHERE table_id = $1', [table.tableId])).rows).toEqual([{ n: 1 }]);
    const snapshot = (await reader.query<{ snapshot_id: string; summary: Record<string, string> }>('SELECT snapshot_id, summary FROM offsetlake.iceberg_snapshot WHERE table_id = $1', [table.tableId])).rows[0]!;
    expect(BigInt(snapshot.snapshot_id)).toBeGreaterThan(0n);
    expect(BigInt(snapshot.snapshot_id)).toBeLessThan(2n ** 53n);
    expect(snapshot.summary).toMatchObject({ operation: 'append', 'added-data-files': '1', 'added-records': '1', 'total-records': '1', 'total-files-size': '100' });
    // nothing changed: no second cut, whatever interval the caller gives
    expect(await cutSnapshotIfChanged(reader, table.tableId, { intervalMs: 0, maxSnapshots: 10 })).toBe(1n);
  });

  it('may change nothing else: tables, partitions, leases, files\' other columns, indexes, migrations, and may create no table', async () => {
    for (const sql of [
      "INSERT INTO offsetlake.lake_table (table_name, topic, format, settings) VALUES ('t', 't', 'kafka', '{}')",
      'UPDATE offsetlake.lake_partition SET lease_owner = NULL',
      'UPDATE offsetlake.data_file SET footer = NULL',
      'DELETE FROM offsetlake.granule',
      'DELETE FROM offsetlake.reader_counters',
      'UPDATE offsetlake.secondary_index SET reads_used = 0',
      'UPDATE offsetlake.schema_migration SET name = name',
      'CREATE TABLE offsetlake.extra (a int)',
      'CREATE TABLE public.extra (a int)',
    ]) {
      await expect(reader.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
  });

  it('logs in only with the secret\'s current password after the deploy sets a new one', async () => {
    const next = randomBytes(18).toString('base64url');
    expect(await ensureReaderLogin(owner, { username, password: next })).toBe('updated');
    const stale = openCatalog(readerUrl(password), 1);
    await expect(stale.query('SELECT 1')).rejects.toMatchObject({ code: '28P01' });
    await stale.end();
    const fresh = openCatalog(readerUrl(next), 1);
    expect((await fresh.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await fresh.end();
  });

  it('a pool whose password is asked for per connection (the Lambda functions\' catalog) follows a new password without a restart', async () => {
    let current = randomBytes(18).toString('base64url');
    await ensureReaderLogin(owner, { username, password: current });
    const url = new URL(readerUrl('x'));
    url.password = '';
    const pool = openCatalog(url.toString(), 1, async () => current);
    expect((await pool.query('SELECT current_user AS user')).rows).toEqual([{ user: username }]);
    current = randomBytes(18).toString('base64url');
    await ensureReaderLogin(owner, { username, password: current });
    // Its connection is dropped (as a Lambda instance's idle one is): the next one logs in anew.
    (await pool.connect()).release(true);
    expect((await pool.query('SELECT current_user AS user')).rows).toEqual([{ user: username }]);
    await pool.end();
  });
});

describe('the writers\' own login (AWS: WriterDatabaseLogin, for indexer, backfill, index backfill, tick and retention)', () => {
  let writer: Catalog;
  const writerPassword = randomBytes(18).toString('base64url');
  afterAll(() => writer?.end());

  it('writes the catalog\'s rows as the engine does: a table with its partitions and schema, a lease taken and given back, the table dropped', async () => {
    expect(await ensureWriterLogin(owner, { username: writerName, password: writerPassword })).toBe('created');
    expect(await ensureWriterLogin(owner, { username: writerName, password: writerPassword })).toBe('updated');
    writer = openCatalog(readerUrl(writerPassword, writerName), 2);
    expect(await requireCatalogVersion(writer)).toBe(latestCatalogVersion);
    const table = await createTable(writer, { name: 'writes', topic: 'writes', topicId: null, format: 'json', settings: { ...defaultSettings }, partitionStarts: new Map([[0, 0n]]) }, initialSchema('json'));
    const lease = await acquireLease(writer, table.tableId, 0, 'writer-test', 10_000);
    expect(lease).toBeDefined();
    expect(await releaseLease(writer, lease!)).toBe(true);
    await writer.query('DELETE FROM offsetlake.reader_counters');
    expect(await dropTable(writer, 'writes')).toBe(true);
  });

  it('owns nothing: no DDL, no TRUNCATE, no writing the migrations\' record', async () => {
    for (const sql of [
      'CREATE TABLE offsetlake.extra (a int)',
      'ALTER TABLE offsetlake.lake_table ADD COLUMN extra int',
      'DROP TABLE offsetlake.granule',
      'TRUNCATE offsetlake.reader_counters',
      "INSERT INTO offsetlake.schema_migration (version, name) VALUES (999, 'x')",
      'DELETE FROM offsetlake.schema_migration',
    ]) {
      await expect(writer.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
  });
});

describe('DuckLake reader logins, one per person (`offsetlake login create`): bounds the login cannot lift, no lock-out of another', () => {
  const alice = `offsetlake_alice_${randomBytes(4).toString('hex')}`;
  const bob = `offsetlake_bob_${randomBytes(4).toString('hex')}`;
  let aliceLogin: CatalogLogin;
  let bobLogin: CatalogLogin;
  const opened: pg.Client[] = [];
  const connect = async (login: CatalogLogin): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: readerUrl(login.password, login.username) });
    client.on('error', () => {});
    await client.connect();
    opened.push(client);
    return client;
  };
  const setting = async (client: pg.Client, name: string): Promise<string> => (await client.query(`SHOW ${name}`)).rows[0][name];
  afterAll(async () => {
    await Promise.all(opened.map((client) => client.end().catch(() => {})));
    for (const name of [alice, bob]) await dropDuckLakeReaderLogin(owner, name).catch(() => {});
  });

  it('are made with the bounds, listed, and a name already another kind of role is refused', async () => {
    const made = await createDuckLakeReaderLogin(owner, alice);
    expect(made.created).toBe(true);
    aliceLogin = made.login;
    bobLogin = (await createDuckLakeReaderLogin(owner, bob)).login;
    const listed = (await duckLakeReaderLogins(owner)).filter((login) => login.name === alice);
    expect(listed).toEqual([{ name: alice, connectionLimit: 20, connections: 0, settings: expect.arrayContaining(['statement_timeout=5min', 'idle_in_transaction_session_timeout=1h', 'default_transaction_read_only=on', 'temp_file_limit=1GB']) }]);
    await expect(createDuckLakeReaderLogin(owner, writerName)).rejects.toThrow('is not a DuckLake reader login');
    await expect(createDuckLakeReaderLogin(owner, 'Robert"; DROP')).rejects.toThrow("a login's name is");
    const client = await connect(aliceLogin);
    expect(await setting(client, 'statement_timeout')).toBe('5min');
    expect(await setting(client, 'temp_file_limit')).toBe('1GB');
  });

  it('one login\'s ALTER ROLE and password change reach no other: the other keeps its bounds and logs in', async () => {
    const client = await connect(aliceLogin);
    // Read-only is a default the login lifts; then Postgres lets it change its own defaults
    // and password: they are its own alone.
    await client.query('SET default_transaction_read_only = off');
    await client.query(`ALTER ROLE ${alice} SET statement_timeout = 0`);
    await client.query(`ALTER ROLE ${alice} SET idle_in_transaction_session_timeout = 0`);
    await client.query(`ALTER ROLE ${alice} SET default_transaction_read_only = off`);
    await client.query(`ALTER ROLE ${alice} PASSWORD 'changed-by-alice'`);
    for (const sql of [
      `ALTER ROLE ${bob} SET statement_timeout = 0`,
      `ALTER ROLE ${bob} PASSWORD 'locked-out'`,
      `ALTER ROLE ${alice} CONNECTION LIMIT -1`,
      `ALTER ROLE ${bob} NOLOGIN`,
      `ALTER ROLE offsetlake_ducklake_reader SET statement_timeout = 0`,
      `ALTER ROLE ALL SET statement_timeout = 0`,
      `ALTER DATABASE ${new URL(db.url).pathname.slice(1)} SET statement_timeout = 0`,
    ]) {
      await expect(client.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
    const other = await connect(bobLogin);
    expect(await setting(other, 'statement_timeout')).toBe('5min');
    expect(await setting(other, 'idle_in_transaction_session_timeout')).toBe('1h');
    expect(await setting(other, 'default_transaction_read_only')).toBe('on');
  });

  it('cannot raise temp_file_limit, by SET or its own ALTER ROLE; a spill past it is Postgres\'s error', async () => {
    const client = await connect({ ...aliceLogin, password: 'changed-by-alice' });
    await client.query('SET default_transaction_read_only = off');
    for (const sql of ['SET temp_file_limit = -1', `ALTER ROLE ${alice} SET temp_file_limit = -1`, `ALTER ROLE ${alice} RESET temp_file_limit`]) {
      await expect(client.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
    // RESET ALL removes only what the login may set itself
    await client.query(`ALTER ROLE ${alice} RESET ALL`);
    expect(await setting(await connect({ ...aliceLogin, password: 'changed-by-alice' }), 'temp_file_limit')).toBe('1GB');
    // the bound made small by the owner for the test, so that the spill past it is quick
    await owner.query(`ALTER ROLE ${alice} SET temp_file_limit = '1MB'`);
    const fresh = await connect({ ...aliceLogin, password: 'changed-by-alice' });
    expect(await setting(fresh, 'temp_file_limit')).toBe('1MB');
    await fresh.query("SET work_mem = '64kB'");
    await expect(fresh.query('SELECT count(*) FROM (SELECT g FROM generate_series(1, 500000) g ORDER BY g DESC) s'))
      .rejects.toMatchObject({ code: '53400', message: 'temporary file size exceeds "temp_file_limit" (1024kB)' });
  });

  it('creates no temporary table, no large object, and writes no table of any schema', async () => {
    const client = await connect({ ...aliceLogin, password: 'changed-by-alice' });
    await client.query('SET default_transaction_read_only = off');
    for (const sql of ['CREATE TEMP TABLE scratch (a int)', 'SELECT lo_create(0)', 'SELECT lo_creat(-1)', "SELECT lo_from_bytea(0, '\\x00')", 'CREATE TABLE public.scratch (a int)']) {
      await expect(client.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
    const writable = await client.query(
      `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
          AND (has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') OR has_any_column_privilege(c.oid, 'INSERT, UPDATE'))`);
    expect(writable.rows).toEqual([]);
    await expect(client.query('SELECT offsetlake.cut_iceberg_snapshot(1, 0, 1)')).rejects.toMatchObject({ code: '42501' });
    // nor elsewhere on the stack's server: the databases every login may enter by default are closed to it
    for (const other of ['postgres', 'template1']) {
      const url = new URL(readerUrl('changed-by-alice', alice));
      url.pathname = `/${other}`;
      const elsewhere = new pg.Client({ connectionString: url.toString() });
      elsewhere.on('error', () => {});
      await expect(elsewhere.connect(), other).rejects.toMatchObject({ code: '42501', message: `permission denied for database "${other}"` });
      await elsewhere.end().catch(() => {});
    }
  });

  it('a statement past the bound is cancelled and a transaction idle past it ended by the watch, whatever the login SET', async () => {
    const client = await connect({ ...aliceLogin, password: 'changed-by-alice' });
    await client.query('SET statement_timeout = 0');
    await client.query('SET idle_in_transaction_session_timeout = 0');
    // its error is taken at once (a rejection left waiting is an unhandled one), looked at below
    const sleeping = client.query('SELECT pg_sleep(60)').then(() => undefined, (error: unknown) => error);
    const idle = await connect(bobLogin);
    await idle.query('SET idle_in_transaction_session_timeout = 0');
    await idle.query('BEGIN');
    await idle.query('SELECT 1');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const ended = await endOverdueDuckLakeSessions(owner, { statementMs: 1000, idleInTransactionMs: 1000 });
    expect(ended.map((s) => [s.login, s.overdue]).sort()).toEqual([[alice, 'statement'], [bob, 'idle in transaction']]);
    expect(await sleeping).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
    await expect(idle.query('SELECT 1')).rejects.toThrow();
    // the owner's own sessions and other logins are never touched
    expect((await owner.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('serve\'s watch runs by itself, and a login that may not run it is told once and stops', async () => {
    const lines: string[] = [];
    setLogSink((_level, message) => lines.push(message));
    try {
      const client = await connect(bobLogin);
      await client.query('SET statement_timeout = 0');
      const sleeping = client.query('SELECT pg_sleep(60)').then(() => undefined, (error: unknown) => error);
      const watch = watchDuckLakeSessions(owner, 200, { statementMs: 500, idleInTransactionMs: 500 });
      expect(await sleeping).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
      // the cancel reaches the session before the watch's answer reaches it
      await vi.waitFor(() => expect(lines.some((line) => line.startsWith(`ended the statement of DuckLake reader login "${bob}"`))).toBe(true));
      watch.stop();
      lines.length = 0;
      // the Lambda reader's login (its password set again: the tests above changed it)
      await ensureReaderLogin(owner, { username, password });
      const lambdaReader = openCatalog(readerUrl(password), 1);
      const refused = watchDuckLakeSessions(lambdaReader, 50);
      await new Promise((resolve) => setTimeout(resolve, 500));
      refused.stop();
      await lambdaReader.end();
      expect(lines).toEqual(["the DuckLake reader logins' bounds are not watched by this process: permission denied for function end_overdue_ducklake_sessions"]);
    } finally {
      setLogSink();
    }
  });

  it('is dropped with its sessions', async () => {
    const client = await connect(bobLogin);
    expect(await dropDuckLakeReaderLogin(owner, bob)).toBe(true);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    expect(await dropDuckLakeReaderLogin(owner, bob)).toBe(false);
    await expect(dropDuckLakeReaderLogin(owner, writerName)).rejects.toThrow('is not a DuckLake reader login');
  });
});

describe('`offsetlake login` as a user types it', () => {
  const carol = `offsetlake_carol_${randomBytes(4).toString('hex')}`;
  afterAll(() => dropDuckLakeReaderLogin(owner, carol).catch(() => false));

  it('create prints a catalog URL that logs in as a DuckLake reader login; list shows it; drop removes it', async () => {
    const created = await runCli(db.url, ['login', 'create', carol, '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { databaseUrl, created: isNew } = JSON.parse(created.stdout) as { databaseUrl: string; created: boolean };
    expect(isNew).toBe(true);
    const url = new URL(databaseUrl);
    expect(url.username).toBe(carol);
    const client = new pg.Client({ connectionString: readerUrl(decodeURIComponent(url.password), carol) });
    await client.connect();
    expect((await client.query('SELECT current_user AS user, pg_has_role(current_user, \'offsetlake_ducklake_reader\', \'MEMBER\') AS reader')).rows).toEqual([{ user: carol, reader: true }]);
    await client.end();
    const listed = JSON.parse((await runCli(db.url, ['login', 'list', '--json'])).stdout) as { name: string }[];
    expect(listed.map((login) => login.name)).toContain(carol);
    const human = await runCli(db.url, ['login', 'create', carol]);
    expect(human.stdout).toContain(`set a new password for DuckLake reader login ${carol}`);
    expect(human.stdout).toContain("offsetlake attach --database-url 'postgres://");
    const refused = await runCli(db.url, ['login', 'create', writerName]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`a role "${writerName}" exists and is not a DuckLake reader login`);
    expect((await runCli(db.url, ['login', 'drop', carol])).stdout).toBe(`dropped DuckLake reader login ${carol} (its sessions ended)\n`);
    expect((await runCli(db.url, ['login', 'drop', carol])).code).toBe(1);
    expect((await runCli(db.url, ['login', 'drop', carol, '--if-exists'])).code).toBe(0);
  });
});

describe('migrated by an owner that is not a superuser (an RDS master: CREATEROLE, pg_signal_backend)', () => {
  const master = `offsetlake_master_${randomBytes(4).toString('hex')}`;
  const masterPassword = randomBytes(18).toString('base64url');
  const dana = `offsetlake_dana_${randomBytes(4).toString('hex')}`;
  const database = `master_${randomBytes(4).toString('hex')}`;
  let asMaster: Catalog;

  beforeAll(async () => {
    await owner.query(`CREATE ROLE ${master} LOGIN CREATEROLE CREATEDB PASSWORD '${masterPassword}'`);
    await owner.query(`GRANT pg_signal_backend TO ${master}`);
    // As RDS's master has on roles it created (Postgres 16: ADMIN, neither INHERIT nor SET)
    await owner.query(`GRANT offsetlake_ducklake_reader, offsetlake_catalog_reader, offsetlake_catalog_writer TO ${master} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE`);
    await owner.query(`CREATE DATABASE ${database} OWNER ${master}`);
    const url = new URL(readerUrl(masterPassword, master));
    url.pathname = `/${database}`;
    asMaster = openCatalog(url.toString(), 2);
    await migrateCatalog(asMaster);
  });
  afterAll(async () => {
    await asMaster?.end();
    await owner.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
    await owner.query(`DROP ROLE IF EXISTS ${dana}`).catch(() => {});
    await owner.query(`DROP ROLE IF EXISTS ${master}`).catch(() => {});
  });

  it('makes a DuckLake reader login (temp_file_limit left to the server, said in a warning) whose overdue statement its watch cancels; the master\'s own sessions are left alone', async () => {
    const lines: string[] = [];
    setLogSink((_level, message) => lines.push(message));
    try {
      await ensureDuckLakeReaderLogin(asMaster, { username: dana, password: 'dana-password' });
    } finally {
      setLogSink();
    }
    expect(lines).toEqual([expect.stringContaining(`the login "${dana}" keeps the server's temp_file_limit: permission denied to set parameter "temp_file_limit"`)]);
    // without seeing other logins' sessions the watch would find nothing: it says so instead
    await expect(endOverdueDuckLakeSessions(asMaster)).rejects.toMatchObject({ code: '42501', message: expect.stringContaining('cannot see or signal other logins\' sessions') });
    await owner.query(`GRANT pg_monitor TO ${master}`);
    const url = new URL(readerUrl('dana-password', dana));
    url.pathname = `/${database}`;
    const client = new pg.Client({ connectionString: url.toString() });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.query('SET default_transaction_read_only = off');
      await expect(client.query('CREATE TEMP TABLE scratch (a int)')).rejects.toMatchObject({ code: '42501' });
      await client.query('SET statement_timeout = 0');
      const sleeping = client.query('SELECT pg_sleep(60)').then(() => undefined, (error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const masterBusy = asMaster.query('SELECT pg_sleep(2)');
      await new Promise((resolve) => setTimeout(resolve, 700));
      const ended = await endOverdueDuckLakeSessions(asMaster, { statementMs: 500, idleInTransactionMs: 500 });
      expect(ended.map((session) => session.login)).toEqual([dana]);
      expect(await sleeping).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
      await masterBusy;
    } finally {
      await client.end().catch(() => {});
    }
    // Postgres keeps the large object functions open to PUBLIC: this owner does not own them (docs/aws.md says so)
    expect((await asMaster.query("SELECT has_function_privilege('public', 'pg_catalog.lo_create(oid)', 'EXECUTE') AS open")).rows).toEqual([{ open: true }]);
  });
});
