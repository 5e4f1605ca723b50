import pg from 'pg';
import { catalogSchema } from './migrations.js';

export type Catalog = pg.Pool;
export type CatalogClient = pg.PoolClient;

// int8 columns (offsets, counts, epochs) come back as bigint, never as a lossy number.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 && format !== 'binary') return (text: string) => BigInt(text);
    return pg.types.getTypeParser(oid, format);
  },
};

/** A pool whose connections see the catalog's tables without schema prefixes. */
export function openCatalog(databaseUrl: string, max = 5): Catalog {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    options: `-c search_path=${catalogSchema},public`,
    types,
  });
  // An idle client that loses its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  return pool;
}

/** Runs `work` in one transaction; rolls back and rethrows on any error. */
export async function inTransaction<T>(catalog: Catalog, work: (client: CatalogClient) => Promise<T>): Promise<T> {
  const client = await catalog.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
