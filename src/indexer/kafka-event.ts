/**
 * The Kafka event a Lambda event source mapping delivers (Amazon MSK: `aws:kafka`;
 * self-managed Kafka: `SelfManagedKafka`, older `aws:SelfManagedKafka` with the
 * partition as a string). Pure: shape checks and normalisation, no I/O.
 *
 *   { eventSource, eventSourceArn?, bootstrapServers?,
 *     records: { "<topic>-<partition>": [ { topic, partition, offset, timestamp,
 *       timestampType, key?: base64, value?: base64, headers: [ { name: number[] } ] } ] } }
 *
 * One event can hold several partitions; each partition's records are in offset order,
 * possibly with gaps (compaction, aborted records, transaction markers).
 */
import type { KafkaRecord } from '../kafka/record.js';

export const kafkaEventSources = ['aws:kafka', 'SelfManagedKafka', 'aws:SelfManagedKafka'] as const;

export interface MskRecord {
  topic: string;
  partition: number | string;
  offset: number;
  timestamp: number;
  timestampType?: string;
  key?: string | null;
  value?: string | null;
  headers?: Record<string, number[] | null>[];
}

export interface MskEvent {
  eventSource: (typeof kafkaEventSources)[number];
  eventSourceArn?: string;
  bootstrapServers?: string;
  records: Record<string, MskRecord[]>;
}

/** One partition's part of an event: its offsets and records, in order. */
export interface PartitionBatch {
  topic: string;
  partition: number;
  firstOffset: bigint;
  lastOffset: bigint;
  records: KafkaRecord[];
}

export class EventShapeError extends Error {
  override name = 'EventShapeError';
  constructor(where: string, problem: string) {
    super(`malformed Kafka event: ${where}: ${problem}`);
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text === undefined ? typeof value : text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Standard base64 (RFC 4648 §4, padded), checked without a pattern match (which cost 9 % of
 * the `run` path on 1 KiB values): Node's decoder skips any character outside the alphabet,
 * so one is there exactly when fewer bytes come out than the length promises; it also takes
 * the URL alphabet's - and _, which standard base64 does not have.
 */
function bytesOf(where: string, value: unknown): Uint8Array | null {
  if (value === undefined || value === null) return null;
  const refuse = (): never => {
    throw new EventShapeError(where, `expected base64 text, got ${describe(value)}`);
  };
  if (typeof value !== 'string' || value.length % 4 !== 0 || value.includes('-') || value.includes('_')) return refuse();
  const padding = value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== (value.length / 4) * 3 - padding) return refuse();
  return bytes;
}

function integer(where: string, value: unknown, parse: boolean): number {
  const number = parse && typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
    throw new EventShapeError(where, `expected a non-negative integer, got ${describe(value)}`);
  }
  return number;
}

function headersOf(where: string, value: unknown): [string, Uint8Array | null][] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new EventShapeError(where, `expected a list of {name: bytes}, got ${describe(value)}`);
  const headers: [string, Uint8Array | null][] = [];
  value.forEach((entry, i) => {
    if (!isObject(entry)) throw new EventShapeError(`${where}[${i}]`, `expected {name: bytes}, got ${describe(entry)}`);
    for (const [name, bytes] of Object.entries(entry)) {
      if (bytes === null) headers.push([name, null]);
      else if (Array.isArray(bytes) && bytes.every((b) => Number.isInteger(b) && b >= -128 && b <= 255)) headers.push([name, Uint8Array.from(bytes, (b) => b & 0xff)]);
      else throw new EventShapeError(`${where}[${i}].${name}`, `expected a list of bytes, got ${describe(bytes)}`);
    }
  });
  return headers;
}

/** Checks the event's shape and returns its partitions, each with its records decoded, in offset order. */
export function parseKafkaEvent(event: unknown): PartitionBatch[] {
  if (!isObject(event)) throw new EventShapeError('event', `expected an object, got ${describe(event)}`);
  const source = event.eventSource;
  if (!kafkaEventSources.includes(source as MskEvent['eventSource'])) {
    throw new EventShapeError('eventSource', `expected one of ${kafkaEventSources.join(', ')}, got ${describe(source)}`);
  }
  const partitionAsText = source !== 'aws:kafka';
  if (!isObject(event.records)) throw new EventShapeError('records', `expected an object of "topic-partition": [records], got ${describe(event.records)}`);
  const batches: PartitionBatch[] = [];
  for (const [name, list] of Object.entries(event.records)) {
    const where = `records[${JSON.stringify(name)}]`;
    if (!Array.isArray(list)) throw new EventShapeError(where, `expected a list of records, got ${describe(list)}`);
    if (list.length === 0) continue;
    const records: KafkaRecord[] = [];
    let topic: string | undefined;
    let partition: number | undefined;
    list.forEach((entry: unknown, i) => {
      const at = `${where}[${i}]`;
      if (!isObject(entry)) throw new EventShapeError(at, `expected a record object, got ${describe(entry)}`);
      if (typeof entry.topic !== 'string' || entry.topic === '') throw new EventShapeError(`${at}.topic`, `expected a topic name, got ${describe(entry.topic)}`);
      const p = integer(`${at}.partition`, entry.partition, partitionAsText || typeof entry.partition === 'string');
      if (topic !== undefined && (entry.topic !== topic || p !== partition)) {
        throw new EventShapeError(at, `record of ${entry.topic}-${p} in the list of ${topic}-${partition}`);
      }
      topic = entry.topic;
      partition = p;
      const offset = BigInt(integer(`${at}.offset`, entry.offset, typeof entry.offset === 'string'));
      const previous = records[records.length - 1];
      if (previous && offset <= previous.offset) {
        throw new EventShapeError(`${at}.offset`, `offsets must increase within a partition: ${offset} follows ${previous.offset}`);
      }
      records.push({
        offset,
        timestamp: integer(`${at}.timestamp`, entry.timestamp, false),
        key: bytesOf(`${at}.key`, entry.key),
        value: bytesOf(`${at}.value`, entry.value),
        headers: headersOf(`${at}.headers`, entry.headers),
      });
    });
    if (`${topic}-${partition}` !== name) throw new EventShapeError(where, `holds records of ${topic}-${partition}`);
    batches.push({ topic: topic!, partition: partition!, firstOffset: records[0]!.offset, lastOffset: records[records.length - 1]!.offset, records });
  }
  return batches;
}

/** The MSK event for records of one or more partitions, as an event source mapping would deliver them (tests, the chaos harness's MSK handler, bench/msk-second-read.ts; `run` delivers no events since issue 27). */
export function toKafkaEvent(batches: { topic: string; partition: number; records: readonly KafkaRecord[] }[], bootstrapServers: string): MskEvent {
  const records: Record<string, MskRecord[]> = {};
  for (const batch of batches) {
    records[`${batch.topic}-${batch.partition}`] = batch.records.map((record) => ({
      topic: batch.topic,
      partition: batch.partition,
      offset: Number(record.offset),
      timestamp: record.timestamp,
      timestampType: 'CREATE_TIME',
      ...(record.key ? { key: Buffer.from(record.key).toString('base64') } : {}),
      ...(record.value ? { value: Buffer.from(record.value).toString('base64') } : {}),
      // A null header value stays null: an empty list would be an empty value, other bytes.
      headers: record.headers.map(([name, value]) => ({ [name]: value === null ? null : Array.from(value) })),
    }));
  }
  return { eventSource: 'aws:kafka', eventSourceArn: 'arn:aws:kafka:local:000000000000:cluster/offsetlake-local/local', bootstrapServers, records };
}
