// Run as its own process by the catalog test: migrates the catalog at argv[2] and prints the result.
import { openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';

const catalog = openCatalog(process.argv[2]!, 1);
try {
  process.stdout.write(JSON.stringify(await migrateCatalog(catalog)));
} finally {
  await catalog.end();
}
