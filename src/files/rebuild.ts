/**
 * Rebuilding a file from Kafka: its committed records of [start_offset, end_offset) that
 * fall in its bucket, built with its table-schema and encoder versions, give the same
 * bytes. Size, footer and sha256 are checked before the bytes are handed out; a
 * mismatch is an error, never silently served.
 */
import { log } from '../common/log.js';
import type { Catalog } from '../catalog/db.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import { encodeRows, fileRows, granulesOf, indexResolver } from './files.js';
import { fileIndexEntryRows, tableIndexes } from '../catalog/indexes.js';
import { fileIndexEntries } from '../indexes/entries.js';
import { columnStatistics, fileLayout, type EncodedFile, type PreparedData } from '../parquet/index.js';
import { storedPieceDifferences } from './stored-pieces.js';
import { findGranules, type CatalogFile } from '../catalog/file-reads.js';
import { ownValue } from '../common/objects.js';
import type { TableSchema } from '../schema/table-schema.js';
import { insertGranules } from '../catalog/file-writes.js';
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import { bucketOf } from '../ranges/buckets.js';
import { compactionProblem } from '../kafka/topics.js';
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import { recordColumns } from '../kafka/record-batch.js';
import { schemaVersion } from '../catalog/schema-versions.js';

export class RebuildMismatchError extends Error {
  override name = 'RebuildMismatchError';
  constructor(readonly dataFileId: bigint, readonly differences: string[]) {
    super(`file ${dataFileId} rebuilt from Kafka does not match the catalog: ${differences.join('; ')}`);
  }
}

export class FileExpiredError extends Error {
  override name = 'FileExpiredError';
  constructor(readonly dataFileId: bigint, expiredAt: Date) {
    super(`file ${dataFileId} expired at ${expiredAt.toISOString()}: Kafka no longer holds its offsets`);
  }
}

export interface RebuiltFile {
  bytes: Uint8Array;
  sha256: Uint8Array;
  records: number;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/**
 * The file's records as indexing saw them: committed, in its offsets (or the span of one
 * of its granules), in its bucket.
 */
export async function fileRecords(
  source: CommittedSource, table: TableRecord, file: CatalogFile, span: { startOffset: bigint; endOffset: bigint } = file, everyRecord?: (record: KafkaRecord) => void,
  options?: SourceReadOptions,
): Promise<KafkaRecord[]> {
  const bucket = file.bucket.getTime();
  const records: KafkaRecord[] = [];
  for await (const batch of source.read(table.topic, file.partition, span.startOffset, span.endOffset, { ...options, ...tableTopic(table) })) {
    if (everyRecord) for (const record of batch.records) everyRecord(record);
    for (const record of batch.records) if (bucketOf(record.timestamp, table.settings.granularity) === bucket) records.push(record);
  }
  return records;
}

export interface FileCheck {
  table: string;
  file: bigint;
  partition: number;
  offsets: string;
  /** null: rebuilt byte for byte; otherwise why it cannot be. */
  problem: string | null;
  /** How the catalog's statistics differ from the rebuilt file's rows (empty when they agree, or when it did not rebuild). */
  statistics: string[];
  /**
   * How the pieces the catalog keeps to serve the file by granules (page index, its and the
   * footer's sha256, each granule's offsets, rows and chunk checksums) differ from the
   * rebuilt file's (empty when they agree, or when it did not rebuild).
   */
  pieces: string[];
  /**
   * How the catalog's secondary index entries of the file (every index, scope and part)
   * differ from those its rebuilt rows give: `query` prunes files and granules by them,
   * so a wrong one could skip rows (empty when they agree, or when it did not rebuild).
   */
  indexEntries: string[];
}

/**
 * Rebuilds every live file of the given tables and reports each one that does not come
 * back byte for byte, by name: such a file is never served (the reader refuses it), and
 * this is how an operator finds them all at once. A file that does come back also has
 * its catalog statistics taken again from the rows its verified bytes hold: statistics
 * that are not the file's would prune wrongly, so they are named too.
 */
export async function checkFiles(
  catalog: Catalog,
  source: CommittedSource,
  tables: readonly TableRecord[],
  listLive: (table: TableRecord) => Promise<CatalogFile[]>,
  onFile: (check: FileCheck) => void = () => {},
): Promise<FileCheck[]> {
  const checks: FileCheck[] = [];
  for (const table of tables) {
    for (const file of await listLive(table)) {
      let problem: string | null = null;
      let statistics: string[] = [];
      let pieces: string[] = [];
      let indexEntries: string[] = [];
      try {
        const verified = await verifiedFile(catalog, source, table, file);
        statistics = statisticsDifferences(verified.schema, verified.rows, file);
        if (file.hasGranules) pieces = await storedPiecesAgainst(catalog, file, verified);
        indexEntries = await indexEntriesAgainst(catalog, table, file, verified);
      } catch (error) {
        problem = error instanceof RebuildMismatchError ? error.differences.join('; ') : (error as Error).message;
      }
      const check = { table: table.name, file: file.dataFileId, partition: file.partition, offsets: `[${file.startOffset}, ${file.endOffset})`, problem, statistics, pieces, indexEntries };
      onFile(check);
      checks.push(check);
    }
  }
  return checks;
}

/**
 * The catalog's granules and page index of a file (read now, not the ones the listing saw)
 * against those of its verified rebuild: `check` compares every piece a read sends from
 * the catalog, and every checksum a read trusts, with bytes rebuilt from Kafka.
 */
async function storedPiecesAgainst(catalog: Catalog, file: CatalogFile, verified: VerifiedFile): Promise<string[]> {
  const stored = await findGranules(catalog, file.dataFileId);
  const rebuilt = granulesOf(verified.built, { records: verified.records, columns: recordColumns(verified.records) }, file.startOffset, file.endOffset, []);
  const layout = fileLayout(verified.built.footer, verified.built.byteLength);
  if (!stored) return [];
  if (!rebuilt || 'problem' in layout) return [`granules: the catalog has ${stored.granules.length}, but the rebuilt file cannot be served by granules`];
  return storedPieceDifferences(stored, rebuilt, layout.rowGroups[0]?.chunks.map((chunk) => chunk.path) ?? [], layout.dataEnd);
}

/**
 * The catalog's index entries of a file against those its verified rows give, for every
 * index the catalog keeps entries of for it: entries are built from the rows alone (by the
 * indexer or an index backfill), so the rebuilt rows give them again byte for byte.
 */
async function indexEntriesAgainst(catalog: Catalog, table: TableRecord, file: CatalogFile, verified: VerifiedFile): Promise<string[]> {
  const stored = await fileIndexEntryRows(catalog, file.dataFileId);
  if (stored.length === 0) return [];
  const kept = new Set(stored.map((entry) => entry.indexId));
  const indexes = (await tableIndexes(catalog, table.tableId)).filter((index) => kept.has(index.indexId));
  const names = new Map(indexes.map((index) => [index.indexId, index.name]));
  const key = (entry: { indexId: bigint; scope: string; part: number }) => `${entry.indexId}/${entry.scope}/${entry.part}`;
  const rebuilt = new Map(fileIndexEntries(indexes, indexResolver(table, verified.schema), verified.rows).map((entry) => [key(entry), entry.payload]));
  const differences: string[] = [];
  for (const entry of stored) {
    const what = `index ${names.get(entry.indexId) ?? `#${entry.indexId} (no longer defined)`} (${entry.scope}) part ${entry.part}`;
    const expected = rebuilt.get(key(entry));
    if (expected === undefined) differences.push(`${what}: in the catalog, but the rebuilt rows give no such entry`);
    else if (Buffer.compare(Buffer.from(expected), Buffer.from(entry.payload)) !== 0) differences.push(`${what}: the catalog's ${entry.payload.byteLength} bytes are not the ${expected.byteLength} the rebuilt rows give`);
    rebuilt.delete(key(entry));
  }
  for (const missing of rebuilt.keys()) {
    const [indexId, scope, part] = missing.split('/');
    differences.push(`index ${names.get(BigInt(indexId!))} (${scope}) part ${part}: the rebuilt rows give it, but the catalog has no such entry`);
  }
  return differences;
}

/**
 * How the catalog's statistics of a file differ from those of its rows (the rows a
 * verified rebuild built the file's very bytes from), one sentence per column and field.
 */
export function statisticsDifferences(schema: TableSchema, rows: PreparedData, file: CatalogFile): string[] {
  const stored = new Map(file.columns.map((column) => [column.columnId, column]));
  const differences: string[] = [];
  for (const actual of columnStatistics(schema.columns, rows)) {
    const columnId = ownValue(schema.leafIds, actual.column);
    const catalog = columnId === undefined ? undefined : stored.get(columnId);
    if (!catalog) {
      differences.push(`column ${actual.column} has no statistics in the catalog`);
      continue;
    }
    const fields: [string, string | null, string | null][] = [
      ['values', String(actual.valueCount), String(catalog.valueCount)],
      ['nulls', String(actual.nullCount), String(catalog.nullCount)],
      ['NaNs', String(actual.nanCount), String(catalog.nanCount)],
      ['min', actual.min, catalog.min],
      ['max', actual.max, catalog.max],
    ];
    for (const [name, fromFile, fromCatalog] of fields) {
      if (fromFile !== fromCatalog) differences.push(`column ${actual.column}: ${name} ${shownBound(fromFile)} in the file, ${shownBound(fromCatalog)} in the catalog`);
    }
  }
  return differences;
}

/** A bound as a sentence can hold it: quoted, long ones cut in the middle. */
function shownBound(bound: string | null): string {
  if (bound === null) return 'none';
  return JSON.stringify(bound.length > 80 ? `${bound.slice(0, 38)}…${bound.slice(-38)}` : bound);
}

export async function rebuildFile(catalog: Catalog, source: CommittedSource, table: TableRecord, file: CatalogFile): Promise<RebuiltFile> {
  const { built, records } = await verifiedFile(catalog, source, table, file);
  return { bytes: built.bytes, sha256: built.sha256, records: records.length };
}

/** A file rebuilt and checked against the catalog, with what it was built from. */
export interface VerifiedFile {
  built: EncodedFile;
  /** The file's records, and its rows as built (the same rows indexing built it from). */
  records: KafkaRecord[];
  rows: PreparedData;
  schema: TableSchema;
  /** Key + value + header bytes of every record read for it (its span, every bucket). */
  bytesRead: number;
}

/**
 * Rebuilds the file and checks records, size, footer and sha256 against the catalog:
 * only then are its records known to be the file's (what a rebuild serves, and what an
 * index backfill takes entries from). A difference throws RebuildMismatchError.
 */
export async function verifiedFile(catalog: Catalog, source: CommittedSource, table: TableRecord, file: CatalogFile): Promise<VerifiedFile> {
  if (file.expiredAt) throw new FileExpiredError(file.dataFileId, file.expiredAt);
  const schema = await schemaVersion(catalog, table.tableId, file.schemaVersion);
  // A file without granules gets them from this rebuild: their Kafka bytes count every record of the span.
  const spanRecords: KafkaRecord[] = [];
  let bytesRead = 0;
  const records = await fileRecords(source, table, file, file, (record) => {
    bytesRead += recordBytes(record);
    if (!file.hasGranules) spanRecords.push(record);
  });
  const columns = recordColumns(records);
  const rows = fileRows(table, schema, file.partition, records, file.encoderVersion, { columns });
  const built = encodeRows(table, schema, rows, file.encoderVersion);
  const differences: string[] = [];
  if (BigInt(records.length) !== file.recordCount) differences.push(`${records.length} records, the catalog has ${file.recordCount}`);
  if (BigInt(built.byteLength) !== file.fileSizeBytes) differences.push(`${built.byteLength} bytes, the catalog has ${file.fileSizeBytes}`);
  if (!Buffer.from(built.footer).equals(file.footer)) differences.push(`footer differs (${built.footer.byteLength} bytes, the catalog has ${file.footer.byteLength})`);
  if (!Buffer.from(built.sha256).equals(file.sha256)) differences.push(`sha256 ${hex(built.sha256)}, the catalog has ${hex(file.sha256)}`);
  if (differences.length > 0) {
    const compacted = await compactionCause(source, table.topic);
    throw new RebuildMismatchError(file.dataFileId, compacted ? [compacted, ...differences] : differences);
  }
  if (!file.hasGranules) {
    await addGranules(catalog, file, granulesOf(built, { records, columns }, file.startOffset, file.endOffset, [{ records: spanRecords, columns: recordColumns(spanRecords) }]));
  }
  return { built, records, rows, schema, bytesRead };
}

/** Why a rebuild may differ, when there is a cause to name: the topic was made compacted after indexing. */
export async function compactionCause(source: CommittedSource, topic: string): Promise<string | undefined> {
  return compactionProblem(topic, (await source.cleanupPolicy?.(topic).catch(() => undefined)) ?? 'delete');
}

/**
 * A file indexed before granules existed gets them from its first whole rebuild (they
 * are derived from bytes just checked against the catalog). Derived state: a catalog
 * that refuses the write (a reader's login may not write them, migration 15, so that it
 * cannot forge them) leaves the file served whole, as before.
 */
async function addGranules(catalog: Catalog, file: CatalogFile, granules: ReturnType<typeof granulesOf>): Promise<void> {
  if (!granules) return;
  try {
    await insertGranules(catalog, file.dataFileId, granules);
  } catch (error) {
    log('warn', `file ${file.dataFileId}: its granules were not stored (${(error as Error).message}); it is served whole until they are`, { partition: file.partition });
  }
}
