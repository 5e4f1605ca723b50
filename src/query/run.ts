/**
 * `query "SQL"`: DuckDB over a table's files plus its fresh tail. For every catalog table
 * the SQL names: the files whose statistics may satisfy the WHERE clause are rebuilt
 * (verified) from Kafka, the committed records from `indexed_end` to the LSO are built
 * as one more Parquet file per partition, exactly as indexing would build them, and a
 * view of that name reads them all. The files and the indexed ends come from one
 * catalog snapshot, so a record is in a file or in the tail, never both, never neither.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type Json } from '@duckdb/node-api';
import { backfillStates } from '../catalog/backfill.js';
import { listFiles, type DataFile } from '../catalog/file-reads.js';
import { inTransaction, type Catalog } from '../catalog/db.js';
import { listTables, type TableRecord } from '../catalog/tables.js';
import { encodeFile } from '../build/files.js';
import type { CommittedSource } from '../kafka/source.js';
import { encoderVersion } from '../parquet/index.js';
import type { KafkaRecord } from '../kafka/record.js';
import type { ReaderService } from '../reader/service.js';
import { currentSchema } from '../schema/versions.js';
import { fileBounds, mayMatch, type Bounds } from './prune.js';
import { requiredPredicates, SqlScanError, tableReferences, tokenize, type Predicate } from './sql-scan.js';

export interface QueryDeps {
  catalog: Catalog;
  /** Committed reads for the tail (the service reads the files through its own). */
  source: CommittedSource;
  service: ReaderService;
  progress?: (line: string) => void;
}

export interface TablePlan {
  table: string;
  predicates: Predicate[];
  files: number;
  candidates: string[];
  tail: { partition: number; from: string; until: string; records: number }[];
}

export interface QueryResult {
  columns: string[];
  rows: Record<string, Json>[];
  plan: TablePlan[];
}

const concurrency = 4;

interface Snapshot {
  files: DataFile[];
  partitions: { partition: number; indexedEnd: bigint }[];
}

/** The table's files and each partition's indexed end, as of one moment. */
async function snapshot(catalog: Catalog, table: TableRecord): Promise<Snapshot> {
  return inTransaction(catalog, async (client) => {
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    const files = await listFiles(client, table.tableId);
    const partitions = await client.query<{ partition_id: number; indexed_end: bigint }>(
      'SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id',
      [table.tableId],
    );
    return { files, partitions: partitions.rows.map((row) => ({ partition: row.partition_id, indexedEnd: BigInt(row.indexed_end) })) };
  });
}

async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  });
  await Promise.all(workers);
  return results;
}

function sqlString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

function sqlName(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/** Writes the table's candidate files and fresh tail into `dir`; returns their paths and the plan. */
async function materialize(deps: QueryDeps, table: TableRecord, predicates: Predicate[], dir: string): Promise<{ paths: string[]; plan: TablePlan }> {
  const say = deps.progress ?? (() => {});
  const { files, partitions } = await snapshot(deps.catalog, table);
  const candidates = files.filter((file) => mayMatch(fileBounds(file), predicates));
  say(`${table.name}: ${candidates.length} of ${files.length} files may match${predicates.length ? ` (${predicates.length} predicate${predicates.length > 1 ? 's' : ''} used for pruning)` : ''}`);
  let done = 0;
  const paths = await mapLimited(candidates, concurrency, async (file) => {
    const bytes = await deps.service.bytes(table, file);
    const path = join(dir, `${table.name}-${file.dataFileId}.parquet`);
    await writeFile(path, bytes);
    done += 1;
    if (candidates.length > 1) say(`${table.name}: rebuilt ${done}/${candidates.length} files`);
    return path;
  });
  const { schema } = await currentSchema(deps.catalog, table.tableId);
  const tail: TablePlan['tail'] = [];
  for (const { partition, indexedEnd } of partitions) {
    const lso = await deps.source.lastStableOffset(table.topic, partition);
    if (lso <= indexedEnd) continue;
    const bounds: Bounds = new Map([
      ['_partition', { min: BigInt(partition), max: BigInt(partition) }],
      ['_offset', { min: indexedEnd, max: lso - 1n }],
    ]);
    if (!mayMatch(bounds, predicates)) continue;
    const records: KafkaRecord[] = [];
    for await (const batch of deps.source.read(table.topic, partition, indexedEnd, lso)) records.push(...batch.records);
    tail.push({ partition, from: indexedEnd.toString(), until: lso.toString(), records: records.length });
    say(`${table.name}: partition ${partition}: ${records.length} committed records in [${indexedEnd}, ${lso}) not in files yet`);
    if (records.length === 0) continue;
    const path = join(dir, `${table.name}-tail-${partition}.parquet`);
    await writeFile(path, encodeFile(table, schema, partition, records, encoderVersion).bytes);
    paths.push(path);
  }
  if (paths.length === 0) {
    // Nothing to read still has the table's columns: an empty file gives DuckDB the schema.
    const path = join(dir, `${table.name}-empty.parquet`);
    await writeFile(path, encodeFile(table, schema, partitions[0]?.partition ?? 0, [], encoderVersion).bytes);
    paths.push(path);
  }
  return { paths, plan: { table: table.name, predicates, files: files.length, candidates: candidates.map((f) => f.dataFileId.toString()), tail } };
}

/**
 * Binds `sql` (EXPLAIN parses, resolves every name and plans, and reads no row) over views
 * of empty files with the tables' current columns. A parser, binder or catalog error is
 * the user's SQL: it is thrown before anything is rebuilt.
 */
async function bindFirst(connection: DuckDBConnection, deps: QueryDeps, tables: TableRecord[], sql: string, dir: string): Promise<void> {
  for (const table of tables) {
    const { schema } = await currentSchema(deps.catalog, table.tableId);
    const path = join(dir, `${table.name}-columns.parquet`);
    await writeFile(path, encodeFile(table, schema, 0, [], encoderVersion).bytes);
    await connection.run(`CREATE VIEW ${sqlName(table.name)} AS SELECT * FROM read_parquet(${sqlString(path)})`);
  }
  try {
    await connection.run(`EXPLAIN ${sql}`);
  } catch (error) {
    if (/^(Parser|Binder|Catalog) Error/.test((error as Error).message)) throw error;
  } finally {
    for (const table of tables) await connection.run(`DROP VIEW ${sqlName(table.name)}`);
  }
}

export async function runQuery(deps: QueryDeps, sql: string): Promise<QueryResult> {
  const tokens = tokenize(sql);
  const tables = new Map((await listTables(deps.catalog)).map((table) => [table.name, table]));
  const references = tableReferences(tokens, new Set(tables.keys()));
  if (references.size === 0) {
    throw new SqlScanError(`the SQL names no table of the catalog${tables.size ? ` (tables: ${[...tables.keys()].join(', ')})` : ' (it has none; create one with `table create`)'}`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'offsetlake-query-'));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run("SET TimeZone = 'UTC'");
    // A typo must not cost the rebuild of every candidate: the statement is parsed and
    // bound first, over empty files with each table's columns.
    await bindFirst(connection, deps, [...references.keys()].map((name) => tables.get(name)!), sql, dir);
    const plan: TablePlan[] = [];
    for (const name of references.keys()) {
      const left = (await backfillStates(deps.catalog, tables.get(name)!.tableId)).reduce((sum, s) => sum + (s.cursor !== null && s.target !== null && s.cursor > s.target ? s.cursor - s.target : 0n), 0n);
      if (left > 0n) deps.progress?.(`note: ${name} has ${left} offsets of history not indexed yet; the answer leaves them out (\`offsetlake backfill ${name}\` indexes them)`);
    }
    for (const [name, positions] of references) {
      // A table named more than once (self-join, subquery) is read whole: one view serves every mention.
      const predicates = positions.length === 1 ? requiredPredicates(tokens, positions[0]!) : [];
      const { paths, plan: tablePlan } = await materialize(deps, tables.get(name)!, predicates, dir);
      plan.push(tablePlan);
      await connection.run(`CREATE VIEW ${sqlName(name)} AS SELECT * FROM read_parquet([${paths.map(sqlString).join(', ')}], union_by_name = true)`);
    }
    deps.progress?.('running the query');
    const result = await connection.runAndReadAll(sql);
    return { columns: result.columnNames(), rows: await result.getRowObjectsJson(), plan };
  } finally {
    connection.closeSync();
    instance.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}
