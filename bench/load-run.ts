/**
 * Load held (issue 17): `offsetlake run` (the real CLI, a child process with a --memory
 * budget) indexing a sustained production for a set time, then the table audited by what
 * we did not write (test/helpers/table-audit.ts: a read_committed confluent-kafka
 * consumer, and every file rebuilt from Kafka against the catalog's size, footer, sha256).
 *
 *   npm run load-run -- [--duration 10m] [--memory 512MiB] [--share 0.75]
 *        [--calibrate 30s] [--partitions 3] [--record-bytes 1024] [--sample 5s] [--rate MiB/s]
 *        [--brokers 3]
 *
 * On the local stack (`offsetlake stack up`; the OFFSETLAKE_*_PORT variables pick its ports).
 * `--brokers 3`: on a three-broker stack of its own (bench/chaos/stack.ts, replication
 * factor 3, min.insync.replicas 2), with a rolling restart in the middle of the held phase
 * (each broker in turn: controlled shutdown, start, every replica back in sync), as MSK
 * patches; the producer replaces a transactional producer whose transaction failed.
 * 1. Calibration: a table of its own, the producer as fast as it goes for --calibrate while
 *    a runner indexes; then the producer stops and the runner catches up. The rate the
 *    machine indexes while producing = offsets / (time to catch up − file_window), capped
 *    by the producer's own rate. (--rate skips it.)
 * 2. Held: a new table; the producer holds --share of that rate (transactions of ~1/10 s of
 *    records over every partition) for --duration while a new runner indexes. Every
 *    --sample: lag (LSO − indexed_end per partition, summed, from the catalog's status), the
 *    runner's RSS (/proc/<pid>/status VmRSS), records/s produced.
 * 3. The producer stops, the runner catches up and is stopped (SIGTERM), the table audited.
 * Figures are printed, never asserted; exit 1 when the audit finds a problem.
 * `--audit TABLE` only audits a table a run left (its producer stopped), up to each
 * partition's LSO now: for a run whose audit was interrupted (--keep-table keeps one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { parseBytes, parseDuration, resolveSettings } from '../src/table/settings.js';
import { partitionStatus } from '../src/table-topic/status.js';
import { dropTable } from '../src/catalog/tables.js';
import { type TableRecord } from '../src/table/record.js';
import { lastStableOffsets } from '../src/kafka/offsets.js';
import { readCommittedRange } from '../src/kafka/read.js';
import { transactionalProducer, type RecordToProduce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { openEngine } from '../src/runtime/engine.js';
import { parseBrokerCount } from '../src/stack/config.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { waitInSync } from './chaos/cluster-faults.js';
import { startChaosStack } from './chaos/stack.js';
import { sleep } from '../src/stack/process.js';
import { auditTable } from '../test/helpers/table-audit.js';
import { useProjectPython } from '../test/helpers/project-python.js';

// the audit's independent reader (confluent-kafka) is the project's pinned Python
useProjectPython();

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10m' },
    // 256 MiB is refused for 3 partitions: the process needs about 272 MiB before any range (src/local/memory-budget.ts).
    memory: { type: 'string', default: '512MiB' },
    share: { type: 'string', default: '0.75' },
    calibrate: { type: 'string', default: '30s' },
    partitions: { type: 'string', default: '3' },
    'record-bytes': { type: 'string', default: '1024' },
    sample: { type: 'string', default: '5s' },
    rate: { type: 'string' },
    'keep-table': { type: 'boolean' },
    audit: { type: 'string' },
    brokers: { type: 'string', default: '1' },
  },
});
const durationMs = parseDuration('--duration', values.duration);
const memoryBytes = parseBytes('--memory', values.memory);
const share = Number(values.share);
const calibrateMs = parseDuration('--calibrate', values.calibrate);
const partitions = Number(values.partitions);
const recordBytes = Number(values['record-bytes']);
const sampleMs = parseDuration('--sample', values.sample);
const MiB = 1024 * 1024;
/** Small enough that lag stays bounded by a few seconds of records, large enough for files of MiBs. */
const tableSettings = { file_window: '5s', file_bytes: '32MiB', granularity: 'hour' };
const fileWindowMs = 5000;

const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const cli = fileURLToPath(new URL('../bin/offsetlake.js', import.meta.url));

const brokers = parseBrokerCount('--brokers', values.brokers);
const cluster = brokers === 1 ? undefined : await startChaosStack(log, { brokers });
// The runner (a child process) and this process's engine reach the cluster's stack.
if (cluster) Object.assign(process.env, cluster.env);
useLocalStackDefaults();
const engine = await openEngine();

/** `offsetlake run` as a user starts it. */
class Runner {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  tail: string[] = [];
  /** Its first lines (what it said at start: the memory plan). */
  lines: string[] = [];
  /** Its progress lines (records/s, lag, memory). */
  progressLines: string[] = [];
  constructor() {
    this.child = spawn(process.execPath, [cli, 'run', '--memory', values.memory, '--progress-every', '10s'], { env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      const lines = chunk.toString().split('\n').filter(Boolean);
      this.tail = [...this.tail, ...lines].slice(-20);
      if (this.lines.length < 20) this.lines.push(...lines);
      this.progressLines.push(...lines.filter((line) => line.includes('records/s')));
    });
    this.exited = new Promise((done) => this.child.on('exit', (code) => done(code)));
  }
  /** Resident set in bytes (VmRSS), or its peak since the process began (VmHWM, the kernel's high-water mark), from /proc (undefined once it exited). */
  rss(field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | undefined {
    try {
      const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
      return match ? Number(match[1]) * 1024 : undefined;
    } catch {
      return undefined;
    }
  }
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Transactions of `batch` records spread over every partition, one after another, paced to
 * `recordsPerSecond` (Infinity: as fast as they commit). Each waits for its markers (the LSO
 * passes it), as our produce helper does.
 */
class Producer {
  sent = 0;
  /** Transactions that failed (--brokers 3, a broker restarting). */
  failed = 0;
  bytes = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly pad: string;
  constructor(private readonly topic: string, private readonly recordsPerSecond: number) {
    this.pad = 'x'.repeat(Math.max(0, recordBytes - 100));
  }
  start(): void {
    let producer = transactionalProducer(engine.kafka, `load-${this.topic}`, { compression: 'none' });
    const began = Date.now();
    const batch = Number.isFinite(this.recordsPerSecond) ? Math.max(partitions, Math.round(this.recordsPerSecond / 10)) : 1000;
    this.loop = (async () => {
      try {
        while (!this.stopping) {
          if (Number.isFinite(this.recordsPerSecond)) {
            const due = this.recordsPerSecond * ((Date.now() - began) / 1000);
            if (this.sent + batch > due) {
              await sleep(Math.min(100, ((this.sent + batch - due) / this.recordsPerSecond) * 1000));
              continue;
            }
          }
          const now = Date.now();
          const records: RecordToProduce[] = Array.from({ length: batch }, (_, i) => {
            const n = this.sent + i;
            return { partition: n % partitions, key: `customer-${n % 1000}`, value: `{"order":${n},"customer":${n % 1000},"total":${(n % 9973) / 100},"pad":"${this.pad}"}`, timestamp: now };
          });
          try {
            const tx = await producer.begin();
            await tx.send(this.topic, records);
            await tx.commit();
          } catch (error) {
            // A broker restarting (--brokers 3): its outcome is Kafka's (the next producer
            // fences and aborts it); the audit counts what was committed.
            if (!cluster) throw error;
            this.failed += 1;
            await producer.close().catch(() => {});
            producer = transactionalProducer(engine.kafka, `load-${this.topic}`, { compression: 'none' });
            await sleep(200);
            continue;
          }
          this.sent += batch;
          this.bytes += records.reduce((sum, r) => sum + (r.value as string).length + (r.key as string).length, 0);
        }
      } finally {
        await producer.close().catch(() => {});
      }
    })();
  }
  /** Stops after the transaction in flight; each partition's LSO (the end of what was written). */
  async stop(table: TableRecord): Promise<Map<number, bigint>> {
    this.stopping = true;
    await this.loop;
    const lsos = await lastStableOffsets(engine.kafka, Array.from({ length: partitions }, (_, partition) => ({ topic: table.topic, partition })));
    return new Map(lsos.map((lso, partition) => [partition, lso]));
  }
}

async function newTable(label: string): Promise<TableRecord> {
  const suffix = randomUUID().slice(0, 8);
  const topic = `load-${label}-${suffix}`;
  await createTopic(engine.kafka, topic, partitions);
  return createTableFromTopic(engine, { name: `load_${label}_${suffix}`, topic, format: 'json', settings: resolveSettings(tableSettings) });
}

async function indexedEnds(table: TableRecord): Promise<Map<number, bigint>> {
  const rows = await engine.catalog.query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId]);
  return new Map(rows.rows.map((r) => [r.partition_id, r.indexed_end]));
}

/**
 * Whether every committed record below `end` is indexed: indexed_end reached it, or only
 * offsets without a committed record (transaction markers) lie between. A range sealed
 * right after an event (by size or capacity) ends at the event's last record + 1; the
 * marker after it belongs to the next range, so it is only covered once more records
 * come, and status shows a lag of 1 meanwhile.
 */
async function recordsIndexed(table: TableRecord, partition: number, indexedEnd: bigint, end: bigint): Promise<boolean> {
  if (indexedEnd >= end) return true;
  if (end - indexedEnd > 16n) return false;
  return (await readCommittedRange(engine.kafka, table.topic, partition, indexedEnd, end)).records.length === 0;
}

async function caughtUp(table: TableRecord, producedEnd: ReadonlyMap<number, bigint>, runner: Runner, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ends = await indexedEnds(table);
    if ((await Promise.all([...producedEnd].map(([p, end]) => recordsIndexed(table, p, ends.get(p) ?? 0n, end)))).every(Boolean)) return Date.now();
    if (Date.now() > deadline || runner.child.exitCode !== null) throw new Error(`not caught up (indexed_end ${[...ends].map(([p, e]) => `${p}:${e}`).join(' ')}, produced to ${[...producedEnd].map(([p, e]) => `${p}:${e}`).join(' ')}); the runner said:\n${runner.tail.join('\n')}`);
    await sleep(200);
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

async function calibrate(): Promise<number> {
  const table = await newTable('calibrate');
  const runner = new Runner();
  const producer = new Producer(table.topic, Infinity);
  await sleep(3000); // the runner starts and takes its leases
  const began = Date.now();
  producer.start();
  await sleep(calibrateMs);
  const produced = producer.sent;
  const producedEnd = await producer.stop(table);
  const producedMs = Date.now() - began;
  const doneAt = await caughtUp(table, producedEnd, runner, 600_000);
  await runner.stop();
  await dropTable(engine.catalog, table.name).catch(() => {});
  const produceRate = produced / (producedMs / 1000);
  const indexRate = produced / (Math.max(producedMs, doneAt - began - fileWindowMs) / 1000);
  log(`calibration: produced ${produced} records in ${(producedMs / 1000).toFixed(1)} s (${produceRate.toFixed(0)} records/s, ${((produceRate * recordBytes) / MiB).toFixed(1)} MiB/s); caught up ${((doneAt - began) / 1000).toFixed(1)} s after the start: indexing while producing ≈ ${indexRate.toFixed(0)} records/s (${((indexRate * recordBytes) / MiB).toFixed(1)} MiB/s)`);
  return Math.min(produceRate, indexRate);
}

let failed = false;
if (values.audit) {
  try {
    const { findTable } = await import('../src/catalog/tables.js');
    const table = await findTable(engine.catalog, values.audit);
    const parts = (await partitionStatus(engine, table.name)).map((s) => s.partition);
    const lsos = await lastStableOffsets(engine.kafka, parts.map((partition) => ({ topic: table.topic, partition })));
    const began = Date.now();
    const audit = await auditTable(engine, table, new Map(parts.map((p, i) => [p, lsos[i]!])), { keepRows: false, readerTimeoutMs: 1_800_000 });
    log(`audit took ${((Date.now() - began) / 1000).toFixed(0)} s`);
    process.stdout.write([['committed (independent reader)', audit.committed], ['indexed', audit.indexed], ['lost', audit.lost], ['duplicated', audit.duplicated], ['files rebuilt', `${audit.filesRebuilt}/${audit.files.length}`]].map(([k, v]) => `| ${k} | ${v} |`).join('\n') + '\n');
    for (const problem of audit.problems) log(`problem: ${problem}`);
    failed = audit.problems.length > 0;
  } finally {
    await engine.close();
  }
  process.exit(failed ? 1 : 0);
}
try {
  const capacity = values.rate ? (Number(values.rate) * MiB) / recordBytes : await calibrate();
  const rate = values.rate ? capacity : capacity * share;
  log(`holding ${rate.toFixed(0)} records/s (${((rate * recordBytes) / MiB).toFixed(2)} MiB/s${values.rate ? ', --rate' : `, ${share} of ${capacity.toFixed(0)}`}) for ${(durationMs / 1000).toFixed(0)} s; run --memory ${values.memory}`);
  const table = await newTable('held');
  const runner = new Runner();
  await sleep(3000);
  const idleRss = runner.rss() ?? 0;
  const producer = new Producer(table.topic, rate);
  const began = Date.now();
  producer.start();
  // --brokers 3: every broker restarted in turn, from the middle of the held phase on.
  let restarted = '';
  const rolling = cluster
    ? (async () => {
        await sleep(durationMs / 2);
        const from = Date.now();
        for (const broker of cluster.brokers) {
          log(`rolling restart: broker ${broker.nodeId}`);
          await cluster.stopBroker(broker.nodeId);
          await cluster.startBrokers();
          await waitInSync(cluster, table.topic);
        }
        restarted = `${cluster.brokers.length} brokers in ${((Date.now() - from) / 1000).toFixed(0)} s, from t=${((from - began) / 1000).toFixed(0)}s`;
      })()
    : undefined;
  rolling?.catch(() => {});
  const samples: { t: number; lag: number; rss: number; open: number; sent: number }[] = [];
  let lastSent = 0;
  while (Date.now() - began < durationMs) {
    await sleep(Math.min(sampleMs, durationMs - (Date.now() - began)));
    const status = await partitionStatus(engine, table.name).catch(() => []);
    const lag = status.reduce((sum, s) => sum + Number(s.lag ?? 0n), 0);
    // What --memory bounds: the bytes of the open ranges, as the runner reports them.
    const open = status.reduce((sum, s) => sum + Number(s.openRangeBytes), 0);
    const rss = runner.rss() ?? 0;
    const t = (Date.now() - began) / 1000;
    const sample = { t, lag, rss, open, sent: producer.sent };
    const prev = samples.at(-1);
    samples.push(sample);
    const perSecond = (producer.sent - lastSent) / (prev ? t - prev.t : t);
    lastSent = producer.sent;
    log(`t=${t.toFixed(0)}s produced ${producer.sent} (${perSecond.toFixed(0)} records/s), lag ${lag} offsets, open ranges ${(open / MiB).toFixed(0)} MiB, run RSS ${(rss / MiB).toFixed(0)} MiB`);
    if (runner.child.exitCode !== null) throw new Error(`the runner exited (${runner.child.exitCode}):\n${runner.tail.join('\n')}`);
  }
  await rolling;
  const heldMs = Date.now() - began;
  const producedEnd = await producer.stop(table);
  const stopAt = Date.now();
  const doneAt = await caughtUp(table, producedEnd, runner, 600_000);
  // The peak between samples too: the kernel's high-water mark of the runner's resident set.
  const rssPeak = runner.rss('VmHWM') ?? 0;
  const plan = runner.lines.find((line) => line.startsWith('memory ')) ?? '(the runner said no memory plan)';
  // The runner's own account of its memory, on its progress lines: the largest of each part.
  const parts = { heap: 0, used: 0, buffers: 0 };
  for (const line of runner.progressLines) {
    const m = /JS heap (\d+) MiB, (\d+) MiB used; Buffers (\d+) MiB/.exec(line);
    if (m) ({ heap: parts.heap, used: parts.used, buffers: parts.buffers } = { heap: Math.max(parts.heap, +m[1]!), used: Math.max(parts.used, +m[2]!), buffers: Math.max(parts.buffers, +m[3]!) });
  }
  const seals = (await engine.catalog.query<{ seal_reason: string; n: number }>('SELECT seal_reason, count(DISTINCT start_offset)::int AS n FROM offsetlake.data_file WHERE table_id = $1 GROUP BY seal_reason ORDER BY seal_reason', [table.tableId])).rows;
  const exit = await runner.stop();
  log(`caught up ${((doneAt - stopAt) / 1000).toFixed(1)} s after the producer stopped; run exited ${exit}; auditing…`);
  const auditBegan = Date.now();
  const audit = await auditTable(engine, table, producedEnd, { keepRows: false, readerTimeoutMs: 1_800_000 });
  log(`audit took ${((Date.now() - auditBegan) / 1000).toFixed(0)} s`);

  const lags = samples.map((s) => s.lag).sort((a, b) => a - b);
  const rssMax = Math.max(...samples.map((s) => s.rss));
  const openMax = Math.max(...samples.map((s) => s.open));
  const rssSorted = samples.map((s) => s.rss).sort((a, b) => a - b);
  const mibs = producer.bytes / MiB / (heldMs / 1000);
  const offsetsPerRecord = 1 + 1 / Math.max(1, Math.round(rate / 10 / partitions)); // a marker per transaction and partition
  const lagSeconds = (offsets: number) => offsets / offsetsPerRecord / rate;
  const report = [
    ['held', `${(heldMs / 1000).toFixed(0)} s`],
    ...(cluster ? [['brokers; rolling restart', `3; ${restarted}; producer transactions failed ${producer.failed}`]] : []),
    ['records produced (sent)', String(producer.sent)],
    ['MiB/s held (key + value)', mibs.toFixed(2)],
    ['records/s held', (producer.sent / (heldMs / 1000)).toFixed(0)],
    ['lag p50 / max (offsets behind the LSO, all partitions)', `${quantile(lags, 0.5)} / ${lags.at(-1) ?? 0} (≈ ${lagSeconds(quantile(lags, 0.5)).toFixed(1)} s / ${lagSeconds(lags.at(-1) ?? 0).toFixed(1)} s of production; file_window ${tableSettings.file_window})`],
    ['the runner\'s split of --memory', plan],
    ['runner\'s own account, max of its 10 s progress lines', `JS heap ${parts.heap} MiB (${parts.used} MiB used), Buffers ${parts.buffers} MiB`],
    ['open ranges max (sampled, as reported to the catalog)', `${(openMax / MiB).toFixed(0)} MiB`],
    ['ranges by seal reason (per partition and range)', seals.map((r) => `${r.seal_reason} ${r.n}`).join(', ')],
    ['run RSS p50 / last sample', `${(quantile(rssSorted, 0.5) / MiB).toFixed(0)} MiB / ${((samples.at(-1)?.rss ?? 0) / MiB).toFixed(0)} MiB`],
    ['run RSS peak (VmHWM) / max of samples vs --memory', `${(rssPeak / MiB).toFixed(0)} MiB / ${(rssMax / MiB).toFixed(0)} MiB vs ${(memoryBytes / MiB).toFixed(0)} MiB (idle before production: ${(idleRss / MiB).toFixed(0)} MiB)`],
    ['caught up after the producer stopped', `${((doneAt - stopAt) / 1000).toFixed(1)} s`],
    ['committed (independent reader)', String(audit.committed)],
    ['indexed', String(audit.indexed)],
    ['lost', String(audit.lost)],
    ['duplicated', String(audit.duplicated)],
    ['files rebuilt', `${audit.filesRebuilt}/${audit.files.length}`],
  ];
  process.stdout.write(report.map(([k, v]) => `| ${k} | ${v} |`).join('\n') + '\n');
  for (const problem of audit.problems) log(`problem: ${problem}`);
  // A failed transaction's outcome is Kafka's (usually aborted): with failures, the independent reader is the count.
  const sentMatters = producer.failed === 0;
  failed = audit.problems.length > 0 || (sentMatters && audit.committed !== producer.sent);
  if (sentMatters && audit.committed !== producer.sent) log(`problem: the producer committed ${producer.sent} records, the independent reader found ${audit.committed}`);
  if (!values['keep-table']) await dropTable(engine.catalog, table.name).catch(() => {});
  else log(`table kept: ${table.name}`);
} finally {
  await engine.close();
  await cluster?.down();
}
process.exit(failed ? 1 : 0);
