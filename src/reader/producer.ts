/**
 * The bytes of every read: a byte range of a file, a whole file, or one row group as a
 * file of its own (a query's granule). A file with granules (src/files/granules.ts) is
 * produced piece by piece: the magic, the column chunks of the row groups the range
 * covers (rebuilt from those row groups' offsets only, for those columns only, each
 * checked against its sha256), the page index and footer from the catalog (checked
 * against the file's tail hash before a byte of them goes). A file without them is
 * rebuilt whole (verified by rebuildFile against size, footer and sha256). Rebuilt chunks
 * (and whole files) are kept in one byte-bounded cache; concurrent reads of the same
 * chunks share one rebuild. It reads the catalog for granules and schema versions only;
 * table and file records come from CatalogRecords, counters go to the ReaderMeter.
 */
import { findGranules, findGranulesOf, type CatalogFile } from '../catalog/file-reads.js';
import { storeDerivedGranules, type FileGranules, type Granule } from '../catalog/file-writes.js';
import type { Catalog } from '../catalog/db.js';
import { type TableRecord } from '../table/record.js';
import type { CatalogRecords } from './catalog-records.js';
import { RebuildMismatchError, rebuildFile } from '../files/rebuild.js';
import { chunksOf, granuleRecords, GranuleMismatchError, leavesOfColumns, type VerifiedGranule } from '../files/granules.js';
import { fileLayout, PARQUET_MAGIC, piecesOf, type FileLayout, type Piece } from '../parquet/index.js';
import { storedTailMismatch, type StoredPieceMismatchError } from '../files/stored-pieces.js';
import { schemaVersion } from '../catalog/schema-versions.js';
import type { TableSchema } from '../schema/table-schema.js';
import { ByteBoundedCache } from './cache.js';
import type { SharedReads } from './shared-reads.js';
import { BuildPool } from '../files/pool.js';
import { limitConcurrency } from '../common/limit.js';
import { PromiseMemo, SingleFlight } from '../common/single-flight.js';
import { log } from '../common/log.js';
import type { ReaderMeter } from './meter.js';

export interface FileProducerOptions {
  /**
   * Row groups read from Kafka at once (default: one more than the build threads, at
   * least 2). Each holds its records until it is encoded, so this bounds the rebuilds'
   * part of memory; more than the builds can take at once would only pile records up.
   */
  kafkaReadsAtOnce?: number;
  /**
   * Worker threads that build granules (src/files/pool.ts): 0 or unset builds on this
   * thread (a Lambda reader, whose concurrency is its parallelism); `serve` gives
   * `defaultBuildThreads` unless told.
   */
  buildThreads?: number;
}

/**
 * A file served by granules: what they must hash to, and where its bytes are. The layout
 * (a parse of the footer, ~1 ms) is taken on first use: a query's planning looks at the
 * granules of every candidate file and reads few of them. Null when the footer's row
 * groups do not match the granules.
 */
interface GranuleServedFile {
  granules: FileGranules;
  schema: TableSchema;
  layout(): FileLayout | null;
  /**
   * Throws StoredPieceMismatchError (counted and logged) unless the page index and footer
   * the catalog keeps are the bytes the file was built with (src/files/stored-pieces.ts):
   * they are sent as they are, so a read that sends any byte of them asks first. Hashed
   * once per file while its record is remembered (a few KiB to a few hundred).
   */
  checkTail(dataEnd: number): void;
  /** The footer `checkTail` checks (the file record's when this was made): the one a read sends. */
  footer: Uint8Array;
}

/** What the producer remembers per file id at most (layouts and granules are small and never change). */
const granularEntries = 2_000;

export class FileProducer {
  /** Whole-file rebuilds, and granule builds, in flight: concurrent readers of the same share one. */
  private readonly wholeFiles = new SingleFlight<string, Uint8Array>();
  private readonly granuleBuilds = new SingleFlight<string, Map<number, Uint8Array>>();
  /** Per file id, its granules, layout and schema (small, and they never change). */
  private readonly granular = new PromiseMemo<bigint, GranuleServedFile | null>(granularEntries);
  /** Per table and schema version (a table has few). */
  private readonly schemas = new PromiseMemo<string, TableSchema>(granularEntries);
  /** A granule's Kafka read, at most `kafkaReadsAtOnce` at a time (it waits for nothing else limited: no deadlock). */
  private readonly readGranule: typeof granuleRecords;
  /** Granule builds on worker threads, when given some. */
  private readonly builds: BuildPool | undefined;

  constructor(
    private readonly catalog: Catalog,
    /** Kafka reads shared by every file of a range and every column of a granule. */
    private readonly source: SharedReads,
    private readonly records: CatalogRecords,
    /** Rebuilt chunks and files. */
    private readonly cache: ByteBoundedCache<Uint8Array>,
    private readonly meter: ReaderMeter,
    options: FileProducerOptions = {},
  ) {
    this.readGranule = limitConcurrency(options.kafkaReadsAtOnce ?? Math.max(2, (options.buildThreads ?? 0) + 1), granuleRecords);
    this.builds = options.buildThreads ? new BuildPool(options.buildThreads) : undefined;
  }

  /** Stops the build workers (they also let the process end by themselves when idle). */
  close(): Promise<void> {
    return this.builds?.close() ?? Promise.resolve();
  }

  /**
   * Bytes [start, end) of the file, piece by piece in order, each verified before it is
   * yielded. Memory: the row group being produced and the next one (built while the one
   * before is sent), whatever the range's length.
   */
  async *range(table: TableRecord, file: CatalogFile, start: number, end: number): AsyncGenerator<Uint8Array> {
    const granular = file.hasGranules ? await this.granularOf(file) : null;
    const layout = granular?.layout() ?? null;
    if (!granular || !layout) {
      yield (await this.bytes(table, file)).subarray(start, end);
      return;
    }
    const pieces = piecesOf(layout, start, end);
    if (pieces.some((piece) => piece.kind === 'index' || piece.kind === 'footer')) granular.checkTail(layout.dataEnd);
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
      if (piece.kind === 'magic') yield PARQUET_MAGIC.subarray(piece.from, piece.to);
      else if (piece.kind === 'index') yield granular.granules.pageIndex.subarray(piece.from, piece.to);
      else if (piece.kind === 'footer') yield granular.footer.subarray(piece.from, piece.to);
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
  private granularOf(file: CatalogFile): Promise<GranuleServedFile | null> {
    if (!this.granular.has(file.dataFileId)) {
      // with the files looked up together with it: an engine reads them next
      const together = this.records.loadedWith(file).filter((other) => other.dataFileId !== file.dataFileId);
      if (together.length > 0) void this.prefetchGranules([file, ...together]).catch(() => {});
    }
    return this.granular.get(file.dataFileId, async () => {
      // the schema version is asked for beside the granules, not after them (a round trip less on a file's first read)
      this.schemaOf(file).catch(() => {});
      return this.granularFrom(file, await findGranules(this.catalog, file.dataFileId));
    });
  }

  private async granularFrom(file: CatalogFile, granules: FileGranules | null): Promise<GranuleServedFile | null> {
    if (!granules) return null;
    let layout: FileLayout | null | undefined;
    const parse = (): FileLayout | null => {
      const parsed = fileLayout(file.footer, Number(file.fileSizeBytes));
      return 'problem' in parsed || granules.granules.length !== parsed.rowGroups.length ? null : parsed;
    };
    let tail: StoredPieceMismatchError | null | undefined;
    const checkTail = (dataEnd: number): void => {
      if (tail === undefined) tail = storedTailMismatch(file, granules, dataEnd);
      if (tail) {
        this.meter.produced('storedPieceMismatches');
        log('error', tail.message, { partition: file.partition });
        throw tail;
      }
    };
    return { granules, schema: await this.schemaOf(file), layout: () => (layout === undefined ? (layout = parse()) : layout), checkTail, footer: file.footer };
  }

  /** The layout of a file read by granules; one that does not match them is the catalog's inconsistency, said, never served around. */
  private layoutOf(file: CatalogFile, granular: GranuleServedFile): FileLayout {
    const layout = granular.layout();
    if (!layout) throw new Error(`file ${file.dataFileId}: its ${granular.granules.granules.length} granules in the catalog do not match the row groups of its footer; \`offsetlake check\` rebuilds it whole`);
    return layout;
  }

  /** A file's schema version (a table has few: each is read once per service). */
  private schemaOf(file: CatalogFile): Promise<TableSchema> {
    return this.schemas.get(`${file.tableId}:${file.schemaVersion}`, () => schemaVersion(this.catalog, file.tableId, file.schemaVersion));
  }

  /**
   * Loads the granules of many files at once (two catalog queries instead of two per
   * file): a query's planning looks at every candidate file's, and one round trip per
   * file was most of a point lookup's time.
   */
  async prefetchGranules(files: readonly CatalogFile[]): Promise<void> {
    const wanted = files.filter((file) => file.hasGranules && !this.granular.has(file.dataFileId));
    for (let at = 0; at < wanted.length; at += granularEntries) {
      const batch = wanted.slice(at, at + granularEntries);
      const loaded = findGranulesOf(this.catalog, batch.map((file) => file.dataFileId));
      loaded.catch(() => {});
      for (const file of batch) this.granular.set(file.dataFileId, loaded.then((found) => this.granularFrom(file, found.get(file.dataFileId) ?? null)));
      await loaded;
    }
  }

  /** The chunks of `leaves` of one row group: from the cache, or rebuilt from its offsets and verified. */
  private async chunks(table: TableRecord, file: CatalogFile, granular: GranuleServedFile, rowGroup: number, leaves: readonly number[]): Promise<Map<number, Uint8Array>> {
    const fileKey = ByteBoundedCache.key(file.dataFileId, file.sha256);
    const out = new Map<number, Uint8Array>();
    const missing: number[] = [];
    for (const leaf of leaves) {
      const cached = this.cache.get(`${fileKey}:${rowGroup}:${leaf}`);
      if (cached instanceof Uint8Array) out.set(leaf, cached);
      else missing.push(leaf);
    }
    this.meter.produced('chunkCacheHits', out.size);
    this.meter.produced('chunkCacheMisses', missing.length);
    if (missing.length === 0) return out;
    const built = await this.granuleBuilds.run(`${fileKey}:${rowGroup}:${missing.join(',')}`, () => this.rebuildGranule(table, file, granular, rowGroup, missing));
    for (const [leaf, bytes] of built) out.set(leaf, bytes);
    return out;
  }

  private async rebuildGranule(table: TableRecord, file: CatalogFile, granular: GranuleServedFile, rowGroup: number, leaves: readonly number[]): Promise<Map<number, Uint8Array>> {
    const { chunks } = await this.verifiedGranule(table, file, granular, rowGroup, leaves);
    const fileKey = ByteBoundedCache.key(file.dataFileId, file.sha256);
    for (const [leaf, bytes] of chunks) this.cache.set(`${fileKey}:${rowGroup}:${leaf}`, bytes);
    return chunks;
  }

  /**
   * One granule rebuilt for the columns of `leaves` and verified, counted as a whole or
   * partial granule rebuild. Its records come from Kafka once for all who want them: a
   * partial read keeps them for the granule's other columns, a file whose range has other
   * files (other time buckets over the same offsets) for their reads (src/reader/shared-reads.ts).
   */
  private async verifiedGranule(table: TableRecord, file: CatalogFile, granular: GranuleServedFile, rowGroup: number, leaves: readonly number[], wantFile = false): Promise<VerifiedGranule> {
    const layout = this.layoutOf(file, granular);
    const all = layout.rowGroups[rowGroup]!.chunks.length;
    const partial = leaves.length < all;
    this.meter.produced(partial ? 'partialGranuleRebuilds' : 'granuleRebuilds');
    const granule = granular.granules.granules[rowGroup]!;
    const started = performance.now();
    try {
      const records = await this.readGranule(this.source, table, file, granule, { keep: partial || file.rangeFiles > 1, offsets: layout.rowGroups[rowGroup]!.offsets });
      const built = await chunksOf(this.source, table, file, granular.schema, layout, granule, records, leaves, { wantFile, ...(this.builds ? { build: this.builds.chunks } : {}) });
      this.meter.rebuilt('granule', (performance.now() - started) / 1000);
      return built;
    } catch (error) {
      if (error instanceof GranuleMismatchError) this.meter.produced('chunkMismatches');
      throw error;
    }
  }

  /**
   * What a query reads of a file with granules: per row group its Kafka offset span and
   * bytes, and the file's schema (whose columns `granuleFile` takes by index). Null for a
   * file without granules (it is read whole, with `bytes`).
   */
  async readableGranules(file: CatalogFile): Promise<{ granules: readonly Granule[]; schema: TableSchema } | null> {
    const granular = file.hasGranules ? await this.granularOf(file) : null;
    return granular && { granules: granular.granules.granules, schema: granular.schema };
  }

  /**
   * Row group `rowGroup` of the file, for some top-level columns only (indices into the
   * columns of the file's schema version), as a Parquet file of one row group: rebuilt
   * from that granule's offsets alone, every chunk checked against the catalog's sha256
   * before the file is handed out. The file's chunks are the data file's own, byte for
   * byte; its footer is that of the smaller file.
   */
  async granuleFile(table: TableRecord, file: CatalogFile, rowGroup: number, columns: readonly number[]): Promise<Uint8Array> {
    const granular = file.hasGranules ? await this.granularOf(file) : null;
    if (!granular) throw new Error(`file ${file.dataFileId} of table ${table.name} has no granules: it is read whole`);
    const rowGroups = this.layoutOf(file, granular).rowGroups.length;
    if (!Number.isInteger(rowGroup) || rowGroup < 0 || rowGroup >= rowGroups) {
      throw new RangeError(`file ${file.dataFileId} has row groups 0 to ${rowGroups - 1}, not ${rowGroup}`);
    }
    const known = granular.schema.columns.length;
    const wrong = columns.find((c) => !Number.isInteger(c) || c < 0 || c >= known);
    if (wrong !== undefined) throw new RangeError(`file ${file.dataFileId} has columns 0 to ${known - 1}, not ${wrong}`);
    if (columns.length === 0) throw new RangeError(`a granule file needs at least one column (file ${file.dataFileId}, row group ${rowGroup})`);
    const built = await this.verifiedGranule(table, file, granular, rowGroup, leavesOfColumns(granular.schema, columns), true);
    return built.fileBytes!;
  }

  /** The file's whole bytes: from the cache, or rebuilt from Kafka and verified. */
  async bytes(table: TableRecord, file: CatalogFile): Promise<Uint8Array> {
    const key = ByteBoundedCache.key(file.dataFileId, file.sha256);
    const cached = this.cache.get(key);
    if (cached instanceof Uint8Array) {
      this.meter.produced('cacheHits');
      return cached;
    }
    this.meter.produced('cacheMisses');
    return this.wholeFiles.run(key, () => this.rebuild(table, file, key));
  }

  private async rebuild(table: TableRecord, file: CatalogFile, key: string): Promise<Uint8Array> {
    this.meter.produced('rebuilds');
    const started = performance.now();
    try {
      const rebuilt = await rebuildFile(this.source, table, file, await this.schemaOf(file));
      await storeDerivedGranules(this.catalog, file, rebuilt.derivedGranules);
      this.meter.rebuilt('file', (performance.now() - started) / 1000);
      this.cache.set(key, rebuilt.bytes);
      return rebuilt.bytes;
    } catch (error) {
      if (error instanceof RebuildMismatchError) this.meter.produced('mismatches');
      throw error;
    }
  }
}
