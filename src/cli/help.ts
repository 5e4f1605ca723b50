/**
 * What the command line says about itself without running anything: every command's usage
 * and help, and the usage of them all. `--help`, `-h` and `offsetlake help CMD` print these
 * from here alone, so this module imports no command (and nothing heavy: main loads a
 * command's module only when it runs).
 */
import { settingNames } from '../table/settings.js';

export const stackUsage = `offsetlake stack up | down | status [--json] [--wide] [--home DIR] [--brokers 1|3]
  [--kafka-port N] [--controller-port N] [--registry-port N] [--postgres-port N] [--broker-ports N,N]`;

export const tableUsage = `offsetlake table create NAME --topic TOPIC [--format avro|protobuf|json-schema|json|raw] [--SETTING VALUE ...] [--index "INDEX (COLUMN, …) USING MINMAX|BLOOM|POSTINGS [GRANULE ROWS]" ...]
offsetlake table list [--json]
offsetlake table drop NAME [--if-exists]
  settings: ${settingNames.join(', ')} (also written with '-')`;

export const topicUsage = `offsetlake topic create NAME [--partitions 1] [--config KEY=VALUE ...] [--if-not-exists] [--json]`;

export const produceUsage = `offsetlake produce TOPIC [FILE] [--format avro|protobuf|json-schema --schema FILE] [--transactional [--commit-every 1000]] [--json]`;

export const inspectUsage = `offsetlake files NAME [--json] [--expired] [--replaced] [--wide]
offsetlake status [NAME] [--json]`;

export const indexUsage = `offsetlake run [--once] [--memory 1GiB] [--builds 2] [--build-threads N] [--batch-size 10000] [--batch-window 500ms] [--progress-every 5s] [--metrics-port N [--metrics-host 127.0.0.1]] [--log-format human|json] [--json]
offsetlake rebuild NAME FILE [-o PATH] [--json]
offsetlake check [NAME] [--json]`;

export const backfillUsage = `offsetlake backfill NAME [--chunks-per-execution N] [--json]
offsetlake retention [NAME] [--json]`;

export const serveUsage = `offsetlake serve [--port 8642] [--host 127.0.0.1] [--token T | --no-auth] [--cache 512MiB] [--build-threads N] [--write-timeout 30s] [--min-rate 32KiB] [--max-connections 1000] [--queue-timeout 10s] [--public-url URL] [--allow-host NAME] [--tls-cert FILE --tls-key FILE] [--s3-access-key-id ID --s3-secret-access-key SECRET] [--s3-bucket offsetlake] [--s3-region us-east-1] [--iceberg-snapshot-interval 60s] [--log-format human|json]`;

export const queryUsage = `offsetlake query "SQL" [--json | --csv] [--plan] [--quiet]`;

export const sqlUsage = `offsetlake sql "CREATE INDEX [IF NOT EXISTS] NAME ON TABLE (COLUMN, …) USING MINMAX|BLOOM|POSTINGS [SCOPE HISTORY] [GRANULE ROWS] [WITH (false_positive_rate = P)]" [--no-wait] [--json]
offsetlake sql "DROP INDEX [IF EXISTS] NAME ON TABLE" [--json]
offsetlake sql "SHOW INDEXES [ON TABLE]" [--json]`;

export const loginUsage = `offsetlake login create NAME [--json]
offsetlake login list [--json]
offsetlake login drop NAME [--if-exists] [--json]`;

export const attachUsage = 'offsetlake attach [--url http://127.0.0.1:8642] [--token T | --no-auth | --s3-access-key-id ID --s3-secret-access-key SECRET [--s3-bucket offsetlake]] [--database-url URL] [--allow-writer] [--as lake] [--check] [--json]';

/** The whole command line, one usage per command. */
export const commandLineUsage = `usage:
${stackUsage}
${topicUsage}
${produceUsage}
${tableUsage}
${inspectUsage}
${indexUsage}
${backfillUsage}
${serveUsage}
${queryUsage}
${sqlUsage}
${loginUsage}
${attachUsage}
offsetlake demo
offsetlake --version`;

interface Help {
  about: string;
  usage: string;
  flags: [string, string][];
  example: string;
}

const engine: [string, string][] = [
  ['--database-url URL', 'the catalog (default: DATABASE_URL, else the local stack)'],
  ['--kafka-brokers HOST:PORT,…', 'Kafka (default: KAFKA_BROKERS, else the local stack)'],
];
const json: [string, string] = ['--json', 'print one JSON document; progress goes to stderr'];
const line = (usage: string, name: string) => usage.split('\n').filter((l) => l.startsWith(`offsetlake ${name}`)).join('\n');

const logFormat: [string, string] = ['--log-format human|json', 'stderr as human lines (default) or one JSON object per line: time, level, message, table, partition, trace (or OFFSETLAKE_LOG_FORMAT)'];

export const commandHelp: Record<string, Help> = {
  stack: {
    about: 'The local Kafka broker, Schema Registry and Postgres: fetched once, started on loopback, stopped by their pids. Idempotent.',
    usage: stackUsage,
    flags: [['--wide', 'the log files too (wider than 100 columns)'], ['--home DIR', 'where state and logs live (default ./.offsetlake, OFFSETLAKE_HOME)'], ['--brokers 3', 'a Kafka cluster: a controller and three brokers, topics with replication factor 3 and min.insync.replicas=2 (default 1 broker, OFFSETLAKE_BROKERS; docs/cluster.md)'], ['--kafka-port N, --controller-port N, --registry-port N, --postgres-port N', 'move a service (default 29092, 29093, 28081, 25432)'], ['--broker-ports N,N', 'brokers 2 and 3 of --brokers 3 (default 29094,29095, OFFSETLAKE_BROKER_PORTS)'], json],
    example: 'offsetlake stack up && offsetlake stack status',
  },
  table: {
    about: `Tables over Kafka topics. A new table's partitions start at their last stable offset; history below is backfilled. Settings: ${settingNames.join(', ')} (README, "Configuration").`,
    usage: tableUsage,
    flags: [['--topic TOPIC', 'the Kafka topic (it must exist, and not be compacted)'], ['--index "NAME (COLUMN, …) USING KIND [GRANULE ROWS]"', 'an index active from the start (repeatable; README, "Secondary indexes")'], ['--format F', 'avro, protobuf, json-schema (Schema Registry), json or raw; default json'], ['--SETTING VALUE', 'a table setting, e.g. --file_window 30s or --file-bytes 64MiB'], ['--if-exists', 'drop: no error when the table is missing'], json, ...engine],
    example: 'offsetlake table create orders --topic orders --format avro --file_window 30s',
  },
  files: { about: "The catalog's live files of a table: offsets, bucket, rows, bytes, seal reason, timestamps, sha256.", usage: line(inspectUsage, 'files'), flags: [['--expired', 'include files Kafka can no longer rebuild'], ['--replaced', 'include files a merge replaced (each says which merged file took its records)'], ['--wide', 'whole times and the sha256 (wider than 100 columns)'], json, ...engine], example: 'offsetlake files orders --json' },
  status: {
    about: 'Per partition: indexed range, LSO, lag, lease, open range, files, error rows, lost offsets, waiting reason, backfill, retention, topic problems.',
    usage: line(inspectUsage, 'status'),
    flags: [json, ...engine],
    example: 'offsetlake status orders',
  },
  run: {
    about: 'The long-lived local indexer: every partition of every table in one process, through outages, until Ctrl-C (SIGINT/SIGTERM give the leases back); indexes that are not active yet are backfilled in the background.',
    usage: line(indexUsage, 'run'),
    flags: [['--once', 'index what is committed now, flush, drive every index that is not active to active, make every merge the tables\' merge_files and merge_after ask for, and stop; exit 1 naming partitions and indexes that kept failing, and partitions that could not write what they read (waiting for the Schema Registry)'], ['--memory SIZE', 'resident memory budget of the process: ranges are sealed (capacity) and reading waits to stay under it; a compressed batch larger decompressed than it allows waits (named) for a larger one; refused at start when too small (default 1GiB, raised to what the partitions need)'], ['--builds N', 'file builds at once (default 2, or the build threads if more)'], ['--build-threads N', 'worker threads that build files; 0 builds on the thread that reads Kafka (default: cores - 1 from 4 cores, else 0)'], ['--batch-size N', 'records per event, 1–10,000'], ['--batch-window DURATION', 'how long records may wait to be delivered (default 500ms)'], ['--progress-every DURATION', 'a progress line (records/s, files, lag per table) this often; default 5s on a terminal, none in a pipe'], ['--metrics-port N', 'serve the run\'s figures (lag per partition, records and bytes indexed, commit durations, rounds, failures) at http://HOST:N/metrics in Prometheus\'s text format'], ['--metrics-host H', 'the address --metrics-port listens on (default 127.0.0.1; 0.0.0.0 for every interface)'], logFormat, json, ...engine],
    example: 'offsetlake run --once',
  },
  rebuild: { about: "One file rebuilt from Kafka; its size, footer and sha256 are compared with the catalog's, and a difference is an error.", usage: line(indexUsage, 'rebuild'), flags: [['-o, --output PATH', 'write the bytes there'], json, ...engine], example: 'offsetlake rebuild orders 12 -o /tmp/12.parquet' },
  check: { about: 'Every live file rebuilt from Kafka; each one that does not match the catalog is named. Exit 1 if any.', usage: line(indexUsage, 'check'), flags: [json, ...engine], example: 'offsetlake check orders' },
  backfill: { about: 'The backfill state machine (the definition that deploys), run locally: history below each partition\'s indexed range, chunk by chunk, with progress.', usage: line(backfillUsage, 'backfill'), flags: [['--chunks-per-execution N', 'chunks before the machine continues as a new execution'], json, ...engine], example: 'offsetlake backfill orders' },
  retention: { about: "One retention check (files below Kafka's earliest offset expire) and partition discovery.", usage: line(backfillUsage, 'retention'), flags: [json, ...engine], example: 'offsetlake retention' },
  serve: {
    about: 'The HTTP read API for engines: tables, manifests, files rebuilt from Kafka and verified, Range requests, /metrics; a read-only Iceberg REST catalog at /iceberg (catalog URI http://HOST:PORT/iceberg, the same token); a console in the browser at /console (the same token, asked for by the page).',
    usage: serveUsage,
    flags: [['--port N', 'default 8642'], ['--host H', 'default 127.0.0.1'], ['--token T', 'bearer token every request must carry (or OFFSETLAKE_TOKEN)'], ['--no-auth', 'no token: local use only'], ['--cache SIZE', 'rebuilt-file cache (default 512MiB)'], ['--build-threads N', 'worker threads that build granules; 0 builds on the serving thread (default: cores - 1 from 4 cores, else 0)'], ['--write-timeout DURATION', 'a response whose client takes no bytes for this long, or under --min-rate, is cut off (default 30s)'], ['--min-rate SIZE', 'the least bytes a second a client must take a response at, measured over --write-timeout of waiting for it; slower, it is cut off and its share of the response budget freed (default 32KiB; 0: any progress)'], ['--max-connections N', 'connections open at most; one more is answered a 503 and closed (default 1000)'], ['--public-url URL', 'the address clients reach serve at (a proxy or TLS in front): the Iceberg catalog names files and the S3 endpoint by it (default: the address each connection reached, never its Host header)'], ['--tls-cert FILE, --tls-key FILE', 'speak HTTPS with this certificate chain and private key (PEM); else put a TLS proxy in front and give its address as --public-url'], ['--allow-host NAME', 'with --no-auth, requests are answered only for loopback names, --host and --public-url (others get a 421, against DNS rebinding); each --allow-host adds names (comma-separated), and with a token limits Host to them too'], ['--queue-timeout DURATION', 'how long a read waits for room among the responses in flight before a 503 with Retry-After (default 10s)'], ['--s3-access-key-id ID, --s3-secret-access-key SECRET', 'turn on the S3-compatible face (path style, SigV4), or OFFSETLAKE_S3_ACCESS_KEY_ID / OFFSETLAKE_S3_SECRET_ACCESS_KEY'], ['--s3-bucket NAME', 'its bucket (default offsetlake, or OFFSETLAKE_S3_BUCKET; not tables, metrics, iceberg or console, serve\'s own paths)'], ['--s3-region NAME', 'the region requests must be signed for (default us-east-1, or OFFSETLAKE_S3_REGION)'], ['--iceberg-snapshot-interval DURATION', 'the Iceberg catalog (/iceberg) cuts a snapshot that only adds files at most this often (default 60s)'], logFormat, ...engine],
    example: 'OFFSETLAKE_TOKEN=secret offsetlake serve --port 8642 --s3-access-key-id reader --s3-secret-access-key s3cret',
  },
  query: {
    about: 'SQL (DuckDB) over a table: the files its statistics may match, rebuilt and verified, plus the fresh tail not yet in files.',
    usage: queryUsage,
    flags: [['--json, --csv', 'machine-readable answers'], ['--plan', 'print on stderr what is read: files, row groups and columns chosen, Kafka bytes, the tail (JSON with --json)'], ['-q, --quiet', 'no progress'], ...engine],
    example: `offsetlake query "SELECT _partition, count(*) FROM orders GROUP BY 1"`,
  },
  sql: {
    about: 'Index DDL: CREATE INDEX (MINMAX, BLOOM, POSTINGS per granule of each file), DROP INDEX, SHOW INDEXES. An index on a table with files is backfilled from Kafka while the table stays readable and writable; reads use it once active.',
    usage: sqlUsage,
    flags: [['--no-wait', 'CREATE INDEX: declare it and return; `run` builds it in the background'], json, ...engine],
    example: `offsetlake sql "CREATE INDEX by_user ON clicks (_value.user) USING POSTINGS"`,
  },
  attach: {
    about: "The SQL a DuckDB user pastes to attach the catalog as a read-only DuckLake (schema ducklake) whose files a running serve rebuilds: a secret (serve's token for its HTTP face, or a key pair for its S3 face), then ATTACH. Checks first that the catalog has schema ducklake and that serve accepts the token or key pair.",
    usage: attachUsage,
    flags: [['--url URL', "serve's address (default http://127.0.0.1:8642)"], ['--token T', "serve's bearer token (or OFFSETLAKE_TOKEN)"], ['--no-auth', 'serve runs without a token'], ['--s3-access-key-id ID, --s3-secret-access-key SECRET', "through serve's S3 face instead (or OFFSETLAKE_S3_ACCESS_KEY_ID / OFFSETLAKE_S3_SECRET_ACCESS_KEY with an --s3-* flag)"], ['--s3-bucket NAME', "the S3 face's bucket (default offsetlake: the catalog's own data path)"], ['--as NAME', 'the name DuckDB attaches it as (default lake)'], ['--check', 'run the SQL in DuckDB 1.4.4 from Python (PyPI) and print the tables it sees, reading one footer of each through serve'], json, ['--database-url URL', "the catalog, as a login that can only read (in role offsetlake_ducklake_reader; default: OFFSETLAKE_READER_URL, else DATABASE_URL, else the local stack's reader login offsetlake_reader). A login that can write is refused"], ['--allow-writer', 'hand out a login that can write the catalog all the same (with a warning): whoever runs the SQL can change or drop the catalog']],
    example: 'offsetlake attach --token secret --check',
  },
  login: {
    about: "DuckLake reader logins, one per person or tool: each can read schema ducklake only, and what one login does to itself (its password, its own ALTER ROLE … SET) reaches no other. create makes one (or sets a new password for one) with the bounds of docs/operations.md's Security and prints its catalog URL, which `attach --database-url` puts in the SQL; list shows them, their connections and settings; drop ends its sessions and removes it.",
    usage: loginUsage,
    flags: [['--if-exists', 'drop: no login of that name is no error'], json, ['--database-url URL', 'the catalog, as its owner (default DATABASE_URL, else the local stack)']],
    example: 'offsetlake login create alice',
  },
  demo: { about: 'From nothing: the local stack, a transactional topic, a table, indexed, every file rebuilt and verified, then files, status and a query. Drops and recreates its table demo_orders.', usage: 'offsetlake demo', flags: [], example: 'npm run demo' },
};

const topicHelp = `${topicUsage}

Creates a Kafka topic (the local broker creates none by itself) and waits until every
partition has a leader, so that \`produce\` and \`table create\` work at once.

  --partitions N        how many partitions (default 1)
  --config KEY=VALUE    a topic config, repeatable: retention.ms=604800000, max.message.bytes=...
                        (https://kafka.apache.org/documentation/#topicconfigs); a table cannot
                        be created over a topic with cleanup.policy=compact
  --if-not-exists       a topic of that name is left as it is, and that is no error
  --json                one JSON document: {"topic", "created", "partitions", "configs"}
  --kafka-brokers H:P   Kafka (default: KAFKA_BROKERS, then the local stack)

example:
  offsetlake topic create clicks --partitions 3 --config retention.ms=604800000`;

const produceHelp = `${produceUsage}

Writes records into an existing topic (\`offsetlake topic create\` makes one), one per line
of JSON read from FILE, or from stdin when FILE is absent or '-':

  {"value": {"page": "/home"}, "key": "user-1", "headers": {"source": "web"},
   "timestamp": "2026-01-02T03:04:05.678Z", "partition": 0}

  value      required. Without --format: a string is written as its UTF-8 text, any other
             JSON value as JSON text (numbers with the digits as written); null writes a
             record without a value. With --format: the value encoded with the schema.
  key        a string (UTF-8), or null
  headers    {"name": "value", ...} or [["name", "value"], ...] (repeated names kept, in order)
  timestamp  RFC 3339 text or epoch milliseconds (default: now)
  partition  a partition number; without it, records with a key go where Kafka's Java
             producer puts them (murmur2 of the key), records without one in turn

Every line is checked before anything is written: a bad line is refused with its line
number and nothing is produced. Blank lines are skipped.

  --format F            avro, protobuf or json-schema: register --schema under the subject
                        TOPIC-value (the Schema Registry of SCHEMA_REGISTRY_URL) and write
                        each value in the Confluent wire format with its id (Protobuf: the
                        schema's first message). json or raw: the default, no registry.
  --schema FILE         the schema: .avsc JSON, .proto text, or a JSON Schema
  --transactional       write in transactions, each committed after --commit-every records
  --commit-every N      records per transaction (default 1000; implies --transactional)
  --json                one JSON document: records, transactions, offsets per partition, schema id
  --kafka-brokers H:P   Kafka (default: KAFKA_BROKERS, then the local stack)

Exit status: 0 when every record was written, 2 for a usage error (flags, a file that
cannot be read, a schema that does not parse), 1 when the input, Kafka or the registry
refused (what was written before a failure is said).

examples:
  echo '{"key": "u1", "value": {"page": "/home"}}' | offsetlake produce clicks
  offsetlake produce orders orders.jsonl --format avro --schema order.avsc --transactional`;

/** Commands whose help is a text of its own rather than commandHelp's about, usage, flags and example. */
export const ownHelp: Record<string, string> = { topic: topicHelp, produce: produceHelp };

export function helpText(command: string): string {
  const help = commandHelp[command]!;
  const width = Math.max(0, ...help.flags.map(([flag]) => flag.length));
  const flags = help.flags.length === 0 ? '' : `\nflags:\n${help.flags.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`).join('\n')}\n`;
  return `${help.about}\n\nusage:\n${help.usage.split('\n').map((l) => `  ${l}`).join('\n')}\n${flags}\nexample:\n  ${help.example}\n`;
}
