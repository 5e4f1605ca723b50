/**
 * One chunk of an index backfill: the next files without the index's entries, each
 * rebuilt from Kafka and checked against the catalog (records, size, footer, sha256:
 * src/files/rebuild.ts) before its rows are trusted, then given entries exactly as
 * indexing gives a new file (fileIndexEntries over the same rows, built with the file's
 * schema version), so the entries are the same bytes either way. Reads only: the caller
 * commits. A file whose bytes cannot come back (they differ, or Kafka no longer holds
 * its offsets) is given up on with the reason, never stopping the index; any other error
 * (Kafka or Postgres away) fails the chunk, which is run again.
 */
import { findFile } from '../catalog/file-reads.js';
import { storeDerivedGranules } from '../catalog/file-writes.js';
import { schemaVersion } from '../catalog/schema-versions.js';
import type { TableRecord } from '../table/record.js';
import { indexResolver } from '../files/files.js';
import type { IndexDefinition } from '../indexes/definition.js';
import { fileIndexEntries, type IndexEntryRow } from '../indexes/entries.js';
import { OffsetOutOfRangeError } from '../kafka/errors.js';
import { FileExpiredError, RebuildMismatchError, verifiedFile } from '../files/rebuild.js';
import type { IndexBackfillDeps } from './types.js';

export interface FileEntries {
  dataFileId: bigint;
  entries: IndexEntryRow[];
  granules: number;
  bytesRead: number;
}

export interface ChunkEntries {
  built: FileEntries[];
  skipped: { dataFileId: bigint; reason: string }[];
  bytesRead: number;
}

/** Errors that say the file's bytes will not come back from Kafka: retrying cannot help. */
function unrebuildable(error: unknown): boolean {
  return error instanceof RebuildMismatchError || error instanceof FileExpiredError
    || (error instanceof OffsetOutOfRangeError && error.bound === 'below-earliest');
}

/**
 * Entries for `files` in order, until `limits.bytes` Kafka bytes were read (at least one
 * file). `between` runs before each file (the driver renews its lease there).
 */
export async function chunkEntries(
  deps: Pick<IndexBackfillDeps, 'catalog' | 'source'>, table: TableRecord, index: IndexDefinition, files: readonly bigint[],
  limits: { bytes: number }, between: () => Promise<void>,
): Promise<ChunkEntries> {
  const chunk: ChunkEntries = { built: [], skipped: [], bytesRead: 0 };
  for (const dataFileId of files) {
    if (chunk.bytesRead >= limits.bytes) break;
    await between();
    const file = await findFile(deps.catalog, table.tableId, dataFileId);
    if (!file) continue; // dropped with its table meanwhile: nothing to index
    try {
      const verified = await verifiedFile(deps.source, table, file, await schemaVersion(deps.catalog, table.tableId, file.schemaVersion));
      await storeDerivedGranules(deps.catalog, file, verified.derivedGranules);
      const entries = fileIndexEntries([index], indexResolver(table, verified.schema), verified.rows);
      chunk.built.push({ dataFileId, entries, granules: Math.ceil(verified.records.length / index.granuleRows), bytesRead: verified.bytesRead });
      chunk.bytesRead += verified.bytesRead;
    } catch (error) {
      if (!unrebuildable(error)) throw error;
      chunk.skipped.push({ dataFileId, reason: (error as Error).message });
    }
  }
  return chunk;
}
