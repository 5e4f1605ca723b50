/** `query "SQL"`: the built-in SQL over a table's files and its fresh tail. */
import type { Json } from '@duckdb/node-api';
import type { TablePlan } from '../query/run.js';
import { kafkaSource } from '../kafka/source.js';
import { ReaderService } from '../reader/service.js';
import type { ReaderMetrics } from '../reader/metrics.js';
import { withEngine } from './engine.js';
import { printJson, printTable, progress, UsageError } from './output.js';
import { queryUsage } from './help.js';
import { parseCommandArgs } from './args.js';

function csvCell(value: Json): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(columns: string[], rows: Record<string, Json>[]): string {
  const lines = [columns.map(csvCell).join(','), ...rows.map((row) => columns.map((c) => csvCell(row[c] ?? null)).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

/** Lists the numbers as runs: 0-2, 5, 7-8. */
function runsOf(numbers: readonly number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j]! + 1) j += 1;
    runs.push(j === i ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`);
    i = j + 1;
  }
  return runs.join(', ');
}

/** `--plan`, for people: per table what is read (files, row groups, columns, Kafka bytes), what pruned and what missed, per index what it saved, per file which row groups. */
export function planLines(plans: readonly TablePlan[]): string[] {
  return plans.flatMap((plan) => {
    const unknown = plan.filesWithUnknownKafkaBytes;
    const bytes = `${plan.kafkaBytes} Kafka bytes to read${unknown ? ` + ${unknown} file${unknown > 1 ? 's' : ''} read whole (no granules; Kafka bytes unknown)` : ''}`;
    return [
      `plan: ${plan.table}: files ${plan.reads.length} of ${plan.files} (${plan.candidates.length} by catalog statistics); row groups ${plan.rowGroups.read} of ${plan.rowGroups.of}; ${bytes}`,
      `plan: ${plan.table}: columns ${plan.columns.length} of ${plan.tableColumns}: ${plan.columns.join(', ')}`,
      ...(plan.prunedBy === null ? [] : [`plan: ${plan.table}: pruned by ${plan.prunedBy}`]),
      ...plan.missed.map((line) => `plan: ${plan.table}: missed: ${line}`),
      ...plan.indexes.map((use) => `plan: ${plan.table}: index ${use.index} (${use.kind.toUpperCase()}${use.state === 'active' ? '' : `, ${use.state}`}): files ${use.files.used} used, ${use.files.skipped} skipped${
        use.skippedBecause.length ? ` (${use.skippedBecause.join('; ')})` : ''}; granules ${use.granules.considered} considered, ${use.granules.skipped} skipped, ${use.granules.read} read; ${use.kafkaBytesAvoided} Kafka bytes avoided`),
      ...plan.reads.map((read) => `plan: ${plan.table}: file ${read.file} (partition ${read.partition}, offsets [${read.startOffset}, ${read.endOffset})): ${
        read.rowGroups === null ? 'whole (no granules), Kafka bytes unknown' : `row groups ${runsOf(read.rowGroups)} of ${read.rowGroupsInFile}, ${read.kafkaBytes} Kafka bytes`}`),
      ...plan.tail.map((tail) => `plan: ${plan.table}: tail of partition ${tail.partition}: offsets [${tail.from}, ${tail.until}), ${tail.records} committed records`),
    ];
  });
}

/** What the files' reads cost, as the reader counted it (the tail's records are not included). */
function readOf(metrics: ReaderMetrics) {
  return {
    kafkaBytes: metrics.kafkaBytes,
    parquetBytes: metrics.bytesServed,
    partialGranuleRebuilds: metrics.partialGranuleRebuilds,
    granuleRebuilds: metrics.granuleRebuilds,
    wholeFileRebuilds: metrics.rebuilds,
  };
}

function readLine(read: ReturnType<typeof readOf>): string {
  const ratio = read.parquetBytes > 0 ? ` (${(read.kafkaBytes / read.parquetBytes).toFixed(2)} per Parquet byte)` : '';
  return `plan: read ${read.kafkaBytes} Kafka bytes (files; the tail apart) for ${read.parquetBytes} Parquet bytes handed to DuckDB${ratio}; row groups rebuilt: ${read.partialGranuleRebuilds} for some columns, ${read.granuleRebuilds} with every column; files rebuilt whole: ${read.wholeFileRebuilds}`;
}

export async function queryCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('query', args, {
    'database-url': { type: 'string' },
    'kafka-brokers': { type: 'string' },
    json: { type: 'boolean' },
    csv: { type: 'boolean' },
    plan: { type: 'boolean' },
    quiet: { type: 'boolean', short: 'q' },
  });
  const sql = positionals.join(' ').trim();
  if (!sql) throw new UsageError(`query needs SQL; usage: ${queryUsage}`);
  if (values.json && values.csv) throw new UsageError('--json and --csv contradict each other: give one');
  // DuckDB loads only for this command.
  const { runQuery } = await import('../query/run.js');
  const { result, metrics } = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const source = kafkaSource(engine.kafka);
    const service = new ReaderService(engine.catalog, source);
    const answer = await runQuery({ catalog: engine.catalog, source, service, progress: values.quiet ? undefined : progress }, sql);
    return { result: answer, metrics: service.metrics };
  });
  // On stderr, so the answer on stdout stays clean; with --json the plan is JSON too.
  if (values.plan && values.json) progress(`plan: ${JSON.stringify({ tables: result.plan, read: readOf(metrics) })}`);
  else if (values.plan) for (const line of [...planLines(result.plan), readLine(readOf(metrics))]) progress(line);
  if (values.json) printJson(result.rows);
  else if (values.csv) process.stdout.write(toCsv(result.columns, result.rows));
  else printTable(result.rows, result.columns);
  return 0;
}
