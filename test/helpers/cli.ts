/** The command line as a user runs it: `node bin/offsetlake.js …` in a child process, its output and exit code. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

export interface CliRun {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs offsetlake with `args` against the catalog at `databaseUrl` (and more environment, if given); a failure is a result, not a throw. */
export async function runCli(databaseUrl: string, args: readonly string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<CliRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['bin/offsetlake.js', ...args], { env: { ...process.env, DATABASE_URL: databaseUrl, ...env }, timeout: timeoutMs });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}
