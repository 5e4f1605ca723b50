import pg from 'pg';

export type Catalog = pg.Pool;
export type CatalogClient = pg.PoolClient;

// int8 columns (offsets, counts, epochs) come back as bigint, never as a lossy number.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 && format !== 'binary') return (text: string) => BigInt(text);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * A pool of catalog connections. They carry no session state: every name is
 * schema-qualified and nothing is SET outside a transaction, because RDS Proxy refuses
 * startup options (`-c search_path=…`) and a transaction pooler hands each transaction
 * to whichever server connection is free.
 */
export function openCatalog(databaseUrl: string, max = 5, password?: () => Promise<string>): Catalog {
  const pool = new pg.Pool({
    ...(password ? passwordlessUrl(databaseUrl, password) : { connectionString: databaseUrl }),
    max,
    types,
  });
  // An idle client that loses its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  return pool;
}

/**
 * The URL's parts, with `password` asked for each new connection, so a login whose
 * password rotates is followed without a restart. Not as connectionString: pg lets the
 * URL's (empty) password win over this one. An sslmode other than disable is TLS with
 * the certificate verified, as pg treats it in a connectionString.
 */
function passwordlessUrl(databaseUrl: string, password: () => Promise<string>): pg.PoolConfig {
  const url = new URL(databaseUrl);
  if (url.password) throw new Error('a catalog URL with a password and a password function: give one');
  const sslmode = url.searchParams.get('sslmode');
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    database: decodeURIComponent(url.pathname.slice(1)),
    user: decodeURIComponent(url.username),
    password,
    ...(sslmode && sslmode !== 'disable' ? { ssl: {} } : {}),
  };
}

/** Runs `work` in one transaction; rolls back and rethrows on any error. */
export async function inTransaction<T>(catalog: Catalog, work: (client: CatalogClient) => Promise<T>): Promise<T> {
  const client = await catalog.connect();
  // A checked-out client has no pool listener: a server that goes away (killed, restarted,
  // a pooler cutting it) makes it emit 'error', which would end the process. The
  // transaction's next query fails instead, and the broken client is discarded.
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (!lost) await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.off('error', onError);
    client.release(lost);
  }
}
