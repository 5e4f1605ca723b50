/**
 * `offsetlake run`: one long-lived process indexing every partition of every table,
 * through the same handler the Lambda runs (`indexPartitions`, which the MSK entry calls
 * too), fed in process by the event source emulator: each record is read from Kafka once,
 * by the handler's committed read (src/local/emulator.ts). Like
 * Druid's Indexer: one memory budget for the process (src/local/memory-budget.ts: ranges
 * held, builds in flight and a measured base; a range is sealed with reason `capacity`
 * when its share is reached, and reading waits while commits free memory), and a bound
 * on concurrent file builds.
 */
import { indexedEnds } from '../catalog/partitions.js';
import { listTables } from '../catalog/tables.js';
import { type TableRecord } from '../table/record.js';
import { setWaitingReason } from '../catalog/leases.js';
import { checkedTopic, TableTopicError } from '../tables/topic-identity.js';
import { UnknownTopicError } from '../kafka/errors.js';
import type { Engine } from '../runtime/engine.js';
import { ownerName, redact } from '../runtime/engine.js';
import { DeliveryFailedError, indexerFor, indexPartitions, type DeliveryOutcome, type IndexerRuntime, type PartitionDelivery } from '../indexer/handler.js';
import type { PartitionIndexer } from '../indexer/partition.js';
import type { RangeBuilder } from '../files/files.js';
import { kafkaSource, type CommittedSource } from '../kafka/source.js';
import { countingSource, type ReadLog } from '../kafka/counting-source.js';
import { defaultEmulatorOptions, PartitionEventSource, type EmulatorOptions } from './emulator.js';
import { limitConcurrency } from '../common/limit.js';
import { defaultDeliveriesAtOnce, describePlan, measuredCosts, planMemory, type MemoryCosts, type MemoryPlan } from './memory-budget.js';
import { pause } from '../common/retry.js';
import { IndexDrivers } from './index-drivers.js';
import { Compactions } from './compactions.js';
import type { CompactionRuntime } from '../compaction/compact.js';
import { RunMetrics } from './run-metrics.js';
import type { PartitionLag } from '../common/lag-metrics.js';
import { PartitionLags, type LagRow } from '../tables/lag.js';
import type { MetricFamily } from '../common/exposition.js';

export interface RunnerOptions {
  /** The process's resident memory stays under this many bytes (src/local/memory-budget.ts). */
  memoryBudgetBytes: number;
  /** Whether the user chose the budget (--memory): the default grows to what the partitions need instead of refusing. */
  memoryBudgetGiven: boolean;
  /** What the process, a held range and a build cost (measured; tests give their own). */
  memoryCosts: MemoryCosts;
  /** File builds running at once. */
  maxConcurrentBuilds: number;
  /** Deliveries (a partition's committed read of one event's worth, and its indexing) running at once, over all partitions. */
  deliveriesAtOnce: number;
  /** How often idle partitions are looked at (age seals, new records, new tables). */
  pollIntervalMs: number;
  /** Index what is committed now, flush every open range, and stop. */
  once: boolean;
  emulator: EmulatorOptions;
  /** Where merged files are built (`run --build-threads`: a worker); default on the thread that reads Kafka. */
  mergeBuild?: CompactionRuntime['build'];
}

export const defaultRunnerOptions: RunnerOptions = {
  memoryBudgetBytes: 1024 * 1024 * 1024,
  memoryBudgetGiven: false,
  memoryCosts: measuredCosts,
  maxConcurrentBuilds: 2,
  deliveriesAtOnce: defaultDeliveriesAtOnce,
  pollIntervalMs: 500,
  once: false,
  emulator: defaultEmulatorOptions,
};

/** The held partitions' merge plans are looked at this often (a catalog query per partition), in the background. */
const compactEveryMs = 5000;

/** New tables, dropped tables and partitions added to topics are looked for this often (a metadata request per table). */
const discoverEveryMs = 5000;

/** `once`: rounds in a row in which some partition fails before the run stops and reports it. */
const onceGiveUpRounds = 5;

export interface RunSummary {
  /** `once`: partitions that kept failing (the run stopped trying after `onceGiveUpRounds` rounds), with why. */
  failed: { partition: string; error: string }[];
  /** `once`: indexes whose backfill kept failing (`index NAME on TABLE`), with why. */
  indexesFailed: { index: string; error: string }[];
  /** Deliveries of the emulated event source that succeeded (each one event's worth of a partition at most), and deliveries repeated after a failure. */
  events: number;
  redelivered: number;
  /** Committed records the indexers read from Kafka (each table its own; a record read again after its range was dropped counts again). */
  records: number;
  rangesCommitted: number;
  filesCommitted: number;
  capacitySeals: number;
}

/** A line of the run's log; `fields` name the table and partition it is about, where there is one. */
export type RunLog = (line: string, fields?: { table?: string; topic?: string; partition?: number }) => void;

/** `--memory` cannot hold the process with the partitions it must index: refused at start. */
export class MemoryBudgetError extends Error {
  override name = 'MemoryBudgetError';
}

export class LocalRunner {
  private readonly runtime: IndexerRuntime;
  /** One event source per topic partition; tables on the same topic share it. */
  private readonly sources = new Map<string, PartitionEventSource>();
  private readonly summary: RunSummary = { failed: [], indexesFailed: [], events: 0, redelivered: 0, records: 0, rangesCommitted: 0, filesCommitted: 0, capacitySeals: 0 };
  private lastRenew = 0;
  private lastDiscovery = Number.NEGATIVE_INFINITY;
  /** Partitions whose events failed in the current round, with why: `once` is not done while there are any. */
  private readonly failedPumps = new Map<string, string>();
  /** Table partitions seen by discovery so far. */
  private readonly discovered = new Set<string>();
  /** Tables whose topic is gone or another one, with the reason last said (said again only when it changes). */
  private readonly tablesWaiting = new Map<string, string>();
  /** Rounds in a row with a failure (`once` gives up after onceGiveUpRounds). */
  private failingRounds = 0;
  /** Backfills of indexes that are not active yet, in the background (`once`: to the end). */
  private readonly indexes: IndexDrivers;
  /** Merges of the held partitions' files, in the background (`once`: until their plans are empty). */
  private readonly compactions: Compactions;
  private lastCompaction = Number.NEGATIVE_INFINITY;
  /** The split of the memory budget for the partitions known now (null: none yet). */
  private plan: MemoryPlan | null = null;
  /** What the indexers read: `records` of the summary. */
  private readonly reads: ReadLog;
  /** One delivery indexed, at most `deliveriesAtOnce` at a time. */
  private readonly deliveries: (delivery: PartitionDelivery) => Promise<DeliveryOutcome[]>;
  /** What `--metrics-port` publishes. */
  private readonly metrics = new RunMetrics();
  /** When each partition was last seen caught up; one never seen so is behind since the run began. */
  private readonly partitionLags = new PartitionLags(Date.now());

  /** `source`: where the indexers read committed records (default: the engine's Kafka; tests count what it reads). */
  constructor(private readonly engine: Engine, build: RangeBuilder, private readonly options: RunnerOptions, private readonly log: RunLog, source: CommittedSource = kafkaSource(engine.kafka)) {
    const counted = countingSource(source, { keepReads: false });
    this.reads = counted.log;
    this.runtime = {
      catalog: engine.catalog,
      source: counted,
      build: limitConcurrency(options.maxConcurrentBuilds, build),
      owner: ownerName('run'),
      clock: Date.now,
      indexers: new Map(),
      releaseAfterEvent: false,
      onCommit: (table, _partition, ranges, seconds) => this.metrics.committed(table.name, ranges, seconds),
    };
    this.deliveries = limitConcurrency(options.deliveriesAtOnce, (delivery: PartitionDelivery) => indexPartitions([delivery], this.runtime));
    this.indexes = new IndexDrivers(engine.catalog, source, this.runtime.owner, log);
    this.compactions = new Compactions(engine.catalog, source, log, options.mergeBuild);
    // Every Fetch retried (a leader moved, a broker restarts) is said in the run's log.
    engine.kafka.onRetry ??= log;
  }

  get owner(): string {
    return this.runtime.owner;
  }

  /** What the run has done so far (a copy). */
  get progress(): RunSummary {
    return { ...this.summary, records: this.reads.records, failed: [...this.summary.failed], indexesFailed: [...this.summary.indexesFailed] };
  }

  /** The run's figures as exposition families (`run --metrics-port`). */
  metricFamilies(): MetricFamily[] {
    const summary = this.progress;
    return this.metrics.families(this.lags(), { records: this.reads.records, bytes: this.reads.bytes }, summary);
  }

  /** Each partition's lag: the LSO its event source last learnt minus its indexed_end; seconds since it was last caught up (or since the run began). */
  private lags(now = Date.now()): PartitionLag[] {
    const rows: LagRow[] = [];
    for (const indexer of this.runtime.indexers.values()) {
      const lso = this.sources.get(`${indexer.table.topic}-${indexer.partition}`)?.lastStableOffset;
      const end = indexer.heldLease?.indexedEnd;
      if (lso !== undefined && end !== undefined) rows.push({ table: indexer.table.name, partition: indexer.partition, indexedEnd: end, lastStableOffset: lso });
    }
    return this.partitionLags.lags(rows, now);
  }

  async run(signal?: AbortSignal): Promise<RunSummary> {
    try {
      for (;;) {
        this.metrics.rounds += 1;
        this.failedPumps.clear();
        if (Date.now() - this.lastDiscovery >= discoverEveryMs || this.options.once) await this.discoverOrWait();
        const delivered = await Promise.all([...this.sources.values()].map((source) => this.pump(source, signal)));
        // stopping: no tick (it would retry what is waiting, e.g. for the registry); leases go back below
        if (signal?.aborted) return this.progress;
        await this.tick();
        await this.renewLeases();
        if (!this.options.once && Date.now() - this.lastCompaction >= compactEveryMs) {
          this.lastCompaction = Date.now();
          this.compactions.poll(this.runtime.indexers.values());
        }
        this.lags();
        const idle = delivered.every((count) => count === 0);
        this.failingRounds = this.failedPumps.size > 0 ? this.failingRounds + 1 : 0;
        if (this.options.once && idle && this.failedPumps.size === 0) {
          // Read to the end; what could not be written (the registry cannot be reached) is
          // not done, and says so: exit 1, naming the partitions and why.
          this.summary.failed = [...(await this.flushAll())].map(([partition, error]) => ({ partition, error }));
          await this.drainIndexes();
          await this.compactions.drain(this.runtime.indexers.values());
          return this.progress;
        }
        if (this.options.once && this.failingRounds >= onceGiveUpRounds) {
          // Caught up as far as it could: say what it could not do, and stop.
          const unflushed = await this.flushAll();
          this.summary.failed = [...new Map([...this.failedPumps, ...unflushed])].map(([partition, error]) => ({ partition, error }));
          await this.drainIndexes();
          return this.progress;
        }
        if (signal?.aborted) return this.progress;
        if (idle || this.failedPumps.size > 0) await pause(this.options.pollIntervalMs, signal);
      }
    } finally {
      await this.compactions.close();
      await this.indexes.close();
      await Promise.allSettled([...this.runtime.indexers.values()].map((indexer) => indexer.release()));
    }
  }

  /**
   * A long-lived indexer outlives outages: when the catalog or Kafka cannot be reached,
   * discovery says what it waits for and is tried again next round; partitions already
   * known go on being pumped (and fail, and are retried, on their own).
   */
  private async discoverOrWait(): Promise<void> {
    try {
      await this.discover();
    } catch (error) {
      if (error instanceof MemoryBudgetError) throw error;
      const message = `looking for tables and partitions failed, trying again: ${(error as Error).message}`;
      this.metrics.failed('discovery');
      this.log(message);
      this.failedPumps.set('discovery', message);
    }
  }

  /** New tables and partitions (added to a topic later) get an event source starting at their indexed end. */
  private async discover(): Promise<void> {
    this.lastDiscovery = Date.now();
    // Indexes not active yet get a background driver (live indexing goes on beside it).
    if (!this.options.once) await this.indexes.poll();
    const wanted = new Set<string>();
    const tables = await listTables(this.engine.catalog).catch((error: Error) => {
      throw new Error(`the catalog at ${redact(this.engine.config.databaseUrl)} does not answer (${error.message})`);
    });
    for (const table of tables) {
      let partitions: number[];
      try {
        ({ partitions } = await checkedTopic(this.engine.catalog, this.engine.kafka, table));
      } catch (error) {
        if (error instanceof TableTopicError || error instanceof UnknownTopicError) {
          await this.tableWaits(table, error);
          continue;
        }
        throw new Error(`Kafka at ${this.engine.config.kafkaBrokers.join(',')} does not answer for topic ${table.topic} (${(error as Error).message})`);
      }
      for (const partition of partitions) {
        const indexer = await indexerFor(this.runtime, table, partition);
        const key = `${table.topic}-${partition}`;
        const known = this.discovered.has(indexer.key);
        this.discovered.add(indexer.key);
        wanted.add(indexer.key);
        const start = await this.indexedEnd(table.tableId, partition);
        const source = this.sources.get(key);
        if (!source) {
          this.sources.set(key, new PartitionEventSource(table.topic, partition, start, this.runtime.source, this.options.emulator));
        } else if (!known && start < source.position) {
          // Tables on one topic share its event source; it delivers from the table furthest
          // behind, and each table's indexer reads from its own indexed_end.
          source.position = start;
        }
      }
    }
    this.replan(tables.length === 0 ? 0 : Math.max(...tables.map((table) => table.settings.file_bytes)));
    // A dropped table's indexers stop and give their leases back.
    for (const [key, indexer] of this.runtime.indexers) {
      if (!wanted.has(key)) {
        await indexer.release().catch(() => {});
        this.runtime.indexers.delete(key);
        this.discovered.delete(key);
      }
    }
  }

  /**
   * A table whose topic is gone, or is another topic under its name, indexes nothing: each
   * of its partitions says why (status), the other tables go on, and `--once` names it
   * among what it could not do.
   */
  private async tableWaits(table: TableRecord, error: TableTopicError | UnknownTopicError): Promise<void> {
    const reason = error instanceof UnknownTopicError
      ? `${error.message}: table ${table.name} waits for it (create the topic again, or \`offsetlake table drop ${table.name}\`)`
      : error.message;
    for (const { partition } of await indexedEnds(this.engine.catalog, table.tableId)) await setWaitingReason(this.engine.catalog, table.tableId, partition, reason, { owner: this.runtime.owner });
    if (this.tablesWaiting.get(table.name) !== reason) this.log(`table ${table.name}: ${reason}`, { table: table.name });
    this.tablesWaiting.set(table.name, reason);
    this.failedPumps.set(`table ${table.name}`, reason);
  }

  private async indexedEnd(tableId: bigint, partition: number): Promise<bigint> {
    return (await indexedEnds(this.engine.catalog, tableId)).find((p) => p.partition === partition)?.indexedEnd ?? 0n;
  }

  /** Records the deliveries of one partition read; a partition whose deliveries keep failing waits for the next round. */
  private async pump(source: PartitionEventSource, signal?: AbortSignal): Promise<number> {
    const before = { redelivered: source.redelivered, records: source.deliveredRecords, events: source.delivered };
    try {
      await source.pump(async (delivery) => {
        try {
          const outcomes = await this.deliveries(delivery);
          this.countOutcomes(outcomes);
          // A backlog arrives as many deliveries in one pump: the budget holds after each of them.
          await this.enforceBudget();
          return outcomes;
        } catch (error) {
          // The tables of the delivery that did not fail committed their files all the same.
          if (error instanceof DeliveryFailedError) this.countOutcomes(error.outcomes);
          this.metrics.failed('delivery');
          this.log(`${source.topic}-${source.partition}: delivery failed, will be delivered again: ${(error as Error).message}`, { topic: source.topic, partition: source.partition });
          throw error;
        }
      }, signal);
    } catch (error) {
      this.failedPumps.set(`${source.topic}-${source.partition}`, (error as Error).message);
    }
    this.summary.events += source.delivered - before.events;
    this.summary.redelivered += source.redelivered - before.redelivered;
    return source.deliveredRecords - before.records;
  }

  private countOutcomes(outcomes: readonly DeliveryOutcome[]): void {
    for (const outcome of outcomes) {
      this.summary.rangesCommitted += outcome.rangesCommitted;
      this.summary.filesCommitted += outcome.filesCommitted;
    }
  }

  /** Idle partitions: seal ranges whose first record was read `file_window` ago. */
  private async tick(): Promise<void> {
    for (const indexer of this.runtime.indexers.values()) {
      if (indexer.openBytes === 0) continue;
      const result = await indexer.advance().catch((error) => this.failed(indexer, error));
      if (result) this.count(result.committed);
    }
  }

  /**
   * The budget's split for the partitions known now. Too small a budget is refused before
   * anything is read; one that becomes too small later (partitions added) is said, and
   * ranges are kept at the smallest size worth a file.
   */
  private replan(largestFileBytes: number): void {
    const partitions = this.runtime.indexers.size;
    if (partitions === 0 || (this.plan && this.plan.partitions === partitions)) return;
    const demand = { partitions, builds: this.options.maxConcurrentBuilds, deliveries: this.options.deliveriesAtOnce, largestFileBytes };
    let plan = planMemory(this.options.memoryBudgetBytes, demand, this.options.memoryCosts);
    if ('problem' in plan && !this.options.memoryBudgetGiven) {
      // No --memory: the default is a starting point, not a limit the user asked for.
      plan = planMemory(plan.neededBytes, demand, this.options.memoryCosts);
    }
    if ('problem' in plan) {
      if (!this.plan) throw new MemoryBudgetError(plan.problem);
      const smallest = this.options.memoryCosts.minRangeBytes;
      this.log(`${plan.problem}; going on with ranges of ${smallest} bytes, over the budget`);
      this.plan = { ...this.plan, partitions, rangeBytes: smallest, heldBytes: 2 * smallest };
      return;
    }
    this.plan = plan;
    // Only a budget the user gave bounds a batch: without --memory the plan is a starting point.
    if (this.options.memoryBudgetGiven) this.runtime.maxBatchBytes = plan.batchBytes;
    this.log(describePlan(plan));
  }

  /**
   * After each event: a range that reached its share is sealed (capacity); while the
   * ranges held in memory (open, and sealed ones being built and committed) exceed their
   * part of the budget, the largest open range is sealed, or, when all that is held is
   * being committed, this partition waits for those commits: it reads nothing meanwhile.
   */
  private async enforceBudget(): Promise<void> {
    const plan = this.plan;
    if (!plan) return;
    for (;;) {
      const indexers = [...this.runtime.indexers.values()];
      const held = indexers.reduce((sum, indexer) => sum + indexer.openBytes + indexer.committingBytes, 0);
      const full = indexers.find((indexer) => indexer.openBytes >= plan.rangeBytes);
      if (!full && held <= plan.heldBytes) return;
      const largest = full ?? indexers.reduce((a, b) => (b.openBytes > a.openBytes ? b : a));
      if (largest.openBytes === 0) {
        await indexers.reduce((a, b) => (b.committingBytes > a.committingBytes ? b : a)).whenIdle();
        continue;
      }
      const range = await largest.flush('capacity').catch((error) => this.failed(largest, error));
      if (range) {
        this.summary.capacitySeals += 1;
        this.count([range]);
      } else return; // it could not seal (its failure is said): the next event tries again
    }
  }

  private async renewLeases(): Promise<void> {
    const now = Date.now();
    const ttl = Math.min(...[...this.runtime.indexers.values()].map((indexer) => indexer.table.settings.lease_ttl));
    if (now - this.lastRenew < ttl / 3) return;
    this.lastRenew = now;
    await Promise.all([...this.runtime.indexers.values()].map((indexer) => indexer.renew().catch((error) => this.failed(indexer, error))));
  }

  /** `once`: every index that is not active is driven to active; one that cannot be is reported with the failed partitions. */
  private async drainIndexes(): Promise<void> {
    this.summary.indexesFailed = await this.indexes.drain();
  }

  /** Seals and commits every open range; returns the partitions (`table/partition`) that still hold records they could not commit, with why. */
  private async flushAll(): Promise<Map<string, string>> {
    const unflushed = new Map<string, string>();
    for (const indexer of this.runtime.indexers.values()) {
      let reason: string | undefined;
      const range = await indexer.flush('flush').catch((error: Error) => {
        reason = error.message;
        return this.failed(indexer, error);
      });
      if (range) this.count([range]);
      if (reason !== undefined) {
        const end = indexer.heldLease?.indexedEnd;
        const from = end === undefined ? 'its records' : `its records from offset ${end} on`;
        unflushed.set(`${indexer.table.name}/${indexer.partition}`, `${reason}; ${from} are not indexed yet (the next run reads them again)`);
      }
    }
    return unflushed;
  }

  private count(ranges: { files: unknown[] }[]): void {
    this.summary.rangesCommitted += ranges.length;
    this.summary.filesCommitted += ranges.reduce((sum, range) => sum + range.files.length, 0);
  }

  private async failed(indexer: PartitionIndexer, error: unknown): Promise<undefined> {
    this.metrics.failed('partition');
    this.log(`${indexer.table.name}/${indexer.partition}: ${(error as Error).message}`, { table: indexer.table.name, partition: indexer.partition });
    await indexer.noteFailure(error);
    return undefined;
  }
}
