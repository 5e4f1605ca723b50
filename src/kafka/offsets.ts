/**
 * Offsets of a partition, from Kafka's ListOffsets API. Each function has a batched form
 * taking many partitions: one ListOffsets request per leader broker covers them all.
 *
 * - earliest offset: the first offset Kafka still holds (its log start offset; moves up
 *   with retention and DeleteRecords).
 * - last stable offset (LSO): ListOffsets(timestamp -1, READ_COMMITTED). The first offset
 *   that may still belong to an open transaction; equal to the high watermark when no
 *   transaction is open. A read_committed fetch never returns records at or above it.
 * - high watermark: ListOffsets(timestamp -1, READ_UNCOMMITTED). One past the last
 *   replicated offset; includes records of open transactions.
 * - offset for time t: ListOffsets(timestamp t, READ_COMMITTED). See `offsetsForTimes`.
 */
import { FetchIsolationLevels, type Admin } from '@platformatic/kafka';
import type { KafkaConnection } from './connect.js';
import { KafkaRequestError, partitionName, protocolErrorCodes } from './errors.js';
import { checkPartitions } from './topics.js';

export interface PartitionRef {
  topic: string;
  partition: number;
}

const EARLIEST = -2n;
const LATEST = -1n;

interface ListOffsetsRequest extends PartitionRef {
  timestamp: bigint;
}

interface ListedOffset {
  offset: bigint;
  /** The timestamp of the record found by a timestamp lookup; -1 otherwise. */
  timestamp: bigint;
}

/** One ListOffsets per leader for all the requests, answers in the order asked. */
async function listOffsets(client: Admin, requests: ListOffsetsRequest[], isolationLevel: number): Promise<ListedOffset[]> {
  if (requests.length === 0) return [];
  const seen = new Set<string>();
  for (const r of requests) {
    const key = partitionName(r.topic, r.partition);
    if (seen.has(key)) throw new Error(`${key} is asked for twice in one ListOffsets request; ask once per partition`);
    seen.add(key);
  }
  await checkPartitions(client, requests);
  const byTopic = new Map<string, { partitionIndex: number; timestamp: bigint }[]>();
  for (const r of requests) {
    let list = byTopic.get(r.topic);
    if (!list) byTopic.set(r.topic, (list = []));
    list.push({ partitionIndex: r.partition, timestamp: r.timestamp });
  }
  let result;
  try {
    result = await client.listOffsets({
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
      isolationLevel: isolationLevel as 0 | 1,
    });
  } catch (error) {
    throw listOffsetsError(error, requests);
  }
  const found = new Map<string, ListedOffset>();
  for (const topic of result) {
    for (const p of topic.partitions) found.set(partitionName(topic.name, p.partitionIndex), { offset: p.offset, timestamp: p.timestamp });
  }
  return requests.map((r) => {
    const answer = found.get(partitionName(r.topic, r.partition));
    if (!answer) throw new Error(`ListOffsets returned no answer for ${partitionName(r.topic, r.partition)}`);
    return answer;
  });
}

/** Names the partition a ListOffsets error was about, when the library's error says which. */
function listOffsetsError(error: unknown, requests: ListOffsetsRequest[]): Error {
  const code = protocolErrorCodes(error)[0];
  if (code === undefined) return error as Error;
  let where: PartitionRef | undefined;
  const visit = (e: unknown, depth: number): void => {
    if (where || depth > 5 || !(e instanceof Error)) return;
    const { path, response } = e as Error & { path?: string; response?: { topics?: { name: string; partitions: { partitionIndex: number }[] }[] } };
    const match = typeof path === 'string' ? /^\/topics\/(\d+)\/partitions\/(\d+)$/.exec(path) : null;
    if (match && response?.topics) {
      const t = response.topics[Number(match[1])];
      const p = t?.partitions[Number(match[2])];
      if (t && p) where = { topic: t.name, partition: p.partitionIndex };
    }
    if (e instanceof AggregateError) for (const inner of e.errors) visit(inner, depth + 1);
    if (e.cause) visit(e.cause, depth + 1);
  };
  visit(error, 0);
  const first = where ?? requests[0]!;
  return new KafkaRequestError('ListOffsets', first.topic, first.partition, code, { cause: error });
}

export async function earliestOffsets(kafka: KafkaConnection, partitions: PartitionRef[]): Promise<bigint[]> {
  const listed = await listOffsets(kafka.admin(), partitions.map((p) => ({ ...p, timestamp: EARLIEST })), FetchIsolationLevels.READ_UNCOMMITTED);
  return listed.map((l) => l.offset);
}

export async function lastStableOffsets(kafka: KafkaConnection, partitions: PartitionRef[]): Promise<bigint[]> {
  const listed = await listOffsets(kafka.admin(), partitions.map((p) => ({ ...p, timestamp: LATEST })), FetchIsolationLevels.READ_COMMITTED);
  return listed.map((l) => l.offset);
}

export async function highWatermarks(kafka: KafkaConnection, partitions: PartitionRef[]): Promise<bigint[]> {
  const listed = await listOffsets(kafka.admin(), partitions.map((p) => ({ ...p, timestamp: LATEST })), FetchIsolationLevels.READ_UNCOMMITTED);
  return listed.map((l) => l.offset);
}

/** The first offset Kafka still holds (log start offset). */
export async function earliestOffset(kafka: KafkaConnection, topic: string, partition: number): Promise<bigint> {
  return (await earliestOffsets(kafka, [{ topic, partition }]))[0]!;
}

/** The last stable offset: no offset at or above it is readable with read_committed yet. */
export async function lastStableOffset(kafka: KafkaConnection, topic: string, partition: number): Promise<bigint> {
  return (await lastStableOffsets(kafka, [{ topic, partition }]))[0]!;
}

/** One past the last replicated offset, open transactions included. */
export async function highWatermark(kafka: KafkaConnection, topic: string, partition: number): Promise<bigint> {
  return (await highWatermarks(kafka, [{ topic, partition }]))[0]!;
}

export interface OffsetForTime {
  /** Where a read of the records at or after the time starts. */
  offset: bigint;
  /** The timestamp (ms) of the record at `offset`, or null when no stable record is that late (then `offset` is the LSO). */
  timestamp: bigint | null;
}

/**
 * For each partition, the first offset whose record timestamp is ≥ `timestampMs`
 * (Kafka's time index, ListOffsets by timestamp with READ_COMMITTED). Exactly:
 *
 * - Kafka looks at every record below the last stable offset, including records of
 *   aborted transactions and transaction markers, so the offset found may be one that a
 *   committed read skips. Every record before it has a timestamp < t.
 * - If no record below the LSO has a timestamp ≥ t (all are older, the partition is
 *   empty, or the only later ones are in a still-open transaction), the answer is the
 *   LSO at the time of asking, with `timestamp: null`: reading from there yields exactly
 *   the stable records at or after t that will ever exist below that point (none).
 * - Timestamps are CreateTime or LogAppendTime as the topic is configured; CreateTime
 *   need not grow with offsets, so later offsets can hold older records.
 */
export async function offsetsForTimes(kafka: KafkaConnection, requests: (PartitionRef & { timestampMs: number | bigint })[]): Promise<OffsetForTime[]> {
  for (const r of requests) {
    const t = BigInt(r.timestampMs);
    if (t < 0n) throw new Error(`a time lookup needs a timestamp ≥ 0 (ms since the epoch), got ${t} for ${partitionName(r.topic, r.partition)}`);
  }
  const listed = await listOffsets(kafka.admin(), requests.map((r) => ({ topic: r.topic, partition: r.partition, timestamp: BigInt(r.timestampMs) })), FetchIsolationLevels.READ_COMMITTED);
  const missing = requests.filter((_, i) => listed[i]!.offset < 0n);
  const lsos = await lastStableOffsets(kafka, missing.map(({ topic, partition }) => ({ topic, partition })));
  let next = 0;
  return listed.map((l) => (l.offset >= 0n ? { offset: l.offset, timestamp: l.timestamp } : { offset: lsos[next++]!, timestamp: null }));
}

/** `offsetsForTimes` for one partition; the offset only. */
export async function offsetForTime(kafka: KafkaConnection, topic: string, partition: number, timestampMs: number | bigint): Promise<bigint> {
  return (await offsetsForTimes(kafka, [{ topic, partition, timestampMs }]))[0]!.offset;
}
