/**
 * Writing records, for tests, benchmarks and the demo (offsetlake itself only reads):
 * a transaction that commits or aborts, or plain idempotent sends.
 */
import { ProduceAcks, type MessageToProduce, type Producer } from '@platformatic/kafka';

type Transaction = Awaited<ReturnType<Producer['beginTransaction']>>;
import type { KafkaConnection } from './connect.js';
import { lastStableOffsets } from './offsets.js';
import { checkPartitions } from './topics.js';

export interface RecordToProduce {
  /** Default 0. Kafka's partitioner is not used: tests say where each record goes. */
  partition?: number;
  key?: Buffer | string | null;
  value: Buffer | string | null;
  /** Names may repeat; order is kept. */
  headers?: [string, Buffer | string | null][];
  /** CreateTime in ms; default now. */
  timestamp?: bigint | number;
}

export interface ProducedPartition {
  partition: number;
  /** Offset of the first record this call wrote to the partition. */
  firstOffset: bigint;
  /** How many records this call wrote to it. */
  count: number;
  /** Offset of the last record this call wrote to it. */
  lastOffset: bigint;
}

export interface ProduceOptions {
  /** Write in a transaction with this transactional id; without it, plain idempotent sends. */
  transactionalId?: string;
  /** Abort the transaction instead of committing it (needs transactionalId). */
  abort?: boolean;
  compression?: 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
  /** Bytes per produce request and partition batch; keep under the broker's message.max.bytes (1 MiB by default). Default 512 KiB. */
  chunkBytes?: number;
  /** Called after each produce request is acknowledged, with how many records it held (they are written, in order). */
  onSent?: (records: number) => void;
}

const toBuffer = (v: Buffer | string | null | undefined): Buffer | undefined =>
  v === null || v === undefined ? undefined : typeof v === 'string' ? Buffer.from(v) : v;

function toMessage(topic: string, record: RecordToProduce): MessageToProduce<Buffer, Buffer, Buffer, Buffer> {
  const headers = new Map<Buffer, Buffer>();
  // Distinct Buffer objects as keys keep repeated names; a null header value is written as null.
  for (const [name, value] of record.headers ?? []) headers.set(Buffer.from(name), toBuffer(value) as Buffer);
  const message: MessageToProduce<Buffer, Buffer, Buffer, Buffer> = { topic, partition: record.partition ?? 0, headers };
  const key = toBuffer(record.key);
  const value = toBuffer(record.value);
  if (key !== undefined) message.key = key;
  if (value !== undefined) message.value = value;
  if (record.timestamp !== undefined) message.timestamp = BigInt(record.timestamp);
  return message;
}

function recordSize(record: RecordToProduce): number {
  const len = (v: Buffer | string | null | undefined) => (v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);
  let size = 32 + len(record.key) + len(record.value);
  for (const [name, value] of record.headers ?? []) size += 8 + Buffer.byteLength(name) + len(value);
  return size;
}

/**
 * How far a record's timestamp may lie from the first timestamp of its batch (same
 * partition, same request). @platformatic/kafka 2.12 writes a record's timestamp as a
 * delta from its batch's first one with @platformatic/dynamic-buffer 0.3.1, whose 64-bit
 * zigzag varint is wrong from 2^31 ms (24.8 days) on: `(v << 1n) ^ (v >> 31n)` instead of
 * `>> 63n`, and a 32-bit mask ends the varint early. Such a record is then written with
 * another timestamp (a few ms off, or years) or refused by the broker. A batch therefore
 * never spans that much; one day is kept in reserve for records without a timestamp,
 * which the library stamps when it sends them.
 */
const MAX_TIMESTAMP_SPAN = 2 ** 31 - 1 - 86_400_000;

function chunks(records: RecordToProduce[], chunkBytes: number): RecordToProduce[][] {
  const out: RecordToProduce[][] = [];
  let current: RecordToProduce[] = [];
  let size = 0;
  let firstTimestamps = new Map<number, number>();
  const now = Date.now();
  for (const record of records) {
    const s = recordSize(record);
    const timestamp = record.timestamp === undefined ? now : Number(record.timestamp);
    const first = firstTimestamps.get(record.partition ?? 0);
    const tooFar = first !== undefined && Math.abs(timestamp - first) > MAX_TIMESTAMP_SPAN;
    if (current.length > 0 && (size + s > chunkBytes || tooFar)) {
      out.push(current);
      current = [];
      size = 0;
      firstTimestamps = new Map();
    }
    if (!firstTimestamps.has(record.partition ?? 0)) firstTimestamps.set(record.partition ?? 0, timestamp);
    current.push(record);
    size += s;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * An open transaction: records sent through it are invisible to read_committed readers
 * until `commit()`. Kafka answers EndTxn before it has written the COMMIT/ABORT markers to
 * the partitions, so the LSO moves a moment later; `commit()` and `abort()` wait until the
 * LSO of every partition written has passed the transaction's last record (its marker is
 * written), so that a read right after sees the outcome.
 */
export interface OpenTransaction {
  readonly transactionalId: string;
  send(topic: string, records: RecordToProduce[]): Promise<ProducedPartition[]>;
  commit(): Promise<void>;
  abort(): Promise<void>;
  /** Closes the producer (aborting nothing: an unfinished transaction is aborted by Kafka after its timeout, or fenced by the next producer with the same id). */
  close(): Promise<void>;
}

async function sendChunks(
  send: (messages: MessageToProduce<Buffer, Buffer, Buffer, Buffer>[]) => Promise<{ offsets?: { topic: string; partition: number; offset: bigint }[] }>,
  topic: string,
  records: RecordToProduce[],
  chunkBytes: number,
  onSent?: (records: number) => void,
): Promise<ProducedPartition[]> {
  const produced = new Map<number, ProducedPartition>();
  for (const chunk of chunks(records, chunkBytes)) {
    const result = await send(chunk.map((r) => toMessage(topic, r)));
    const counts = new Map<number, number>();
    for (const r of chunk) counts.set(r.partition ?? 0, (counts.get(r.partition ?? 0) ?? 0) + 1);
    for (const { partition, offset } of result.offsets ?? []) {
      const count = counts.get(partition) ?? 0;
      const lastOffset = offset + BigInt(count) - 1n;
      const seen = produced.get(partition);
      if (seen) {
        seen.count += count;
        if (lastOffset > seen.lastOffset) seen.lastOffset = lastOffset;
      } else produced.set(partition, { partition, firstOffset: offset, count, lastOffset });
    }
    onSent?.(chunk.length);
  }
  return [...produced.values()].sort((a, b) => a.partition - b.partition);
}

/**
 * The library wraps a partition number beyond the count its producer last saw silently
 * (partition % count): an unknown partition is refused instead, and the check refreshes
 * the producer's own metadata, so that a partition added to the topic since (the
 * library caches metadata for 5 s) is written to, not another one (chaos grow-partitions).
 */
async function checkTargets(producer: Producer, topic: string, records: RecordToProduce[]): Promise<void> {
  const partitions = [...new Set(records.map((r) => r.partition ?? 0))];
  await checkPartitions(producer, partitions.map((partition) => ({ topic, partition })));
}

/**
 * InitProducerId as a new producer: producer id -1, epoch -1. @platformatic/kafka 2.12
 * sends 0 / 0 by default, which the transaction coordinator reads as "I am producer 0,
 * epoch 0" (KIP-360) and answers PRODUCER_FENCED whenever the transactional id was used
 * before, by an earlier process or an earlier producer of this one.
 */
const newProducerIdentity = { idempotent: true, producerId: -1n, producerEpoch: -1 } as const;

/**
 * A transactional producer that runs one transaction after another (`begin()` again once
 * the last one is committed or aborted); creating it fences any older producer with the same id.
 */
export interface TransactionalProducer {
  readonly transactionalId: string;
  /** Begins the next transaction; its `close()` closes the producer. */
  begin(): Promise<OpenTransaction>;
  close(): Promise<void>;
}

export function transactionalProducer(kafka: KafkaConnection, transactionalId: string, options: Pick<ProduceOptions, 'compression' | 'chunkBytes' | 'onSent'> = {}): TransactionalProducer {
  const producer: Producer = kafka.producer({ transactionalId, ...newProducerIdentity, acks: ProduceAcks.ALL, compression: options.compression ?? 'none' });
  const chunkBytes = options.chunkBytes ?? 512 * 1024;
  const close = () => producer.close();
  return {
    transactionalId,
    close,
    async begin() {
      const transaction: Transaction = await producer.beginTransaction();
      const written = new Map<string, { topic: string; partition: number; lastOffset: bigint }>();
      const end = async (commit: boolean) => {
        await (commit ? transaction.commit() : transaction.abort());
        await waitForStable(kafka, [...written.values()]);
      };
      return {
        transactionalId,
        async send(topic, records) {
          await checkTargets(producer, topic, records);
          const produced = await sendChunks((messages) => transaction.send({ messages }), topic, records, chunkBytes, options.onSent);
          for (const p of produced) {
            const key = `${topic}\u0000${p.partition}`;
            const seen = written.get(key);
            if (!seen || p.lastOffset > seen.lastOffset) written.set(key, { topic, partition: p.partition, lastOffset: p.lastOffset });
          }
          return produced;
        },
        commit: () => end(true),
        abort: () => end(false),
        close,
      };
    },
  };
}

/** Begins a transaction on a new transactional producer (which fences any older producer with the same id). */
export async function openTransaction(kafka: KafkaConnection, transactionalId: string, options: Pick<ProduceOptions, 'compression' | 'chunkBytes'> = {}): Promise<OpenTransaction> {
  const producer = transactionalProducer(kafka, transactionalId, options);
  try {
    return await producer.begin();
  } catch (error) {
    await producer.close().catch(() => {});
    throw error;
  }
}

/** Waits until each partition's LSO is past the given offset: the transaction holding it has its marker. */
async function waitForStable(kafka: KafkaConnection, partitions: { topic: string; partition: number; lastOffset: bigint }[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = partitions;
  while (pending.length > 0) {
    const lsos = await lastStableOffsets(kafka, pending.map(({ topic, partition }) => ({ topic, partition })));
    pending = pending.filter((p, i) => lsos[i]! <= p.lastOffset);
    if (pending.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`the transaction ended but the LSO of ${pending.map((p) => `${p.topic}-${p.partition}`).join(', ')} did not pass its last offset within ${timeoutMs} ms (another open transaction holds it?)`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Writes records to a topic. With `transactionalId`, in one transaction that is then
 * committed, or aborted when `abort` is set; without, as plain idempotent sends.
 * Returns, per partition written, the first offset written and the count.
 */
export async function produce(kafka: KafkaConnection, topic: string, records: RecordToProduce[], options: ProduceOptions = {}): Promise<ProducedPartition[]> {
  if (options.abort && !options.transactionalId) throw new Error('abort needs a transactionalId: only a transaction can be aborted');
  if (records.length === 0) return [];
  if (options.transactionalId) {
    const tx = await openTransaction(kafka, options.transactionalId, options);
    try {
      const produced = await tx.send(topic, records);
      if (options.abort) await tx.abort();
      else await tx.commit();
      return produced;
    } finally {
      await tx.close();
    }
  }
  const producer = kafka.producer({ ...newProducerIdentity, acks: ProduceAcks.ALL, compression: options.compression ?? 'none' });
  try {
    await checkTargets(producer, topic, records);
    return await sendChunks((messages) => producer.send({ messages }), topic, records, options.chunkBytes ?? 512 * 1024, options.onSent);
  } finally {
    await producer.close();
  }
}
