/**
 * CPU seconds per GiB of `offsetlake run --once`, the CLI as a user runs it, for builds
 * side by side on the same topic (issue 27: the emulator no longer reads every record
 * twice nor turns it into base64).
 *
 *   node --import tsx bench/run-once-cpu.ts [--mb 200] [--rounds 2] [--builds /path/old,/path/new] [--topic NAME] [--format json|avro] [--cpu-prof DIR] [--run-args '--build-threads 1'] [--node-args '--trace-gc']
 *
 * Needs the local stack (`offsetlake stack up`; the `OFFSETLAKE_*_PORT` variables move it).
 * A topic of 3 partitions is filled once (reused when it already holds the records) with
 * JSON records of ~575 bytes (key + value + one header): strings, numbers, a nested
 * object, 512 KiB producer batches, uncompressed. Each run gets a fresh catalog database
 * with one table over the whole topic (`file_window` 1h: ranges sealed by size and
 * capacity only), then `run --once` of one build in a child process under
 * /usr/bin/time (user + sys + max RSS of the child), while the Kafka broker's CPU is
 * read from /proc/PID/stat (utime + stime) before and after. Builds alternate
 * (A B B A A B …) so that drift in the machine's load falls on both.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openEngine } from '../src/runtime/engine.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic, topicPartitions } from '../src/kafka/topics.js';
import { lastStableOffset } from '../src/kafka/offsets.js';
import { readCommitted } from '../src/kafka/read.js';
import { recordBytes as recordBytesOf } from '../src/kafka/record.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { resolveSettings } from '../src/table/settings.js';
import { stackConfig } from '../src/stack/config.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { processCpuSeconds } from './process-cpu.js';
import { runningPid } from '../src/stack/process.js';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '2' },
    builds: { type: 'string', default: `${resolve('.')}` },
    topic: { type: 'string' },
    // each run's V8 CPU profile goes to DIR (its figures then include the profiler's cost)
    'cpu-prof': { type: 'string' },
    'node-args': { type: 'string' },
    // more flags of `run --once`, the same for every build
    'run-args': { type: 'string' },
    // the table's format over an existing topic (`--topic`), e.g. bench:peers' Avro one kept with --keep
    format: { type: 'string', default: 'json' },
  },
});
const targetBytes = Number(values.mb) * 1e6;
const builds = values.builds!.split(',').map((path) => resolve(path));
const rounds = Number(values.rounds);
const partitions = 3;
const GiB = 1024 ** 3;

useLocalStackDefaults();
const engine = await openEngine();
const config = stackConfig();
const kafkaPid = runningPid(config.paths, 'kafka');
if (kafkaPid === undefined) throw new Error(`no broker of the local stack runs (${config.paths.run}/kafka.pid): start it with \`offsetlake stack up\``);
const brokerCpuSeconds = (): number => processCpuSeconds(kafkaPid);

/** One record of ~575 bytes: key ~10, value ~545, header ~20. */
function record(n: number, t0: number) {
  const value = {
    id: n,
    user: `user-${n % 5000}`,
    event: ['view', 'click', 'purchase', 'scroll'][n % 4],
    amount: Math.round((n * 7919) % 100000) / 100,
    ratio: (n % 997) / 997,
    ok: n % 3 !== 0,
    page: { path: `/products/${n % 1000}/details`, referrer: n % 2 ? 'https://example.com/search?q=shoes' : null, depth: n % 7 },
    device: { os: ['linux', 'macos', 'windows', 'android', 'ios'][n % 5], version: `${n % 17}.${n % 9}.${n % 5}`, screen: { w: 1920 - (n % 640), h: 1080 - (n % 360) } },
    tags: [`t${n % 11}`, `t${n % 13}`, `t${n % 17}`],
    note: 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua '.repeat(3).slice(0, 246 + (n % 40)),
  };
  return { key: `user-${n % 5000}`, value: JSON.stringify(value), headers: [['source', `bench-${n % 3}`]] as [string, string][], partition: n % partitions, timestamp: t0 + Math.floor(n / 100) };
}

const topic = values.topic ?? `bench-run-cpu-${values.mb}mb`;
let records = 0;
let recordBytes = 0;
{
  const sample = record(0, 0);
  const perRecord = sample.key.length + Buffer.byteLength(sample.value) + 'source'.length + sample.headers[0]![1].length;
  const known = await topicPartitions(engine.kafka, topic).catch(() => undefined);
  if (!known) await createTopic(engine.kafka, topic, partitions);
  let end = 0n;
  for (let p = 0; p < partitions; p++) end += await lastStableOffset(engine.kafka, topic, p);
  const wanted = Math.ceil(targetBytes / perRecord);
  if (end === 0n) {
    process.stderr.write(`filling ${topic} with ${wanted} records of ~${perRecord} B…\n`);
    const t0 = Date.UTC(2026, 11, 1, 8, 0, 0);
    for (let sent = 0; sent < wanted; sent += 20_000) {
      await produce(engine.kafka, topic, Array.from({ length: Math.min(20_000, wanted - sent) }, (_, i) => record(sent + i, t0)));
    }
    end = BigInt(wanted);
  }
  records = Number(end);
  if (values.topic === undefined) {
    for (let n = 0; n < records; n++) {
      const r = record(n, 0);
      recordBytes += r.key.length + Buffer.byteLength(r.value) + 'source'.length + r.headers[0]![1].length;
    }
  } else {
    // another's topic (bench:peers' --keep): its own records' bytes, read once
    for (let p = 0; p < partitions; p++) {
      for await (const batch of readCommitted(engine.kafka, topic, p, 0n, await lastStableOffset(engine.kafka, topic, p))) {
        for (const r of batch.records) recordBytes += recordBytesOf(r);
      }
    }
  }
  process.stderr.write(`${topic}: ${records} records, ${(recordBytes / 1e6).toFixed(1)} MB of key + value + header bytes (${(recordBytes / records).toFixed(0)} B each)\n`);
}

const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
await admin.connect();

interface RunResult { build: string; cpu: number; user: number; sys: number; rssMiB: number; wall: number; broker: number; events: number; summaryRecords: number; files: number }

async function runOnce(build: string): Promise<RunResult> {
  const name = `runcpu_${randomUUID().slice(0, 8)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  const own = await openEngine({ databaseUrl: url.toString() });
  try {
    const table = await createTableFromTopic(own, { name: 'bench', topic, format: values.format as 'json' | 'avro', settings: resolveSettings({ file_window: '1h' }) });
    // Tables start at the LSO; this one indexes the whole topic.
    await own.catalog.query('UPDATE offsetlake.lake_partition SET indexed_start = 0, indexed_end = 0 WHERE table_id = $1', [table.tableId]);
    const brokerBefore = brokerCpuSeconds();
    const child = spawn('/usr/bin/time', ['-f', 'TIME %U %S %M %e', process.execPath, ...(values['node-args']?.split(/\s+/).filter(Boolean) ?? []), ...(values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', resolve(values['cpu-prof'])] : []), join(build, 'bin/offsetlake.js'), 'run', '--once', '--json', ...(values['run-args']?.split(/\s+/).filter(Boolean) ?? [])], {
      cwd: build,
      env: { ...process.env, DATABASE_URL: url.toString() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    const broker = brokerCpuSeconds() - brokerBefore;
    if (code !== 0) throw new Error(`run --once of ${build} exited ${code}: ${stderr}`);
    const [user, sys, rssKiB, wall] = stderr.match(/TIME (\S+) (\S+) (\S+) (\S+)/)!.slice(1).map(Number) as [number, number, number, number];
    // --node-args such as --trace-gc write lines of their own beside the summary
    const lines = stdout.split('\n');
    const traced = (line: string): boolean => /^\[\d+:0x/.test(line) || line.startsWith('[IncrementalMarking]') || line.startsWith('pause=');
    const summary = JSON.parse(lines.filter((line) => !traced(line)).join('\n')) as { events: number; records: number; filesCommitted: number };
    const gc = gcSummary(lines.filter(traced));
    if (gc) process.stderr.write(`  ${build}: ${gc}\n`);
    // --trace-incremental-marking: when each marking started, and why (V8's reason and its limits then)
    for (const line of lines.filter((l) => l.includes('[IncrementalMarking] Start ('))) process.stderr.write(`    ${line}\n`);
    const rows = await own.catalog.query<{ rows: bigint | null }>('SELECT sum(record_count) AS rows FROM offsetlake.data_file WHERE table_id = $1', [table.tableId]);
    if (Number(rows.rows[0]!.rows) !== records) throw new Error(`${build}: ${rows.rows[0]!.rows} rows indexed, ${records} in the topic`);
    return { build, cpu: user + sys, user, sys, rssMiB: rssKiB / 1024, wall, broker, events: summary.events, summaryRecords: summary.records, files: summary.filesCommitted };
  } finally {
    await own.close();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  }
}

const order: string[] = [];
for (let r = 0; r < rounds; r++) order.push(...(r % 2 === 0 ? builds : [...builds].reverse()));
const results: RunResult[] = [];
try {
  for (const build of order) {
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    const result = await runOnce(build);
    results.push(result);
    const gib = recordBytes / GiB;
    process.stdout.write(
      `${build}: ${(result.cpu / gib).toFixed(1)} CPU s/GiB (user ${result.user.toFixed(1)} + sys ${result.sys.toFixed(1)} s), ` +
        `broker ${(result.broker / gib).toFixed(1)} CPU s/GiB (${result.broker.toFixed(1)} s), wall ${result.wall.toFixed(1)} s, max RSS ${result.rssMiB.toFixed(0)} MiB, ` +
        `${result.events} events, summary records ${result.summaryRecords}, ${result.files} files; load before ${load}\n`,
    );
  }
} finally {
  await admin.end();
  await engine.close();
}
process.stdout.write(`${JSON.stringify({ topic, records, recordBytes, results })}\n`);

/** What --trace-gc (and --trace-gc-nvp) lines of a run say, in one line; undefined without them. */
function gcSummary(lines: readonly string[]): string | undefined {
  if (lines.length === 0) return undefined;
  const compacts = lines.filter((line) => line.includes('Mark-Compact'));
  const compactMs = compacts.reduce((ms, line) => ms + Number(/, ([\d.]+) \/ [\d.]+ ms/.exec(line)?.[1] ?? 0), 0);
  const nvp = (key: string) => lines.reduce((n, line) => n + Number(new RegExp(`\\b${key}=(\\d+)`).exec(line)?.[1] ?? 0), 0);
  const promoted = nvp('promoted');
  return `GC: ${lines.filter((line) => line.includes('Scavenge')).length} scavenges, ${compacts.length} mark-compacts (${compactMs.toFixed(0)} ms on the main thread)${promoted > 0 ? `, ${(promoted / 1e6).toFixed(1)} MB promoted` : ''}`;
}
