/**
 * `offsetlake sql "DDL"`: CREATE INDEX, DROP INDEX and SHOW INDEXES (src/indexes/ddl.ts
 * has the grammar). A CREATE INDEX on a table with files declares the index; its
 * backfill gives every older file entries from Kafka while the table stays live.
 */
import { createIndex, dropIndex, indexDdlText } from '../catalog/index-ddl.js';
import { indexReports, type IndexReport } from '../catalog/indexes.js';
import { findTable } from '../catalog/tables.js';
import { IndexDdlError, parseIndexStatement } from '../indexes/ddl.js';
import { IndexDefinitionError } from '../indexes/definition.js';
import { parseCommandArgs } from './args.js';
import { withEngine } from './engine.js';
import { printJson, printTable, UsageError } from './output.js';

export const sqlUsage = `offsetlake sql "CREATE INDEX [IF NOT EXISTS] NAME ON TABLE (COLUMN, …) USING MINMAX|BLOOM|POSTINGS [SCOPE HISTORY] [GRANULE ROWS] [WITH (false_positive_rate = P)]" [--no-wait] [--json]
offsetlake sql "DROP INDEX [IF EXISTS] NAME ON TABLE" [--json]
offsetlake sql "SHOW INDEXES [ON TABLE]" [--json]`;

const options = {
  json: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  'database-url': { type: 'string' },
  'kafka-brokers': { type: 'string' },
} as const;

function mib(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** One line per index, as SHOW INDEXES prints it. */
export function indexRows(reports: readonly IndexReport[]): Record<string, unknown>[] {
  return reports.map((r) => ({
    table: r.table,
    index: r.name,
    kind: r.kind.toUpperCase(),
    columns: r.columns.length,
    state: r.state,
    files: `${r.filesWithEntries}/${r.filesWithEntries + r.filesWithout}`,
    backfill: r.filesTotal > 0 ? `${r.filesDone}/${r.filesTotal} files, ${r.granulesDone} granules, ${mib(r.bytesRead)} read` : '-',
    size: mib(r.entryBytes),
    reads: `${r.readsUsed} used, ${r.readsSkipped} skipped`,
    error: r.lastError ?? '',
  }));
}

export async function sqlCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('sql', args, options, true);
  if (positionals.length !== 1) throw new UsageError(`sql takes one statement, quoted; usage:\n${sqlUsage}`);
  let statement: ReturnType<typeof parseIndexStatement>;
  try {
    statement = parseIndexStatement(positionals[0]!);
  } catch (error) {
    if (error instanceof IndexDdlError) throw new UsageError(error.message);
    throw error;
  }
  const engineFlags = { databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] };
  return withEngine(engineFlags, async (engine) => {
    if (statement.kind === 'show') {
      const tableId = statement.table === null ? undefined : (await findTable(engine.catalog, statement.table)).tableId;
      const reports = await indexReports(engine.catalog, tableId);
      if (values.json) printJson(reports.map((r) => ({ ...r, ddl: indexDdlText(r.table, r) })));
      else printTable(indexRows(reports));
      return 0;
    }
    if (statement.kind === 'drop') {
      const dropped = await dropIndex(engine.catalog, statement.table, statement.name, { ifExists: statement.ifExists });
      if (values.json) printJson({ dropped });
      else process.stdout.write(dropped ? `dropped index ${statement.name} on ${statement.table} and all its entries\n` : `no index ${statement.name} on ${statement.table}\n`);
      return 0;
    }
    let created: Awaited<ReturnType<typeof createIndex>>;
    try {
      created = await createIndex(engine.catalog, statement.table, statement.index, { ifNotExists: statement.ifNotExists });
    } catch (error) {
      if (error instanceof IndexDefinitionError) throw new UsageError(error.message);
      throw error;
    }
    const { index } = created;
    if (!created.created) {
      if (values.json) printJson({ created: false, index });
      else process.stdout.write(`index ${index.name} on ${statement.table} exists already (${index.state}); nothing changed\n`);
      return 0;
    }
    if (values.json) printJson({ created: true, index, filesToBackfill: created.filesToBackfill });
    else process.stdout.write(index.state === 'active'
      ? `created index ${index.name} on ${statement.table}: active (the table has no files yet; every file from now on carries its entries)\n`
      : `declared index ${index.name} on ${statement.table}: ${created.filesToBackfill} files need entries from Kafka; \`offsetlake run\` builds them in the background (SHOW INDEXES shows progress)\n`);
    return 0;
  });
}
