/**
 * A local stand-in for Lambda's Kafka event source mapping: per partition, in order, it
 * reads batches from Kafka and delivers them in the MSK event shape; a delivery that
 * throws is delivered again (after a pause), and only a delivery that succeeds moves the
 * partition's position on, as the event source mapping commits consumer offsets. After
 * `attempts` failures the pump stops with the error; the next pump starts again from
 * the same position.
 */
import { toKafkaEvent, type MskEvent } from '../events/msk.js';
import type { CommittedSource } from '../kafka/source.js';
import { retrying } from '../common/retry.js';
import { OffsetOutOfRangeError } from '../kafka/errors.js';
import type { KafkaRecord } from '../kafka/record.js';

export interface EmulatorOptions {
  /** Records per event (the mapping's BatchSize, at most 10,000). */
  batchSize: number;
  /** Event payload limit: 6 MB for Lambda. */
  maxPayloadBytes: number;
  /** Pause before redelivering a failed event. */
  retryDelayMs: number;
  /** Deliveries of one event per pump before the pump gives up (the event stays next). */
  attempts: number;
  bootstrapServers: string;
}

export const defaultEmulatorOptions: Omit<EmulatorOptions, 'bootstrapServers'> = {
  batchSize: 10_000,
  maxPayloadBytes: 6 * 1024 * 1024,
  retryDelayMs: 1000,
  attempts: 3,
};

export type Deliver = (event: MskEvent) => Promise<void>;

/** Base64 grows bytes by 4/3; the rest of a record's JSON is small next to its value. */
function payloadBytes(record: KafkaRecord): number {
  let bytes = 160 + Math.ceil(((record.key?.byteLength ?? 0) + (record.value?.byteLength ?? 0)) / 3) * 4;
  for (const [name, value] of record.headers) bytes += name.length + 8 + (value?.byteLength ?? 0) * 4;
  return bytes;
}

export class PartitionEventSource {
  /** The consumer position: the offset after the last record delivered successfully. */
  position: bigint;
  /** Events and records delivered successfully, and redeliveries, since this source was made. */
  delivered = 0;
  deliveredRecords = 0;
  redelivered = 0;

  constructor(
    readonly topic: string,
    readonly partition: number,
    start: bigint,
    private readonly source: CommittedSource,
    private readonly options: EmulatorOptions,
  ) {
    this.position = start;
  }

  /** Delivers everything up to the partition's LSO, in events; returns the records delivered. */
  async pump(deliver: Deliver, signal?: AbortSignal): Promise<number> {
    const lso = await this.source.lastStableOffset(this.topic, this.partition);
    let count = 0;
    let pending: KafkaRecord[] = [];
    let pendingBytes = 0;
    const send = async () => {
      if (pending.length === 0) return;
      const event = toKafkaEvent([{ topic: this.topic, partition: this.partition, records: pending }], this.options.bootstrapServers);
      await this.deliverUntilDone(event, deliver, signal);
      this.position = pending[pending.length - 1]!.offset + 1n;
      count += pending.length;
      this.deliveredRecords += pending.length;
      pending = [];
      pendingBytes = 0;
    };
    if (this.position >= lso) return 0;
    try {
      for await (const batch of this.source.read(this.topic, this.partition, this.position, lso)) {
        for (const record of batch.records) {
          const bytes = payloadBytes(record);
          if (pending.length >= this.options.batchSize || (pending.length > 0 && pendingBytes + bytes > this.options.maxPayloadBytes)) await send();
          pending.push(record);
          pendingBytes += bytes;
        }
        if (signal?.aborted) break;
      }
    } catch (error) {
      // Like a consumer whose position fell below retention: it resets to the earliest
      // offset. (The indexer, reading from its own indexed_end, records what was lost.)
      if (!(error instanceof OffsetOutOfRangeError && error.bound === 'below-earliest' && pending.length === 0)) throw error;
      this.position = error.earliest;
      return this.pump(deliver, signal);
    }
    await send();
    return count;
  }

  private async deliverUntilDone(event: MskEvent, deliver: Deliver, signal?: AbortSignal): Promise<void> {
    const pausesMs = Array.from({ length: this.options.attempts - 1 }, () => this.options.retryDelayMs);
    await retrying({ pausesMs, signal }, () => true, async (attempt) => {
      if (attempt > 0) this.redelivered += 1;
      await deliver(event);
    });
    this.delivered += 1;
  }
}
