/**
 * The tests' one Spark 4.1 with Iceberg's runtime (test/helpers/iceberg_spark_server.py):
 * started by the first test file of a run that reads through Spark, in the background of
 * its own process group, and used by every later one, so that the JVM's start and the
 * loading of Iceberg's and the AWS SDK's classes (about half a minute of CPU each time) are
 * paid once per run instead of once per file. Each call runs a function of a test's Python
 * script in a Spark session of its own with that test's catalog as `lake`. The global setup
 * names the folder the server's port, pid and log are in, and stops it at the end of the run;
 * it also stops itself when the test runner is gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { sparkIcebergJars, sparkJavaHome } from './iceberg-jars.js';

const server = fileURLToPath(new URL('./iceberg_spark_server.py', import.meta.url));
const startTimeoutMs = 600_000;

function folder(): string {
  const named = inject('sparkFolder');
  if (!named) throw new Error('Spark runs in integration tests only: the global setup names its folder (unset with OFFSETLAKE_UNIT_ONLY)');
  return named;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let started: Promise<number> | undefined;

/**
 * The port of the run's Spark: starts it when no test file has (mkdir is the lock between
 * the test processes), else waits for the one that is starting. Call it early (at the top of a
 * beforeAll) so that Spark starts while the test builds its tables.
 */
export function startSpark(): Promise<number> {
  started ??= (async () => {
    const dir = folder();
    const log = join(dir, 'spark.log');
    let first = true;
    try {
      mkdirSync(join(dir, 'lock'));
    } catch {
      first = false;
    }
    if (first) {
      const out = openSync(log, 'a');
      const child = spawn('python3', [server, dir], { detached: true, stdio: ['pipe', out, out], env: { ...process.env, JAVA_HOME: sparkJavaHome(), TZ: 'UTC' } });
      child.stdin!.end(JSON.stringify({ jars: sparkIcebergJars(), watch: inject('testRunnerPid') }));
      writeFileSync(join(dir, 'pid'), String(child.pid));
      child.unref();
    }
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      const portFile = join(dir, 'port');
      if (existsSync(portFile)) return Number(readFileSync(portFile, 'utf8'));
      const pidFile = join(dir, 'pid');
      if (existsSync(pidFile) && !alive(Number(readFileSync(pidFile, 'utf8')))) {
        throw new Error(`the tests' Spark (test/helpers/iceberg_spark_server.py) ended before it served: ${existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : 'no log'}`);
      }
      if (Date.now() > deadline) throw new Error(`the tests' Spark did not start in ${startTimeoutMs / 1000} s (its log: ${log})`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return started;
}

/**
 * `name(session, job)` of the Python script at `script`, run in the tests' Spark in a session
 * with serve's Iceberg REST catalog at `job.uri` (bearer `job.token`) as `lake`: its JSON answer,
 * or the exception it raised as {error, trace} (so T says both).
 */
export async function sparkAnswer<T>(script: string, name: string, job: { uri: string; token: string } & Record<string, unknown>, timeoutMs = 600_000): Promise<T> {
  const port = await startSpark();
  const body = JSON.stringify({ script, function: name, job });
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as T));
      response.on('error', reject);
    });
    sent.on('timeout', () => sent.destroy(new Error(`Spark did not answer ${name} of ${script} in ${timeoutMs / 1000} s`)));
    sent.on('error', reject);
    sent.end(body);
  });
}
