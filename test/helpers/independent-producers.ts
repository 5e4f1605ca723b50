/**
 * Producers we did not write, whose record batches our Fetch decoding must read: confluent-
 * kafka for Python (librdkafka: raw snappy, transactions) through produce_records.py, and the
 * Java client through Kafka's own ConsoleProducer (xerial-framed snappy, Java's LZ4 frames),
 * run from the stack's Kafka jars.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stackConfig } from '../../src/stack/config.js';
import { findJava } from '../../src/stack/java.js';
import { kafkaVersion } from '../../src/stack/kafka.js';

export type Codec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

export interface ProducedRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers?: [string, Buffer | null][];
  timestamp?: number;
}

const script = fileURLToPath(new URL('./produce_records.py', import.meta.url));
const hex = (b: Buffer | null | undefined) => (b === null || b === undefined ? null : b.toString('hex'));
const wire = (r: ProducedRecord) => ({ key: hex(r.key), value: hex(r.value), headers: (r.headers ?? []).map(([k, v]) => [k, hex(v)]), timestamp: r.timestamp ?? null });

function run(command: string, args: string[], input: string, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${command} ${args.slice(-3).join(' ')} failed: ${stderr || error.message}`));
      resolve(stdout);
    });
    child.stdin!.end(input);
  });
}

/** What the producer's delivery reports said: records delivered, and per partition how many, at which offsets. */
export interface Delivered {
  delivered: number;
  partitions: Record<string, { count: number; first: number; last: number }>;
}

/** Writes `records` with confluent-kafka's idempotent producer (`batchRecords` a batch at most). */
export async function produceWithLibrdkafka(brokers: readonly string[], topic: string, partition: number, compression: Codec, records: readonly ProducedRecord[], batchRecords = 10_000): Promise<Delivered> {
  return JSON.parse(await run('python3', [script], JSON.stringify({ brokers: brokers.join(','), topic, partition, compression, batchRecords, records: records.map(wire) }))) as Delivered;
}

/** Runs `transactions` in order with confluent-kafka's transactional producer, aborting those marked so. */
export async function produceTransactionsWithLibrdkafka(brokers: readonly string[], topic: string, partition: number, compression: Codec, transactions: readonly { abort: boolean; records: readonly ProducedRecord[] }[]): Promise<void> {
  await run('python3', [script], JSON.stringify({ brokers: brokers.join(','), topic, partition, compression, transactions: transactions.map((t) => ({ abort: t.abort, records: t.records.map(wire) })) }));
}

/**
 * Writes `records` with Kafka's ConsoleProducer (the Java client). Keys, values and header
 * values are text (the console reads lines); `NULL` is the null marker.
 */
export async function produceWithJavaClient(brokers: readonly string[], topic: string, compression: Codec, records: readonly { key: string | null; value: string | null; headers?: [string, string | null][] }[]): Promise<void> {
  const java = findJava(17, 'apt-get install openjdk-17-jre-headless');
  const libs = join(stackConfig().paths.cache, `kafka-${kafkaVersion}`, 'libs', '*');
  const text = (s: string | null) => {
    if (s !== null && /[\t\n,:]/.test(s)) throw new Error(`ConsoleProducer cannot carry "${s}" (tab, newline, comma or colon)`);
    return s ?? 'NULL';
  };
  const lines = records.map((r) => `${(r.headers ?? []).map(([k, v]) => `${text(k)}:${text(v)}`).join(',') || ''}\t${text(r.key)}\t${text(r.value)}`);
  await run(java, [
    '-Dlog4j2.rootLogger.level=ERROR', '-cp', libs, 'org.apache.kafka.tools.ConsoleProducer',
    '--bootstrap-server', brokers.join(','), '--topic', topic, '--compression-codec', compression,
    '--property', 'parse.key=true', '--property', 'key.separator=\t',
    '--property', 'parse.headers=true', '--property', 'headers.delimiter=\t', '--property', 'headers.separator=,', '--property', 'headers.key.separator=:',
    '--property', 'null.marker=NULL', '--property', 'ignore.error=false',
  ], `${lines.join('\n')}\n`);
}
