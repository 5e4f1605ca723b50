/**
 * `offsetlake sql "DDL"`: CREATE INDEX, DROP INDEX and SHOW INDEXES (src/indexes/ddl.ts
 * has the grammar). A CREATE INDEX on a table with files declares the index and drives
 * its backfill here, with progress (every older file given entries from Kafka while the
 * table stays live); `--no-wait` leaves that to `run` (or, on AWS, the state machine).
 */
import { createIndex, dropIndex, indexDdlText } from '../catalog/index-ddl.js';
import { indexReports, type IndexReport } from '../catalog/indexes.js';
import { findTable } from '../catalog/tables.js';
import { IndexDdlError, parseIndexStatement } from '../indexes/ddl.js';
import { IndexDefinitionError } from '../indexes/definition.js';
import { parseCommandArgs } from './args.js';
import { ownerName } from '../runtime/engine.js';
import { withCatalog, withEngine } from './engine.js';
import { printJson, printTable, UsageError } from './output.js';
import { sqlUsage } from './help.js';

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
    backfill: r.filesTotal > 0
      ? `${r.filesDone}/${r.filesTotal} files, ${r.granulesDone} granules, ${mib(r.bytesRead)} read${r.filesSkipped.length ? `, ${r.filesSkipped.length} skipped` : ''}${r.owner ? ` (by ${r.owner})` : ''}`
      : '-',
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
  // SHOW and DROP read and write the catalog only: they start without the Kafka client.
  if (statement.kind === 'show') {
    const { table } = statement;
    return withCatalog(engineFlags, async (engine) => {
      const tableId = table === null ? undefined : (await findTable(engine.catalog, table)).tableId;
      const reports = await indexReports(engine.catalog, tableId);
      if (values.json) printJson(reports.map((r) => ({ ...r, ddl: indexDdlText(r.table, r) })));
      else printTable(indexRows(reports));
      return 0;
    });
  }
  if (statement.kind === 'drop') {
    const { table, name, ifExists } = statement;
    return withCatalog(engineFlags, async (engine) => {
      const dropped = await dropIndex(engine.catalog, table, name, { ifExists });
      if (values.json) printJson({ dropped });
      else process.stdout.write(dropped ? `dropped index ${name} on ${table} and all its entries\n` : `no index ${name} on ${table}\n`);
      return 0;
    });
  }
  return withEngine(engineFlags, async (engine) => {
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
    if (index.state === 'active' || values['no-wait']) {
      if (values.json) printJson({ created: true, index, filesToBackfill: created.filesToBackfill });
      else process.stdout.write(index.state === 'active'
        ? `created index ${index.name} on ${statement.table}: active (the table has no files yet; every file from now on carries its entries)\n`
        : `declared index ${index.name} on ${statement.table}: ${created.filesToBackfill} files need entries from Kafka; \`offsetlake run\` builds them in the background (SHOW INDEXES shows progress)\n`);
      return 0;
    }
    // The backfill runs here, in the foreground; the table stays readable and writable, and
    // should this process stop, `offsetlake run` (or another CREATE's driver) goes on from where it was.
    const total = created.filesToBackfill;
    let files = 0;
    let bytes = 0;
    const say = (line: string): void => void process.stderr.write(`${line}\n`);
    say(`declared index ${index.name} on ${statement.table}: giving ${total} files their entries from Kafka (the table stays readable and writable)`);
    const [{ runIndexBackfill }, { kafkaSource }] = await Promise.all([import('../index-backfill/index.js'), import('../kafka/source.js')]);
    const summary = await runIndexBackfill({
      catalog: engine.catalog,
      source: kafkaSource(engine.kafka),
      owner: ownerName('sql'),
      progress: (step) => {
        if (step.outcome === 'moved') say(`index ${index.name}: ${step.from} → ${step.state}`);
        if (step.outcome === 'chunk') {
          files += step.files + step.skipped.length;
          bytes += step.bytesRead;
          say(`index ${index.name}: ${files}/${total} files, ${(bytes / 1024 / 1024).toFixed(1)} MiB read from Kafka${step.skipped.length ? `; skipped ${step.skipped.map((s) => `file ${s.file} (${s.reason})`).join(', ')}` : ''}`);
        }
        if (step.outcome === 'held') say(`index ${index.name}: another driver (${step.holder ?? 'unknown'}) holds its backfill; waiting for it`);
      },
    }, index.indexId, { waitForLease: true });
    if (values.json) printJson({ created: true, index: { ...index, state: summary.state }, backfill: summary });
    else process.stdout.write(summary.state === null
      ? `index ${index.name} was dropped while its backfill ran\n`
      : `created index ${index.name} on ${statement.table}: ${summary.state} (${summary.files} files given entries from ${(summary.bytesRead / 1024 / 1024).toFixed(1)} MiB of Kafka records${summary.skipped ? `, ${summary.skipped} skipped: SHOW INDEXES says why` : ''})\n`);
    return 0;
  });
}
