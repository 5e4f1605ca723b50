/**
 * A local stand-in for Lambda's Kafka event source mapping, for `offsetlake run`. Per
 * partition, in order, it delivers "committed records up to offset X" to the handler
 * (`indexPartitions`, the function the MSK entry calls too) in process: X is the
 * partition's last stable offset, which it learns with one ListOffsets per pump, and no
 * record travels with the delivery. The handler's own committed read is then the only
 * read of each record: nothing is read twice, nor turned into base64.
 *
 * A backlog is delivered in chunks as the mapping would cut it into events: each
 * delivery's read stops after the Fetch that brings `batchSize` records or the record
 * bytes of a `maxPayloadBytes` event (src/kafka/read.ts `stopAfter`), so the runner's
 * memory budget is checked after each one. A chunk ends where that Fetch's batches end,
 * and the next chunk reads on from there, so no Fetch brings a batch twice.
 *
 * What the mapping does with failures stays: a delivery that throws is delivered again
 * (after a pause), and only a delivery that succeeds moves the partition's position on
 * (to where the handler's read of it ended), as the mapping commits consumer offsets
 * after a successful invocation. After `attempts` failures the pump stops with the error;
 * the next pump starts again from the same position. A position below Kafka's earliest
 * offset (retention) goes on from the earliest: the handler's read resets there itself
 * (and records the offsets it lost), and the position follows it.
 */
import type { DeliveryOutcome, PartitionDelivery } from '../indexer/handler.js';
import type { CommittedSource } from '../kafka/source.js';
import { retrying } from '../common/retry.js';

export interface EmulatorOptions {
  /** Records per delivery at most, as the mapping's BatchSize (at most 10,000), give or take the Fetch that reaches it. */
  batchSize: number;
  /** The event payload limit (6 MB for Lambda): a delivery reads the record bytes such an event holds, 3/4 of it (keys and values travel in base64). */
  maxPayloadBytes: number;
  /** Pause before redelivering a failed delivery. */
  retryDelayMs: number;
  /** Deliveries of one chunk per pump before the pump gives up (the chunk stays next). */
  attempts: number;
}

export const defaultEmulatorOptions: EmulatorOptions = {
  batchSize: 10_000,
  maxPayloadBytes: 6 * 1024 * 1024,
  retryDelayMs: 1000,
  attempts: 3,
};

/** Delivers one chunk to the handler; returns its outcome per table of the topic (none when no table indexes it). */
export type Deliver = (delivery: PartitionDelivery) => Promise<readonly DeliveryOutcome[]>;

export class PartitionEventSource {
  /** The consumer position: where the handler's read of the last successful delivery ended (its furthest-behind table's). */
  position: bigint;
  /** Deliveries that succeeded, records they read (summed over the topic's tables), and redeliveries, since this source was made. */
  delivered = 0;
  deliveredRecords = 0;
  redelivered = 0;
  /** The partition's last stable offset as the last pump learnt it (undefined before the first). */
  lastStableOffset: bigint | undefined;
  /** Records and bytes the deliveries have read: their mean size sizes the next ones. */
  private readonly seen = { records: 0, bytes: 0 };

  constructor(
    readonly topic: string,
    readonly partition: number,
    start: bigint,
    private readonly source: Pick<CommittedSource, 'lastStableOffset'>,
    private readonly options: EmulatorOptions,
  ) {
    this.position = start;
  }

  /** Delivers everything up to the partition's LSO, in chunks; returns the records the deliveries read. */
  async pump(deliver: Deliver, signal?: AbortSignal): Promise<number> {
    const lso = await this.source.lastStableOffset(this.topic, this.partition);
    this.lastStableOffset = lso;
    let count = 0;
    while (this.position < lso && !signal?.aborted) {
      const before = this.position;
      const outcomes = await this.deliverUntilDone({ topic: this.topic, partition: this.partition, until: lso, stopAfter: this.chunk() }, deliver, signal);
      // Tables on one topic share this source: it goes on from the one furthest behind (each
      // table's indexer reads from its own position). No table: the span is done.
      let reached = lso;
      for (const outcome of outcomes) {
        const position = BigInt(outcome.position);
        if (position < reached) reached = position;
        count += outcome.recordsRead;
        this.deliveredRecords += outcome.recordsRead;
        this.seen.records += outcome.recordsRead;
        this.seen.bytes += outcome.bytesRead;
      }
      this.position = reached;
      // A delivery that moved nothing on (its read found nothing stable past the position)
      // is not repeated in this pump: the next one looks at the LSO again.
      if (reached <= before) break;
    }
    return count;
  }

  /**
   * One event's worth: `batchSize` records and the record bytes of a `maxPayloadBytes`
   * event. A read's first Fetch cannot know how many records its bytes hold, so the bytes
   * are also held to `batchSize` records at the mean size this partition's reads have
   * shown; before any, a first delivery of 64 KiB learns it.
   */
  private chunk(): { records: number; bytes: number } {
    const payloadBytes = Math.floor((this.options.maxPayloadBytes * 3) / 4);
    const meanBytes = this.seen.records > 0 ? this.seen.bytes / this.seen.records : undefined;
    const recordsBytes = meanBytes === undefined ? 64 * 1024 : Math.max(1, Math.ceil(this.options.batchSize * meanBytes));
    return { records: this.options.batchSize, bytes: Math.min(payloadBytes, recordsBytes) };
  }

  private async deliverUntilDone(delivery: PartitionDelivery, deliver: Deliver, signal?: AbortSignal): Promise<readonly DeliveryOutcome[]> {
    const pausesMs = Array.from({ length: this.options.attempts - 1 }, () => this.options.retryDelayMs);
    const outcomes = await retrying({ pausesMs, signal }, () => true, async (attempt) => {
      if (attempt > 0) this.redelivered += 1;
      return deliver(delivery);
    });
    this.delivered += 1;
    return outcomes;
  }
}
