/**
 * What `check` finds wrong with a file that rebuilds byte for byte: the catalog's
 * statistics, the pieces it keeps to serve the file by granules, and its secondary index
 * entries, each against those the verified rebuild gives. Pure: the caller reads the
 * catalog's side (src/cli/check.ts) and hands it in.
 */
import type { CatalogFile } from '../catalog/file-reads.js';
import type { FileGranules } from '../catalog/file-writes.js';
import type { TableRecord } from '../table/record.js';
import { columnStatistics, fileLayout, type PreparedData } from '../parquet/index.js';
import type { TableSchema } from '../schema/table-schema.js';
import type { IndexDefinition } from '../indexes/definition.js';
import { fileIndexEntries, type IndexEntryRow } from '../indexes/entries.js';
import { ownValue } from '../common/objects.js';
import { recordColumns } from '../kafka/record-batch.js';
import { granulesOf, indexResolver } from './files.js';
import { storedPieceDifferences } from './stored-pieces.js';
import type { VerifiedFile } from './rebuild.js';

/** The catalog's side of a file beyond its row: what `fileDifferences` holds against the rebuild. */
export interface StoredFilePieces {
  /** Its granules and page index (read now, not the ones a listing saw), null when it has none. */
  granules: FileGranules | null;
  /** Its secondary index entries, every index, scope and part. */
  indexEntries: readonly IndexEntryRow[];
  /** The table's indexes that those entries belong to (an entry of an index no longer defined is named by its id). */
  indexes: readonly IndexDefinition[];
}

/** How the catalog's side of a file differs from its verified rebuild, one sentence per difference (empty lists when they agree). */
export interface FileDifferences {
  /** The catalog's statistics against the rebuilt file's rows. */
  statistics: string[];
  /**
   * The pieces the catalog keeps to serve the file by granules (page index, its and the
   * footer's sha256, each granule's offsets, rows and chunk checksums) against the rebuilt file's.
   */
  pieces: string[];
  /**
   * The catalog's index entries against those the rebuilt rows give: `query` prunes files
   * and granules by them, so a wrong one could skip rows.
   */
  indexEntries: string[];
}

export function fileDifferences(table: TableRecord, file: CatalogFile, verified: VerifiedFile, stored: StoredFilePieces): FileDifferences {
  return {
    statistics: statisticsDifferences(verified.schema, verified.rows, file),
    pieces: stored.granules ? storedPiecesAgainst(stored.granules, file, verified) : [],
    indexEntries: indexEntriesAgainst(table, verified, stored),
  };
}

/**
 * The catalog's granules and page index of a file against those of its verified rebuild:
 * `check` compares every piece a read sends from the catalog, and every checksum a read
 * trusts, with bytes rebuilt from Kafka.
 */
function storedPiecesAgainst(stored: FileGranules, file: CatalogFile, verified: VerifiedFile): string[] {
  const rebuilt = granulesOf(verified.built, { records: verified.records, columns: recordColumns(verified.records) }, file.startOffset, file.endOffset, []);
  const layout = fileLayout(verified.built.footer, verified.built.byteLength);
  if (!rebuilt || 'problem' in layout) return [`granules: the catalog has ${stored.granules.length}, but the rebuilt file cannot be served by granules`];
  return storedPieceDifferences(stored, rebuilt, layout.rowGroups[0]?.chunks.map((chunk) => chunk.path) ?? [], layout.dataEnd);
}

/**
 * The catalog's index entries of a file against those its verified rows give, for every
 * index the catalog keeps entries of for it: entries are built from the rows alone (by the
 * indexer or an index backfill), so the rebuilt rows give them again byte for byte.
 */
function indexEntriesAgainst(table: TableRecord, verified: VerifiedFile, { indexEntries: stored, indexes: defined }: StoredFilePieces): string[] {
  if (stored.length === 0) return [];
  const kept = new Set(stored.map((entry) => entry.indexId));
  const indexes = defined.filter((index) => kept.has(index.indexId));
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
