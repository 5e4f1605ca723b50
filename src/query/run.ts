/**
 * `query "SQL"`: DuckDB over a table's files plus its fresh tail. For every catalog table
 * the SQL names: the files whose statistics may satisfy the WHERE clause are read from
 * Kafka, the committed records from `indexed_end` to the LSO are built as one more
 * Parquet file per partition, exactly as indexing would build them, and a view of that
 * name reads them all. The files and the indexed ends come from one catalog snapshot, so
 * a record is in a file or in the tail, never both, never neither.
 *
 * A file with granules is read granule by granule (invariant 6): only the row groups
 * whose footer statistics (or offset span) may satisfy the WHERE clause, and only the
 * columns the statement may use, each granule rebuilt from its own offsets and checked
 * chunk by chunk against the catalog (FileProducer.granuleFile, src/reader/producer.ts). A file without
 * granules is rebuilt whole, as before. Files, row groups and the tail are pruned with
 * one WHERE tree (src/sql/where.ts, prune.ts). Active secondary indexes narrow the row groups
 * further for `=`, IN, ranges and AND/OR of them on indexed columns (index-use.ts); an
 * index that cannot answer for a file is skipped there and counted. No pruning changes an answer: DuckDB still
 * applies the whole statement, a row group is skipped only when no row of it can match,
 * and a column subset is used only when the statement binds to the same result columns
 * with it as with every column.
 */
import { indexedEnds } from '../catalog/partitions.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type Json } from '@duckdb/node-api';
import { parquetMetadata } from 'hyparquet';
import { backfillStates } from '../catalog/backfill.js';
import { listFiles, type CatalogFile } from '../catalog/file-reads.js';
import { inTransaction, type Catalog } from '../catalog/db.js';
import { listTables } from '../catalog/tables.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import type { Granule } from '../catalog/file-writes.js';
import { encodeColumns, encodeFile } from '../files/files.js';
import type { CommittedSource } from '../kafka/source.js';
import { encoderOf } from '../parquet/index.js';
import type { KafkaRecord } from '../kafka/record.js';
import type { FileProducer } from '../reader/producer.js';
import type { ReadMeter } from '../reader/read-api.js';
import { currentSchema } from '../catalog/schema-versions.js';
import type { TableSchema } from '../schema/table-schema.js';
import { asksNulls, fileBounds, footerNulls, mayBeTrue, mayHold, mayMatch, rowGroupBounds, statisticColumn, statisticTree, type Bounds } from './prune.js';
import type { RowGroups } from '../indexes/candidates.js';
import { anyRow, conditionsOf, readWhere, treeText, type Condition, type PredicateTree, type Where } from '../sql/where.js';
import { TableIndexUse, type IndexUse } from './index-use.js';
import { SqlScanError, tableReferences, tokenize, usedColumns, type Token } from '../sql/scan.js';

export interface QueryDeps {
  catalog: Catalog;
  /** Committed reads for the tail (the producer reads the files through its own). */
  source: CommittedSource;
  service: { producer: Pick<FileProducer, 'prefetchGranules' | 'readableGranules' | 'bytes' | 'granuleFile'>; meter: ReadMeter };
  progress?: (line: string) => void;
  /**
   * Read every candidate file whole, with every column (how queries read before
   * granules): no row-group or column pruning. For comparisons; default false.
   */
  wholeFiles?: boolean;
}

/** What the query reads of one file. */
export interface FileRead {
  file: string;
  partition: number;
  startOffset: string;
  endOffset: string;
  /** The row groups read, by index; null when the file is read whole (it has no granules). */
  rowGroups: number[] | null;
  /** How many row groups the file has (null when it has no granules). */
  rowGroupsInFile: number | null;
  /**
   * Key + value + header bytes that reading the chosen row groups fetches from Kafka (their
   * granules' kafka_bytes); null for a file read whole without granules: not known before
   * the read (it reads the file's whole offset span).
   */
  kafkaBytes: number | null;
}

export interface TablePlan {
  table: string;
  /** The conditions of the WHERE tree that statistics decide, by column. */
  predicates: { column: string; condition: string }[];
  /** The WHERE tree as statistics prune with it (null when they cannot). */
  prunedBy: string | null;
  /** Statistics and indexes a predicate names but that could not use it, and why. */
  missed: string[];
  /** Files of the table (live), considered. */
  files: number;
  /** Files whose catalog statistics may match the predicates. */
  candidates: string[];
  /** The candidates with at least one row group that may match: what is read. */
  reads: FileRead[];
  /** Row groups read, of those in the candidate files with granules. */
  rowGroups: { read: number; of: number };
  /** The top-level columns encoded (of the table's current schema), and how many it has. */
  columns: string[];
  tableColumns: number;
  /**
   * The secondary indexes the WHERE clause could use, with what each did (none with
   * `wholeFiles`, which reads as before indexes existed).
   */
  indexes: IndexUse[];
  /** Sum of the known `kafkaBytes` of the reads (tail not included). */
  kafkaBytes: number;
  /** Files read whole whose Kafka bytes are not known before the read. */
  filesWithUnknownKafkaBytes: number;
  tail: { partition: number; from: string; until: string; records: number }[];
}

export interface QueryResult {
  columns: string[];
  rows: Record<string, Json>[];
  plan: TablePlan[];
}

const concurrency = 4;

interface Snapshot {
  files: CatalogFile[];
  partitions: { partition: number; indexedEnd: bigint }[];
}

/** The table's files and each partition's indexed end, as of one moment. */
async function snapshot(catalog: Catalog, table: TableRecord): Promise<Snapshot> {
  return inTransaction(catalog, async (client) => {
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    const files = await listFiles(client, table.tableId);
    return { files, partitions: await indexedEnds(client, table.tableId) };
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

/** One Parquet file the view will read: a granule (some columns), or a whole file. */
type ReadItem = { file: CatalogFile; rowGroup: number; columns: number[] } | { file: CatalogFile; rowGroup: null };

/** Indices (into `schema.columns`) of the named columns; never empty (the rows must still be counted). */
function columnIndices(schema: TableSchema, names: readonly string[]): number[] {
  const wanted = new Set(names);
  const indices = schema.columns.flatMap((column, c) => (wanted.has(column.name) ? [c] : []));
  return indices.length > 0 ? indices : [0];
}

/**
 * The row groups of a file with granules that may hold a row satisfying the tree: each
 * condition may hold in a row group when its statistics and its own index probes
 * (`indexed`) both say so.
 */
function rowGroupsToRead(file: CatalogFile, granules: readonly Granule[], tree: PredicateTree, tableColumns: ReadonlySet<string>, indexed: (condition: Condition) => RowGroups): number[] {
  const all = granules.map((granule) => granule.rowGroup);
  if (tree.kind === 'any') return all;
  const metadata = parquetMetadata(file.footer);
  const asks = asksNulls(tree);
  return all.filter((rowGroup) => {
    const bounds = rowGroupBounds(file, metadata, rowGroup, granules[rowGroup]);
    const nulls = asks ? footerNulls(metadata, rowGroup) : undefined;
    return mayBeTrue(tree, (condition) => mayHold(condition, bounds, nulls, tableColumns) && (indexed(condition)?.has(rowGroup) ?? true));
  });
}

/**
 * Writes what the table's query reads into `dir` (granules of candidate files, candidate
 * files without granules, the fresh tail); returns their paths and the plan. `columns`:
 * the names of the columns to encode (every column of the current schema, or fewer).
 */
async function materialize(deps: QueryDeps, table: TableRecord, where: Where, columns: readonly string[], dir: string): Promise<{ paths: string[]; plan: TablePlan }> {
  const say = deps.progress ?? (() => {});
  const { files, partitions } = await snapshot(deps.catalog, table);
  const { schema } = await currentSchema(deps.catalog, table.tableId);
  const names = new Set(schema.columns.map((column) => column.name.toLowerCase()));
  const { tree } = where;
  const nulls = asksNulls(tree);
  const candidates = files.filter((file) => mayMatch(fileBounds(file), tree, nulls ? footerNulls(parquetMetadata(file.footer)) : undefined, names));
  const pruning = statisticTree(tree, names);
  const predicates = conditionsOf(pruning).map((condition) => ({ column: statisticColumn(condition.operand, names)!, condition: treeText(condition) }));
  // Secondary indexes narrow the row groups further; DuckDB still applies the whole WHERE.
  const indexes = await TableIndexUse.bind(deps.catalog, table, schema, deps.wholeFiles ? { tree: anyRow, unread: [] } : where);
  if (indexes.used) await indexes.fetch(candidates.filter((file) => file.hasGranules));
  if (!deps.wholeFiles) await deps.service.producer.prefetchGranules(candidates);
  const items: ReadItem[] = [];
  const reads: FileRead[] = [];
  let rowGroupsOf = 0;
  for (const file of candidates) {
    const read = { file: file.dataFileId.toString(), partition: file.partition, startOffset: file.startOffset.toString(), endOffset: file.endOffset.toString() };
    const granular = deps.wholeFiles ? null : await deps.service.producer.readableGranules(file);
    if (!granular) {
      items.push({ file, rowGroup: null });
      reads.push({ ...read, rowGroups: null, rowGroupsInFile: null, kafkaBytes: null });
      continue;
    }
    rowGroupsOf += granular.granules.length;
    // What each index saves is counted against the statistics alone; the read then also
    // drops the row groups that no branch of the tree keeps with statistics and indexes together.
    const byStatistics = rowGroupsToRead(file, granular.granules, tree, names, () => null);
    const together = indexes.used ? new Set(rowGroupsToRead(file, granular.granules, tree, names, indexes.conditionRowGroups(file, granular.granules))) : undefined;
    const chosen = indexes.choose(file, granular.granules, byStatistics).filter((rowGroup) => together?.has(rowGroup) ?? true);
    if (chosen.length === 0) continue;
    const indices = columnIndices(granular.schema, columns);
    for (const rowGroup of chosen) items.push({ file, rowGroup, columns: indices });
    const kafkaBytes = chosen.reduce((sum, rowGroup) => sum + granular.granules[rowGroup]!.kafkaBytes, 0);
    reads.push({ ...read, rowGroups: chosen, rowGroupsInFile: granular.granules.length, kafkaBytes });
  }
  const rowGroupsRead = items.filter((item) => item.rowGroup !== null).length;
  say(`${table.name}: ${reads.length} of ${files.length} files may match${predicates.length ? ` (${predicates.length} predicate${predicates.length > 1 ? 's' : ''} used for pruning)` : ''}${rowGroupsOf ? `, ${rowGroupsRead} of ${rowGroupsOf} row groups` : ''}`);
  let done = 0;
  const paths = await mapLimited(items, concurrency, async (item) => {
    const { file } = item;
    const bytes = item.rowGroup === null ? await deps.service.producer.bytes(table, file) : await deps.service.producer.granuleFile(table, file, item.rowGroup, item.columns);
    const path = join(dir, `${table.name}-${file.dataFileId}${item.rowGroup === null ? '' : `-${item.rowGroup}`}.parquet`);
    await writeFile(path, bytes);
    deps.service.meter.served(bytes.byteLength);
    done += 1;
    if (items.length > 1) say(`${table.name}: rebuilt ${done}/${items.length} ${rowGroupsRead === items.length ? 'row groups' : 'files and row groups'}`);
    return path;
  });
  const tableColumns = columnIndices(schema, columns);
  const tail: TablePlan['tail'] = [];
  for (const { partition, indexedEnd } of partitions) {
    const lso = await deps.source.lastStableOffset(table.topic, partition);
    if (lso <= indexedEnd) continue;
    const bounds: Bounds = new Map([
      ['_partition', { min: BigInt(partition), max: BigInt(partition) }],
      ['_offset', { min: indexedEnd, max: lso - 1n }],
    ]);
    if (!mayMatch(bounds, tree, undefined, names)) continue;
    const records: KafkaRecord[] = [];
    for await (const batch of deps.source.read(table.topic, partition, indexedEnd, lso, tableTopic(table))) records.push(...batch.records);
    tail.push({ partition, from: indexedEnd.toString(), until: lso.toString(), records: records.length });
    say(`${table.name}: partition ${partition}: ${records.length} committed records in [${indexedEnd}, ${lso}) not in files yet`);
    if (records.length === 0) continue;
    const path = join(dir, `${table.name}-tail-${partition}.parquet`);
    await writeFile(path, encodeColumns(table, schema, partition, records, encoderOf(table.settings), tableColumns).bytes);
    paths.push(path);
  }
  // An empty file with the encoded columns as the current schema types them: the view has
  // them even when nothing is read, or when every file read predates a column.
  const path = join(dir, `${table.name}-empty.parquet`);
  await writeFile(path, encodeColumns(table, schema, partitions[0]?.partition ?? 0, [], encoderOf(table.settings), tableColumns).bytes);
  paths.push(path);
  const plan: TablePlan = {
    table: table.name,
    predicates,
    prunedBy: pruning.kind === 'any' ? null : treeText(pruning),
    missed: indexes.missed(),
    files: files.length,
    candidates: candidates.map((f) => f.dataFileId.toString()),
    reads,
    rowGroups: { read: rowGroupsRead, of: rowGroupsOf },
    columns: tableColumns.map((c) => schema.columns[c]!.name),
    tableColumns: schema.columns.length,
    indexes: indexes.report(),
    kafkaBytes: reads.reduce((sum, read) => sum + (read.kafkaBytes ?? 0), 0),
    filesWithUnknownKafkaBytes: reads.filter((read) => read.kafkaBytes === null).length,
    tail,
  };
  if (indexes.used) await indexes.count();
  return { paths, plan };
}

/** Views named after the tables over empty files of the given columns (every column where none are given). */
async function withEmptyViews<T>(connection: DuckDBConnection, deps: QueryDeps, tables: TableRecord[], columns: ReadonlyMap<string, readonly string[]> | null, dir: string, work: () => Promise<T>): Promise<T> {
  for (const table of tables) {
    const { schema } = await currentSchema(deps.catalog, table.tableId);
    const subset = columns?.get(table.name);
    const path = join(dir, `${table.name}-${subset ? 'some' : 'all'}-columns.parquet`);
    const encoderVersion = encoderOf(table.settings);
    const bytes = subset ? encodeColumns(table, schema, 0, [], encoderVersion, columnIndices(schema, subset)).bytes : encodeFile(table, schema, 0, [], encoderVersion).bytes;
    await writeFile(path, bytes);
    await connection.run(`CREATE VIEW ${sqlName(table.name)} AS SELECT * FROM read_parquet(${sqlString(path)})`);
  }
  try {
    return await work();
  } finally {
    for (const table of tables) await connection.run(`DROP VIEW ${sqlName(table.name)}`);
  }
}

/** The statement's result columns and their types as DuckDB binds them, or undefined when it cannot say. */
async function resultShape(connection: DuckDBConnection, sql: string): Promise<string | undefined> {
  try {
    const described = await connection.runAndReadAll(`DESCRIBE ${sql}`);
    return JSON.stringify(described.getRowsJson());
  } catch {
    return undefined;
  }
}

/**
 * Binds `sql` (EXPLAIN parses, resolves every name and plans, and reads no row) over views
 * of empty files with the tables' current columns. A parser, binder or catalog error is
 * the user's SQL: it is thrown before anything is rebuilt. Then the columns each table
 * would encode (`proposed`, from the statement's words): kept only when the statement
 * binds over them alone to the same result columns and types; otherwise every table
 * encodes every column. Returns the columns to encode per table.
 */
async function bindFirst(connection: DuckDBConnection, deps: QueryDeps, tables: TableRecord[], sql: string, dir: string, proposed: ReadonlyMap<string, readonly string[]>): Promise<Map<string, readonly string[]>> {
  const all = new Map<string, readonly string[]>();
  for (const table of tables) all.set(table.name, (await currentSchema(deps.catalog, table.tableId)).schema.columns.map((column) => column.name));
  const shape = await withEmptyViews(connection, deps, tables, null, dir, async () => {
    try {
      await connection.run(`EXPLAIN ${sql}`);
    } catch (error) {
      if (/^(Parser|Binder|Catalog) Error/.test((error as Error).message)) throw error;
    }
    return resultShape(connection, sql);
  });
  const narrower = [...proposed].some(([name, columns]) => columns.length < all.get(name)!.length);
  if (!narrower || shape === undefined) return all;
  const same = await withEmptyViews(connection, deps, tables, proposed, dir, async () => (await resultShape(connection, sql)) === shape);
  return same ? new Map(proposed) : all;
}

/** Per table, the columns the statement may use (as the current schema names them), or all of them. */
async function proposedColumns(deps: QueryDeps, tables: TableRecord[], tokens: Token[]): Promise<Map<string, string[]>> {
  const names = new Set(tables.map((table) => table.name));
  const out = new Map<string, string[]>();
  for (const table of tables) {
    const columns = (await currentSchema(deps.catalog, table.tableId)).schema.columns.map((column) => column.name);
    const used = deps.wholeFiles ? null : usedColumns(tokens, columns, names);
    // A statement that names no column (count(*)) still counts rows: one column, the first.
    out.set(table.name, used === null ? columns : used.size > 0 ? columns.filter((column) => used.has(column)) : columns.slice(0, 1));
  }
  return out;
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
    // One statement, as DuckDB's own parser splits them: its checks (EXPLAIN, DESCRIBE) and
    // the query itself would otherwise each run every statement after the first.
    const statements = (await connection.extractStatements(sql).catch(() => undefined))?.count;
    if (statements !== undefined && statements !== 1) {
      throw new SqlScanError(statements === 0 ? 'the SQL holds no statement' : `query takes one SQL statement, and this holds ${statements}: run each with its own \`offsetlake query\``);
    }
    // A typo must not cost the rebuild of every candidate: the statement is parsed and
    // bound first, over empty files with each table's columns.
    const named = [...references.keys()].map((name) => tables.get(name)!);
    const columns = await bindFirst(connection, deps, named, sql, dir, await proposedColumns(deps, named, tokens));
    const plan: TablePlan[] = [];
    for (const name of references.keys()) {
      const left = (await backfillStates(deps.catalog, tables.get(name)!.tableId)).reduce((sum, s) => sum + (s.cursor !== null && s.target !== null && s.cursor > s.target ? s.cursor - s.target : 0n), 0n);
      if (left > 0n) deps.progress?.(`note: ${name} has ${left} offsets of history not indexed yet; the answer leaves them out (\`offsetlake backfill ${name}\` indexes them)`);
    }
    for (const [name, positions] of references) {
      // A table named more than once (self-join, subquery) is read whole: one view serves every mention.
      const where: Where = positions.length === 1 ? readWhere(tokens, positions[0]!) : { tree: anyRow, unread: [] };
      const { paths, plan: tablePlan } = await materialize(deps, tables.get(name)!, where, columns.get(name)!, dir);
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
