/**
 * Table and file records as the read path asks for them, with fewer catalog round trips.
 * An engine reads a file in two or more requests (its footer, then its column chunks)
 * and the files of a scan one after another; each request looked its table and file up
 * again (two queries), and the round trips were a fifth of a cold scan's time per file.
 * Here a table's record answers from memory for `ttlMs`, and a file that is not known
 * is loaded with the files after it in id order (`batch`), which an engine's scan asks
 * for next: one query for many files.
 *
 * Staleness is bounded by `ttlMs`: a file expired by retention, or a table dropped,
 * within the last `ttlMs` may still be answered as it was. That was already so between
 * retention checks (Kafka deletes before the catalog is told); a rebuild reads Kafka
 * either way and never serves bytes that do not verify.
 */
import type { Catalog } from '../catalog/db.js';
import { findFilesFrom, listFiles, liveFileKeys, type CatalogFile, type LiveFileKey } from '../catalog/file-reads.js';
import { findTable, listTables } from '../catalog/tables.js';
import type { CatalogReads } from './read-api.js';
import { type TableRecord } from '../table/record.js';
import { PromiseMemo } from '../common/single-flight.js';

export interface CatalogRecordOptions {
  /** How long a record answers from memory (ms). Default 5 s; 0 asks the catalog every time. */
  ttlMs?: number;
  /** Files loaded by one lookup: the one asked for and those after it (default 64). */
  batch?: number;
  /** Files remembered at most (default 1,000: a file's record is its footer and statistics, 1–2 KiB for a table of a few columns, tens of KiB for hundreds). */
  maxFiles?: number;
}

export class CatalogRecords implements CatalogReads {
  private readonly batch: number;
  private readonly tableMemo: PromiseMemo<string, TableRecord>;
  /** Per file id; a lookup in flight is remembered as its promise, so concurrent requests share it. */
  private readonly fileMemo: PromiseMemo<bigint, CatalogFile | undefined>;
  /** The files each batch brought in, by the id of each of them: what to load granules for together. */
  private readonly batches = new Map<bigint, readonly CatalogFile[]>();
  private readonly maxFiles: number;
  private readonly remembers: boolean;

  constructor(private readonly catalog: Catalog, options: CatalogRecordOptions = {}) {
    const ttlMs = options.ttlMs ?? 5_000;
    this.remembers = ttlMs > 0;
    this.batch = Math.max(1, options.batch ?? 64);
    this.maxFiles = Math.max(this.batch, options.maxFiles ?? 1_000);
    this.tableMemo = new PromiseMemo(1_000, ttlMs);
    this.fileMemo = new PromiseMemo(this.maxFiles, ttlMs);
  }

  /** Every live table (a listing: always asked of the catalog). */
  tables(): Promise<TableRecord[]> {
    return listTables(this.catalog);
  }

  /** A table's live files (a listing: always asked of the catalog). */
  files(table: TableRecord): Promise<CatalogFile[]> {
    return listFiles(this.catalog, table.tableId);
  }

  /** Live files as a listing names them (of one table, when named). */
  fileKeys(tableName?: string): Promise<LiveFileKey[]> {
    return liveFileKeys(this.catalog, tableName);
  }

  /** The live table named so, or TableError ("no table named ..."). */
  table(name: string): Promise<TableRecord> {
    return this.remembers ? this.tableMemo.get(name, () => findTable(this.catalog, name)) : findTable(this.catalog, name);
  }

  /** One file of the table, expired ones included. */
  async file(table: TableRecord, dataFileId: bigint): Promise<CatalogFile | undefined> {
    const known = this.fileMemo.peek(dataFileId);
    if (known) {
      const file = await known;
      // a file id names one table's file; another table's is not this table's
      if (!file || file.tableId === table.tableId) return file;
    }
    return (await this.load(table, dataFileId)).find((file) => file.dataFileId === dataFileId);
  }

  /** The other files loaded with this one (granules are best loaded for all of them at once). */
  loadedWith(file: CatalogFile): readonly CatalogFile[] {
    return this.batches.get(file.dataFileId) ?? [file];
  }

  private load(table: TableRecord, fromId: bigint): Promise<CatalogFile[]> {
    const loading = findFilesFrom(this.catalog, table.tableId, fromId, this.batch);
    if (!this.remembers) return loading;
    // The id asked for answers from this lookup at once; the others once it is in.
    this.fileMemo.set(fromId, loading.then((files) => files.find((f) => f.dataFileId === fromId)));
    loading.then(
      (files) => {
        // a miss is not remembered: the id may be a file being committed now
        if (!files.some((f) => f.dataFileId === fromId)) this.fileMemo.delete(fromId);
        for (const file of files) {
          this.fileMemo.set(file.dataFileId, Promise.resolve(file));
          this.batches.set(file.dataFileId, files);
        }
        // oldest first (a Map iterates in insertion order), as the files' memo does
        for (const id of this.batches.keys()) {
          if (this.batches.size <= this.maxFiles) break;
          this.batches.delete(id);
        }
      },
      () => {},
    );
    return loading;
  }
}
