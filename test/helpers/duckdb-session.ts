/**
 * A stock DuckDB 1.4.4 (PyPI) session in a child process (test/helpers/duckdb_session.py):
 * an engine no one here wrote, kept open across statements so that a test can change the
 * catalog between two queries of the same attached session.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./duckdb_session.py', import.meta.url));

export interface DuckdbAnswer {
  columns: string[];
  rows: unknown[][];
}

export class DuckdbSession {
  private readonly lines: AsyncIterator<string>;
  private stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams, reader: Interface) {
    this.lines = reader[Symbol.asyncIterator]();
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
  }

  static async open(): Promise<DuckdbSession> {
    const child = spawn('python3', [script], { stdio: ['pipe', 'pipe', 'pipe'] });
    const session = new DuckdbSession(child, createInterface({ input: child.stdout }));
    const first = await session.next();
    if (!(first as { ready?: boolean }).ready) throw new Error(`DuckDB did not start: ${JSON.stringify(first)}`);
    return session;
  }

  private async next(): Promise<unknown> {
    const line = await this.lines.next();
    if (line.done) {
      throw new Error(`the DuckDB session ended (the readers come from bash test/python-env.sh, which npm test runs first): ${this.stderr.slice(-2000)}`);
    }
    return JSON.parse(line.value);
  }

  /** The answer to `sql`, or DuckDB's error as a thrown Error. */
  async query(sql: string): Promise<DuckdbAnswer> {
    const answer = await this.send(sql);
    if ('error' in answer) throw new Error(`DuckDB: ${answer.error}\n  in: ${sql}`);
    return answer;
  }

  /** DuckDB's error message for `sql`, or a thrown Error when it succeeds. */
  async error(sql: string): Promise<string> {
    const answer = await this.send(sql);
    if (!('error' in answer)) throw new Error(`DuckDB answered ${JSON.stringify(answer.rows).slice(0, 200)} where an error was expected\n  in: ${sql}`);
    return answer.error;
  }

  /** The first row of the answer as an object keyed by column name. */
  async row(sql: string): Promise<Record<string, unknown>> {
    const { columns, rows } = await this.query(sql);
    if (rows.length === 0) throw new Error(`DuckDB answered no rows\n  in: ${sql}`);
    return Object.fromEntries(columns.map((column, i) => [column, rows[0]![i]]));
  }

  private async send(sql: string): Promise<DuckdbAnswer | { error: string }> {
    this.child.stdin.write(`${JSON.stringify({ sql })}\n`);
    return (await this.next()) as DuckdbAnswer | { error: string };
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    if (this.child.exitCode === null) await new Promise((resolve) => this.child.once('exit', resolve));
  }
}
