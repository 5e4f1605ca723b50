/** Human output goes to stdout as aligned text; `--json` prints one JSON document instead. */
import { log, type LogFields } from '../common/log.js';

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
}

export function printTable(rows: Record<string, unknown>[], columns?: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const names = columns ?? [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const cells = rows.map((row) => names.map((name) => formatCell(row[name])));
  const widths = names.map((name, i) => Math.max(name.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) => values.map((value, i) => value.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${line(names)}\n`);
  for (const values of cells) process.stdout.write(`${line(values)}\n`);
}

function formatCell(value: unknown): string {
  if (value === undefined || value === null) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Progress lines go to stderr (src/common/log.ts), so stdout stays machine-readable with --json. */
export function progress(line: string, fields?: LogFields): void {
  log('info', line, fields);
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * A reader that stops reading (`offsetlake files t | head`) closes the pipe: the next
 * write fails with EPIPE, which Node would report as an uncaught error with its stack.
 * Like other command-line tools, the command then stops quietly (exit 0: what it was
 * asked for went where the reader wanted it).
 */
export function stopQuietlyWhenThePipeCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(0);
      throw error;
    });
  }
}
