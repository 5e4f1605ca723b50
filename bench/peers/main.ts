/**
 * `npm run bench:peers`: offsetlake against the peers a user would otherwise run (issue 27),
 * on the same topics, in one run, on this machine.
 *
 * For each workload (JSON clickstream, and the same records in Avro through the registry),
 * an independent producer (confluent-kafka, bench/peers/produce.py) writes the topic; then
 * each way of ingesting it runs as a child process under bench/peers/rusage.py, which
 * reports the CPU seconds (user + system, wait4) and peak RSS the kernel accounted to it:
 *
 *   kcat                read_committed, to /dev/null (the floor)
 *   confluent-kafka     read_committed consume of every record (bench/peers/consume.py)
 *   pyarrow copy        the same, copied into Parquet (zstd)
 *   Iceberg sink        Kafka Connect standalone + the Apache Iceberg sink, Hadoop catalog on local files
 *   offsetlake          `offsetlake table create --file_window 1h` (before producing), then `offsetlake run --once`
 *
 * Then the same four queries, each in a new DuckDB 1.4.4 process (and, for offsetlake, a
 * new `offsetlake serve`, so no query reads another's cache), over the pyarrow copy, the
 * Iceberg table (DuckDB's iceberg extension) and offsetlake's DuckLake attach: a full scan,
 * a group-by, one hour of `_timestamp`, a `_key` range. Each offsetlake query is then
 * asked again, in another new DuckDB process of the same serve ("the same serve again"):
 * what a long-running serve answers once its cache holds the chunks the first read built.
 * The answers must agree with the copy's; a figure for a wrong answer is printed as WRONG
 * and the run exits 1.
 *
 * usage: npm run bench:peers -- [--gib 0.2] [--workloads json,avro] [--no-iceberg] [--keep] [--out FILE]
 *        [--serve-port N] [--connect-port N]
 * Ports: the stack's from OFFSETLAKE_*_PORT as `offsetlake stack up` takes them; serve and
 * Connect's REST listener default to the Kafka port + 550 and − 9.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectKafka } from '../../src/kafka/connect.js';
import { lastStableOffset } from '../../src/kafka/offsets.js';
import { readCommitted } from '../../src/kafka/read.js';
import { ownWriterPageShape, ownWriterSettings } from '../../src/parquet/encoder.js';
import { defaultSettings } from '../../src/table/settings.js';
import { stackConfig } from '../../src/stack/config.js';
import { runningPid } from '../../src/stack/process.js';
import { processCpuSeconds } from '../process-cpu.js';
import { startServe, type ServeProcess } from '../serve-process.js';
import { fetchConnect, icebergVersion, connectVersion } from './connect.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const here = join(root, 'bench/peers');
const GiB = 1024 ** 3;
/** key + value + header bytes of one JSON record of produce.py, measured (8 + ~570 + ~10). */
const jsonRecordBytes = 588;
const partitions = 3;

// ---------------------------------------------------------------- arguments

interface Options {
  gib: number;
  workloads: Array<'json' | 'avro'>;
  iceberg: boolean;
  keep: boolean;
  out: string | undefined;
  servePort: number;
  connectPort: number;
}

function parseOptions(argv: string[]): Options {
  const config = stackConfig();
  const options: Options = { gib: 0.2, workloads: ['json', 'avro'], iceberg: true, keep: false, out: undefined, servePort: config.kafkaPort + 550, connectPort: config.kafkaPort - 9 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) usage(`${flag} needs a value`);
      return next;
    };
    if (flag === '--gib') options.gib = Number(value());
    else if (flag === '--workloads') options.workloads = value().split(',') as Options['workloads'];
    else if (flag === '--no-iceberg') options.iceberg = false;
    else if (flag === '--keep') options.keep = true;
    else if (flag === '--out') options.out = resolve(value());
    else if (flag === '--serve-port') options.servePort = Number(value());
    else if (flag === '--connect-port') options.connectPort = Number(value());
    else if (flag === '--help' || flag === '-h') usage();
    else usage(`unknown flag ${flag}`);
  }
  if (!(options.gib > 0)) usage('--gib must be a positive number of GiB');
  if (!options.workloads.length || options.workloads.some((w) => w !== 'json' && w !== 'avro')) usage('--workloads takes json, avro or json,avro');
  return options;
}

function usage(error?: string): never {
  const text = 'usage: npm run bench:peers -- [--gib 0.2] [--workloads json,avro] [--no-iceberg] [--keep] [--out FILE] [--serve-port N] [--connect-port N]';
  if (error) {
    console.error(`${error}\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

// ---------------------------------------------------------------- child processes

/** Every process group this run started; each is ended on every way out. */
const children = new Set<ChildProcess>();

function endAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
}
process.on('exit', endAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the processes this benchmark started`);
    endAll();
    process.exit(130);
  });
}

interface Started {
  child: ChildProcess;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** A child in a process group of its own (so its descendants can be ended with it); stdout collected unless sent to a file. */
function start(command: string, args: string[], options: { stdoutFile?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Started {
  const out = options.stdoutFile ? openSync(options.stdoutFile, 'w') : 'pipe';
  const child = spawn(command, args, { cwd: options.cwd ?? root, env: options.env ?? process.env, detached: true, stdio: ['ignore', out, 'pipe'] });
  if (typeof out === 'number') closeSync(out);
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolvePromise, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      resolvePromise({ code, stdout, stderr });
    });
  });
  return { child, done };
}

async function run(command: string, args: string[], what: string, options: { stdoutFile?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const { done } = start(command, args, options);
  const result = await done;
  if (result.code !== 0) throw new Error(`${what} failed (exit ${result.code}): ${result.stderr.trim().slice(-2000) || result.stdout.trim().slice(-2000)}`);
  return result.stdout;
}

function lastJson<T>(stdout: string): T {
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as T;
}

interface Usage {
  userS: number;
  sysS: number;
  maxRssKiB: number;
  wallS: number;
  exitCode: number;
}

let scratch = '';
/** What a workload made in Kafka and the catalog, undone when it ends, however it ends (unless --keep). */
const cleanups: Array<() => Promise<void>> = [];
async function cleanUp(): Promise<void> {
  for (const undo of cleanups.splice(0)) await undo();
}
let measureCount = 0;

/** The command under rusage.py; what it printed and what the kernel accounted to it. */
async function measured(python: string, command: string, args: string[], what: string, options: { stdoutFile?: string } = {}): Promise<{ usage: Usage; stdout: string }> {
  const usageFile = join(scratch, `usage-${++measureCount}.json`);
  const stdout = await run(python, [join(here, 'rusage.py'), usageFile, '--', command, ...args], what, options);
  return { usage: JSON.parse(readFileSync(usageFile, 'utf8')) as Usage, stdout };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---------------------------------------------------------------- results

interface Ingest {
  cpuS?: number;
  /** The broker's CPU while this pipeline read the topic (kcat's read: part of the floor of a cold query). */
  brokerCpuS?: number;
  cpuSPerGiB?: number;
  rssMiB?: number;
  wallS?: number;
  note?: string;
}

/** CPU seconds charged to a query, every thread of each process, over the query alone. */
interface QueryCpu {
  duckdbS: number;
  serveS?: number;
  brokerS?: number;
}

interface QueryResult {
  seconds?: number;
  cpu?: QueryCpu;
  rows?: unknown[][];
  correct?: boolean;
  note?: string;
}

type QueryName = 'fullScan' | 'groupBy' | 'oneHour' | 'keyRange';
const queryNames: QueryName[] = ['fullScan', 'groupBy', 'oneHour', 'keyRange'];
type System = 'kcat' | 'confluentKafka' | 'pyarrowCopy' | 'icebergSink' | 'offsetlake' | 'offsetlakeWarm';
const systems: System[] = ['kcat', 'confluentKafka', 'pyarrowCopy', 'icebergSink', 'offsetlake', 'offsetlakeWarm'];
const systemLabel: Record<System, string> = {
  kcat: 'kcat (read_committed)',
  confluentKafka: 'confluent-kafka consume',
  pyarrowCopy: 'pyarrow copy (zstd)',
  icebergSink: 'Iceberg sink (Connect)',
  offsetlake: 'offsetlake',
  offsetlakeWarm: 'offsetlake, the same serve again',
};

interface WorkloadResult {
  format: 'json' | 'avro';
  topic: string;
  records: number;
  recordBytes: number;
  produceWallS: number;
  ingest: Record<System, Ingest>;
  queries: Partial<Record<System, Record<QueryName, QueryResult>>>;
  sql: Partial<Record<System, Record<QueryName, string>>>;
  serveFullScan?: { kafkaBytes: number; kafkaRecords: number; bytesServed: number; kafkaBytesPerRecordByte: number };
  /** A query through the attach that every file's statistics prune: DuckLake's catalog step alone. */
  catalogOnlyS?: number;
  sizes: { parquetCopyBytes?: number; icebergDataBytes?: number; offsetlakeFileBytes?: number };
  /** Tables besides this workload's that `run --once` also looked at (absent: none). */
  otherTables?: string[];
  /** Value bytes the producer wrote, and the CPU seconds per byte of LZ4 over them in the encoder's pages (a sample's). */
  valueBytes: number;
  lz4SecondsPerValueByte?: number;
}

// ---------------------------------------------------------------- the run

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const config = stackConfig();
  const brokers = `${config.host}:${config.kafkaPort}`;
  const registry = `http://${config.host}:${config.registryPort}/apis/ccompat/v7`;
  const node = process.execPath;
  const cli = join(root, 'bin/offsetlake.js');
  const runId = Date.now().toString(36);
  scratch = join(config.paths.home, 'peers', runId);
  mkdirSync(scratch, { recursive: true });
  const records = Math.max(3000, Math.round((options.gib * GiB) / jsonRecordBytes));
  const started = Date.now();
  const uptimeBefore = uptime();
  console.log(`peers benchmark ${runId}: ${records.toLocaleString('en-US')} records a workload, about ${options.gib} GiB of JSON records` +
    ` (the issue's full size is --gib 1.07, about 2 M records; this default keeps the whole run near 15 minutes on 2 cores); ${partitions} partitions`);
  console.log(`machine: ${cpus().length} cores; ${uptimeBefore}`);

  const offsetlake = (args: string[], what: string) => run(node, [cli, ...args], what);
  console.log('stack: offsetlake stack up');
  await offsetlake(['stack', 'up'], 'offsetlake stack up');

  console.log('python: the pinned peers environment (bench/peers/requirements.txt)');
  const venv = (await run('bash', [join(root, 'test/python-env.sh'), 'bench/peers/requirements.txt'], 'test/python-env.sh bench/peers/requirements.txt')).trim().split('\n').pop()!;
  const python = join(venv, 'bin/python');

  const kcat = findKcat();
  // the broker's CPU is charged to what reads it: kcat's read, each query of a new serve
  const brokerPid = runningPid(config.paths, 'kafka');
  const brokerCpu = (): number | undefined => (brokerPid === undefined ? undefined : processCpuSeconds(brokerPid));
  let connect: ReturnType<typeof fetchConnect> | undefined;
  let icebergSkip: string | undefined = options.iceberg ? undefined : 'skipped: --no-iceberg';
  if (options.iceberg) {
    try {
      connect = fetchConnect(config.paths.cache, join(config.paths.home, 'logs'), (line) => console.log(line));
    } catch (error) {
      icebergSkip = `skipped: the sink could not be fetched from Maven Central (${(error as Error).message.split('\n')[0]})`;
    }
  }

  const results: WorkloadResult[] = [];
  let wrong = 0;
  for (const format of options.workloads) {
    const topic = `peers-${format}-${runId}`;
    const table = `peers_${format}_${runId}`;
    console.log(`\n== ${format}: topic ${topic}`);
    if (!options.keep) {
      // the table leaves the catalog, the topics (and their disk) leave Kafka: after the workload, or on a failure
      cleanups.push(async () => {
        await offsetlake(['table', 'drop', table], 'table drop').catch((error: Error) => console.log(`table drop ${table}: ${error.message}`));
        await run(python, [join(here, 'delete_topics.py'), '--brokers', brokers, topic, `${topic}-iceberg-control`], 'delete_topics.py').catch((error: Error) => console.log(`deleting topics: ${error.message}`));
      });
    }
    await offsetlake(['topic', 'create', topic, '--partitions', String(partitions)], 'topic create');
    // Before producing: a new table starts at each partition's LSO.
    await offsetlake(['table', 'create', table, '--topic', topic, '--file_window', '1h', ...(format === 'avro' ? ['--format', 'avro'] : [])], 'table create');

    const produceStarted = Date.now();
    const produced = lastJson<{ records: number; keyBytes: number; valueBytes: number; headerBytes: number; firstTimestamp: number; lastTimestamp: number }>(
      await run(python, [join(here, 'produce.py'), '--brokers', brokers, '--topic', topic, '--format', format, '--records', String(records), '--partitions', String(partitions), '--registry', registry], 'produce.py'),
    );
    const produceWallS = (Date.now() - produceStarted) / 1000;
    const recordBytes = produced.keyBytes + produced.valueBytes + produced.headerBytes;
    const gib = recordBytes / GiB;
    console.log(`produced ${produced.records} records, ${(recordBytes / 2 ** 20).toFixed(1)} MiB of key + value + header bytes in ${produceWallS.toFixed(1)} s (confluent-kafka, not measured)`);

    const result: WorkloadResult = {
      format, topic, records, recordBytes, produceWallS,
      ingest: { kcat: {}, confluentKafka: {}, pyarrowCopy: {}, icebergSink: {}, offsetlake: {}, offsetlakeWarm: { note: 'the queries again (no indexing)' } },
      queries: {}, sql: {}, sizes: {}, valueBytes: produced.valueBytes,
    };
    const account = (system: System, usage: Usage) => {
      const cpuS = usage.userS + usage.sysS;
      result.ingest[system] = { cpuS, cpuSPerGiB: cpuS / gib, rssMiB: usage.maxRssKiB / 1024, wallS: usage.wallS };
      console.log(`${systemLabel[system]}: ${cpuS.toFixed(1)} CPU s (${(cpuS / gib).toFixed(1)} s/GiB), peak RSS ${(usage.maxRssKiB / 1024).toFixed(0)} MiB, ${usage.wallS.toFixed(1)} s wall`);
    };

    // kcat: the floor
    if (kcat.path) {
      const brokerBefore = brokerCpu();
      const { usage } = await measured(python, kcat.path, ['-C', '-b', brokers, '-t', topic, '-X', 'isolation.level=read_committed', '-o', 'beginning', '-e', '-q', '-f', '%k %s %h\n'], 'kcat', { stdoutFile: '/dev/null' });
      account('kcat', usage);
      const brokerAfter = brokerCpu();
      if (brokerBefore !== undefined && brokerAfter !== undefined) result.ingest.kcat.brokerCpuS = brokerAfter - brokerBefore;
    } else {
      result.ingest.kcat = { note: kcat.note };
      console.log(`kcat: ${kcat.note}`);
    }

    // confluent-kafka read_committed
    {
      const { usage, stdout } = await measured(python, python, [join(here, 'consume.py'), '--brokers', brokers, '--topic', topic, '--partitions', String(partitions)], 'consume.py');
      const read = lastJson<{ records: number; bytes: number }>(stdout);
      if (read.records !== records || read.bytes !== recordBytes) throw new Error(`confluent-kafka read ${read.records} records / ${read.bytes} bytes, the producer wrote ${records} / ${recordBytes}`);
      account('confluentKafka', usage);
    }

    // pyarrow copy
    const parquet = join(scratch, `${format}.parquet`);
    {
      const { usage, stdout } = await measured(python, python, [join(here, 'consume.py'), '--brokers', brokers, '--topic', topic, '--partitions', String(partitions), '--parquet', parquet, '--format', format, '--registry', registry], 'consume.py --parquet');
      const read = lastJson<{ records: number }>(stdout);
      if (read.records !== records) throw new Error(`the pyarrow copy read ${read.records} records of ${records}`);
      account('pyarrowCopy', usage);
      result.sizes.parquetCopyBytes = statSync(parquet).size;
    }

    // Iceberg sink
    const warehouse = join(scratch, `warehouse-${format}`);
    const icebergTable = join(warehouse, 'bench', format);
    let icebergReady = false;
    if (format === 'avro' && connect?.avroConverterMissing && !icebergSkip) {
      result.ingest.icebergSink = { note: `skipped for Avro: no Connect converter for the Confluent wire format (${connect.avroConverterMissing})` };
      console.log(`Iceberg sink: ${result.ingest.icebergSink.note}`);
    } else if (icebergSkip || !connect) {
      result.ingest.icebergSink = { note: icebergSkip ?? 'skipped' };
      console.log(`Iceberg sink: ${result.ingest.icebergSink.note}`);
    } else {
      try {
        const usage = await icebergSink({ python, connect, brokers, topic, warehouse, records, connectPort: options.connectPort, format, registryV2: `http://${config.host}:${config.registryPort}/apis/registry/v2` });
        account('icebergSink', usage);
        icebergReady = true;
        result.sizes.icebergDataBytes = folderBytes(join(icebergTable, 'data'));
      } catch (error) {
        result.ingest.icebergSink = { note: `failed: ${(error as Error).message.slice(0, 400)}` };
        console.log(`Iceberg sink: ${result.ingest.icebergSink.note}`);
      }
    }

    // offsetlake
    {
      // `run --once` looks at every table of the catalog: others (kept by an earlier
      // --keep, or the user's own) add their checks to this figure, so they are said.
      const others = (JSON.parse(await offsetlake(['table', 'list', '--json'], 'table list')) as { name: string }[]).map((t) => t.name).filter((name) => name !== table);
      if (others.length > 0) {
        result.otherTables = others;
        console.log(`note: the catalog holds ${others.length} other table(s) (${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}); run --once looks at them too, so the figure below includes that. Drop them for a figure of this table alone.`);
      }
      const { usage } = await measured(python, node, [cli, 'run', '--once'], 'offsetlake run --once', { stdoutFile: join(scratch, `run-${format}.log`) });
      account('offsetlake', usage);
      const files = JSON.parse(await offsetlake(['files', table, '--json'], 'offsetlake files')) as unknown;
      result.sizes.offsetlakeFileBytes = sumFileBytes(files);
      if (format === 'json') result.lz4SecondsPerValueByte = await lz4SecondsPerValueByte(brokers, topic);
    }

    // queries
    const hourStart = Math.floor((produced.firstTimestamp + 12 * 3600_000) / 3600_000) * 3600_000;
    const q = queries(format, hourStart);
    const copySetup: string[] = [];
    const icebergSetup = ['LOAD avro', 'LOAD iceberg', 'SET unsafe_enable_version_guessing = true'];
    const copyFrom = `read_parquet('${parquet}')`;
    const icebergFrom = `iceberg_scan('${icebergTable}')`;
    result.sql.pyarrowCopy = mapQueries((name) => q.copy[name].replaceAll('{from}', copyFrom));
    if (icebergReady) result.sql.icebergSink = mapQueries((name) => q.iceberg[name].replaceAll('{from}', icebergFrom));
    result.sql.offsetlake = mapQueries((name) => q.offsetlake[name].replaceAll('{from}', `lake.${table}`));

    const timed = async (system: System, setup: string[], name: QueryName | 'catalogFloor', sql: string, serve?: ServeProcess): Promise<QueryResult> => {
      const spec = join(scratch, `query-${++measureCount}.json`);
      writeFileSync(spec, JSON.stringify({ setup, sql }));
      // serve's and the broker's CPU over the whole DuckDB process: its set-up (LOAD, ATTACH) reads neither
      const serveCpu = () => (serve?.child.pid === undefined ? undefined : processCpuSeconds(serve.child.pid));
      const before = { serve: serveCpu(), broker: brokerCpu() };
      const answer = lastJson<{ seconds?: number; cpuSeconds?: number; rows?: unknown[][]; error?: string }>(await run(python, [join(here, 'query.py'), spec], `${system} ${name}`).catch((error: Error) => JSON.stringify({ error: error.message })));
      const after = { serve: serveCpu(), broker: brokerCpu() };
      if (answer.error) {
        console.log(`  ${systemLabel[system]} ${name}: failed: ${answer.error.slice(0, 300)}`);
        return { note: `failed: ${answer.error.slice(0, 300)}` };
      }
      const cpu: QueryCpu = { duckdbS: answer.cpuSeconds! };
      if (before.serve !== undefined && after.serve !== undefined) cpu.serveS = after.serve - before.serve;
      if (serve && before.broker !== undefined && after.broker !== undefined) cpu.brokerS = after.broker - before.broker;
      console.log(`  ${systemLabel[system]} ${name}: ${answer.seconds!.toFixed(2)} s (CPU: ${cpuWords(cpu)}) ${JSON.stringify(answer.rows).slice(0, 160)}`);
      return { seconds: answer.seconds!, cpu, rows: answer.rows! };
    };

    console.log('queries (each a new DuckDB process; offsetlake each through a new serve):');
    const copyAnswers = {} as Record<QueryName, QueryResult>;
    for (const name of queryNames) copyAnswers[name] = await timed('pyarrowCopy', copySetup, name, result.sql.pyarrowCopy[name]);
    result.queries.pyarrowCopy = copyAnswers;

    if (icebergReady) {
      const answers = {} as Record<QueryName, QueryResult>;
      for (const name of queryNames) {
        answers[name] = await timed('icebergSink', icebergSetup, name, result.sql.icebergSink![name]);
        answers[name].correct = agree(name, answers[name], copyAnswers[name], q.icebergCompare[name]);
      }
      result.queries.icebergSink = answers;
    }

    const lakeAnswers = {} as Record<QueryName, QueryResult>;
    const warmAnswers = {} as Record<QueryName, QueryResult>;
    for (const name of queryNames) {
      // First as `offsetlake attach` prints it. Its reader login has
      // idle_in_transaction_session_timeout 30s, and DuckLake holds one Postgres transaction
      // open while DuckDB scans: a scan longer than that loses its connection at COMMIT. Such
      // a query is said as failed, then timed again with the timeout lifted for that session.
      for (const lifted of [false, true]) {
        const serve = await serveOn(options.servePort);
        try {
          // attach checks that serve answers, so it is asked once one runs
          const attach = await attachStatements(node, cli, options.servePort);
          const setup = ['LOAD ducklake', 'LOAD postgres', 'LOAD httpfs', ...(lifted ? attach.map(liftIdleTimeout) : attach)];
          const before = await metrics(options.servePort);
          const answer = await timed('offsetlake', setup, name, result.sql.offsetlake[name], serve);
          const after = await metrics(options.servePort);
          if (name === 'fullScan' && answer.seconds !== undefined) {
            const kafkaBytes = after.kafkaBytes - before.kafkaBytes;
            result.serveFullScan = { kafkaBytes, kafkaRecords: after.kafkaRecords - before.kafkaRecords, bytesServed: after.bytesServed - before.bytesServed, kafkaBytesPerRecordByte: kafkaBytes / recordBytes };
            console.log(`  serve fetched ${(kafkaBytes / 2 ** 20).toFixed(1)} MiB from Kafka for the full scan: ${(kafkaBytes / recordBytes).toFixed(3)}× the topic's ${(recordBytes / 2 ** 20).toFixed(1)} MiB of record bytes`);
          }
          if (lifted) answer.note = `as printed by attach it failed (${lakeAnswers[name]!.note!.slice(0, 200)}); timed again with idle_in_transaction_session_timeout=0 for the session`;
          lakeAnswers[name] = answer;
          // The same query in another new DuckDB process, on the same serve: what a
          // long-running serve answers once its chunk cache holds what the first read built
          // (within its budget), DuckDB's own caches empty.
          if (answer.seconds !== undefined) warmAnswers[name] = { ...(await timed('offsetlakeWarm', setup, name, result.sql.offsetlake[name], serve)), ...(lifted ? { note: answer.note } : {}) };
        } finally {
          await serve.stop();
        }
        const failed = lakeAnswers[name]!.seconds === undefined;
        if (!failed || lifted || !/server closed the connection|idle-in-transaction|terminating connection/i.test(lakeAnswers[name]!.note ?? '')) break;
        console.log('  offsetlake: the reader login\'s idle_in_transaction_session_timeout (30s) ended DuckLake\'s catalog transaction; again with it lifted for this session');
      }
      lakeAnswers[name]!.correct = agree(name, lakeAnswers[name]!, copyAnswers[name], 'all');
      if (warmAnswers[name]) warmAnswers[name].correct = agree(name, warmAnswers[name], copyAnswers[name], 'all');
    }
    result.queries.offsetlake = lakeAnswers;
    result.queries.offsetlakeWarm = warmAnswers;
    {
      // The floor of any query through the attach: DuckLake's catalog step (snapshot,
      // schema, the file list and its statistics, from Postgres) for a query whose
      // statistics leave no file to read.
      const serve = await serveOn(options.servePort);
      try {
        const setup = ['LOAD ducklake', 'LOAD postgres', 'LOAD httpfs', ...(await attachStatements(node, cli, options.servePort))];
        const pruned = await timed('offsetlake', setup, 'catalogFloor', `SELECT count(*) AS n FROM lake.${table} WHERE _timestamp < TIMESTAMPTZ '2000-01-01 00:00:00+00'`);
        if (pruned.seconds !== undefined) result.catalogOnlyS = pruned.seconds;
      } finally {
        await serve.stop();
      }
    }
    for (const system of ['icebergSink', 'offsetlake', 'offsetlakeWarm'] as const) {
      for (const name of queryNames) {
        const answer = result.queries[system]?.[name];
        if (answer && answer.seconds !== undefined && answer.correct === false) {
          wrong++;
          console.log(`WRONG: ${systemLabel[system]} ${name} answered ${JSON.stringify(answer.rows)}, the copy ${JSON.stringify(copyAnswers[name].rows)}`);
        }
      }
    }
    results.push(result);
    await cleanUp();
  }

  const document = {
    runId,
    date: new Date(started).toISOString(),
    gib: options.gib,
    recordsPerWorkload: records,
    partitions,
    machine: { cores: cpus().length, uptimeBefore, uptimeAfter: uptime(), loadavgAfter: loadavg() },
    versions: { kcat: kcat.version, icebergSink: `iceberg-kafka-connect ${icebergVersion} on Kafka Connect ${connectVersion} (standalone, Hadoop catalog)`, duckdb: '1.4.4 (PyPI)' },
    totalWallS: (Date.now() - started) / 1000,
    workloads: results,
  };
  const out = options.out ?? join(root, 'bench/results', `peers-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`\n${markdown(results)}`);
  console.log(`${document.machine.uptimeAfter}; ${document.totalWallS.toFixed(0)} s in all. JSON: ${out}`);
  if (!options.keep) rmSync(scratch, { recursive: true, force: true });
  else console.log(`kept: ${scratch} (the Parquet copy, the Iceberg warehouse, logs); topics ${results.map((r) => r.topic).join(', ')} and their tables`);
  if (wrong) {
    console.log(`${wrong} answer(s) differ from the pyarrow copy's: those figures are defects, not results`);
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------- queries

interface QuerySet {
  copy: Record<QueryName, string>;
  iceberg: Record<QueryName, string>;
  offsetlake: Record<QueryName, string>;
  /** which columns of the copy's answer the Iceberg table can give too */
  icebergCompare: Record<QueryName, 'all' | 'count'>;
}

function mapQueries(f: (name: QueryName) => string): Record<QueryName, string> {
  return Object.fromEntries(queryNames.map((name) => [name, f(name)])) as Record<QueryName, string>;
}

/**
 * The same questions of each copy, in its columns. Keys are `u0000000`..`u0099999`; the
 * range is a tenth of them. The Iceberg sink keeps neither the Kafka key nor the timestamp,
 * so it is asked of `user_id` (the key's value) and `ts` (the timestamp's value), and it
 * has no JSON text to measure: its full scan sums `user_agent` lengths, so only its count
 * is compared there.
 */
function queries(format: 'json' | 'avro', hourStart: number): QuerySet {
  const from = new Date(hourStart).toISOString().replace('T', ' ').replace('.000Z', '+00');
  const to = new Date(hourStart + 3600_000).toISOString().replace('T', ' ').replace('.000Z', '+00');
  const hour = `_timestamp >= TIMESTAMPTZ '${from}' AND _timestamp < TIMESTAMPTZ '${to}'`;
  const field = (name: string, kafka: 'copy' | 'lake') => (format === 'json' ? (kafka === 'copy' ? `value->>'${name}'` : `_value->>'${name}'`) : name);
  const full = format === 'json'
    ? { copy: 'SELECT count(*) AS n, sum(length(value)) AS value_chars FROM {from}', lake: 'SELECT count(*) AS n, sum(length(_value::VARCHAR)) AS value_chars FROM {from}' }
    : { copy: 'SELECT count(*) AS n, sum(length(user_agent)) AS user_agent_chars FROM {from}', lake: 'SELECT count(*) AS n, sum(length(user_agent)) AS user_agent_chars FROM {from}' };
  return {
    copy: {
      fullScan: full.copy,
      groupBy: `SELECT ${field('event_type', 'copy')} AS event_type, count(*) AS n FROM {from} GROUP BY 1 ORDER BY 1`,
      oneHour: `SELECT count(*) AS n, count(DISTINCT _key) AS keys FROM {from} WHERE ${hour}`,
      keyRange: `SELECT count(*) AS n, count(DISTINCT _key) AS keys FROM {from} WHERE _key >= 'u0010000' AND _key < 'u0020000'`,
    },
    offsetlake: {
      fullScan: full.lake,
      groupBy: `SELECT ${field('event_type', 'lake')} AS event_type, count(*) AS n FROM {from} GROUP BY 1 ORDER BY 1`,
      oneHour: `SELECT count(*) AS n, count(DISTINCT _key) AS keys FROM {from} WHERE ${hour}`,
      keyRange: `SELECT count(*) AS n, count(DISTINCT _key) AS keys FROM {from} WHERE _key >= 'u0010000'::BLOB AND _key < 'u0020000'::BLOB`,
    },
    iceberg: {
      fullScan: 'SELECT count(*) AS n, sum(length(user_agent)) AS user_agent_chars FROM {from}',
      groupBy: 'SELECT event_type, count(*) AS n FROM {from} GROUP BY 1 ORDER BY 1',
      oneHour: `SELECT count(*) AS n, count(DISTINCT user_id) AS keys FROM {from} WHERE ts >= ${hourStart} AND ts < ${hourStart + 3600_000}`,
      keyRange: `SELECT count(*) AS n, count(DISTINCT user_id) AS keys FROM {from} WHERE user_id >= 'u0010000' AND user_id < 'u0020000'`,
    },
    icebergCompare: { fullScan: format === 'json' ? 'count' : 'all', groupBy: 'all', oneHour: 'all', keyRange: 'all' },
  };
}

function agree(_name: QueryName, answer: QueryResult, copy: QueryResult, compare: 'all' | 'count'): boolean | undefined {
  if (!answer.rows || !copy.rows) return undefined;
  if (compare === 'count') return JSON.stringify(answer.rows.map((row) => row[0])) === JSON.stringify(copy.rows.map((row) => row[0]));
  return JSON.stringify(answer.rows) === JSON.stringify(copy.rows);
}

// ---------------------------------------------------------------- offsetlake serve

/** serve on `port`, in a process group of its own, ended with the benchmark's other children however the run ends. */
async function serveOn(port: number): Promise<ServeProcess> {
  const serve = await startServe({ port, detached: true });
  children.add(serve.child);
  serve.child.once('close', () => children.delete(serve.child));
  return serve;
}

async function metrics(port: number): Promise<{ kafkaBytes: number; kafkaRecords: number; bytesServed: number }> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { accept: 'application/json' } });
  return (await response.json()) as { kafkaBytes: number; kafkaRecords: number; bytesServed: number };
}

/** The ATTACH with `options=-c…` added to its libpq string: that session's idle-in-transaction timeout lifted. */
function liftIdleTimeout(statement: string): string {
  return statement.replace(/^(ATTACH 'ducklake:postgres:[^']*)'/, "$1 options=-cidle_in_transaction_session_timeout=0'");
}

let attachSql: string[] | undefined;
async function attachStatements(node: string, cli: string, port: number): Promise<string[]> {
  attachSql ??= (JSON.parse(await run(node, [cli, 'attach', '--url', `http://127.0.0.1:${port}`, '--no-auth', '--json'], 'offsetlake attach')) as { statements: string[] }).statements;
  return attachSql;
}

/** `offsetlake files --json`: one object per file, sizes as decimal text. */
function sumFileBytes(files: unknown): number | undefined {
  if (!Array.isArray(files)) return undefined;
  return files.reduce((sum: number, file: { fileSizeBytes?: string }) => sum + Number(file.fileSizeBytes ?? 0), 0);
}

// ---------------------------------------------------------------- the Iceberg sink

async function icebergSink(input: { python: string; connect: ReturnType<typeof fetchConnect>; brokers: string; topic: string; warehouse: string; records: number; connectPort: number; format: string; registryV2: string }): Promise<Usage> {
  const { python, connect, brokers, topic, warehouse, records, connectPort, format, registryV2 } = input;
  const folder = join(scratch, `connect-${format}`);
  mkdirSync(folder, { recursive: true });
  const control = `${topic}-iceberg-control`;
  await run(process.execPath, [join(root, 'bin/offsetlake.js'), 'topic', 'create', control, '--partitions', '1'], 'topic create (control)');
  const worker = join(folder, 'worker.properties');
  writeFileSync(worker, [
    `bootstrap.servers=${brokers}`,
    'key.converter=org.apache.kafka.connect.storage.StringConverter',
    ...(format === 'avro'
      ? [
          // Apicurio's converter in its Confluent mode: magic byte, 4-byte id, the id a content id (what ccompat hands out)
          'value.converter=io.apicurio.registry.utils.converter.AvroConverter',
          `value.converter.apicurio.registry.url=${registryV2}`,
          'value.converter.apicurio.registry.as-confluent=true',
          'value.converter.apicurio.registry.use-id=contentId',
        ]
      : ['value.converter=org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable=false']),
    `offset.storage.file.filename=${join(folder, 'offsets')}`,
    `plugin.path=${connect.plugins}`,
    `listeners=http://127.0.0.1:${connectPort}`,
    'consumer.isolation.level=read_committed',
    'consumer.auto.offset.reset=earliest',
    'consumer.max.poll.records=10000',
    '',
  ].join('\n'));
  const sink = join(folder, 'sink.properties');
  writeFileSync(sink, [
    `name=peers-${format}-sink`,
    'connector.class=org.apache.iceberg.connect.IcebergSinkConnector',
    'tasks.max=1',
    `topics=${topic}`,
    `iceberg.tables=bench.${format}`,
    'iceberg.tables.auto-create-enabled=true',
    'iceberg.catalog.type=hadoop',
    `iceberg.catalog.warehouse=file://${warehouse}`,
    `iceberg.control.topic=${control}`,
    'iceberg.control.commit.interval-ms=10000',
    '',
  ].join('\n'));
  const log4j = join(folder, 'log4j2.properties');
  writeFileSync(log4j, ['status = warn', 'appender.out.type = Console', 'appender.out.name = STDOUT', 'appender.out.layout.type = PatternLayout',
    'appender.out.layout.pattern = [%d] %p %m (%c)%n', 'rootLogger.level = WARN', 'rootLogger.appenderRef.out.ref = STDOUT',
    // the sink's commits, with their times
    'logger.iceberg.name = org.apache.iceberg.connect', 'logger.iceberg.level = INFO', ''].join('\n'));
  const usageFile = join(scratch, `usage-${++measureCount}.json`);
  const log = join(folder, 'connect.log');
  const java = findJava();
  const worker$ = start(python, [join(here, 'rusage.py'), usageFile, '--', java, '-Xms512m', '-Xmx2g', `-Dlog4j2.configurationFile=${log4j}`, '-cp', join(connect.runtime, '*'),
    'org.apache.kafka.connect.cli.ConnectStandalone', worker, sink], { stdoutFile: log, cwd: folder });
  const deadline = Date.now() + Math.max(600_000, records * 2);
  let committed = 0;
  try {
    while (committed < records) {
      if (worker$.child.exitCode !== null) throw new Error(`Kafka Connect exited (log: ${log})`);
      if (Date.now() > deadline) throw new Error(`the sink committed ${committed} of ${records} records before the deadline (log: ${log})`);
      await sleep(1000);
      committed = icebergCommitted(join(warehouse, 'bench', format));
    }
  } finally {
    if (worker$.child.pid !== undefined && worker$.child.exitCode === null) process.kill(worker$.child.pid, 'SIGTERM');
    const ended = await Promise.race([worker$.done.then(() => true), sleep(60_000).then(() => false)]);
    if (!ended && worker$.child.pid !== undefined) process.kill(-worker$.child.pid, 'SIGKILL');
  }
  await worker$.done;
  if (committed !== records) throw new Error(`the sink committed ${committed} records, ${records} were produced`);
  return JSON.parse(readFileSync(usageFile, 'utf8')) as Usage;
}

/** total-records of the current snapshot of a Hadoop-catalog table, 0 before its first commit. */
function icebergCommitted(table: string): number {
  try {
    const version = readFileSync(join(table, 'metadata', 'version-hint.text'), 'utf8').trim();
    const metadata = JSON.parse(readFileSync(join(table, 'metadata', `v${version}.metadata.json`), 'utf8')) as {
      'current-snapshot-id'?: number | string;
      snapshots?: Array<{ 'snapshot-id': number | string; summary?: Record<string, string> }>;
    };
    const current = metadata.snapshots?.find((s) => String(s['snapshot-id']) === String(metadata['current-snapshot-id']));
    return Number(current?.summary?.['total-records'] ?? 0);
  } catch {
    return 0;
  }
}

function findJava(): string {
  if (process.env.JAVA_HOME && existsSync(join(process.env.JAVA_HOME, 'bin/java'))) return join(process.env.JAVA_HOME, 'bin/java');
  return 'java';
}

function folderBytes(folder: string): number {
  if (!existsSync(folder)) return 0;
  let total = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    total += entry.isDirectory() ? folderBytes(path) : entry.name.endsWith('.parquet') ? statSync(path).size : 0;
  }
  return total;
}

// ---------------------------------------------------------------- kcat, the machine

function findKcat(): { path?: string; version?: string; note?: string } {
  const which = () => spawnSync('bash', ['-c', 'command -v kcat || command -v kafkacat'], { encoding: 'utf8' }).stdout.trim();
  let path = which();
  if (!path && process.getuid?.() === 0 && spawnSync('bash', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0) {
    console.log('kcat: not installed; apt-get install kcat');
    spawnSync('bash', ['-c', 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null 2>&1)'], { stdio: 'inherit' });
    path = which();
  }
  if (!path) return { note: 'skipped: kcat is not installed (Debian: apt-get install kcat) and could not be installed here' };
  const version = spawnSync(path, ['-V'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim();
  return { path, version };
}

function uptime(): string {
  const text = spawnSync('uptime', [], { encoding: 'utf8' }).stdout.trim();
  return text ? `uptime: ${text}` : `load average ${loadavg().map((l) => l.toFixed(2)).join(', ')}`;
}

// ---------------------------------------------------------------- the table

function markdown(results: WorkloadResult[]): string {
  const lines: string[] = [];
  for (const result of results) {
    const copy = result.ingest.pyarrowCopy;
    const copyQueries = result.queries.pyarrowCopy;
    lines.push(`### ${result.format === 'json' ? 'JSON' : 'Avro'}: ${result.records.toLocaleString('en-US')} records, ${(result.recordBytes / 2 ** 20).toFixed(1)} MiB of key + value + header bytes, ${partitions} partitions`);
    lines.push('');
    lines.push('| | CPU s/GiB | peak RSS | full scan | group-by | one hour | key range |');
    lines.push('| --- | --- | --- | --- | --- | --- | --- |');
    for (const system of systems) {
      const ingest = result.ingest[system];
      const queried = result.queries[system] !== undefined;
      if (ingest.note && ingest.cpuSPerGiB === undefined && !queried) {
        lines.push(`| ${systemLabel[system]} | ${ingest.note} | | | | | |`);
        continue;
      }
      const ratio = (value: number | undefined, base: number | undefined) => (value !== undefined && base ? ` (×${(value / base).toFixed(value / base < 10 ? 2 : 0)})` : '');
      const cells = ingest.cpuSPerGiB === undefined
        ? [ingest.note ?? '–', '–']
        : [`${ingest.cpuSPerGiB.toFixed(1)}${ratio(ingest.cpuSPerGiB, copy.cpuSPerGiB)}`, `${ingest.rssMiB!.toFixed(0)} MiB${ratio(ingest.rssMiB, copy.rssMiB)}`];
      for (const name of queryNames) {
        const answer = result.queries[system]?.[name];
        if (!answer) cells.push(system === 'kcat' || system === 'confluentKafka' ? '–' : 'not run');
        else if (answer.seconds === undefined) cells.push(answer.note ?? 'failed');
        else cells.push(`${answer.correct === false ? 'WRONG ' : ''}${answer.seconds.toFixed(2)} s${answer.note ? '†' : ''}${ratio(answer.seconds, copyQueries?.[name]?.seconds)}`);
      }
      lines.push(`| ${systemLabel[system]} | ${cells.join(' | ')} |`);
    }
    lines.push('');
    if (queryNames.some((name) => result.queries.offsetlake?.[name]?.note)) {
      lines.push("† as `offsetlake attach` prints it, this query failed: the reader login's idle_in_transaction_session_timeout (30s) closed DuckLake's catalog connection before its COMMIT; the figure is a second run with the timeout lifted for that session (`options=-cidle_in_transaction_session_timeout=0`).");
    }
    const serve = result.serveFullScan;
    if (serve) lines.push(`serve, full scan: ${(serve.kafkaBytes / 2 ** 20).toFixed(1)} MiB fetched from Kafka = ${serve.kafkaBytesPerRecordByte.toFixed(3)}× the topic's record bytes; ${(serve.bytesServed / 2 ** 20).toFixed(1)} MiB of Parquet served.`);
    if (result.catalogOnlyS !== undefined) lines.push(`The attach's floor: a query that every file's statistics prune (DuckLake's catalog step alone) took ${result.catalogOnlyS.toFixed(2)} s.`);
    lines.push(...coldFloors(result));
    const sizes = result.sizes;
    lines.push(`Parquet bytes: pyarrow copy ${mib(sizes.parquetCopyBytes)}, Iceberg data ${mib(sizes.icebergDataBytes)}, offsetlake files (never stored) ${mib(sizes.offsetlakeFileBytes)}. Produce: ${result.produceWallS.toFixed(0)} s.`);
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * CPU seconds per value byte of the encoder's compressor (the default compression's, the
 * tables' here: ZSTD since issue 47, LZ4 before) over the values of partition 0's first
 * 50 pages, laid out as a page of `_value` is (PLAIN: a 4-byte length before each value,
 * `pageRows` values a page), best of 3: what any rebuild of a JSON table's `_value`
 * chunks must spend, since the footer fixes their bytes.
 */
async function lz4SecondsPerValueByte(brokers: string, topic: string): Promise<number> {
  const kafka = connectKafka({ brokers, clientId: 'offsetlake-bench-peers' });
  const pages: Buffer[] = [];
  let valueBytes = 0;
  try {
    let page: Buffer[] = [];
    const until = await lastStableOffset(kafka, topic, 0);
    read: for await (const batch of readCommitted(kafka, topic, 0, 0n, until)) {
      for (const record of batch.records) {
        const value = record.value ?? new Uint8Array(0);
        const length = Buffer.alloc(4);
        length.writeUInt32LE(value.byteLength);
        page.push(length, Buffer.from(value));
        valueBytes += value.byteLength;
        if (page.length === 2 * ownWriterPageShape.pageRows) {
          pages.push(Buffer.concat(page));
          page = [];
          if (pages.length === 50) break read;
        }
      }
    }
    if (page.length > 0) pages.push(Buffer.concat(page));
  } finally {
    await kafka.close();
  }
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const started = process.cpuUsage();
    for (const page of pages) ownWriterSettings[defaultSettings.compression].compress(page);
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / 1e6);
  }
  return best / Math.max(1, valueBytes);
}

/**
 * What a new serve's full scan and group-by cost in CPU, against a floor no rebuild from
 * Kafka can go below on this machine: reading the topic as kcat does (the issue's floor,
 * with the broker's part), plus the work of the same query on a warm serve (DuckDB reading
 * the same Parquet through the attach, serve answering from its cache), spread over every
 * core, and for a JSON table (both queries read `_value`) compressing its pages with the
 * encoder's compressor, which the footer fixes.
 */
function coldFloors(result: WorkloadResult): string[] {
  const lines: string[] = [];
  const kcatRead = result.ingest.kcat;
  const cores = cpus().length;
  for (const [name, words, times] of [['fullScan', 'Full scan', 4], ['groupBy', 'Group-by', 3]] as const) {
    const cold = result.queries.offsetlake?.[name];
    const warm = result.queries.offsetlakeWarm?.[name];
    const copy = result.queries.pyarrowCopy?.[name]?.seconds;
    if (cold?.cpu === undefined || cold.seconds === undefined || warm?.cpu === undefined || copy === undefined || kcatRead.cpuS === undefined) continue;
    const lz4S = result.lz4SecondsPerValueByte === undefined ? undefined : result.lz4SecondsPerValueByte * result.valueBytes;
    const floorCpu = kcatRead.cpuS + (kcatRead.brokerCpuS ?? 0) + cpuTotal(warm.cpu) + (lz4S ?? 0);
    lines.push(`${words} CPU: a new serve ${cpuTotal(cold.cpu).toFixed(1)} s (${cpuWords(cold.cpu)}) in ${cold.seconds.toFixed(2)} s of wall. ` +
      `Its floor here: the topic read as kcat reads it (${kcatRead.cpuS.toFixed(1)} s${kcatRead.brokerCpuS === undefined ? '' : `, the broker ${kcatRead.brokerCpuS.toFixed(1)} s`}) ` +
      `and the same query on a warm serve (${cpuTotal(warm.cpu).toFixed(1)} s: ${cpuWords(warm.cpu)})` +
      `${lz4S === undefined ? '' : ` and ${defaultSettings.compression} of the \`_value\` pages (${lz4S.toFixed(1)} s)`} = ${floorCpu.toFixed(1)} CPU s, ` +
      `at least ${(floorCpu / cores).toFixed(2)} s of wall on ${cores} cores with nothing else running; ${times}× the copy's answer is ${(times * copy).toFixed(2)} s (compare the two on a quiet machine: other work slows the copy's answer, not this floor).`);
  }
  return lines;
}

function cpuTotal(cpu: QueryCpu): number {
  return cpu.duckdbS + (cpu.serveS ?? 0) + (cpu.brokerS ?? 0);
}

function cpuWords(cpu: QueryCpu): string {
  return [`DuckDB ${cpu.duckdbS.toFixed(2)}`, cpu.serveS === undefined ? '' : `serve ${cpu.serveS.toFixed(2)}`, cpu.brokerS === undefined ? '' : `broker ${cpu.brokerS.toFixed(2)}`]
    .filter(Boolean).join(', ');
}

function mib(bytes: number | undefined): string {
  return bytes ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : '–';
}

main().catch(async (error: unknown) => {
  console.error(error instanceof Error ? error.stack ?? error.message : String(error));
  endAll();
  await cleanUp().catch(() => {});
  if (scratch && !process.argv.includes('--keep')) rmSync(scratch, { recursive: true, force: true });
  process.exit(1);
});
