/**
 * The freshness probe (issue 49): `offsetlake run` and `offsetlake serve` up as a user starts
 * them, records produced one by one at a steady rate, and the time from each record's
 * produce acknowledgement (acks=all: it is committed) until each face returns it:
 *
 *   ducklake   DuckDB over the DuckLake attach (one session kept attached)
 *   iceberg    DuckDB's iceberg extension over serve's REST catalog (one ATTACH kept)
 *   pyiceberg  pyiceberg: LoadTable and a scan on every poll
 *   query      `query` (runQuery in this process, a fresh read service each time, as the
 *              command makes one)
 *
 * The engines poll in bench/freshness_probe.py; a record is visible to a face at the end
 * of the first poll whose answer holds its offset (an upper bound: the poll may have seen
 * it sooner). Each poll is also a read of fresh data, so its duration is a read latency;
 * polls that overlapped a file commit (a `data_file.created_at` inside the poll) are told
 * apart, to see whether reads stall while ranges seal.
 *
 * Used by bench/freshness.ts (the figures) and test/integration/freshness.test.ts (every
 * record becomes visible through every face; no timed assertion).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { libpqConnectionString } from '../src/cli/attach.js';
import type { Engine } from '../src/runtime/engine.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { runQuery } from '../src/query/run.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { sleep } from '../src/stack/process.js';
import { startServe, type ServeProcess } from './serve-process.js';

export type Face = 'ducklake' | 'iceberg' | 'pyiceberg' | 'query';
export const allFaces: readonly Face[] = ['ducklake', 'iceberg', 'pyiceberg', 'query'];

export interface ProbeOptions {
  engine: Engine;
  /** The catalog as a read-only login sees it (the DuckLake attach's). */
  readerDatabaseUrl: string;
  /** Records produced, one per produce call, round robin over the partitions. */
  records: number;
  /** Records a second over all partitions. */
  rate: number;
  partitions: number;
  /** Table settings by their specification names; none: the defaults. */
  settings?: Record<string, string>;
  /** More flags for `offsetlake serve` and `offsetlake run`. */
  serveArgs?: string[];
  runArgs?: string[];
  faces?: readonly Face[];
  /** Pause between two polls of one face (ms). */
  pauseMs?: number;
  /** How long after the last record each face may take to return every record (ms). */
  waitMs?: number;
  log?: (line: string) => void;
}

export interface FaceFigures {
  face: Face;
  /** Records the face returned before the probe gave up. */
  seen: number;
  /** Per record produced: ms from its acknowledgement to the end of the poll that first returned it (undefined: never). */
  visibleMs: (number | undefined)[];
  /** The same to that poll's start (0 when it started before the acknowledgement): a lower bound, where visibleMs is an upper one. */
  visibleFromStartMs: (number | undefined)[];
  /** Durations of every poll (ms), and of the polls during which a file was committed. */
  pollMs: number[];
  pollDuringCommitMs: number[];
  error?: string;
}

export interface ProbeResult {
  table: string;
  produced: { partition: number; offset: bigint; ackedAt: number }[];
  faces: FaceFigures[];
  /** Files committed while the probe ran. */
  files: number;
  /** CPU seconds (user + system) of the `run` and `serve` processes over the probe. */
  cpuSeconds: { run: number; serve: number };
}

interface Poll {
  face: Face;
  startedAt: number;
  endedAt: number;
  max: Record<string, number>;
}

const cli = fileURLToPath(new URL('../bin/offsetlake.js', import.meta.url));
const engineScript = fileURLToPath(new URL('./freshness_probe.py', import.meta.url));
const s3Keys = { id: 'freshness-probe', secret: 'freshness/probe+key' };

export const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
};

/** User + system CPU seconds of a live process, from /proc (Linux; 0 elsewhere). */
function cpuSecondsOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

/** `offsetlake run` as a user starts it, with the probe's catalog. */
function startRun(env: NodeJS.ProcessEnv, args: string[]): { child: ChildProcess; stderr: () => string; stop: () => Promise<void> } {
  const child = spawn(process.execPath, [cli, 'run', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The engines' polls (bench/freshness_probe.py), started and ready. */
async function startEngines(job: unknown, onPoll: (poll: Poll) => void, onError: (face: string, error: string) => void): Promise<{ stop: () => Promise<void> }> {
  const child = spawn('python3', [engineScript], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let ready: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const said = JSON.parse(line) as { ready?: true; face?: string; error?: string } & Poll;
    if (said.ready) ready();
    else if (said.error !== undefined) onError(said.face!, said.error);
    else onPoll(said);
  });
  child.stdin.write(`${JSON.stringify(job)}\n`);
  await Promise.race([isReady, exited.then(() => {
    throw new Error(`bench/freshness_probe.py exited before its faces were ready: ${stderr.slice(-3000)}`);
  })]);
  return {
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function probeFreshness(options: ProbeOptions): Promise<ProbeResult> {
  const { engine, partitions } = options;
  const faces = options.faces ?? allFaces;
  const log = options.log ?? (() => {});
  const suffix = Math.random().toString(36).slice(2, 8);
  const topic = `freshness-${suffix}`;
  await createTopic(engine.kafka, topic, partitions);
  const table = await createTableFromTopic(engine, { name: `freshness_${suffix}`, topic, format: 'json', settings: resolveSettings(options.settings ?? {}) });
  const env = { ...process.env, DATABASE_URL: engine.config.databaseUrl };
  const token = 'freshness-probe-token';
  const polls: Poll[] = [];
  const errors = new Map<string, string>();
  const started: { stop: () => Promise<void> }[] = [];
  let serve: ServeProcess | undefined;
  let run: ReturnType<typeof startRun> | undefined;
  let stopQuery = false;
  let queryLoop: Promise<void> | undefined;
  const began = new Date();
  try {
    run = startRun(env, options.runArgs ?? []);
    started.push(run);
    serve = await startServe({
      port: 0, token: true, env: { ...env, OFFSETLAKE_TOKEN: token, OFFSETLAKE_S3_ACCESS_KEY_ID: s3Keys.id, OFFSETLAKE_S3_SECRET_ACCESS_KEY: s3Keys.secret }, args: options.serveArgs ?? [],
    });
    started.push(serve);
    const serveUrl = `http://127.0.0.1:${serve.port}`;
    const pythonFaces = faces.filter((face) => face !== 'query');
    if (pythonFaces.length > 0) {
      const job = { libpq: libpqConnectionString(options.readerDatabaseUrl), serveUrl, catalogUri: `${serveUrl}/iceberg`, token, table: table.name, partitions, faces: pythonFaces, pauseMs: options.pauseMs ?? 200 };
      started.push(await startEngines(job, (poll) => polls.push(poll), (face, error) => errors.set(face, error)));
    }
    if (faces.includes('query')) {
      const seen = new Map<number, number>(Array.from({ length: partitions }, (_, p) => [p, -1]));
      queryLoop = (async () => {
        while (!stopQuery) {
          const startedAt = Date.now();
          const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 16 * 1024 * 1024 });
          try {
            const from = Math.min(...seen.values()) + 1;
            const result = await runQuery({ catalog: engine.catalog, source: kafkaSource(engine.kafka), service }, `SELECT _partition AS p, max(_offset) AS o FROM ${table.name} WHERE _offset >= ${from} GROUP BY 1`);
            for (const row of result.rows) seen.set(Number(row.p), Math.max(seen.get(Number(row.p)) ?? -1, Number(row.o)));
          } catch (error) {
            errors.set('query', (error as Error).message);
            return;
          } finally {
            await service.close();
          }
          polls.push({ face: 'query', startedAt, endedAt: Date.now(), max: Object.fromEntries([...seen].map(([p, o]) => [String(p), o])) });
          await sleep(options.pauseMs ?? 200);
        }
      })();
    }
    log(`${table.name}: run and serve up, ${faces.join(', ')} polling; producing ${options.records} records at ${options.rate}/s over ${partitions} partitions`);

    const produced: ProbeResult['produced'] = [];
    const t0 = Date.now();
    for (let i = 0; i < options.records; i += 1) {
      const due = t0 + (i * 1000) / options.rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const partition = i % partitions;
      const [written] = await produce(engine.kafka, topic, [{ partition, key: `k${i}`, value: JSON.stringify({ n: i, at: Date.now() }) }]);
      produced.push({ partition, offset: written!.firstOffset, ackedAt: Date.now() });
    }
    log(`produced ${produced.length} records in ${((Date.now() - t0) / 1000).toFixed(1)} s; waiting for every face to return each`);

    const lastOffsets = new Map<number, bigint>();
    for (const record of produced) lastOffsets.set(record.partition, record.offset);
    const seenAll = (face: Face) => polls.some((poll) => poll.face === face && [...lastOffsets].every(([p, o]) => BigInt(poll.max[String(p)] ?? -1) >= o));
    const deadline = Date.now() + (options.waitMs ?? 180_000);
    while (Date.now() < deadline && !faces.every((face) => seenAll(face) || errors.has(face))) await sleep(250);
    if (run.child.exitCode !== null) throw new Error(`offsetlake run exited (${run.child.exitCode}): ${run.stderr()}`);

    const commits = (await engine.catalog.query<{ created_at: Date }>('SELECT created_at FROM offsetlake.data_file WHERE table_id = $1 AND created_at >= $2', [table.tableId, began])).rows.map((row) => row.created_at.getTime());
    const figures = faces.map((face): FaceFigures => {
      const own = polls.filter((poll) => poll.face === face).sort((a, b) => a.endedAt - b.endedAt);
      const firstPolls = produced.map((record) => own.find((poll) => BigInt(poll.max[String(record.partition)] ?? -1) >= record.offset));
      const visibleMs = firstPolls.map((first, i) => (first === undefined ? undefined : Math.max(0, first.endedAt - produced[i]!.ackedAt)));
      const visibleFromStartMs = firstPolls.map((first, i) => (first === undefined ? undefined : Math.max(0, first.startedAt - produced[i]!.ackedAt)));
      const during = own.filter((poll) => commits.some((at) => at >= poll.startedAt && at <= poll.endedAt));
      return {
        face, seen: visibleMs.filter((ms) => ms !== undefined).length, visibleMs, visibleFromStartMs,
        pollMs: own.map((poll) => poll.endedAt - poll.startedAt), pollDuringCommitMs: during.map((poll) => poll.endedAt - poll.startedAt),
        ...(errors.has(face) ? { error: errors.get(face)! } : {}),
      };
    });
    return { table: table.name, produced, faces: figures, files: commits.length, cpuSeconds: { run: cpuSecondsOf(run.child.pid), serve: cpuSecondsOf(serve.child.pid) } };
  } finally {
    stopQuery = true;
    await queryLoop;
    for (const process of started.reverse()) await process.stop();
  }
}
