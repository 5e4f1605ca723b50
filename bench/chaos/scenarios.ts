/**
 * Named fault scenarios against a real stack of their own (bench/chaos/stack.ts). Each
 * one: a fresh topic of three partitions and a table over it, the seeded transactional
 * producer (bench/chaos/producer.ts) writing while `offsetlake run` child processes index
 * and faults are injected at seeded moments; then the producer stops, the indexers catch
 * up, and the table is audited against an independent read_committed reader and a
 * rebuild of every file (test/helpers/table-audit.ts). Figures are reported, never
 * asserted; the invariants are what a scenario is judged by.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { resolveSettings, type TableFormat } from '../../src/table/settings.js';
import { dropTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { createTopic, deleteRecords, topicPartitions } from '../../src/kafka/topics.js';
import { lastStableOffset, lastStableOffsets } from '../../src/kafka/offsets.js';
import { commitFaultPoints } from '../../src/common/faults.js';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { sleep } from '../../src/stack/process.js';
import { seededRandom } from '../../test/helpers/random.js';
import { registerSchema } from '../../test/helpers/registry.js';
import { auditTable } from '../../test/helpers/table-audit.js';
import { leaderOf, moveLeaders, partitionStates, waitForPartitions, waitInSync } from './cluster-faults.js';
import { IndexerProcess } from './indexer-process.js';
import { ChaosProducer, type ProducerCounts } from './producer.js';
import { startServeReads, type ServeReadCounts, type ServeReads } from './serve-reads.js';
import type { ChaosStack } from './stack.js';

const partitions = 3;
const handlerProcess = fileURLToPath(new URL('./handler-process.ts', import.meta.url));
const cli = fileURLToPath(new URL('../../bin/offsetlake.js', import.meta.url));
const skewedClock = fileURLToPath(new URL('./skewed-clock.mjs', import.meta.url));

/**
 * Small files and short windows, so a short run still seals many ranges by every
 * trigger; `lease_ttl` 3 s, so a killed runner's partitions are taken over within the
 * scenario (the default 30 s would be most of any recovery time).
 */
const tableSettings = { file_window: '1s', file_bytes: '64KiB', granularity: 'minute', lease_ttl: '3s' };

export interface ScenarioContext {
  stack: ChaosStack;
  random: () => number;
  /** The bounded version (CI): fewer faults, shorter production. */
  short: boolean;
  log: (line: string) => void;
  /** A new `offsetlake run` child process (or `offsetlake <args>`); `env` is added to its environment, lines of stderr matching `watch` are kept. */
  startIndexer(env?: Record<string, string>, watch?: RegExp, args?: string[]): IndexerProcess;
  /** A new bench/chaos/handler-process.ts child: events of the table's topic delivered to the MSK handler, messily. */
  startHandler(env?: Record<string, string>): IndexerProcess;
  /** The topic grew to `partitions`: the producer writes over all of them from now on. */
  growTopic(partitions: number): void;
  /** Avro scenarios: the schema the producer writes with from now on. */
  useSchema(schema: RegistrySchema): void;
  /** Avro scenarios: the schemas registered for the topic before production began. */
  schemas: RegistrySchema[];
  table: TableRecord;
  /** `offsetlake serve` started, and a client reading whole files of the table from it until `stop()`. */
  startServeReads(): Promise<ServeReads>;
  /** The producer's counts so far (a transaction refused while the ISR is short is a failed one). */
  producerCounts(): ProducerCounts;
}

export interface FaultsDone {
  /** What was done, in words: "4 SIGKILLs". */
  faults: string;
  /** When the last fault was repaired (a runner restarted, a service back): recovery is measured from here. */
  repairedAt: number;
  /** Indexers left running to catch up. */
  indexers: IndexerProcess[];
  /** What the scenario itself found wrong (beyond the audit's invariants). */
  problems?: string[];
  /** Retention deleted records: files below Kafka's earliest offset are expired, not rebuilt. */
  retention?: boolean;
  /** What a client of `serve` saw while the faults went on. */
  reads?: ServeReadCounts;
}

export interface Scenario {
  name: string;
  /** What it does, for the README and the report. */
  does: string;
  format: TableFormat;
  /** Its short version is in test/integration/chaos.test.ts (chaos-cluster.test.ts with `brokers`; `npm test`, which must stay quick); the others only in `npm run chaos`. */
  ci: boolean;
  /** 3: runs on a cluster of three brokers (replication factor 3, min.insync.replicas 2) instead of the one broker. */
  brokers?: number;
  /** Table settings beside tableSettings' (a scenario whose ranges must seal deterministically). */
  settings?: Record<string, string>;
  /**
   * After the faults and the producer stopped, the indexers left running are stopped and
   * `run --once` indexes the rest and flushes the last open range (a scenario whose table
   * seals by no clock never ends its last range by itself); then the table is compared file
   * by file with one clean pass of the topic into a twin table (compareWithCleanPass).
   */
  cleanPassTwin?: boolean;
  inject(context: ScenarioContext): Promise<FaultsDone>;
}

export interface ScenarioResult {
  scenario: string;
  seed: number;
  faults: string;
  /** Committed records the independent reader found: what the producer got committed. */
  produced: number;
  indexed: number;
  lost: number;
  duplicated: number;
  files: number;
  filesRebuilt: number;
  /** Files below Kafka's earliest offset (retention scenarios): neither rebuilt nor counted in `files`. */
  expired: number;
  /** Last repair → every committed record in a file. */
  recoveryMs: number;
  /** cleanPassTwin: files compared with the clean pass, and how many of either side had no equal in the other. */
  cleanPass?: { files: number; differing: number };
  transactions: { committed: number; aborted: number; failed: number };
  /** What a client of `serve` saw during the faults, for scenarios that read through it. */
  reads?: ServeReadCounts;
  problems: string[];
}

/** Waits a random time in [min, max) ms. */
const waitBetween = (context: ScenarioContext, min: number, max: number) => sleep(min + Math.floor(context.random() * (max - min)));

const avroV1 = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }] });
const avroV2 = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }, { name: 'note', type: ['null', 'string'], default: null }] });
/** The two versions of the order schema per registry format: v2 adds an optional note. */
const registrySchemas: Partial<Record<TableFormat, { type: 'AVRO' | 'PROTOBUF'; v1: string; v2: string }>> = {
  avro: { type: 'AVRO', v1: avroV1, v2: avroV2 },
  protobuf: {
    type: 'PROTOBUF',
    v1: 'syntax = "proto3";\nmessage Order {\n  int64 id = 1;\n  string name = 2;\n}\n',
    v2: 'syntax = "proto3";\nmessage Order {\n  int64 id = 1;\n  string name = 2;\n  string note = 3;\n}\n',
  },
};

/** `fault` `times` times, each after a random wait in [minWaitMs, maxWaitMs); when the last one was repaired. */
async function repeatedly(context: ScenarioContext, times: number, minWaitMs: number, maxWaitMs: number, fault: () => Promise<void>): Promise<number> {
  let repairedAt = Date.now();
  for (let i = 0; i < times; i += 1) {
    await waitBetween(context, minWaitMs, maxWaitMs);
    await fault();
    repairedAt = Date.now();
  }
  return repairedAt;
}

const times = (n: number, what: string) => `${what} ×${n}`;

/** Polls each partition's waiting reason until one starts with `prefix`; whether one did within `timeoutMs`. */
async function someoneWaits(stack: ChaosStack, table: TableRecord, prefix: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const waiting = await stack.engine.catalog.query<{ waiting_reason: string | null }>('SELECT waiting_reason FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId]);
    if (waiting.rows.some((row) => row.waiting_reason?.startsWith(prefix))) return true;
    await sleep(100);
  }
  return false;
}

/**
 * A cluster fault repeated `count` times, each after a random wait, while one `run`
 * indexes and a client reads whole files through `serve`; what the reader saw.
 */
async function whileServing(context: ScenarioContext, count: number, fault: (reads: ServeReads) => Promise<void>): Promise<Omit<FaultsDone, 'faults'>> {
  const indexer = context.startIndexer();
  const reads = await context.startServeReads();
  const repairedAt = await repeatedly(context, count, 1000, context.short ? 2000 : 5000, () => fault(reads));
  await waitBetween(context, 500, 1500);
  return { repairedAt, indexers: [indexer], reads: await reads.stop() };
}

/** A registry-format table; the Schema Registry stopped while the producer moves to a schema version the runner has not seen. */
function registryDown(name: string, format: 'avro' | 'protobuf', ci: boolean): Scenario {
  return {
    name,
    does: `${format === 'avro' ? 'Avro' : 'Protobuf'} table; the Schema Registry stopped mid-run while the producer moves to a schema version the indexer has not seen, then started again`,
    format,
    ci,
    async inject(context) {
      const indexer = context.startIndexer();
      await waitBetween(context, 1000, context.short ? 2000 : 5000);
      await context.stack.stopRegistry();
      context.useSchema(context.schemas[1]!);
      // The outage is only a fault if the indexer met it: it must say it waits for the registry.
      const waited = await someoneWaits(context.stack, context.table, 'Schema Registry', 20_000);
      if (!context.short) await waitBetween(context, 0, 5000);
      await context.stack.startRegistry();
      const repairedAt = Date.now();
      await waitBetween(context, 500, 1500);
      return { faults: `1 registry outage, a new schema id while down${waited ? '; run waited' : '; run never waited (no fault met)'}`, repairedAt, indexers: [indexer] };
    },
  };
}

/** A JSON table indexed by one runner while a service of the stack fails `counts` times and is repaired. */
function serviceFault(spec: { name: string; does: string; ci: boolean; counts: { short: number; full: number }; fault: string; inject: (context: ScenarioContext) => Promise<void> }): Scenario {
  return {
    name: spec.name,
    does: spec.does,
    format: 'json',
    ci: spec.ci,
    async inject(context) {
      const count = context.short ? spec.counts.short : spec.counts.full;
      const indexer = context.startIndexer();
      const repairedAt = await repeatedly(context, count, 1000, context.short ? 2000 : 5000, () => spec.inject(context));
      if (!context.short) await waitBetween(context, 500, 1500);
      return { faults: times(count, spec.fault), repairedAt, indexers: [indexer] };
    },
  };
}

export const scenarios: Scenario[] = [
  {
    name: 'kill-runner',
    does: '`offsetlake run` SIGKILLed at random moments (whatever it is doing: reading, building, committing) and started again each time',
    format: 'json',
    ci: true,
    async inject(context) {
      const kills = context.short ? 2 : 12;
      let indexer = context.startIndexer();
      const repairedAt = await repeatedly(context, kills, 300, context.short ? 1500 : 4000, async () => {
        await indexer.kill();
        indexer = context.startIndexer();
      });
      return { faults: times(kills, 'SIGKILL of run'), repairedAt, indexers: [indexer] };
    },
  },
  {
    name: 'many-runners',
    does: 'two runners on the same table from the start, a third joining, then one of the three SIGKILLed',
    format: 'json',
    ci: true,
    async inject(context) {
      const span = context.short ? 1000 : 6000;
      const indexers = [context.startIndexer(), context.startIndexer()];
      await waitBetween(context, span / 2, span);
      indexers.push(context.startIndexer());
      await waitBetween(context, span / 2, span);
      const victim = indexers.splice(Math.floor(context.random() * indexers.length), 1)[0]!;
      await victim.kill();
      const repairedAt = Date.now();
      await waitBetween(context, span / 2, span);
      return { faults: '3 runners at once, 1 SIGKILL', repairedAt, indexers };
    },
  },
  serviceFault({
    name: 'kill-postgres',
    does: 'the catalog\'s Postgres SIGKILLed mid-run (no shutdown, crash recovery on start) and started again after 0.5–3 s',
    ci: true,
    counts: { short: 1, full: 3 },
    fault: 'SIGKILL of Postgres',
    async inject(context) {
      await context.stack.killPostgres();
      await waitBetween(context, 500, context.short ? 1500 : 3000);
      await context.stack.startPostgres();
    },
  }),
  serviceFault({
    name: 'postgres-down-long',
    does: 'the catalog\'s Postgres SIGKILLed and kept down for 8 s (full: 20 s), longer than lease_ttl (3 s), so every lease has lapsed when it is back',
    ci: false,
    counts: { short: 1, full: 2 },
    fault: 'Postgres down > lease_ttl',
    async inject(context) {
      await context.stack.killPostgres();
      await sleep(context.short ? 8_000 : 20_000);
      await context.stack.startPostgres();
    },
  }),
  serviceFault({
    name: 'kill-kafka',
    does: 'the Kafka broker SIGKILLed (no controlled shutdown: log recovery and transaction state on start) mid-run and started again after 1–3 s',
    ci: false,
    counts: { short: 1, full: 2 },
    fault: 'SIGKILL of the broker',
    async inject(context) {
      await context.stack.killKafka();
      await waitBetween(context, 1000, 3000);
      await context.stack.startKafka();
    },
  }),
  serviceFault({
    name: 'restart-kafka',
    does: 'the Kafka broker stopped (controlled shutdown) and started again mid-run, producer and indexer connected',
    ci: true,
    counts: { short: 1, full: 2 },
    fault: 'broker restart',
    inject: (context) => context.stack.restartKafka(),
  }),
  registryDown('registry-down', 'avro', true),
  registryDown('registry-down-protobuf', 'protobuf', false),
  {
    name: 'fault-points',
    does: '`offsetlake run` SIGKILLs itself at a named point of the commit path (OFFSETLAKE_FAULT), the Nth time it passes it: after a range\'s files are built, inside the commit transaction before COMMIT, after COMMIT before its memory moves on; the next runner takes over',
    format: 'json',
    ci: true,
    async inject(context) {
      const rounds = context.short ? 1 : 3;
      const met: string[] = [];
      const missed: string[] = [];
      // Short (CI): the two points inside and just after the transaction; after-build is
      // much like a random kill (kill-runner), and full length has it.
      const points = context.short ? commitFaultPoints.filter((point) => point !== 'after-build') : commitFaultPoints;
      for (let round = 0; round < rounds; round += 1) {
        for (const point of points) {
          const nth = 1 + Math.floor(context.random() * (context.short ? 3 : 8));
          const indexer = context.startIndexer({ OFFSETLAKE_FAULT: `${point}:${nth}` });
          // Its predecessor's leases lapse first (lease_ttl 3 s), then it commits nth times.
          if ((await indexer.exitedWithin(30_000)) && indexer.signal === 'SIGKILL') met.push(point);
          else {
            missed.push(point);
            await indexer.kill();
          }
        }
      }
      const indexer = context.startIndexer();
      const repairedAt = Date.now();
      await waitBetween(context, 500, 1500);
      const counts = points.map((point) => `${point} ×${met.filter((p) => p === point).length}`).join(', ');
      return { faults: `self-SIGKILL at ${counts}${missed.length ? `; no fault met at ${missed.join(', ')}` : ''}`, repairedAt, indexers: [indexer] };
    },
  },
  {
    name: 'merge-kills',
    does: '`offsetlake run` merging small files as it indexes (merge_files 2) SIGKILLs itself inside a merge\'s transaction (OFFSETLAKE_FAULT before-merge-commit), the Nth time it gets there, and is SIGKILLed at random moments while it indexes and merges; the next runner takes over: no merge is left half-done (sources and merged file both live, or a gap)',
    format: 'json',
    ci: true,
    settings: { merge_files: '2', merge_after: '2s' },
    async inject(context) {
      const rounds = context.short ? 2 : 6;
      const met: number[] = [];
      let missed = 0;
      for (let round = 0; round < rounds; round += 1) {
        const nth = 1 + Math.floor(context.random() * 3);
        const indexer = context.startIndexer({ OFFSETLAKE_FAULT: `before-merge-commit:${nth}` });
        // its predecessor's leases lapse first (lease_ttl 3 s), then it indexes, and merges what aged
        if ((await indexer.exitedWithin(40_000)) && indexer.signal === 'SIGKILL') met.push(nth);
        else {
          missed += 1;
          await indexer.kill();
        }
      }
      const kills = context.short ? 1 : 4;
      let indexer = context.startIndexer();
      const repairedAt = await repeatedly(context, kills, 1000, context.short ? 3000 : 6000, async () => {
        await indexer.kill();
        indexer = context.startIndexer();
      });
      // a scenario of merges in which nothing merged tested nothing: the runner left going must merge within a while
      const merged = async () => (await context.stack.engine.catalog.query<{ n: string }>('SELECT count(*) AS n FROM offsetlake.data_file WHERE table_id = $1 AND replaced_by IS NOT NULL', [context.table.tableId])).rows[0]!.n;
      let replaced = await merged();
      for (let waited = 0; replaced === '0' && waited < 30_000; waited += 500) {
        await sleep(500);
        replaced = await merged();
      }
      const problems = replaced === '0' ? ['no merge committed: the scenario did not test merges'] : met.length === 0 ? ['no runner reached the inside of a merge\'s transaction'] : [];
      return { faults: `self-SIGKILL inside a merge's transaction ×${met.length}${missed ? `, not met ×${missed}` : ''}; ${times(kills, 'SIGKILL of run')}; ${replaced} files replaced by merges`, repairedAt, indexers: [indexer], problems };
    },
  },
  {
    name: 'stolen-lease',
    does: '`offsetlake run` pauses itself (SIGSTOP) for longer than lease_ttl with a range built and not yet committed, and a second runner takes its partitions and commits past that range; then SIGCONT: the paused commit must be refused by the lease fence. Full length also pauses it inside the commit transaction (before COMMIT), where the takeover must wait on the row lock',
    format: 'json',
    ci: true,
    async inject(context) {
      const points = context.short ? ['after-build'] : ['after-build', 'before-commit', 'after-build', 'before-commit'];
      let other: IndexerProcess | undefined;
      let paused: IndexerProcess | undefined;
      let repairedAt = Date.now();
      const said = { built: 0, refused: 0, inCommit: 0, waited: 0, missed: 0 };
      for (const point of points) {
        // A fresh pair each time: the runner to pause must get the partitions first.
        await Promise.all([paused?.kill(), other?.kill()]);
        const nth = 1 + Math.floor(context.random() * 4);
        paused = context.startIndexer({ OFFSETLAKE_FAULT: `${point}:${nth}:stop` }, /is lost/);
        other = undefined;
        if (!(await paused.stoppedWithin(30_000))) {
          said.missed += 1;
          continue;
        }
        // The runner that steals its leases once they lapse.
        other = context.startIndexer();
        const pausedMs = 4000 + Math.floor(context.random() * (context.short ? 1000 : 4000));
        const until = Date.now() + pausedMs;
        let lockWaits = 0;
        while (Date.now() < until) {
          const waiting = await context.stack.engine.catalog.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
          lockWaits = Math.max(lockWaits, waiting.rows[0]!.n);
          await sleep(200);
        }
        paused.resume();
        repairedAt = Date.now();
        if (point === 'after-build') {
          said.built += 1;
          const deadline = Date.now() + 10_000;
          while (paused.matched.length === 0 && Date.now() < deadline) await sleep(100);
          if (paused.matched.length > 0) said.refused += 1;
        } else {
          said.inCommit += 1;
          if (lockWaits > 0) said.waited += 1;
        }
      }
      await waitBetween(context, 500, 1500);
      const parts = [`${said.built} SIGSTOP after build > lease_ttl, ${said.refused} commit${said.refused === 1 ? '' : 's'} refused by the fence`];
      if (said.inCommit > 0) parts.push(`${said.inCommit} inside the commit transaction, takeover waited on the row lock ×${said.waited}`);
      const unmet = said.missed > 0 || said.refused < said.built || said.waited < said.inCommit || said.built === 0;
      return { faults: `${parts.join('; ')}${unmet ? ' (no fault met)' : ''}`, repairedAt, indexers: [paused!, other].filter((i): i is IndexerProcess => i !== undefined) };
    },
  },
  {
    name: 'clock-skew',
    does: 'two runners whose wall clocks run 60 s ahead and 60 s behind (leases are timed by Postgres\'s now(); the clock only ages open ranges, and open_range_since passes between holders), SIGKILLed in turn so their partitions move between the skewed clocks',
    format: 'json',
    ci: false,
    async inject(context) {
      const kills = context.short ? 2 : 6;
      const skews = [60_000, -60_000];
      const skewEnv = (skew: number) => ({ OFFSETLAKE_CHAOS_CLOCK_SKEW_MS: String(skew), NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${skewedClock}`.trim() });
      const start = (skew: number) => context.startIndexer(skewEnv(skew));
      // The skew the runners get, measured: a child started the same way says what time it is.
      const measured = skews.map((skew) => {
        const before = Date.now();
        const said = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(Date.now()))'], { env: { ...process.env, ...skewEnv(skew) } }).toString());
        return (said - before) / 1000;
      });
      const indexers = skews.map(start);
      // What the holders wrote as open_range_since, against Postgres's clock: the skew seen.
      const seen = { samples: 0, min: Infinity, max: -Infinity };
      const look = async () => {
        const rows = await context.stack.engine.catalog.query<{ s: number | null }>(
          'SELECT extract(epoch FROM open_range_since - now())::float8 AS s FROM offsetlake.lake_partition WHERE table_id = $1',
          [context.table.tableId],
        );
        for (const { s } of rows.rows) {
          if (s === null) continue;
          seen.samples += 1;
          seen.min = Math.min(seen.min, s);
          seen.max = Math.max(seen.max, s);
        }
      };
      let looking = true;
      const sampler = (async () => {
        while (looking) {
          await look().catch((error: Error) => context.log(`  clock-skew: looking failed: ${error.message}`));
          await sleep(50);
        }
      })();
      // The two are killed in turn, so that each clock holds the partitions after the other died.
      let kill = 0;
      const repairedAt = await repeatedly(context, kills, 1000, context.short ? 2500 : 5000, async () => {
        const victim = kill++ % indexers.length;
        await indexers[victim]!.kill();
        indexers[victim] = start(skews[victim]!);
      });
      await waitBetween(context, 500, 1500);
      looking = false;
      await sampler;
      // Seen in the catalog only when a renewal wrote an open range that had not sealed yet: reported, not required.
      const range = seen.samples > 0 ? `, open_range_since seen ${seen.min.toFixed(0)} s to ${seen.max.toFixed(0)} s off Postgres's now()` : '';
      const skewed = measured[0]! > 55 && measured[1]! < -55;
      const clocks = measured.map((m) => `${m > 0 ? '+' : ''}${m.toFixed(0)} s`).join(' and ');
      return { faults: `runner clocks ${clocks}, ${times(kills, 'SIGKILL')}${range}${skewed ? '' : ' (no fault met: the clocks are not skewed)'}`, repairedAt, indexers };
    },
  },
  {
    name: 'pg-max-connections',
    does: 'the catalog\'s Postgres refuses connections (max_connections reached: a client of ours holds every slot, and the runner\'s sessions are terminated so that it must reconnect) for 5 s (full: 15 s, longer than lease_ttl); a second runner starts during the outage',
    format: 'json',
    ci: false,
    async inject(context) {
      const outages = context.short ? 1 : 2;
      const indexers = [context.startIndexer()];
      const said: string[] = [];
      const repairedAt = await repeatedly(context, outages, 1000, context.short ? 2000 : 5000, async () => {
        const hog = await holdEveryConnection(context.stack.env.DATABASE_URL);
        said.push(hog.refused);
        if (indexers.length < 2) indexers.push(context.startIndexer({}, /53300|too many clients|slots are reserved/));
        await sleep(context.short ? 5000 : 15_000);
        await hog.release();
      });
      const waited = indexers[1]!.matched.length > 0;
      await waitBetween(context, 500, 1500);
      return {
        faults: `${times(outages, 'connections refused')} (${[...new Set(said)].join('; ')})${waited ? ', the second run waited to open the catalog' : ' (no fault met: the second run never waited)'}`,
        repairedAt,
        indexers,
      };
    },
  },
  {
    name: 'kafka-down',
    does: 'the Kafka broker stopped for 10 s (full: 60 s) under the producer and the runner, then started again',
    format: 'json',
    ci: false,
    async inject(context) {
      const indexer = context.startIndexer();
      await waitBetween(context, 1000, context.short ? 2000 : 5000);
      await context.stack.stopKafka();
      const waited = await someoneWaits(context.stack, context.table, '', 10_000);
      await sleep(context.short ? 10_000 : 60_000);
      await context.stack.startKafka();
      const repairedAt = Date.now();
      await waitBetween(context, 500, 1500);
      return { faults: `broker down ${context.short ? 10 : 60} s${waited ? '; run waited' : ' (no fault met: run never said it waits)'}`, repairedAt, indexers: [indexer] };
    },
  },
  {
    name: 'grow-partitions',
    does: 'the topic grows from 3 to 5 partitions (full: to 5, then 8) while the runner indexes and the producer writes to the new partitions at once',
    format: 'json',
    ci: false,
    async inject(context) {
      const indexer = context.startIndexer();
      const steps = context.short ? [5] : [5, 8];
      const repairedAt = await repeatedly(context, steps.length, 1000, context.short ? 2000 : 5000, async () => {
        const count = steps.shift()!;
        await context.stack.engine.kafka.admin().createPartitions({ topics: [{ name: context.table.topic, count }] });
        // The broker's metadata lists them a moment after the request.
        while ((await topicPartitions(context.stack.engine.kafka, context.table.topic)).length < count) await sleep(50);
        context.growTopic(count);
      });
      await waitBetween(context, 500, 1500);
      return { faults: context.short ? '3 → 5 partitions' : '3 → 5 → 8 partitions', repairedAt, indexers: [indexer] };
    },
  },
  {
    name: 'msk-handler',
    does: 'no `run`: the MSK handler (handleKafkaEvent) fed events redelivered, overlapping, with gaps, of two partitions, reordered, across cold starts (bench/chaos/handler-process.ts), and killed mid-batch as a Lambda timeout ends it: SIGKILL at random moments, and at a fault point of the commit path (OFFSETLAKE_FAULT); the next invocation takes over',
    format: 'json',
    ci: true,
    // No clock seals a range (file_window 1 h ≫ the scenario): ranges end by size and
    // bucket only, a function of the records from indexed_end, so however the events came
    // and whenever an invocation died, the catalog must equal one clean pass file by file.
    settings: { file_window: '1h' },
    cleanPassTwin: true,
    inject: (context) => feedTheHandler(context, context.short ? 4 : 12),
  },
  {
    name: 'retention-gap',
    does: 'no runner runs while retention deletes records above indexed_end (DeleteRecords to a seeded offset between indexed_end and the LSO on every partition); the next runner records exactly those offsets as a lost interval and goes on, the partition still tiling',
    format: 'json',
    ci: false,
    async inject(context) {
      const outages = context.short ? 1 : 3;
      const { catalog, kafka } = context.stack.engine;
      const expected: { partition: number; start: bigint; end: bigint }[] = [];
      let indexer = context.startIndexer();
      const repairedAt = await repeatedly(context, outages, 1500, context.short ? 2500 : 5000, async () => {
        await indexer.stop();
        await waitBetween(context, 500, 1500);
        const ends = await catalog.query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [context.table.tableId]);
        for (const { partition_id: partition, indexed_end: end } of ends.rows) {
          const lso = await lastStableOffset(kafka, context.table.topic, partition);
          if (lso <= end + 1n) continue;
          const before = end + 1n + BigInt(Math.floor(context.random() * Number(lso - end - 1n)));
          const earliest = await deleteRecords(kafka, context.table.topic, partition, before);
          expected.push({ partition, start: end, end: earliest });
        }
        indexer = context.startIndexer();
      });
      // The runner meets each gap when it reads there: wait until it has recorded them all.
      const deadline = Date.now() + 30_000;
      let recorded: { partition_id: number; start_offset: bigint; end_offset: bigint }[] = [];
      while (Date.now() < deadline) {
        recorded = (await catalog.query<{ partition_id: number; start_offset: bigint; end_offset: bigint }>('SELECT partition_id, start_offset, end_offset FROM offsetlake.lost_interval WHERE table_id = $1 ORDER BY partition_id, start_offset', [context.table.tableId])).rows;
        if (recorded.length >= expected.length) break;
        await sleep(100);
      }
      const key = (l: { partition: number; start: bigint; end: bigint }) => `${l.partition}:[${l.start}, ${l.end})`;
      const want = expected.map(key).sort();
      const got = recorded.map((r) => key({ partition: r.partition_id, start: r.start_offset, end: r.end_offset })).sort();
      const problems = want.join(' ') === got.join(' ') ? [] : [`lost intervals: expected ${want.join(' ') || 'none'}, the catalog has ${got.join(' ') || 'none'}`];
      await waitBetween(context, 500, 1500);
      const records = expected.reduce((sum, l) => sum + Number(l.end - l.start), 0);
      return {
        faults: `${times(outages, 'runner down')}, ${expected.length} deletions above indexed_end (${records} offsets), ${recorded.length} lost intervals recorded${expected.length === 0 ? ' (no fault met)' : ''}`,
        repairedAt,
        indexers: [indexer],
        problems,
        retention: true,
      };
    },
  },
  {
    name: 'leader-move',
    does: 'three brokers: every partition\'s leader moved by a reassignment that puts another of its replicas first and the controller\'s preferred-leader election after it, again and again, while `run` indexes and `serve` answers a client reading whole files',
    format: 'json',
    ci: true,
    brokers: 3,
    async inject(context) {
      const moves = context.short ? 2 : 6;
      let moved = 0;
      const done = await whileServing(context, moves, async (reads) => {
        const began = Date.now();
        moved += await moveLeaders(context.stack, context.table.topic);
        context.log(`  leader-move: leaders moved in ${((Date.now() - began) / 1000).toFixed(1)} s`);
        // Files read from the new leaders before the next move.
        await reads.answered(2);
      });
      return { ...done, faults: `${times(moves, 'reassignment + preferred election')}, ${moved} partition leaders moved${moved === 0 ? ' (no fault met)' : ''}` };
    },
  },
  {
    name: 'broker-kill',
    does: 'three brokers: one (seeded) SIGKILLed, no controlled shutdown, its leaders without a leader until the controller\'s session with it times out; started again after 1-3 s, and the next kill only once every replica is back in sync',
    format: 'json',
    ci: true,
    brokers: 3,
    async inject(context) {
      const killed: number[] = [];
      const done = await whileServing(context, context.short ? 1 : 5, async () => {
        const broker = context.stack.brokers[Math.floor(context.random() * context.stack.brokers.length)]!.nodeId;
        await context.stack.killBroker(broker);
        killed.push(broker);
        await waitBetween(context, 1000, 3000);
        await context.stack.startBrokers();
        await waitInSync(context.stack, context.table.topic);
      });
      return { ...done, faults: `SIGKILL of broker ${killed.join(', ')}` };
    },
  },
  {
    name: 'rolling-restart',
    does: 'three brokers restarted in turn as MSK patches them: a controlled shutdown, a start, and the next broker once every replica is back in sync (full: two rounds)',
    format: 'json',
    ci: false,
    brokers: 3,
    async inject(context) {
      const rounds = context.short ? 1 : 2;
      const indexer = context.startIndexer();
      const reads = await context.startServeReads();
      let repairedAt = Date.now();
      for (let round = 0; round < rounds; round += 1) {
        for (const broker of context.stack.brokers) {
          await waitBetween(context, 500, context.short ? 1500 : 4000);
          await context.stack.stopBroker(broker.nodeId);
          await context.stack.startBrokers();
          await waitInSync(context.stack, context.table.topic);
          repairedAt = Date.now();
        }
      }
      await waitBetween(context, 500, 1500);
      return { faults: `${times(rounds * context.stack.brokers.length, 'broker restart')} (${rounds} rolling round${rounds === 1 ? '' : 's'})`, repairedAt, indexers: [indexer], reads: await reads.stop() };
    },
  },
  {
    name: 'isr-shrink',
    does: 'three brokers: two (seeded) stopped with SIGSTOP until the controller fences them and the ISR falls below min.insync.replicas (2), so the producer is refused, held 10 s (full: 30 s), then SIGCONT; the indexer must neither lose nor invent records and resume by itself',
    format: 'json',
    ci: false,
    brokers: 3,
    async inject(context) {
      const indexer = context.startIndexer();
      await waitBetween(context, 1000, context.short ? 2000 : 5000);
      const brokers = context.stack.brokers.map((b) => b.nodeId);
      const left = brokers.splice(Math.floor(context.random() * brokers.length), 1)[0]!;
      const failedBefore = context.producerCounts().failedTransactions;
      for (const broker of brokers) context.stack.pauseBroker(broker);
      // The controller fences a broker whose heartbeats stop (broker.session.timeout.ms, 9 s) and takes it out of every ISR.
      const shrank = await waitForPartitions(context.stack, [context.table.topic], (p) => p.isr.length < 2, 60_000, left);
      await sleep(context.short ? 10_000 : 30_000);
      const refused = context.producerCounts().failedTransactions - failedBefore;
      for (const broker of brokers) context.stack.resumeBroker(broker);
      await waitInSync(context.stack, context.table.topic);
      const repairedAt = Date.now();
      await waitBetween(context, 500, 1500);
      return {
        faults: `brokers ${brokers.join(' and ')} stopped, ${shrank ? `ISR down to broker ${left} alone` : 'ISR never shrank (no fault met)'}, ${refused} producer transactions refused`,
        repairedAt,
        indexers: [indexer],
      };
    },
  },
  {
    name: 'slow-broker',
    does: 'three brokers: the leader of partition 0 stopped with SIGSTOP for 30 s (short: 12 s) while the indexer fetches from it: its connections hang, the controller fences it and its leaders move; then SIGCONT',
    format: 'json',
    ci: false,
    brokers: 3,
    async inject(context) {
      const indexer = context.startIndexer();
      const reads = await context.startServeReads();
      await waitBetween(context, 1000, context.short ? 2000 : 5000);
      const broker = await leaderOf(context.stack, context.table.topic, 0);
      context.stack.pauseBroker(broker);
      await sleep(context.short ? 12_000 : 30_000);
      const moved = (await partitionStates(context.stack, [context.table.topic], context.stack.brokers.find((b) => b.nodeId !== broker)!.nodeId)).get(context.table.topic)!.filter((p) => p.leader !== broker).length;
      context.stack.resumeBroker(broker);
      await waitInSync(context.stack, context.table.topic);
      const repairedAt = Date.now();
      await waitBetween(context, 500, 1500);
      return { faults: `broker ${broker} paused ${context.short ? 12 : 30} s, ${moved} partitions led elsewhere meanwhile`, repairedAt, indexers: [indexer], reads: await reads.stop() };
    },
  },
  {
    name: 'msk-handler-leader-move',
    does: 'three brokers: the msk-handler scenario (messy events to handleKafkaEvent, invocations killed mid-batch) with every partition\'s leader moved before each kill',
    format: 'json',
    ci: false,
    brokers: 3,
    settings: { file_window: '1h' },
    cleanPassTwin: true,
    inject: (context) => feedTheHandler(context, context.short ? 3 : 8, true),
  },
];

/**
 * The msk-handler scenarios: handler processes (bench/chaos/handler-process.ts) fed messy
 * events and ended `kills` times, by a SIGKILL or at a fault point of the commit path;
 * `moveLeadersToo` (a cluster): before each end, every partition's leader moved.
 */
async function feedTheHandler(context: ScenarioContext, kills: number, moveLeadersToo = false): Promise<FaultsDone> {
  const met: string[] = [];
  let plain = 0;
  let missed = 0;
  let fault: string | undefined;
  let handler = context.startHandler();
  /** Ends the current handler: by its own fault point if it has one, else by a SIGKILL now. */
  const end = async () => {
    if (fault && (await handler.exitedWithin(30_000)) && handler.signal === 'SIGKILL') met.push(fault.split(':')[0]!);
    else if (fault) missed += 1;
    else plain += 1;
    await handler.kill();
  };
  let moved = 0;
  await repeatedly(context, kills - 1, 500, context.short ? 1500 : 4000, async () => {
    if (moveLeadersToo) moved += await moveLeaders(context.stack, context.table.topic);
    await end();
    fault = context.random() < 0.5 ? `${commitFaultPoints[Math.floor(context.random() * commitFaultPoints.length)]}:${1 + Math.floor(context.random() * 3)}` : undefined;
    handler = context.startHandler(fault ? { OFFSETLAKE_FAULT: fault } : {});
  });
  await waitBetween(context, 500, context.short ? 1500 : 4000);
  await end();
  handler = context.startHandler();
  const repairedAt = Date.now();
  await waitBetween(context, 500, 1500);
  return {
    faults: `${moveLeadersToo ? `${moved} partition leaders moved, ` : ''}SIGKILL mid-batch ×${plain}, self-SIGKILL at ${commitFaultPoints.map((p) => `${p} ×${met.filter((m) => m === p).length}`).join(', ')}${missed ? ` (no fault met at ${missed} fault points)` : ''}`,
    repairedAt,
    indexers: [handler],
  };
}

/**
 * Opens connections to the catalog's Postgres until it refuses one, then terminates every
 * other client session (which must reconnect, and is refused) and fills the slots they
 * freed; `release` closes them all. `refused`: the server's words.
 */
async function holdEveryConnection(databaseUrl: string): Promise<{ refused: string; release(): Promise<void> }> {
  const clients: pg.Client[] = [];
  let refused = '';
  const fill = async () => {
    for (;;) {
      const client = new pg.Client({ connectionString: databaseUrl });
      client.on('error', () => {});
      try {
        await client.connect();
      } catch (error) {
        refused = (error as Error).message;
        return;
      }
      clients.push(client);
      if (clients.length > 2000) throw new Error('Postgres took 2000 connections without refusing one');
    }
  };
  await fill();
  if (clients.length === 0) throw new Error(`could not hold a single connection: ${refused}`);
  for (let round = 0; round < 5; round += 1) {
    const others = await clients[0]!.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> ALL($1::int[])`,
      [await Promise.all(clients.map(async (c) => (c as unknown as { processID: number }).processID))],
    );
    await fill();
    if (others.rows[0]!.n === 0) break;
  }
  return {
    refused,
    async release() {
      await Promise.all(clients.map((client) => client.end().catch(() => {})));
    },
  };
}

/**
 * One clean pass of the same topic into a twin table (same settings, starting where the
 * table started): `offsetlake run --once`, which reads every committed record once, in
 * order, and flushes at the end. The table must have the same files: equal in partition,
 * offsets, bucket, record count and sha256 (seal reasons may differ: the last range is
 * flushed in both, but a range the faults' handlers sealed by size is sealed by size in
 * the clean pass too). As test/integration/indexer.test.ts does on a fixed topic.
 */
async function compareWithCleanPass(stack: ChaosStack, table: TableRecord, settings: ReturnType<typeof resolveSettings>, context: ScenarioContext): Promise<{ files: number; differing: number; problems: string[] }> {
  const { catalog } = stack.engine;
  const twin = await createTableFromTopic(stack.engine, { name: `${table.name}_clean`, topic: table.topic, format: table.format, settings });
  try {
    // Created later, the twin starts at today's LSO: it starts where the table started instead.
    await catalog.query(
      `UPDATE offsetlake.lake_partition t SET indexed_start = o.indexed_start, indexed_end = o.indexed_start
         FROM offsetlake.lake_partition o WHERE t.table_id = $1 AND o.table_id = $2 AND o.partition_id = t.partition_id`,
      [twin.tableId, table.tableId],
    );
    const pass = context.startIndexer({}, undefined, ['run', '--once']);
    if (!(await pass.exitedWithin(180_000))) throw new Error(`the clean pass (run --once) did not end within 180 s:\n${pass.output}`);
    const shape = async (tableId: bigint) =>
      (await listFiles(catalog, tableId)).map((f) => `partition ${f.partition} [${f.startOffset}, ${f.endOffset}) bucket ${f.bucket.toISOString()} ${f.recordCount} records sha256 ${Buffer.from(f.sha256).toString('hex').slice(0, 16)}…`);
    const messy = await shape(table.tableId);
    const clean = await shape(twin.tableId);
    const onlyMessy = messy.filter((f) => !clean.includes(f));
    const onlyClean = clean.filter((f) => !messy.includes(f));
    const problems = onlyMessy.length + onlyClean.length === 0 ? [] : [
      `the catalog differs from one clean pass of the same topic: ${onlyMessy.length} of its ${messy.length} files are not in the clean pass (${onlyMessy.slice(0, 3).join('; ')}), ${onlyClean.length} of the clean pass's ${clean.length} are not in it (${onlyClean.slice(0, 3).join('; ')})`,
    ];
    return { files: messy.length, differing: onlyMessy.length + onlyClean.length, problems };
  } finally {
    await dropTable(catalog, twin.name).catch(() => {});
  }
}

/** Offsets between each partition's indexed_end and its LSO, summed: what the indexers still had to catch up. */
async function behind(stack: ChaosStack, table: TableRecord): Promise<string> {
  try {
    const rows = (await stack.engine.catalog.query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId])).rows;
    const lsos = await lastStableOffsets(stack.engine.kafka, rows.map((row) => ({ topic: table.topic, partition: row.partition_id })));
    return String(rows.reduce((sum, row, i) => sum + (lsos[i]! - row.indexed_end), 0n));
  } catch (error) {
    return `? (${(error as Error).message})`;
  }
}

/** Polls the catalog until every partition's indexed_end reached `producedEnd`; the moment it did. */
async function caughtUp(stack: ChaosStack, table: TableRecord, producedEnd: ReadonlyMap<number, bigint>, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await stack.engine.catalog
      .query<{ partition_id: number; indexed_end: bigint }>('SELECT partition_id, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId])
      .then((result) => result.rows, () => []);
    const done = rows.length === producedEnd.size && rows.every((row) => row.indexed_end >= (producedEnd.get(row.partition_id) ?? 0n));
    if (done) return Date.now();
    if (Date.now() > deadline) {
      throw new Error(`not caught up within ${timeoutMs} ms: indexed_end ${rows.map((r) => `${r.partition_id}:${r.indexed_end}`).join(' ')}, produced up to ${[...producedEnd].map(([p, end]) => `${p}:${end}`).join(' ')}`);
    }
    await sleep(100);
  }
}

export async function runScenario(stack: ChaosStack, scenario: Scenario, options: { seed: number; short: boolean; log: (line: string) => void }): Promise<ScenarioResult> {
  const random = seededRandom(options.seed);
  const topic = `chaos-${scenario.name}-${randomUUID().slice(0, 8)}`;
  await createTopic(stack.engine.kafka, topic, partitions);
  const settings = resolveSettings({ ...tableSettings, ...scenario.settings });
  const table = await createTableFromTopic(stack.engine, { name: `chaos_${scenario.name.replaceAll('-', '_')}_${randomUUID().slice(0, 6)}`, topic, format: scenario.format, settings });
  const registered = registrySchemas[scenario.format];
  if (registered) await stack.registryReady();
  const schemas = registered
    ? [await registerSchema(`${topic}-value`, registered.v1, registered.type, stack.env.SCHEMA_REGISTRY_URL), await registerSchema(`${topic}-value`, registered.v2, registered.type, stack.env.SCHEMA_REGISTRY_URL)]
    : [];
  let schema = schemas[0];
  const producer = new ChaosProducer(stack.engine.kafka, { topic, partitions, random: seededRandom(options.seed + 1), maxPauseMs: 40, ...(schema ? { avroSchema: () => schema! } : {}) });
  const started: IndexerProcess[] = [];
  const context: ScenarioContext = {
    stack,
    random,
    short: options.short,
    log: options.log,
    startIndexer(env, watch, args) {
      const indexer = new IndexerProcess(stack, `${scenario.name}-${started.length + 1}`, env, watch, args && [cli, ...args]);
      started.push(indexer);
      return indexer;
    },
    startHandler(env) {
      const args = ['--import', 'tsx', handlerProcess, topic, String(options.seed + started.length)];
      const indexer = new IndexerProcess(stack, `${scenario.name}-${started.length + 1}`, env, undefined, args);
      started.push(indexer);
      return indexer;
    },
    growTopic(count) {
      producer.grow(count);
    },
    useSchema(next) {
      schema = next;
    },
    schemas,
    table,
    startServeReads: () => startServeReads(stack, table, seededRandom(options.seed + 2), (watch, args) => context.startIndexer({}, watch, args), options.log),
    producerCounts: () => ({ ...producer.counts }),
  };
  const began = Date.now();
  producer.start();
  let done: FaultsDone | undefined;
  try {
    done = await scenario.inject(context);
    const injected = Date.now();
    const backlog = await behind(stack, table);
    const producedEnd = await producer.stop();
    if (scenario.cleanPassTwin) {
      // The last open range ends by no clock here: `run --once` reads the rest and flushes it.
      await Promise.all(done.indexers.map((indexer) => indexer.kill()));
      done.indexers = [context.startIndexer({}, undefined, ['run', '--once'])];
    }
    const recoveredAt = await caughtUp(stack, table, producedEnd, options.short ? 60_000 : 180_000);
    await Promise.all(done.indexers.map((indexer) => indexer.stop()));
    const stopped = Date.now();
    const audit = await auditTable(stack.engine, table, producedEnd, done.retention ? { belowEarliest: 'expired' } : {});
    const cleanPass = scenario.cleanPassTwin ? await compareWithCleanPass(stack, table, settings, context) : undefined;
    const seconds = (from: number, to: number) => `${((to - from) / 1000).toFixed(1)} s`;
    options.log(`  ${scenario.name}: faults ${seconds(began, injected)}, caught up ${seconds(injected, recoveredAt)} (${backlog} offsets behind when the faults ended), indexers stopped ${seconds(recoveredAt, stopped)}, audit ${seconds(stopped, Date.now())}`);
    return {
      scenario: scenario.name,
      seed: options.seed,
      faults: done.faults,
      produced: audit.committed,
      indexed: audit.indexed,
      lost: audit.lost,
      duplicated: audit.duplicated,
      files: audit.files.length - audit.expired,
      filesRebuilt: audit.filesRebuilt,
      expired: audit.expired,
      recoveryMs: recoveredAt - done.repairedAt,
      ...(cleanPass ? { cleanPass: { files: cleanPass.files, differing: cleanPass.differing } } : {}),
      ...(done.reads ? { reads: done.reads } : {}),
      transactions: { committed: producer.counts.committedTransactions, aborted: producer.counts.abortedTransactions, failed: producer.counts.failedTransactions },
      problems: [...(done.problems ?? []), ...audit.problems, ...(cleanPass?.problems ?? []), ...(done.reads?.wrong ? [`serve answered ${done.reads.wrong} files whose bytes are not the catalog's`] : [])],
    };
  } catch (error) {
    const said = started.map((indexer) => `${indexer.label}: ${indexer.output}`).join('\n');
    throw new Error(`${scenario.name}: ${(error as Error).message}\nwhat the runners said last:\n${said}`, { cause: error });
  } finally {
    await producer.halt();
    await Promise.all(started.map((indexer) => indexer.kill()));
    await dropTable(stack.engine.catalog, table.name).catch(() => {});
  }
}
