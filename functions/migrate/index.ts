/**
 * The deploy's catalog migration: the CloudFormation custom resource CatalogMigrations
 * (through the CDK provider framework) calls this on create and update, so the catalog is
 * migrated once per deploy and before any function that uses it is created or updated.
 * It also creates the reader's, the writers' and the DuckLake reader's logins, or sets their passwords, from their secrets.
 * Deleting the stack leaves the catalog as it is (it outlives the stack: snapshot on delete).
 */
import { openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { ensureReaderLogin, ensureWriterLogin } from '../../src/catalog/logins.js';
import { ensureDuckLakeReaderLogin } from '../../src/catalog/reader-login.js';
import { catalogLogins, databaseUrl } from '../connections.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export interface MigrationEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  PhysicalResourceId?: string;
}

export interface MigrationResponse {
  PhysicalResourceId: string;
  Data?: { version: number; applied: string };
}

/** One catalog per stack: the resource's id never changes, so an update never replaces (and deletes) it. */
const physicalId = 'offsetlake-catalog';

export async function handler(event: MigrationEvent): Promise<MigrationResponse> {
  if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId ?? physicalId };
  const catalog = openCatalog(await databaseUrl(), 1);
  try {
    const result = await migrateCatalog(catalog);
    console.log(JSON.stringify({ message: 'catalog migrated', version: result.version, applied: result.applied }));
    // After the migrations, which make the roles they join.
    const logins = await catalogLogins();
    if (logins.reader) console.log(JSON.stringify({ message: 'reader login', username: logins.reader.username, outcome: await ensureReaderLogin(catalog, logins.reader) }));
    if (logins.writer) console.log(JSON.stringify({ message: 'writer login', username: logins.writer.username, outcome: await ensureWriterLogin(catalog, logins.writer) }));
    if (logins.duckLake) {
      await ensureDuckLakeReaderLogin(catalog, logins.duckLake);
      console.log(JSON.stringify({ message: 'DuckLake reader login', username: logins.duckLake.username }));
    }
    return { PhysicalResourceId: physicalId, Data: { version: result.version, applied: result.applied.join(',') } };
  } finally {
    await catalog.end();
  }
}
