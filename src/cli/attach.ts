/**
 * `attach`: the SQL a DuckDB user pastes to attach the catalog as a read-only DuckLake
 * (schema `ducklake`, migration 5) whose files come from a running `serve`; `--check`
 * runs that SQL in DuckDB from PyPI and prints the tables it sees.
 */
import { execFile } from 'node:child_process';
import { openCatalog } from '../catalog/db.js';
import { redact } from '../runtime/engine.js';
import { useLocalStackDefaults } from '../stack/index.js';
import { stackConfig } from '../stack/config.js';
import { localReaderDatabaseUrl, stackReaderLogin } from '../stack/postgres.js';
import { catalogWriteAccess } from '../catalog/reader-login.js';
import { parseCommandArgs, secretValue } from './args.js';
import { bucketProblem } from '../reader/s3-bucket.js';
import { signS3Request, type S3Credentials } from '../reader/sigv4.js';
import { printJson, printTable, progress, UsageError } from './output.js';

/** A value of a libpq connection string: quoted when it must be (spaces, quotes, backslashes, empty). */
function libpqValue(value: string): string {
  return /^[^\s'\\]+$/.test(value) ? value : `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** The libpq keyword/value string DuckDB's postgres extension takes, from a postgres:// URL (query parameters such as sslmode kept). */
export function libpqConnectionString(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const pairs: [string, string][] = [['host', decodeURIComponent(url.hostname)], ['port', url.port || '5432'], ['dbname', decodeURIComponent(url.pathname.slice(1)) || 'postgres']];
  if (url.username) pairs.push(['user', decodeURIComponent(url.username)]);
  if (url.password) pairs.push(['password', decodeURIComponent(url.password)]);
  for (const [key, value] of url.searchParams) pairs.push([key, value]);
  return pairs.map(([key, value]) => `${key}=${libpqValue(value)}`).join(' ');
}

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** How DuckDB reaches the files: serve's HTTP face with its bearer token (null: --no-auth), or its S3 face with a key pair. */
export type FileAccess = { kind: 'http'; token: string | null } | { kind: 's3'; bucket: string; credentials: S3Credentials };

export interface AttachSpec {
  databaseUrl: string;
  /** The read API's address, without a trailing slash. */
  serveUrl: string;
  access: FileAccess;
  alias: string;
}

/** The data path the catalog itself names (schema ducklake, ducklake_metadata): the S3 face's default bucket. */
export const catalogDataPath = 's3://offsetlake/';

/**
 * The statements, in order. The catalog's own data path is s3://offsetlake/: through the
 * S3 face with that bucket DuckDB needs only the S3 secret; otherwise the serve URL (or the
 * other bucket) replaces it (OVERRIDE_DATA_PATH), so one catalog is read through any serve.
 */
export function attachStatements(spec: AttachSpec): string[] {
  const statements: string[] = [];
  let dataPath: string;
  if (spec.access.kind === 'http') {
    dataPath = `${spec.serveUrl}/`;
    if (spec.access.token !== null) statements.push(`CREATE OR REPLACE SECRET offsetlake_serve (TYPE http, BEARER_TOKEN ${literal(spec.access.token)}, SCOPE ${literal(dataPath)});`);
  } else {
    const url = new URL(spec.serveUrl);
    const { accessKeyId, secretAccessKey } = spec.access.credentials;
    dataPath = `s3://${spec.access.bucket}/`;
    statements.push(
      `CREATE OR REPLACE SECRET offsetlake_s3 (TYPE s3, KEY_ID ${literal(accessKeyId)}, SECRET ${literal(secretAccessKey)}, REGION 'us-east-1', ` +
        `ENDPOINT ${literal(url.host)}, URL_STYLE 'path', USE_SSL ${url.protocol === 'https:'});`,
    );
  }
  const override = dataPath === catalogDataPath ? '' : `, DATA_PATH ${literal(dataPath)}, OVERRIDE_DATA_PATH TRUE`;
  statements.push(`ATTACH ${literal(`ducklake:postgres:${libpqConnectionString(spec.databaseUrl)}`)} AS ${spec.alias} (METADATA_SCHEMA 'ducklake', READ_ONLY${override});`);
  return statements;
}

export function attachSql(spec: AttachSpec): string {
  return [
    `-- The offsetlake catalog as a read-only DuckLake; its files are read through ${spec.serveUrl}${spec.access.kind === 's3' ? ` (S3, bucket ${spec.access.bucket})` : ''}`,
    '-- DuckDB 1.4 installs and loads ducklake, postgres and httpfs itself when online; offline: pip install duckdb==1.4.4',
    '-- duckdb-ext-ducklake duckdb-ext-postgres duckdb-ext-httpfs, then SET extension_directory (README, "Reading from your engine")',
    ...attachStatements(spec),
    '',
  ].join('\n');
}

/** Runs the SQL in DuckDB (Python, PyPI) and reads one file footer of each table through serve. Its answer as JSON. */
const checkScript = String.raw`
import json, os, sys
try:
    import duckdb
except ImportError:
    print(json.dumps({"missing": "duckdb"}))
    sys.exit(0)
request = json.loads(sys.stdin.read())
con = duckdb.connect()
# a slow statement (a busy machine, a far serve) would draw DuckDB's progress bar into the answer
con.execute("SET enable_progress_bar = false")
try:
    import duckdb_ext
    folder = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con.execute("SET extension_directory = '" + folder.replace("'", "''") + "'")
except ImportError:
    pass
try:
    for extension in ("ducklake", "postgres", "httpfs"):
        con.execute("LOAD " + extension)
except Exception as error:
    print(json.dumps({"missing": "extensions", "error": str(error)}))
    sys.exit(0)
try:
    for statement in request["statements"]:
        con.execute(statement)
    alias = request["alias"]
    tables = []
    for name, columns in con.execute("SELECT table_name, (SELECT count(*) FROM duckdb_columns() c WHERE c.database_name = t.database_name AND c.table_name = t.table_name) FROM duckdb_tables() t WHERE database_name = ? ORDER BY table_name", [alias]).fetchall():
        files = con.execute("SELECT data_file, data_file_size_bytes FROM ducklake_list_files(?, ?)", [alias, name]).fetchall()
        rows = None
        if files:
            rows = con.execute("SELECT num_rows FROM parquet_file_metadata(?)", [files[0][0]]).fetchone()[0]
        tables.append({"table": name, "columns": columns, "files": len(files), "firstFileRows": rows})
    print(json.dumps({"duckdb": duckdb.__version__, "tables": tables}))
except Exception as error:
    print(json.dumps({"error": str(error)}))
`;

interface CheckAnswer {
  missing?: 'duckdb' | 'extensions';
  error?: string;
  duckdb?: string;
  tables?: { table: string; columns: number; files: number; firstFileRows: number | null }[];
}

const pipHint = 'pip install duckdb==1.4.4 duckdb-ext-ducklake==1.4.4.20260205 duckdb-ext-postgres==1.4.4.20260205 duckdb-ext-httpfs==1.4.4.20260205';

function runCheck(spec: AttachSpec): Promise<CheckAnswer> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', checkScript], { maxBuffer: 16 * 1024 * 1024, timeout: 300_000 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') return reject(new Error(`--check runs DuckDB from Python, and python3 is not on PATH; install Python 3, then ${pipHint}`));
      if (error) return reject(new Error(`DuckDB stopped: ${stderr.trim() || error.message}`));
      try {
        resolve(JSON.parse(stdout) as CheckAnswer);
      } catch {
        reject(new Error(`DuckDB said something unexpected: ${stdout.slice(0, 500)}${stderr.slice(0, 500)}`));
      }
    });
    child.stdin!.end(JSON.stringify({ statements: attachStatements(spec), alias: spec.alias }));
  });
}

/** Refuses with a sentence when serve does not answer at the URL, or refuses the token or key pair. */
async function checkServe(spec: AttachSpec): Promise<void> {
  const access = spec.access;
  const url = new URL(access.kind === 'http' ? `${spec.serveUrl}/tables` : `${spec.serveUrl}/${access.bucket}`);
  const method = access.kind === 'http' ? 'GET' : 'HEAD';
  const headers = access.kind === 's3' ? await signS3Request({ method, url }, access.credentials) : access.token === null ? {} : { authorization: `Bearer ${access.token}` };
  let response: Response;
  try {
    response = await fetch(url, { method, headers, signal: AbortSignal.timeout(10_000) });
  } catch {
    throw new Error(`no offsetlake serve answers at ${spec.serveUrl}: start one (offsetlake serve --token T) or name it with --url`);
  }
  if (access.kind === 's3') {
    if (response.status === 401) throw new Error(`serve at ${spec.serveUrl} has no S3 face: start it with --s3-access-key-id and --s3-secret-access-key`);
    if (response.status === 403) throw new Error(`serve at ${spec.serveUrl} refuses this S3 key pair: give the one serve was started with`);
    if (response.status === 404) throw new Error(`serve at ${spec.serveUrl} has no bucket ${access.bucket}: give the one of its --s3-bucket`);
  } else if (response.status === 401) {
    throw new Error(`serve at ${spec.serveUrl} refuses ${access.token === null ? 'requests without a token: give it with --token or OFFSETLAKE_TOKEN' : 'this token: give the one serve was started with'}`);
  }
  if (!response.ok) throw new Error(`serve at ${spec.serveUrl} answers ${method} ${url.pathname} with HTTP ${response.status}: is it an offsetlake serve?`);
}

/**
 * Refuses with a sentence when the catalog has no schema ducklake (its migrations have not
 * run) or cannot be reached, and when its login can write the catalog, unless
 * `allowWriter` (then it warns): whoever pastes the SQL holds that login.
 */
async function checkCatalog(databaseUrl: string, allowWriter: boolean): Promise<number> {
  const catalog = openCatalog(databaseUrl, 1);
  try {
    const found = await catalog.query<{ found: boolean }>("SELECT to_regclass('ducklake.ducklake_table') IS NOT NULL AS found");
    if (!found.rows[0]?.found) throw new Error(`the catalog at ${redact(databaseUrl)} has no schema ducklake: its migrations have not run (offsetlake stack up, or the deploy's migration)`);
    const writer = await catalogWriteAccess(catalog);
    if (writer && !allowWriter) {
      throw new Error(`the SQL would hand out a login that can write the catalog: ${writer}. Give a login that can only read (in role offsetlake_ducklake_reader) with --database-url or OFFSETLAKE_READER_URL `
        + `(on the local stack leave both and DATABASE_URL unset: attach then uses its reader login ${stackReaderLogin}), or --allow-writer to hand this one out all the same`);
    }
    if (writer) progress(`warning: the SQL below holds a login that can write the catalog (${writer}): whoever runs it can change or drop the catalog`);
    const tables = await catalog.query<{ n: string }>('SELECT count(*)::text AS n FROM ducklake.ducklake_table');
    return Number(tables.rows[0]!.n);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ECONNREFUSED') throw new Error(`nothing answers at ${redact(databaseUrl)}: \`offsetlake stack up\` starts the local catalog, or set DATABASE_URL`);
    if (code === '28P01' || code === '28000') throw new Error(`the catalog at ${redact(databaseUrl)} refuses this user name or password`);
    if (code === '42501') throw new Error(`the user of ${redact(databaseUrl)} may not read schema ducklake: grant it role offsetlake_ducklake_reader`);
    throw error;
  } finally {
    await catalog.end();
  }
}

export async function attachCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('attach', args, {
    'database-url': { type: 'string' },
    url: { type: 'string' },
    token: { type: 'string' },
    'no-auth': { type: 'boolean' },
    as: { type: 'string' },
    's3-access-key-id': { type: 'string' },
    's3-secret-access-key': { type: 'string' },
    's3-bucket': { type: 'string' },
    check: { type: 'boolean' },
    json: { type: 'boolean' },
    'allow-writer': { type: 'boolean' },
  }, false);
  const serveUrl = (values.url ?? 'http://127.0.0.1:8642').replace(/\/+$/, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(serveUrl);
  } catch {
    // said below
  }
  if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.search || parsed.hash) throw new UsageError(`--url must be serve's address, http(s)://host:port, got "${values.url}"`);
  const access = fileAccess(values);
  const alias = values.as ?? 'lake';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(alias)) throw new UsageError(`--as must be a name of lowercase letters, digits and _, got "${alias}"`);
  // A login named by the user, else the local stack's reader login (never its superuser's).
  const databaseUrl = values['database-url'] || process.env.OFFSETLAKE_READER_URL || process.env.DATABASE_URL || localReaderDatabaseUrl(stackConfig());
  useLocalStackDefaults();
  if (!databaseUrl) throw new Error("no catalog: DATABASE_URL is not set and the local stack's Postgres is not initialised; run `offsetlake stack up` (it makes the reader login attach uses), or give --database-url");
  const spec: AttachSpec = { databaseUrl, serveUrl, access, alias };
  await checkCatalog(databaseUrl, values['allow-writer'] ?? false);
  await checkServe(spec);
  const sql = attachSql(spec);
  if (!values.check) {
    if (values.json) printJson({ statements: attachStatements(spec), serve: serveUrl, alias });
    else process.stdout.write(sql);
    return 0;
  }
  progress(`attaching with DuckDB (python3) through ${serveUrl} …`);
  const answer = await runCheck(spec);
  if (answer.missing) throw new Error(`--check needs DuckDB 1.4.4 with the ducklake, postgres and httpfs extensions in Python: ${pipHint}${answer.error ? ` (${answer.error})` : ''}`);
  if (answer.error !== undefined) throw new Error(`DuckDB could not attach the catalog: ${answer.error}`);
  if (values.json) {
    printJson({ statements: attachStatements(spec), serve: serveUrl, alias, duckdb: answer.duckdb, tables: answer.tables });
  } else {
    process.stdout.write(sql);
    process.stdout.write(`\n-- DuckDB ${answer.duckdb} attached it as ${alias} and sees:\n`);
    printTable((answer.tables ?? []).map((t) => ({ table: t.table, columns: t.columns, files: t.files, 'rows of first file (its footer, read through serve)': t.firstFileRows })));
  }
  return 0;
}

/** The HTTP face with a token (flag or OFFSETLAKE_TOKEN) or without (--no-auth), or the S3 face with a key pair (flags, or serve's OFFSETLAKE_S3_* variables when --s3-* flags are given). */
function fileAccess(values: { token?: string | undefined; 'no-auth'?: boolean | undefined; 's3-access-key-id'?: string | undefined; 's3-secret-access-key'?: string | undefined; 's3-bucket'?: string | undefined }): FileAccess {
  const s3Flags = values['s3-access-key-id'] !== undefined || values['s3-secret-access-key'] !== undefined || values['s3-bucket'] !== undefined;
  if (s3Flags) {
    if (values.token !== undefined || values['no-auth']) throw new UsageError('the S3 flags and --token / --no-auth choose different ways to the files: give one');
    const accessKeyId = values['s3-access-key-id'] ?? (process.env.OFFSETLAKE_S3_ACCESS_KEY_ID || undefined);
    const secretAccessKey = secretValue('--s3-secret-access-key', values['s3-secret-access-key'], 'OFFSETLAKE_S3_SECRET_ACCESS_KEY');
    if (accessKeyId === undefined || secretAccessKey === undefined) throw new UsageError('the S3 face needs both --s3-access-key-id and --s3-secret-access-key (or OFFSETLAKE_S3_ACCESS_KEY_ID and OFFSETLAKE_S3_SECRET_ACCESS_KEY)');
    const bucket = values['s3-bucket'] ?? (process.env.OFFSETLAKE_S3_BUCKET || 'offsetlake');
    const problem = bucketProblem(bucket);
    if (problem) throw new UsageError(`--s3-bucket: ${problem}`);
    return { kind: 's3', bucket, credentials: { accessKeyId, secretAccessKey } };
  }
  if (values['no-auth'] && values.token) throw new UsageError('--token and --no-auth contradict each other: give one');
  const token = values['no-auth'] ? null : secretValue('--token', values.token, 'OFFSETLAKE_TOKEN') ?? null;
  if (!values['no-auth'] && token === null) throw new UsageError("the SQL needs serve's bearer token: --token or OFFSETLAKE_TOKEN (--no-auth if serve runs without one), or its S3 key pair: --s3-access-key-id and --s3-secret-access-key");
  return { kind: 'http', token };
}
