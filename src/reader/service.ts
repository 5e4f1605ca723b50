/**
 * The rebuild service behind every read: finds tables and files in the catalog and
 * produces a byte range of a file. A file with granules (src/reader/granules.ts) is
 * produced piece by piece: the magic, the column chunks of the row groups the range
 * covers (rebuilt from those row groups' offsets only, for those columns only, each
 * checked against its sha256), the page index and footer from the catalog. A file
 * without them is rebuilt whole (verified by rebuildFile against size, footer and
 * sha256) and gets its granules then. Rebuilt chunks (and whole files) are kept in one
 * byte-bounded cache; concurrent reads of the same chunks share one rebuild.
 */
import { findFile, findGranules, listFiles, liveFileKeys, lostOffsets, type DataFile, type LiveFileKey } from '../catalog/file-reads.js';
import type { FileGranules, Granule } from '../catalog/file-writes.js';
import type { Catalog } from '../catalog/db.js';
import { findTable, listTables, type TableRecord } from '../catalog/tables.js';
import type { CommittedSource } from '../kafka/source.js';
import { RebuildMismatchError, rebuildFile } from './rebuild.js';
import { GranuleMismatchError, granuleRecords, rebuildChunks } from './granules.js';
import type { KafkaRecord } from '../kafka/record.js';
import { fileLayout, piecesOf, type FileLayout, type Piece } from '../parquet/index.js';
import { schemaVersion } from '../schema/versions.js';
import type { TableSchema } from '../schema/table-schema.js';
import { ByteBoundedCache } from './cache.js';
import { newMetrics, type ReaderMetrics } from './metrics.js';
import { countingSource, type ReadLog } from './source.js';

export interface ReaderServiceOptions {
  /** Budget of the rebuilt-file cache. Default 512 MiB. */
  cacheBytes?: number;
}

export const defaultCacheBytes = 512 * 1024 * 1024;

const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

/** A file served by granules: where its bytes are and what they must hash to. */
interface Granular {
  layout: FileLayout;
  granules: FileGranules;
  schema: TableSchema;
}

/** What the service remembers per file id at most (layouts and granules are small and never change). */
const granularEntries = 2_000;

/**
 * The records of one granule, kept in the cache after a read of some of its columns:
 * engines ask for a row group's columns in separate requests (DuckDB and pyarrow read the
 * filter column, then the others), and each would otherwise read the granule's span from
 * Kafka again. `byteLength` is the span's key + value + header bytes (the catalog's, an
 * upper bound of the bucket's) plus a rough per-record overhead (the objects and Buffers
 * that hold them).
 */
class GranuleRecords {
  readonly byteLength: number;
  constructor(readonly records: KafkaRecord[], granule: Granule) {
    this.byteLength = granule.kafkaBytes + recordOverheadBytes * records.length;
  }
}

const recordOverheadBytes = 200;

export class ReaderService {
  readonly cache: ByteBoundedCache<Uint8Array | GranuleRecords>;
  private readonly counters: Omit<ReaderMetrics, 'kafkaRecords' | 'kafkaBytes'> = newMetrics();
  private readonly source: CommittedSource & { log: ReadLog };
  private readonly inFlight = new Map<string, Promise<Uint8Array>>();
  private readonly chunksInFlight = new Map<string, Promise<Map<number, Uint8Array>>>();
  private readonly recordsInFlight = new Map<string, Promise<KafkaRecord[]>>();
  private readonly granular = new Map<bigint, Promise<Granular | null>>();

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

  /**
   * Bytes [start, end) of the file, piece by piece in order, each verified before it is
   * yielded. Memory: the row group being produced and the next one (built while the one
   * before is sent), whatever the range's length.
   */
  async *range(table: TableRecord, file: DataFile, start: number, end: number): AsyncGenerator<Uint8Array> {
    const granular = file.hasGranules ? await this.granularOf(file) : null;
    if (!granular) {
      yield (await this.bytes(table, file)).subarray(start, end);
      return;
    }
    const pieces = piecesOf(granular.layout, start, end);
    const byGroup = new Map<number, Extract<Piece, { kind: 'chunk' }>[]>();
    for (const piece of pieces) if (piece.kind === 'chunk') byGroup.set(piece.rowGroup, [...(byGroup.get(piece.rowGroup) ?? []), piece]);
    const groups = [...byGroup.keys()];
    const built = new Map<number, Promise<Map<number, Uint8Array>>>();
    const build = (at: number): void => {
      const rowGroup = groups[at];
      if (rowGroup === undefined || built.has(rowGroup)) return;
      const pending = this.chunks(table, file, granular, rowGroup, byGroup.get(rowGroup)!.map((piece) => piece.leaf));
      pending.catch(() => {}); // awaited in order below; a prefetch that fails is reported there
      built.set(rowGroup, pending);
    };
    build(0);
    for (const piece of pieces) {
      if (piece.kind === 'magic') yield MAGIC.subarray(piece.from, piece.to);
      else if (piece.kind === 'index') yield granular.granules.pageIndex.subarray(piece.from, piece.to);
      else if (piece.kind === 'footer') yield file.footer.subarray(piece.from, piece.to);
      else {
        const at = groups.indexOf(piece.rowGroup);
        build(at);
        const chunks = await built.get(piece.rowGroup)!;
        build(at + 1);
        yield chunks.get(piece.leaf)!.subarray(piece.from, piece.to);
        if (piece === byGroup.get(piece.rowGroup)!.at(-1)) built.delete(piece.rowGroup);
      }
    }
  }

  /** Layout, granules and schema of a file that has granules; null when it cannot be served by them. */
  private granularOf(file: DataFile): Promise<Granular | null> {
    let known = this.granular.get(file.dataFileId);
    if (!known) {
      known = (async () => {
        const granules = await findGranules(this.catalog, file.dataFileId);
        const layout = fileLayout(file.footer, Number(file.fileSizeBytes));
        if (!granules || 'problem' in layout || granules.granules.length !== layout.rowGroups.length) return null;
        return { layout, granules, schema: await schemaVersion(this.catalog, file.tableId, file.schemaVersion) };
      })();
      known.catch(() => this.granular.delete(file.dataFileId));
      if (this.granular.size >= granularEntries) this.granular.delete(this.granular.keys().next().value!);
      this.granular.set(file.dataFileId, known);
    }
    return known;
  }

  /** The chunks of `leaves` of one row group: from the cache, or rebuilt from its offsets and verified. */
  private async chunks(table: TableRecord, file: DataFile, granular: Granular, rowGroup: number, leaves: readonly number[]): Promise<Map<number, Uint8Array>> {
    const fileKey = ByteBoundedCache.key(file.dataFileId, file.sha256);
    const out = new Map<number, Uint8Array>();
    const missing: number[] = [];
    for (const leaf of leaves) {
      const cached = this.cache.get(`${fileKey}:${rowGroup}:${leaf}`);
      if (cached instanceof Uint8Array) out.set(leaf, cached);
      else missing.push(leaf);
    }
    this.counters.chunkCacheHits += out.size;
    this.counters.chunkCacheMisses += missing.length;
    if (missing.length === 0) return out;
    const key = `${fileKey}:${rowGroup}:${missing.join(',')}`;
    let pending = this.chunksInFlight.get(key);
    if (!pending) {
      pending = this.rebuildGranule(table, file, granular, rowGroup, missing).finally(() => this.chunksInFlight.delete(key));
      this.chunksInFlight.set(key, pending);
    }
    for (const [leaf, bytes] of await pending) out.set(leaf, bytes);
    return out;
  }

  private async rebuildGranule(table: TableRecord, file: DataFile, granular: Granular, rowGroup: number, leaves: readonly number[]): Promise<Map<number, Uint8Array>> {
    const all = granular.layout.rowGroups[rowGroup]!.chunks.length;
    this.counters[leaves.length === all ? 'granuleRebuilds' : 'partialGranuleRebuilds'] += 1;
    try {
      const fileKey = ByteBoundedCache.key(file.dataFileId, file.sha256);
      const granule = granular.granules.granules[rowGroup]!;
      // A read of some columns keeps the granule's records for the next read of others.
      let records: KafkaRecord[] | undefined;
      if (leaves.length < all) {
        const recordsKey = `${fileKey}:${rowGroup}:records`;
        const kept = this.cache.get(recordsKey);
        if (kept instanceof GranuleRecords) {
          records = kept.records;
          this.counters.granuleRecordHits += 1;
        } else {
          // Concurrent reads of other columns of the same granule share one Kafka read.
          let pending = this.recordsInFlight.get(recordsKey);
          if (!pending) {
            pending = granuleRecords(this.source, table, file, granule).finally(() => this.recordsInFlight.delete(recordsKey));
            this.recordsInFlight.set(recordsKey, pending);
          }
          records = await pending;
          this.cache.set(recordsKey, new GranuleRecords(records, granule));
        }
      }
      const chunks = await rebuildChunks(this.source, table, file, granular.schema, granular.layout, granule, leaves, records);
      for (const [leaf, bytes] of chunks) this.cache.set(`${fileKey}:${rowGroup}:${leaf}`, bytes);
      return chunks;
    } catch (error) {
      if (error instanceof GranuleMismatchError) this.counters.chunkMismatches += 1;
      throw error;
    }
  }

  /** The file's whole bytes: from the cache, or rebuilt from Kafka and verified. */
  async bytes(table: TableRecord, file: DataFile): Promise<Uint8Array> {
    const key = ByteBoundedCache.key(file.dataFileId, file.sha256);
    const cached = this.cache.get(key);
    if (cached instanceof Uint8Array) {
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
