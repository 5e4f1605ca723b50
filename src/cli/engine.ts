import { doubling, retrying } from '../common/retry.js';
import { openCatalogEngine, openEngine, type CatalogEngine, type Engine } from '../runtime/engine.js';
import type { EngineFlags } from '../runtime/config.js';
import { useLocalStackDefaults } from '../stack/index.js';

/**
 * Opens the engine for one command and closes it whatever happens. Flags, then the
 * environment, then the local stack (README and docs/operations.md, "Configuration"); only commands that use
 * the engine take the local defaults: `stack` must see the environment as the user set it.
 */
export async function withEngine<T>(flags: EngineFlags, work: (engine: Engine) => Promise<T>, wait?: CatalogWait): Promise<T> {
  return withOpened(() => (wait ? openEngineWaiting(flags, wait) : openEngine(flags)), work);
}

/** withEngine for a command that uses only the catalog: the Kafka client is not loaded. */
export async function withCatalog<T>(flags: EngineFlags, work: (engine: CatalogEngine) => Promise<T>): Promise<T> {
  return withOpened(() => openCatalogEngine(flags), work);
}

async function withOpened<E extends CatalogEngine, T>(open: () => Promise<E>, work: (engine: E) => Promise<T>): Promise<T> {
  useLocalStackDefaults();
  const engine = await open();
  try {
    return await work(engine);
  } finally {
    await engine.close();
  }
}

/** How a long-lived command waits for a catalog that is not there yet. */
export interface CatalogWait {
  /** Tries in all (Infinity: until the signal aborts). */
  tries: number;
  signal: AbortSignal;
  log: (line: string) => void;
}

/**
 * Postgres errors that pass: refused or reset connections, a server starting up or in
 * recovery (57P03), the connection limit (53300). A wrong password or database does not.
 */
const passingCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P03', '53300', '08001', '08006']);

/**
 * Whether a failure to open the catalog passes. pg says a lost connection in words, not
 * codes: "Connection terminated" on the query in flight, and "Client has encountered a
 * connection error and is not queryable" on the next query of that client.
 */
export function catalogErrorPasses(error: unknown): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code && passingCodes.has(e.code)) return true;
    if (/Connection terminated|timeout expired|connection error and is not queryable/i.test(String((e as Error).message ?? ''))) return true;
  }
  return false;
}

/**
 * `run` started while its catalog restarts (a crash, a deploy, services started in any
 * order) waits for it, saying so, instead of exiting: what it would index is still in Kafka.
 */
async function openEngineWaiting(flags: EngineFlags, wait: CatalogWait): Promise<Engine> {
  const pauses = doubling(500, 10_000);
  return retrying({ pausesMs: pauses, tries: wait.tries, signal: wait.signal }, (error) => {
    const again = catalogErrorPasses(error);
    if (again && !wait.signal.aborted) wait.log(`${(error as Error).message}; trying again`);
    return again;
  }, () => openEngine(flags));
}
