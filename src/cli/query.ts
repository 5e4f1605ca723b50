/** `query "SQL"`: the built-in SQL over a table's files and its fresh tail. */
import type { Json } from '@duckdb/node-api';
import { kafkaSource } from '../kafka/source.js';
import { ReaderService } from '../reader/service.js';
import { withEngine } from './engine.js';
import { printJson, printTable, progress, UsageError } from './output.js';
import { parseCommandArgs } from './args.js';

export const queryUsage = `offsetlake query "SQL" [--json | --csv] [--plan] [--quiet]`;

function csvCell(value: Json): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(columns: string[], rows: Record<string, Json>[]): string {
  const lines = [columns.map(csvCell).join(','), ...rows.map((row) => columns.map((c) => csvCell(row[c] ?? null)).join(','))];
  return `${lines.join('\r\n')}\r\n`;
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
  const result = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const source = kafkaSource(engine.kafka);
    const service = new ReaderService(engine.catalog, source);
    return runQuery({ catalog: engine.catalog, source, service, progress: values.quiet ? undefined : progress }, sql);
  });
  if (values.plan) progress(`plan: ${JSON.stringify(result.plan)}`);
  if (values.json) printJson(result.rows);
  else if (values.csv) process.stdout.write(toCsv(result.columns, result.rows));
  else printTable(result.rows, result.columns);
  return 0;
}
