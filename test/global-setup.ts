/**
 * Unit tests need nothing; integration tests need the real broker, registry and Postgres.
 * `OFFSETLAKE_UNIT_ONLY=1` skips the stack for a quick run of test/unit.
 */
export default async function setup(): Promise<void> {
  if (process.env.OFFSETLAKE_UNIT_ONLY) return;
  const { openCatalog } = await import('../src/catalog/db.js');
  const { migrateCatalog } = await import('../src/catalog/migrate.js');
  const { stackConfig } = await import('../src/stack/config.js');
  const { stackEnvironment, stackUp } = await import('../src/stack/index.js');
  const config = stackConfig();
  await stackUp(config, (line) => process.stderr.write(`[stack] ${line}\n`));
  const catalog = openCatalog(process.env.DATABASE_URL ?? stackEnvironment(config).DATABASE_URL, 1);
  try {
    await migrateCatalog(catalog);
  } finally {
    await catalog.end();
  }
}
