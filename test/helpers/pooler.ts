/**
 * PgBouncer in transaction pooling mode in front of the test catalog: the strictest of
 * the poolers a deployment puts between Lambda functions and Postgres. Like RDS Proxy it
 * refuses startup parameters it does not know (`options`), and it hands each
 * transaction to whichever server connection is free, so session state (`SET`, session
 * advisory locks, named prepared statements) does not survive from one transaction to
 * the next. The integration tests reach the catalog through it.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unprivilegedOwner } from '../../src/stack/postgres.js';
import { portAnswers, runningPid, startDaemon, stopDaemon, waitUntil } from '../../src/stack/process.js';
import type { StackPaths } from '../../src/stack/types.js';

const name = 'pgbouncer';

/** The pgbouncer binary: on PATH, or where Debian's package puts it. */
function pgbouncerBinary(): string {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error('PgBouncer is not installed: the catalog tests run through it (Debian/Ubuntu: apt-get install pgbouncer; `npm test` installs it as root)');
}

export function poolerPort(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.OFFSETLAKE_POOLER_PORT;
  if (!text) return 26432;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`OFFSETLAKE_POOLER_PORT must be a port number, got "${text}"`);
  return port;
}

/** Starts PgBouncer on `port` in front of the server of `upstreamUrl`; returns the same URL through the pooler. */
export async function startPooler(paths: StackPaths, upstreamUrl: string, port: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const upstream = new URL(upstreamUrl);
  const binary = pgbouncerBinary();
  if (runningPid(paths, name) !== undefined) await stopDaemon(paths, name, 5_000);
  if (await portAnswers('127.0.0.1', port)) throw new Error(`port ${port} for PgBouncer is taken; set OFFSETLAKE_POOLER_PORT to another port`);
  const dir = join(paths.home, name);
  mkdirSync(dir, { recursive: true });
  const user = decodeURIComponent(upstream.username);
  const password = decodeURIComponent(upstream.password);
  const quoted = (text: string): string => `"${text.replaceAll('"', '""')}"`;
  // Clients are trusted on loopback; the server login uses the password of the auth file.
  writeFileSync(join(dir, 'users.txt'), `${quoted(user)} ${quoted(password)}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    // Every server session starts outside our schema (whatever its user's name), so a
    // name the catalog's SQL forgot to qualify fails here rather than on someone's database.
    `* = host=${upstream.hostname} port=${upstream.port || 5432} connect_query='SET search_path TO public'`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    // The console (database `pgbouncer`) lets a test read the pooling mode it runs under.
    `admin_users = ${user}`,
    'max_client_conn = 1000',
    'default_pool_size = 20',
    // Left empty on purpose: an unknown startup parameter is refused, as RDS Proxy refuses it.
    'ignore_startup_parameters =',
    // A client waits this long for a server connection before it is told the database is
    // away (RDS Proxy's borrow timeout is the same kind of bound); then it can say why it waits.
    'query_wait_timeout = 10',
    'server_login_retry = 1',
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n'));
  const owner = unprivilegedOwner();
  if (owner) for (const file of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), owner.uid, owner.gid);
  const pid = startDaemon(paths, { name, command: binary, args: [join(dir, 'pgbouncer.ini')], uid: owner?.uid, gid: owner?.gid });
  await waitUntil(`PgBouncer on 127.0.0.1:${port}`, () => portAnswers('127.0.0.1', port), { timeoutMs: 15_000, pid, log: join(paths.logs, `${name}.log`) });
  const pooled = new URL(upstreamUrl);
  pooled.hostname = '127.0.0.1';
  pooled.port = String(port);
  return { url: pooled.toString(), stop: async () => { await stopDaemon(paths, name, 5_000); } };
}
