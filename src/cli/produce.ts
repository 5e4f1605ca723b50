/**
 * `produce TOPIC [FILE]`: JSON lines into a topic, plain or in transactions, values as
 * they are or encoded with a registry schema (Confluent wire format).
 *
 * The whole input is read and checked first (every line, every value against the schema,
 * every partition against the topic); only then is the schema registered and anything
 * written. A refused input therefore changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigResourceTypes, murmur2 } from '@platformatic/kafka';
import type { KafkaConnection } from '../kafka/connect.js';
import { kafkaErrorInfo, protocolErrorCodes, UnknownTopicError } from '../kafka/errors.js';
import { produce, transactionalProducer, type ProducedPartition, type RecordToProduce } from '../kafka/produce.js';
import { topicPartitions } from '../kafka/topics.js';
import { EncodeError, ExactNumber, jsonTextExact, localSchema, parseJsonExact, schemaTypes, valueEncoder, type EncodeFormat, type ValueEncoder } from '../schema/encode.js';
import { registerSchema, RegistryRefusedError, RegistryUnavailableError, type RegistrySchema } from '../schema/registry.js';
import { dateTimeMicros } from '../schema/decode-json-schema.js';
import { wireHeader } from '../schema/wire.js';
import { printJson, progress, UsageError } from './output.js';
import { produceUsage } from './help.js';
import { topicNameProblem } from '../kafka/topic-names.js';
import { CommandFailure, networkFailure, withKafka } from './topic.js';
import { parseCommandArgs, wholeNumberFlag } from './args.js';

const options = {
  format: { type: 'string' },
  schema: { type: 'string' },
  transactional: { type: 'boolean' },
  'commit-every': { type: 'string' },
  json: { type: 'boolean' },
  'kafka-brokers': { type: 'string' },
} as const;

/** One line of input, checked; the partition is decided once the topic's partition count is known. */
interface InputRecord {
  line: number;
  key: string | null;
  value: Buffer | null;
  headers: [string, string | null][];
  timestamp?: number;
  partition?: number;
}

/** What the input said wrong; exit 1, nothing written. */
class InputRefused extends Error {
  override name = 'InputRefused';
}

const schemaNames: Record<EncodeFormat, string> = { avro: 'Avro schema', protobuf: 'Protobuf schema', 'json-schema': 'JSON Schema' };

const lineFields = ['value', 'key', 'headers', 'timestamp', 'partition'];
const MAX_REPORTED = 10;

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`${what} ${path}: there is no such file`);
    if (code === 'EISDIR') throw new UsageError(`${what} ${path}: is a folder, not a file`);
    if (code === 'EACCES') throw new UsageError(`${what} ${path}: this user may not read it`);
    throw new UsageError(`${what} ${path} cannot be read: ${(error as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) progress('reading JSON lines from the terminal; end with Ctrl-D (or give a FILE)');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof ExactNumber) return value.source;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return JSON.stringify(value);
}

function timestampOf(v: unknown): number {
  if (typeof v === 'string') {
    let micros: bigint;
    try {
      micros = dateTimeMicros(v, '"timestamp"');
    } catch {
      throw new Error(`"timestamp" ${JSON.stringify(v)} is not an RFC 3339 time such as 2026-01-02T03:04:05.678Z`);
    }
    if (micros % 1000n !== 0n) throw new Error(`"timestamp" ${v} is finer than milliseconds, which is what Kafka keeps`);
    if (micros < 0n) throw new Error(`"timestamp" ${v} is before 1970, which Kafka cannot keep`);
    return Number(micros / 1000n);
  }
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  throw new Error(`"timestamp" must be RFC 3339 text (2026-01-02T03:04:05Z) or epoch milliseconds (a whole number from 0), got ${describe(v)}`);
}

function headersOf(v: unknown): [string, string | null][] {
  const fail = (): never => {
    throw new Error(`"headers" must be {"name": "value", …} or [["name", "value"], …] with string (or null) values, got ${describe(v)}`);
  };
  if (Array.isArray(v)) {
    return v.map((pair) => {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || (pair[1] !== null && typeof pair[1] !== 'string')) return fail();
      return [pair[0], pair[1]] as [string, string | null];
    });
  }
  if (typeof v === 'object' && v !== null && !(v instanceof ExactNumber)) {
    return Object.entries(v).map(([name, value]) => (value === null || typeof value === 'string' ? ([name, value] as [string, string | null]) : fail()));
  }
  return fail();
}

/** One line to a record, or an Error whose message says what is wrong with it. */
function parseLine(text: string, line: number, encoder: ValueEncoder | undefined): InputRecord {
  let parsed: unknown;
  try {
    parsed = parseJsonExact(text);
  } catch (error) {
    throw new Error(`is not JSON (${(error as Error).message.replace(/^.*?JSON[^:]*: ?/, '') || 'unreadable'})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || parsed instanceof ExactNumber) {
    throw new Error(`is ${describe(parsed)}, not an object such as {"value": …, "key": "…"}`);
  }
  const fields = parsed as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !lineFields.includes(k));
  if (!Object.hasOwn(fields, 'value')) {
    const typo = unknown.find((k) => k.length >= 3 && k.length <= 7 && [...k].sort().join('') === [...'value'].sort().join('') || /^val(ue)?s?$/i.test(k) || k.toLowerCase() === 'value');
    if (typo) throw new Error(`has "${typo}" but no "value"; did you mean "value"?`);
    const hint = unknown.length > 0 ? `; to write the whole line as the value, wrap it: {"value": ${text.length > 40 ? `${text.slice(0, 40)}…` : text}}` : '';
    throw new Error(`has no "value" (a line is {"value": …, "key"?, "headers"?, "timestamp"?, "partition"?}; "value": null writes a record without a value)${hint}`);
  }
  if (unknown.length > 0) throw new Error(`has ${unknown.map((k) => `"${k}"`).join(', ')}, which a line does not take (a line has ${lineFields.map((k) => `"${k}"`).join(', ')})`);

  const record: InputRecord = { line, key: null, value: null, headers: [] };
  const key = fields.key;
  if (key !== undefined && key !== null) {
    if (typeof key !== 'string') throw new Error(`"key" must be a string (or null), got ${describe(key)}${typeof key === 'number' || key instanceof ExactNumber ? `; write it as "${describe(key)}"` : ''}`);
    record.key = key;
  }
  if (fields.headers !== undefined && fields.headers !== null) record.headers = headersOf(fields.headers);
  if (fields.timestamp !== undefined && fields.timestamp !== null) record.timestamp = timestampOf(fields.timestamp);
  if (fields.partition !== undefined && fields.partition !== null) {
    const p = fields.partition;
    if (typeof p !== 'number' || !Number.isSafeInteger(p) || p < 0) throw new Error(`"partition" must be a partition number (0, 1, …), got ${describe(p)}`);
    record.partition = p;
  }
  const value = fields.value;
  if (value !== null) {
    if (encoder) {
      try {
        record.value = encoder.encode(value);
      } catch (error) {
        if (error instanceof EncodeError) throw new Error(`does not fit the ${schemaNames[encoder.format]}: ${error.message}`);
        throw error;
      }
    } else {
      record.value = Buffer.from(typeof value === 'string' ? value : jsonTextExact(value));
    }
  }
  return record;
}

function refuseLines(problems: string[], total: number): never {
  const more = total > problems.length ? `\n  … and ${total - problems.length} more line${total - problems.length === 1 ? '' : 's'}` : '';
  throw new InputRefused(`the input was refused, nothing was produced (${total} bad line${total === 1 ? '' : 's'}):\n  ${problems.join('\n  ')}${more}`);
}

/** Every line of the input, checked; refused as a whole if any line is bad. */
export function parseInput(text: string, encoder: ValueEncoder | undefined): InputRecord[] {
  const records: InputRecord[] = [];
  const problems: string[] = [];
  let bad = 0;
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    try {
      records.push(parseLine(line, i + 1, encoder));
    } catch (error) {
      bad += 1;
      if (problems.length < MAX_REPORTED) problems.push(`line ${i + 1} ${(error as Error).message}`);
    }
  });
  if (bad > 0) refuseLines(problems, bad);
  return records;
}

/** What the broker enforces on every record of the topic (its topic configs). */
interface TopicLimits {
  partitions: number;
  /** message.timestamp.type: LogAppendTime replaces the producer's timestamps. */
  logAppendTime: boolean;
  /** message.timestamp.before.max.ms / after.max.ms: how far a CreateTime may lie from the broker's clock. */
  beforeMaxMs: number;
  afterMaxMs: number;
  /** max.message.bytes: the largest record batch (here: one record with its batch overhead). */
  maxMessageBytes: number;
}

async function topicLimits(kafka: KafkaConnection, topic: string): Promise<TopicLimits> {
  const partitions = (await topicPartitions(kafka, topic)).length;
  const described = await kafka.admin().describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['message.timestamp.type', 'message.timestamp.before.max.ms', 'message.timestamp.after.max.ms', 'max.message.bytes'] }],
  });
  const config = (name: string) => described[0]?.configs.find((c) => c.name === name)?.value ?? undefined;
  const number = (name: string, fallback: number) => {
    const value = Number(config(name));
    return Number.isFinite(value) ? value : fallback;
  };
  return {
    partitions,
    logAppendTime: config('message.timestamp.type') === 'LogAppendTime',
    beforeMaxMs: number('message.timestamp.before.max.ms', Number.MAX_SAFE_INTEGER),
    afterMaxMs: number('message.timestamp.after.max.ms', Number.MAX_SAFE_INTEGER),
    maxMessageBytes: number('max.message.bytes', 1_048_588),
  };
}

/** A record's size in a batch of its own, as the broker counts it against max.message.bytes (an upper bound). */
function batchBytes(record: InputRecord): number {
  let size = 61 + 21 + (record.key ? Buffer.byteLength(record.key) : 0) + (record.value?.length ?? 0);
  for (const [name, value] of record.headers) size += 10 + Buffer.byteLength(name) + (value === null ? 0 : Buffer.byteLength(value));
  return size;
}

/**
 * Checks every record against what the topic accepts (its partitions, timestamp range and
 * record size), and gives records that name no partition one: Kafka's default partitioner
 * for keys (murmur2, as the Java producer), in turn for the others.
 */
function checkAgainstTopic(records: InputRecord[], limits: TopicLimits, topic: string, now: number): void {
  const problems: string[] = [];
  let bad = 0;
  const problem = (text: string) => {
    bad += 1;
    if (problems.length < MAX_REPORTED) problems.push(text);
  };
  const count = limits.partitions;
  let next = 0;
  for (const record of records) {
    if (record.partition !== undefined) {
      if (record.partition >= count) problem(`line ${record.line} "partition" ${record.partition}: topic ${topic} has ${count} partition${count === 1 ? '' : 's'} (0 to ${count - 1})`);
    } else if (record.key !== null) {
      record.partition = (murmur2(Buffer.from(record.key)) & 0x7fffffff) % count;
    } else {
      record.partition = next;
      next = (next + 1) % count;
    }
    if (record.timestamp !== undefined && !limits.logAppendTime) {
      const at = new Date(record.timestamp).toISOString();
      if (record.timestamp > now + limits.afterMaxMs) problem(`line ${record.line} "timestamp" ${at} is more than ${duration(limits.afterMaxMs)} ahead of now, which topic ${topic} refuses (its message.timestamp.after.max.ms)`);
      else if (record.timestamp < now - limits.beforeMaxMs) problem(`line ${record.line} "timestamp" ${at} is more than ${duration(limits.beforeMaxMs)} before now, which topic ${topic} refuses (its message.timestamp.before.max.ms)`);
    }
    const size = batchBytes(record);
    if (size > limits.maxMessageBytes) problem(`line ${record.line} makes a record of about ${size} bytes; topic ${topic} takes at most ${limits.maxMessageBytes} (its max.message.bytes)`);
  }
  if (bad > 0) refuseLines(problems, bad);
}

function duration(ms: number): string {
  for (const [unit, size] of [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}

/** What Kafka said when it refused a request: the protocol's error names and the broker's own sentences. */
function kafkaRefusal(error: unknown, kafka: KafkaConnection): string {
  const unreachable = networkFailure(error);
  if (unreachable) return `Kafka at ${kafka.options.brokers.join(',')} stopped answering (${unreachable})`;
  const said = new Set<string>();
  const visit = (e: unknown, depth: number): void => {
    if (depth > 6 || e === null || typeof e !== 'object') return;
    const response = (e as { response?: { responses?: { partitionResponses?: { errorMessage?: unknown; recordErrors?: { batchIndexErrorMessage?: unknown }[] }[] }[] } }).response;
    for (const topic of response?.responses ?? []) {
      for (const partition of topic.partitionResponses ?? []) {
        for (const recordError of partition.recordErrors ?? []) if (typeof recordError.batchIndexErrorMessage === 'string' && recordError.batchIndexErrorMessage) said.add(recordError.batchIndexErrorMessage);
        if (typeof partition.errorMessage === 'string' && partition.errorMessage) said.add(partition.errorMessage);
      }
    }
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) visit(inner, depth + 1);
    visit((e as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  const names = [...new Set(protocolErrorCodes(error).filter((c) => c > 0))].map((c) => kafkaErrorInfo(c).name);
  if (names.length === 0 && said.size === 0) return (error as Error).message.replace(/\.+$/, '');
  return `Kafka refused it${names.length ? ` (${names.join(', ')})` : ''}${said.size ? `: ${[...said].join('; ')}` : ''}`.replace(/\.+$/, '');
}

function lineSpan(records: InputRecord[], from: number, to: number): string {
  if (to <= from) return 'no lines';
  const first = records[from]!.line;
  const last = records[to - 1]!.line;
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

interface PartitionSummary {
  partition: number;
  records: number;
  firstOffset: bigint;
  lastOffset: bigint;
}

function addProduced(summary: Map<number, PartitionSummary>, produced: ProducedPartition[]): void {
  for (const p of produced) {
    const seen = summary.get(p.partition);
    if (!seen) summary.set(p.partition, { partition: p.partition, records: p.count, firstOffset: p.firstOffset, lastOffset: p.lastOffset });
    else {
      seen.records += p.count;
      if (p.firstOffset < seen.firstOffset) seen.firstOffset = p.firstOffset;
      if (p.lastOffset > seen.lastOffset) seen.lastOffset = p.lastOffset;
    }
  }
}

/** Progress on stderr, at most once a second. */
function throttled(): (line: () => string) => void {
  let last = Date.now();
  return (line) => {
    if (Date.now() - last < 1000) return;
    last = Date.now();
    progress(line());
  };
}

async function write(kafka: KafkaConnection, topic: string, records: InputRecord[], produceRecords: RecordToProduce[], transactional: boolean, every: number) {
  const summary = new Map<number, PartitionSummary>();
  const tell = throttled();
  if (!transactional) {
    let sent = 0;
    try {
      addProduced(summary, await produce(kafka, topic, produceRecords, {
        onSent: (n) => {
          sent += n;
          tell(() => `written ${sent} of ${records.length} records`);
        },
      }));
    } catch (error) {
      const done = sent === 0 ? 'Kafka acknowledged none of the records' : `${lineSpan(records, 0, sent)} (${sent} records) were written`;
      throw new CommandFailure(`producing to ${topic} failed: ${kafkaRefusal(error, kafka)}. ${done}; ${lineSpan(records, sent, records.length)} were not acknowledged (some may have been written)`, { cause: error });
    }
    return { summary, transactions: undefined, transactionalId: undefined };
  }
  const transactionalId = `offsetlake-produce-${topic}-${randomUUID().slice(0, 8)}`;
  const producer = transactionalProducer(kafka, transactionalId);
  let committed = 0;
  let transactions = 0;
  let to = 0;
  try {
    while (committed < produceRecords.length) {
      to = Math.min(committed + every, produceRecords.length);
      const transaction = await producer.begin();
      try {
        const produced = await transaction.send(topic, produceRecords.slice(committed, to));
        await transaction.commit();
        addProduced(summary, produced);
      } catch (error) {
        await transaction.abort().catch(() => {});
        throw error;
      }
      committed = to;
      transactions += 1;
      tell(() => `committed ${committed} of ${records.length} records in ${transactions} transactions`);
    }
  } catch (error) {
    const done = committed === 0 ? 'no transaction was committed' : `${lineSpan(records, 0, committed)} (${committed} records) were committed in ${transactions} transaction${transactions === 1 ? '' : 's'}`;
    const rest = to < records.length ? `, and ${lineSpan(records, to, records.length)} were not sent` : '';
    throw new CommandFailure(`producing to ${topic} failed: ${kafkaRefusal(error, kafka)}. ${done}; the transaction of ${lineSpan(records, committed, to)} was not committed (read_committed readers never see it)${rest}`, { cause: error });
  } finally {
    await producer.close().catch(() => {});
  }
  return { summary, transactions, transactionalId };
}

export async function produceCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('produce', args, options);
  const [topic, file, ...rest] = positionals;
  if (topic === undefined) throw new UsageError(`produce needs a TOPIC; usage: ${produceUsage}`);
  if (rest.length > 0) throw new UsageError(`produce takes a TOPIC and at most one FILE, got also "${rest.join(' ')}" (flags start with --)`);
  const nameProblem = topicNameProblem(topic);
  if (nameProblem) throw new UsageError(nameProblem);

  let format: EncodeFormat | undefined;
  if (values.format !== undefined && values.format !== 'json' && values.format !== 'raw') {
    if (!(values.format in schemaTypes)) throw new UsageError(`--format must be avro, protobuf or json-schema (or json, the default, without a registry), got "${values.format}"`);
    format = values.format as EncodeFormat;
    if (values.schema === undefined) throw new UsageError(`--format ${format} needs --schema FILE: the schema to register under ${topic}-value and to encode each value with`);
  } else if (values.schema !== undefined) {
    throw new UsageError('--schema needs --format avro, protobuf or json-schema (which kind of schema the file holds)');
  }
  const every = wholeNumberFlag('commit-every', values['commit-every'], 1000);
  const transactional = Boolean(values.transactional) || values['commit-every'] !== undefined;

  let schema: RegistrySchema | undefined;
  let encoder: ValueEncoder | undefined;
  if (format) {
    const text = readText(values.schema!, '--schema');
    try {
      schema = localSchema(format, text);
    } catch (error) {
      throw new UsageError(`--schema ${values.schema}: ${(error as Error).message}`);
    }
    encoder = valueEncoder(format, schema);
  }
  const input = file === undefined || file === '-' ? await readStdin() : readText(file, 'FILE');
  const records = parseInput(input, encoder);
  if (records.length === 0) {
    if (values.json) printJson({ topic, records: 0, partitions: [] });
    else progress(`the input holds no records; nothing was produced to ${topic}`);
    return 0;
  }

  const result = await withKafka(values['kafka-brokers'], async (kafka) => {
    let limits: TopicLimits;
    try {
      limits = await topicLimits(kafka, topic);
    } catch (error) {
      if (error instanceof UnknownTopicError) throw new Error(`topic "${topic}" does not exist; create it with \`offsetlake topic create ${topic} [--partitions N]\` (nothing was produced)`, { cause: error });
      throw error;
    }
    checkAgainstTopic(records, limits, topic, Date.now());
    if (limits.logAppendTime && records.some((r) => r.timestamp !== undefined)) {
      progress(`note: topic ${topic} has message.timestamp.type=LogAppendTime: Kafka gives each record the time it appends it, in place of the "timestamp" of its line`);
    }

    let registered: { subject: string; id: number; format: EncodeFormat } | undefined;
    if (format && schema && encoder) {
      const subject = `${topic}-value`;
      const url = process.env.SCHEMA_REGISTRY_URL!;
      let id: number;
      try {
        id = await registerSchema(url, subject, schema.type, schema.schema);
      } catch (error) {
        if (error instanceof RegistryRefusedError && format === 'json-schema' && !/"\$schema"|"properties"/.test(schema.schema)) {
          throw new Error(`${error.message.replace(/\.+$/, '')}. A registry such as Apicurio recognises a JSON Schema by its "$schema" or "properties": add "$schema": "http://json-schema.org/draft-07/schema#" to ${values.schema} (nothing was produced)`, { cause: error });
        }
        if (error instanceof RegistryUnavailableError) {
          throw new Error(`${error.message}; \`offsetlake stack up\` starts the local one, or name yours with SCHEMA_REGISTRY_URL (nothing was produced)`, { cause: error });
        }
        throw new Error(`${(error as Error).message} (nothing was produced)`, { cause: error });
      }
      registered = { subject, id, format };
      const header = Buffer.from(wireHeader(id, encoder.messageIndexes));
      for (const record of records) if (record.value) record.value = Buffer.concat([header, record.value]);
    }
    const produceRecords: RecordToProduce[] = records.map((r) => ({
      partition: r.partition!,
      key: r.key,
      value: r.value,
      headers: r.headers,
      ...(r.timestamp !== undefined ? { timestamp: r.timestamp } : {}),
    }));
    const written = await write(kafka, topic, records, produceRecords, transactional, every);
    return { registered, ...written };
  });

  const partitions = [...result.summary.values()].sort((a, b) => a.partition - b.partition);
  if (values.json) {
    printJson({
      topic,
      records: records.length,
      ...(result.transactions !== undefined ? { transactions: result.transactions, transactionalId: result.transactionalId } : {}),
      partitions,
      ...(result.registered ? { schema: result.registered } : {}),
    });
    return 0;
  }
  const where = partitions.map((p) => `partition ${p.partition}: ${p.records === 1 ? `1 record at offset ${p.firstOffset}` : `${p.records} records, offsets ${p.firstOffset}–${p.lastOffset}`}`).join('; ');
  const how = result.transactions !== undefined ? ` in ${result.transactions} committed transaction${result.transactions === 1 ? '' : 's'}` : '';
  process.stdout.write(`produced ${records.length} record${records.length === 1 ? '' : 's'} to ${topic}${how}: ${where}\n`);
  if (result.registered) process.stdout.write(`values in the ${result.registered.format} wire format with schema id ${result.registered.id} (subject ${result.registered.subject})\n`);
  return 0;
}
