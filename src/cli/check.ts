/**
 * `check`: every live file of the given tables rebuilt from Kafka and held against the
 * catalog. The catalog's side is read here (each file's schema version, its granules, index
 * entries and the table's indexes); the rebuild and the comparisons are the files layer's
 * (src/files/rebuild.ts, src/files/check.ts).
 */
import type { Catalog } from '../catalog/db.js';
import { findGranules, type CatalogFile } from '../catalog/file-reads.js';
import { storeDerivedGranules } from '../catalog/file-writes.js';
import { fileIndexEntryRows, tableIndexes } from '../catalog/indexes.js';
import { schemaVersion } from '../catalog/schema-versions.js';
import { fileDifferences, type FileDifferences } from '../files/check.js';
import { RebuildMismatchError, verifiedFile } from '../files/rebuild.js';
import type { CommittedSource } from '../kafka/source.js';
import type { TableRecord } from '../table/record.js';

/** One file's check: how its catalog side differs from its rebuild (empty lists when they agree, or when it did not rebuild). */
export interface FileCheck extends FileDifferences {
  table: string;
  file: bigint;
  partition: number;
  offsets: string;
  /** null: rebuilt byte for byte; otherwise why it cannot be. */
  problem: string | null;
}

/**
 * Rebuilds every live file of the given tables and reports each one that does not come
 * back byte for byte, by name: such a file is never served (the reader refuses it), and
 * this is how an operator finds them all at once. A file that does come back also has
 * its catalog statistics taken again from the rows its verified bytes hold: statistics
 * that are not the file's would prune wrongly, so they are named too; so are stored pieces
 * and index entries that are not the rebuilt file's. A file without granules gets them.
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
      let differences: FileDifferences = { statistics: [], pieces: [], indexEntries: [] };
      try {
        const verified = await verifiedFile(source, table, file, await schemaVersion(catalog, table.tableId, file.schemaVersion));
        await storeDerivedGranules(catalog, file, verified.derivedGranules);
        const granules = file.hasGranules ? await findGranules(catalog, file.dataFileId) : null;
        const indexEntries = await fileIndexEntryRows(catalog, file.dataFileId);
        const indexes = indexEntries.length > 0 ? await tableIndexes(catalog, table.tableId) : [];
        differences = fileDifferences(table, file, verified, { granules, indexEntries, indexes });
      } catch (error) {
        problem = error instanceof RebuildMismatchError ? error.differences.join('; ') : (error as Error).message;
      }
      const check = { table: table.name, file: file.dataFileId, partition: file.partition, offsets: `[${file.startOffset}, ${file.endOffset})`, problem, ...differences };
      onFile(check);
      checks.push(check);
    }
  }
  return checks;
}
