/**
 * The deploy's catalog migration: the CloudFormation custom resource CatalogMigrations
 * (through the CDK provider framework) calls this on create and update, so the catalog is
 * migrated once per deploy and before any function that uses it is created or updated.
 * It also creates the reader's own login, or sets its password, from the reader's secret.
 * Deleting the stack leaves the catalog as it is (it outlives the stack: snapshot on delete).
 */
import { openCatalog } from '../../src/catalog/db.js';
import { migrateCatalog } from '../../src/catalog/migrate.js';
import { ensureReaderLogin } from '../../src/catalog/reader-login.js';
import { databaseUrl, readerDatabaseLogin } from '../connections.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { nativeCompressors } from '../native.js';

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
    // After the migrations, which make the role it joins.
    const login = await readerDatabaseLogin();
    if (login) console.log(JSON.stringify({ message: 'reader login', username: login.username, outcome: await ensureReaderLogin(catalog, login) }));
    return { PhysicalResourceId: physicalId, Data: { version: result.version, applied: result.applied.join(',') } };
  } finally {
    await catalog.end();
  }
}
