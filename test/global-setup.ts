import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The catalog's URL through PgBouncer in transaction mode: what every integration test uses. */
    pooledDatabaseUrl: string;
    /** The folder of the run's one Spark: its lock, pid, port and log (test/helpers/iceberg-spark.ts). */
    sparkFolder: string;
    /** The test runner's pid: the run's Spark stops itself when it is gone. */
    testRunnerPid: number;
  }
}

/**
 * Unit tests need nothing; integration tests need the real broker, registry and Postgres,
 * and reach Postgres through PgBouncer in transaction pooling mode, as functions on AWS
 * reach it through RDS Proxy. `OFFSETLAKE_UNIT_ONLY=1` skips the stack for a quick run of
 * test/unit.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.OFFSETLAKE_UNIT_ONLY) return undefined;
  const { openCatalog } = await import('../src/catalog/db.js');
  const { migrateCatalog } = await import('../src/catalog/migrate.js');
  const { stackConfig } = await import('../src/stack/config.js');
  const { stackEnvironment, stackUp } = await import('../src/stack/index.js');
  const { poolerPort, startPooler } = await import('./helpers/pooler.js');
  // Tests write records with fixed past timestamps (deterministic buckets); Kafka's time
  // retention (7 days by default) would delete them at its next check, every 5 minutes,
  // sometimes between a test's produce and its read. Retention tests delete records themselves.
  const config = { ...stackConfig(), brokerSettings: { 'log.retention.ms': '-1' } };
  await stackUp(config, (line) => process.stderr.write(`[stack] ${line}\n`));
  const pooler = await startPooler(config.paths, process.env.DATABASE_URL ?? stackEnvironment(config).DATABASE_URL, poolerPort());
  project.provide('pooledDatabaseUrl', pooler.url);
  const catalog = openCatalog(pooler.url, 1);
  try {
    await migrateCatalog(catalog);
    // the login `attach` hands out, as `offsetlake stack up` makes it
    const { ensureStackReaderLogin } = await import('../src/stack/postgres.js');
    await ensureStackReaderLogin(config, catalog);
  } finally {
    await catalog.end();
  }
  const stopSpark = runSparkFolder(project);
  return async () => {
    stopSpark();
    await pooler.stop();
  };
}

/**
 * The folder of the run's one Spark (test/helpers/iceberg-spark.ts starts it in the first
 * test file that reads through Spark, if any), and what stops it at the end of the run.
 */
function runSparkFolder(project: TestProject): () => void {
  const folder = mkdtempSync(join(tmpdir(), 'offsetlake-spark-'));
  project.provide('sparkFolder', folder);
  project.provide('testRunnerPid', process.pid);
  return () => {
    const pidFile = join(folder, 'pid');
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
      } catch {
        // it had stopped already
      }
    }
    rmSync(folder, { recursive: true, force: true });
  };
}
