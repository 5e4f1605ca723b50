/**
 * The rebuild service behind every read: finds tables and files in the catalog, rebuilds
 * a file's bytes from Kafka (verified by rebuildFile against size, footer and sha256
 * before anything is returned), and keeps rebuilt files in a byte-bounded cache.
 * Concurrent reads of one file share one rebuild.
 */
import { findFile, listFiles, liveFileKeys, lostOffsets, type DataFile, type LiveFileKey } from '../catalog/file-reads.js';
import type { Catalog } from '../catalog/db.js';
import { findTable, listTables, type TableRecord } from '../catalog/tables.js';
import type { CommittedSource } from '../kafka/source.js';
import { RebuildMismatchError, rebuildFile } from './rebuild.js';
import { ByteBoundedCache } from './cache.js';
import { newMetrics, type ReaderMetrics } from './metrics.js';
import { countingSource, type ReadLog } from './source.js';

export interface ReaderServiceOptions {
  /** Budget of the rebuilt-file cache. Default 512 MiB. */
  cacheBytes?: number;
}

export const defaultCacheBytes = 512 * 1024 * 1024;

export class ReaderService {
  readonly cache: ByteBoundedCache;
  private readonly counters: Omit<ReaderMetrics, 'kafkaRecords' | 'kafkaBytes'> = newMetrics();
  private readonly source: CommittedSource & { log: ReadLog };
  private readonly inFlight = new Map<string, Promise<Uint8Array>>();

  constructor(readonly catalog: Catalog, source: CommittedSource, options: ReaderServiceOptions = {}) {
    this.cache = new ByteBoundedCache(options.cacheBytes ?? defaultCacheBytes);
    this.source = countingSource(source, { keepReads: false });
  }

  /** A snapshot of the counters, with what was read from Kafka. */
  get metrics(): ReaderMetrics {
    return { ...this.counters, kafkaRecords: this.source.log.records, kafkaBytes: this.source.log.bytes };
  }

  /** Counts one event of the HTTP layer (requests, bytes served, footer hits, expired). */
  count(counter: 'requests' | 'footerHits' | 'expired', by = 1): void {
    this.counters[counter] += by;
  }

  served(bytes: number): void {
    this.counters.bytesServed += bytes;
  }

  /** Offsets Kafka deleted before they were indexed, per table partition: never hidden. */
  lostOffsets(): ReturnType<typeof lostOffsets> {
    return lostOffsets(this.catalog);
  }

  tables(): Promise<TableRecord[]> {
    return listTables(this.catalog);
  }

  /** The table, or TableError ("no table named ..."). */
  table(name: string): Promise<TableRecord> {
    return findTable(this.catalog, name);
  }

  files(table: TableRecord): Promise<DataFile[]> {
    return listFiles(this.catalog, table.tableId);
  }

  /** Live files as a listing names them (of one table, when named). */
  fileKeys(tableName?: string): Promise<LiveFileKey[]> {
    return liveFileKeys(this.catalog, tableName);
  }

  /** One file of the table, expired ones included (the caller answers those with 410). */
  file(table: TableRecord, dataFileId: bigint): Promise<DataFile | undefined> {
    return findFile(this.catalog, table.tableId, dataFileId);
  }

  /** The file's whole bytes: from the cache, or rebuilt from Kafka and verified. */
  async bytes(table: TableRecord, file: DataFile): Promise<Uint8Array> {
    const key = ByteBoundedCache.key(file.dataFileId, file.sha256);
    const cached = this.cache.get(key);
    if (cached) {
      this.counters.cacheHits += 1;
      return cached;
    }
    this.counters.cacheMisses += 1;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.rebuild(table, file, key).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async rebuild(table: TableRecord, file: DataFile, key: string): Promise<Uint8Array> {
    this.counters.rebuilds += 1;
    try {
      const rebuilt = await rebuildFile(this.catalog, this.source, table, file);
      this.cache.set(key, rebuilt.bytes);
      return rebuilt.bytes;
    } catch (error) {
      if (error instanceof RebuildMismatchError) this.counters.mismatches += 1;
      throw error;
    }
  }
}
