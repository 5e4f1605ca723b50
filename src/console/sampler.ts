/**
 * Takes `status` (src/tables/status.ts, what `offsetlake status` shows) every few seconds
 * for the console, keeps the last of them whole and a bounded history of the figures the
 * charts and the lag in seconds need. One sampler per `serve` process, running whether or
 * not a page is open, so a page opened late still has the recent past to plot.
 */
import type { PartitionStatus } from '../tables/status.js';
import { partitionKey, SampleHistory } from './history.js';

/** 3 s between samples and 600 samples: the last 30 minutes. */
export const sampleEveryMs = 3_000;
export const historySamples = 600;

export interface StatusSample {
  at: number;
  rows: PartitionStatus[];
}

export class ConsoleSampler {
  readonly history: SampleHistory;
  private last: StatusSample | undefined;
  private lastError: string | undefined;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

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
      try {
        const rows = await this.status();
        const at = this.clock();
        this.last = { at, rows };
        this.lastError = undefined;
        this.history.add({
          at,
          partitions: rows.map((r) => ({ key: partitionKey(r.table, r.partition), indexedStart: r.indexedStart, indexedEnd: r.indexedEnd, lastStableOffset: r.lastStableOffset })),
        });
      } catch (error) {
        this.lastError = (error as Error).message;
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }

  /** The newest sample, waiting for the first; throws why the last attempt failed, if it did. */
  async latest(): Promise<StatusSample> {
    if (!this.last && !this.lastError) await (this.inFlight ?? this.sample());
    if (this.lastError !== undefined) throw new Error(this.lastError);
    return this.last!;
  }
}
