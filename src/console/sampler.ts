/**
 * Takes `status` (src/table-topic/status.ts, what `offsetlake status` shows) every few seconds
 * for the console, keeps the last of them whole and a bounded history of the figures the
 * charts and the lag in seconds need. One sampler per `serve` process, running whether or
 * not a page is open, so a page opened late still has the recent past to plot. serve's
 * /metrics takes its lag from the samples too (`next`), so a scrape asks neither the
 * catalog nor Kafka anything of its own.
 *
 * Each sample carries that lag as /metrics publishes it (src/table-topic/lag.ts, as `run
 * --metrics-port` does): records behind, and seconds since the sample in which the
 * partition was last seen caught up, the one before its current streak of samples behind;
 * 0 while caught up. The sampler remembers that time per partition for the process's
 * life, not only for the history's 30 minutes, so a long lag keeps its seconds. A
 * partition behind in every sample so far (behind when serve started) has not been seen
 * caught up and cannot be dated: its seconds are absent, not a guess.
 */
import type { PartitionLag } from '../common/lag-metrics.js';
import { PartitionLags } from '../table-topic/lag.js';
import type { PartitionStatus } from '../table-topic/status.js';
import { partitionKey, SampleHistory } from './history.js';

/** 3 s between samples and 600 samples: the last 30 minutes. */
export const sampleEveryMs = 3_000;
export const historySamples = 600;

export interface StatusSample {
  at: number;
  rows: PartitionStatus[];
  /** The rows' lag at `at`, as /metrics publishes it (rows without an LSO left out). */
  lags: PartitionLag[];
}

export class ConsoleSampler {
  readonly history: SampleHistory;
  /** No time to fall back on: a partition not yet seen caught up has no seconds. */
  private readonly partitionLags = new PartitionLags();
  private last: StatusSample | undefined;
  private lastError: string | undefined;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Settled by the next sample to begin: what `next` hands out. */
  private upcoming = upcomingSample();

  constructor(
    private readonly status: () => Promise<PartitionStatus[]>,
    readonly everyMs = sampleEveryMs,
    capacity = historySamples,
    private readonly clock: () => number = Date.now,
  ) {
    this.history = new SampleHistory(capacity);
  }

  start(): void {
    void this.sample();
    this.timer ??= setInterval(() => void this.sample(), this.everyMs);
    // the history must not keep a process alive that has stopped serving
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  /** One sample now; a sample still under way is not doubled (a slow Kafka would pile them up). */
  sample(): Promise<void> {
    this.inFlight ??= (async () => {
      const waiting = this.upcoming;
      this.upcoming = upcomingSample();
      try {
        const rows = await this.status();
        const at = this.clock();
        this.last = { at, rows, lags: this.partitionLags.lags(rows, at) };
        this.lastError = undefined;
        this.history.add({
          at,
          partitions: rows.map((r) => ({ key: partitionKey(r.table, r.partition), indexedStart: r.indexedStart, indexedEnd: r.indexedEnd, lastStableOffset: r.lastStableOffset })),
        });
        waiting.resolve(this.last);
      } catch (error) {
        this.lastError = (error as Error).message;
        waiting.reject(error);
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }

  /**
   * The next sample to begin (on the timer's next tick; at once when the sampler is stopped),
   * never one under way already: it began after the caller asked, so it holds whatever
   * happened before, as a status taken then would; throws why it failed, if it did.
   */
  async next(): Promise<StatusSample> {
    const upcoming = this.upcoming.promise;
    if (this.timer === undefined) {
      await this.inFlight;
      void this.sample();
    }
    return upcoming;
  }

  /** The newest sample, waiting for the first; throws why the last attempt failed, if it did. */
  async latest(): Promise<StatusSample> {
    if (!this.last && !this.lastError) await (this.inFlight ?? this.sample());
    if (this.lastError !== undefined) throw new Error(this.lastError);
    return this.last!;
  }
}

/** A sample to come, with its settling functions; a failure no one waits for is not an unhandled rejection. */
function upcomingSample(): PromiseWithResolvers<StatusSample> {
  const upcoming = Promise.withResolvers<StatusSample>();
  upcoming.promise.catch(() => {});
  return upcoming;
}
