import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCatalog, type Catalog } from '../../src/catalog/db.js';
import { insertGranules } from '../../src/catalog/file-writes.js';
import { migrateCatalog, requireCatalogVersion } from '../../src/catalog/migrate.js';
import { latestCatalogVersion } from '../../src/catalog/migrations.js';
import { publishReaderCounters } from '../../src/catalog/reader-counters.js';
import { ensureReaderLogin, ensureWriterLogin } from '../../src/catalog/logins.js';
import { acquireLease, releaseLease } from '../../src/catalog/leases.js';
import { defaultSettings } from '../../src/table/settings.js';
import { createTable, dropTable } from '../../src/catalog/tables.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { freshDatabase } from '../helpers/database.js';
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

  it('reads every catalog table and writes what reads write: its counters; it may not write the sha256 a read checks a stored page index against', async () => {
    for (const table of ['lake_table', 'lake_partition', 'data_file', 'file_column_stats', 'granule', 'table_schema', 'table_column', 'secondary_index', 'index_entry', 'reader_counters']) {
      await reader.query(`SELECT count(*) FROM offsetlake.${table}`);
    }
    await publishReaderCounters(reader, 'reader-1', new Date(), { reads: 1 });
    await publishReaderCounters(reader, 'reader-1', new Date(), { reads: 2 });
    expect((await reader.query('SELECT counters FROM offsetlake.reader_counters')).rows).toEqual([{ counters: { reads: 2 } }]);
    // Recording a file's granules writes the sha256 of its page index and footer
    // (migration 15), which a reader may not write (issue 46): Postgres refuses the whole statement.
    await expect(insertGranules(reader, 1n, { granules: [{ rowGroup: 0, startOffset: 0n, endOffset: 1n, rowCount: 1, kafkaBytes: 1, chunkSha256: new Uint8Array(32) }], pageIndex: new Uint8Array(), tailSha256: new Uint8Array(32) }))
      .rejects.toMatchObject({ code: '42501' });
    await expect(reader.query('UPDATE offsetlake.data_file SET tail_sha256 = $1', [Buffer.alloc(32)])).rejects.toMatchObject({ code: '42501' });
    await reader.query('UPDATE offsetlake.data_file SET page_index = $1 WHERE data_file_id = 1 AND page_index IS NULL', [Buffer.alloc(0)]);
  });

  it('cuts Iceberg snapshots (the catalog on serve\'s HTTP face does, on LoadTable): the snapshot and its files\' memberships', async () => {
    const table = await createTable(owner, { name: 'iceberg_cut', topic: 'iceberg_cut', topicId: null, format: 'json', settings: { ...defaultSettings }, partitionStarts: new Map([[0, 0n]]) }, initialSchema('json'));
    await owner.query(
      `INSERT INTO offsetlake.data_file (table_id, partition_id, start_offset, end_offset, time_bucket, record_count, file_size_bytes, footer_size, footer, sha256, seal_reason, schema_version, encoder_version, source, lease_epoch)
       VALUES ($1, 0, 0, 1, now(), 1, 100, 8, '\\x0000000050415231', $2, 'flush', 1, 'test', 'live', 0)`, [table.tableId, Buffer.alloc(32)]);
    expect(await cutSnapshotIfChanged(reader, table.tableId, { intervalMs: 0, maxSnapshots: 10 })).toBe(1n);
    expect((await reader.query('SELECT count(*)::int AS n FROM offsetlake.iceberg_file WHERE table_id = $1', [table.tableId])).rows).toEqual([{ n: 1 }]);
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
