import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { inTransaction, openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { migrations } from '../../src/catalog/migrations.js';
import { freshDatabase } from '../helpers/database.js';
import { catalogErrorPasses } from '../../src/cli/engine.js';
import { initialSchema, type TableSchema } from '../../src/schema/table-schema.js';
import { withIds } from '../../src/schema/merge.js';

const run = promisify(execFile);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function catalogTables(url: string, schema = 'offsetlake'): Promise<string[]> {
  const catalog = openCatalog(url, 1);
  try {
    const result = await catalog.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [schema],
    );
    return result.rows.map((row) => row.table_name);
  } finally {
    await catalog.end();
  }
}

async function appliedVersions(url: string): Promise<number[]> {
  const catalog = openCatalog(url, 1);
  try {
    return (await catalog.query<{ version: number }>('SELECT version FROM offsetlake.schema_migration ORDER BY version')).rows.map((row) => row.version);
  } finally {
    await catalog.end();
  }
}

const expectedTables = ['backfill_step', 'current_column', 'data_file', 'file_column_stats', 'granule', 'iceberg_file', 'iceberg_snapshot', 'iceberg_table', 'index_entry', 'job', 'lake_partition', 'lake_table', 'lost_interval', 'mapping_id_turn', 'reader_counters', 'schema_migration', 'secondary_index', 'table_column', 'table_schema'];
// The DuckLake 0.3 catalog's relations, as DuckDB 1.4.4's ducklake extension creates them in a new DuckLake catalog: views here.
const ducklakeTables = ['column', 'column_mapping', 'column_tag', 'data_file', 'delete_file', 'file_column_stats', 'file_partition_value',
  'files_scheduled_for_deletion', 'inlined_data_tables', 'metadata', 'name_mapping', 'partition_column', 'partition_info', 'schema',
  'schema_versions', 'snapshot', 'snapshot_changes', 'table', 'table_column_stats', 'table_stats', 'tag', 'view'].map((name) => `ducklake_${name}`);
const latest = Math.max(...migrations.map((m) => m.version));

describe('the catalog through a transaction pooler (as through RDS Proxy)', () => {
  it('the tests reach Postgres through PgBouncer in transaction mode: a startup option is refused, and the pooler console says pool_mode = transaction', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('options', '-c search_path=offsetlake');
    const withOption = new pg.Client({ connectionString: url.toString() });
    await expect(withOption.connect()).rejects.toThrow(/unsupported startup parameter: options/);
    await withOption.end().catch(() => {});

    // PgBouncer's console (the database `pgbouncer`) says how it pools.
    const consoleUrl = new URL(process.env.DATABASE_URL!);
    consoleUrl.pathname = '/pgbouncer';
    const console = new pg.Client({ connectionString: consoleUrl.toString() });
    await console.connect();
    try {
      const config = await console.query<{ key: string; value: string }>({ text: 'SHOW CONFIG', queryMode: 'simple' } as pg.QueryConfig);
      const setting = (key: string): string | undefined => config.rows.find((row) => row.key === key)?.value;
      expect(setting('pool_mode')).toBe('transaction');
      expect(setting('ignore_startup_parameters')).toBe('');
    } finally {
      await console.end();
    }
  });

  it('every server session the pooler opens has search_path = public, and migrations still build the whole catalog: every name the catalog uses is schema-qualified', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 2);
    try {
      expect((await catalog.query<{ search_path: string }>('SHOW search_path')).rows[0]!.search_path).toBe('public');
      expect((await migrateCatalog(catalog)).version).toBe(latest);
      expect(await catalogTables(db.url)).toEqual(expectedTables);
      expect(await catalogTables(db.url, 'ducklake')).toEqual(ducklakeTables);
    } finally {
      await catalog.end();
    }
  });
});

describe('a catalog whose server goes away', () => {
  // Found by `npm run chaos` (kill-postgres): a SIGKILLed Postgres reset the connection of
  // a transaction in progress, its client emitted 'error' with no listener, and `run` died.
  it('a connection that dies inside a transaction fails that transaction only: no unhandled error, and the pool goes on', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 2);
    const admin = openCatalog(db.url, 1);
    cleanups.push(async () => {
      await catalog.end();
      await admin.end();
    });
    const transaction = inTransaction(catalog, async (client) => {
      const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // the client hears of it while no query of its own runs
      await new Promise((done) => setTimeout(done, 300));
      await client.query('SELECT 1');
    });
    await expect(transaction).rejects.toThrow();
    expect((await catalog.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  // Found by `npm run chaos` (kill-postgres): Postgres killed while `run` opened its catalog
  // left a client that pg calls "not queryable", which `run` took for a bad address and exited.
  it('a client whose server connection died is refused by pg in words that run waits through, not exits on', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const admin = openCatalog(db.url, 1);
    const client = new pg.Client({ connectionString: db.url });
    cleanups.push(() => admin.end());
    await client.connect();
    // The pooler and then the socket each report the loss: every report is heard, the first awaited.
    client.on('error', () => {});
    const died = once(client, 'error');
    // inside a transaction, so that the pooler keeps this server connection for the client alone
    await client.query('BEGIN');
    const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await died;
    const refused = await client.query('SELECT 1').then(() => undefined, (error: unknown) => error);
    expect(String((refused as Error).message)).toMatch(/not queryable/);
    expect(catalogErrorPasses(refused)).toBe(true);
  });
});

describe('catalog migrations', () => {
  it('applied twice leave one catalog at the newest version', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 2);
    try {
      const first = await migrateCatalog(catalog);
      const second = await migrateCatalog(catalog);
      expect(first).toEqual({ applied: migrations.map((m) => m.version), version: latest });
      expect(second).toEqual({ applied: [], version: latest });
    } finally {
      await catalog.end();
    }
    expect(await catalogTables(db.url)).toEqual(expectedTables);
    expect(await appliedVersions(db.url)).toEqual(migrations.map((m) => m.version));
  });

  it("docs/operations.md's catalog table names every table and view Postgres lists in schema offsetlake after the migrations, and nothing else", async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 1);
    try {
      await migrateCatalog(catalog);
    } finally {
      await catalog.end();
    }
    const page = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('## The catalog'), page.indexOf('\n## ', page.indexOf('## The catalog') + 1));
    const documented = section.split('\n').filter((line) => line.startsWith('| `')).flatMap((line) => [...line.split('|')[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
    expect(documented.sort()).toEqual(await catalogTables(db.url));
  });

  it('applied by three processes at once leave one catalog, applied by exactly one of them', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const node = process.execPath;
    const migrateOnce = () => run(node, ['--import', 'tsx', 'test/helpers/migrate-once.ts', db.url]);
    const results = (await Promise.all([migrateOnce(), migrateOnce(), migrateOnce()])).map((r) => JSON.parse(r.stdout));
    const appliers = results.filter((r) => r.applied.length > 0);
    expect(appliers).toHaveLength(1);
    expect(appliers[0].applied).toEqual(migrations.map((m) => m.version));
    expect(results.every((r) => r.version === latest)).toBe(true);
    expect(await catalogTables(db.url)).toEqual(expectedTables);
    expect(await appliedVersions(db.url)).toEqual(migrations.map((m) => m.version));
  });

  it('refuses a catalog newer than this offsetlake, naming the versions', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 1);
    try {
      await migrateCatalog(catalog);
      await catalog.query("INSERT INTO offsetlake.schema_migration (version, name) VALUES (999, 'from the future')");
      await expect(migrateCatalog(catalog)).rejects.toThrow('catalog has migration versions 999 that this offsetlake does not know');
    } finally {
      await catalog.end();
    }
  });

  it('version 6 on a catalog at version 5: every nested struct or list node of every schema version gets an id above all earlier ids, the same in every version; versions get mapping ids in order, and new versions the next ones', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const catalog = openCatalog(db.url, 1);
    try {
      await migrateCatalog(catalog, migrations.filter((m) => m.version <= 5));
      // Two schema versions as a version-5 offsetlake wrote them: ids for columns and leaves only.
      const v1 = { ...initialSchema('json'), nodeIds: undefined };
      const who = { name: 'who', id: 9, nullable: true, type: { kind: 'struct', fields: [{ name: 'name', type: { kind: 'string' }, nullable: true }, { name: 'addr', nullable: true, type: { kind: 'struct', fields: [{ name: 'city', type: { kind: 'string' }, nullable: true }] } }] } };
      const v2 = { ...v1, columns: [...v1.columns, who], leafIds: { ...v1.leafIds, 'who.name': 10, 'who.addr.city': 11 } };
      await catalog.query("INSERT INTO offsetlake.lake_table (table_name, topic, format, settings) VALUES ('old', 'old', 'json', '{}')");
      await catalog.query('INSERT INTO offsetlake.table_schema (table_id, schema_version, schema) VALUES (1, 1, $1), (1, 2, $2)', [JSON.stringify(v1), JSON.stringify(v2)]);

      expect((await migrateCatalog(catalog)).applied).toEqual(migrations.filter((m) => m.version > 5).map((m) => m.version));
      const versions = await catalog.query<{ schema_version: number; mapping_id: bigint; node_ids: Record<string, number> }>(
        "SELECT schema_version, mapping_id, schema->'nodeIds' AS node_ids FROM offsetlake.table_schema ORDER BY schema_version");
      expect(versions.rows).toEqual([
        { schema_version: 1, mapping_id: 1n, node_ids: { '_headers.list.element': 12 } },
        { schema_version: 2, mapping_id: 2n, node_ids: { '_headers.list.element': 12, 'who.addr': 13 } },
      ]);
      const tree = await catalog.query<{ column_id: bigint; column_name: string; column_type: string; parent_column: bigint | null }>(
        "SELECT column_id, column_name, column_type, parent_column FROM ducklake.ducklake_column WHERE column_id = 4 OR column_id >= 7 ORDER BY column_id");
      expect(tree.rows).toEqual([
        { column_id: 4n, column_name: '_headers', column_type: 'list', parent_column: null },
        { column_id: 7n, column_name: 'key', column_type: 'varchar', parent_column: 12n },
        { column_id: 8n, column_name: 'value', column_type: 'blob', parent_column: 12n },
        { column_id: 9n, column_name: 'who', column_type: 'struct', parent_column: null },
        { column_id: 10n, column_name: 'name', column_type: 'varchar', parent_column: 9n },
        { column_id: 11n, column_name: 'city', column_type: 'varchar', parent_column: 13n },
        { column_id: 12n, column_name: 'element', column_type: 'struct', parent_column: 4n },
        { column_id: 13n, column_name: 'addr', column_type: 'struct', parent_column: 9n },
      ]);

      // The code's next version keeps those ids and numbers past them; its mapping id is the next.
      const migrated = (await catalog.query<{ schema: TableSchema }>('SELECT schema FROM offsetlake.table_schema WHERE schema_version = 2')).rows[0]!.schema;
      const tags = { name: 'tags', nullable: true, type: { kind: 'list', element: { nullable: true, type: { kind: 'struct', fields: [{ name: 'k', type: { kind: 'string' }, nullable: true }] } } } } as const;
      const v3 = withIds(migrated, [...migrated.columns, tags]);
      expect(v3.nodeIds).toEqual({ '_headers.list.element': 12, 'who.addr': 13, 'tags.list.element': 16 });
      expect([v3.columns.at(-1)!.id, v3.leafIds['tags.list.element.k']]).toEqual([14, 15]);
      await catalog.query('INSERT INTO offsetlake.table_schema (table_id, schema_version, schema) VALUES (1, 3, $1)', [JSON.stringify(v3)]);
      expect((await catalog.query<{ m: bigint }>('SELECT mapping_id AS m FROM offsetlake.table_schema WHERE schema_version = 3')).rows[0]!.m).toBe(3n);
    } finally {
      await catalog.end();
    }
  });
});
