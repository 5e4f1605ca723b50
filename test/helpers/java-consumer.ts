/**
 * Kafka's own Java consumer (ConsoleConsumer of kafka-tools, in the libs the local stack
 * fetched from Maven Central and checked against src/stack/downloads.sha256), reading
 * read_committed: the reference reader for a batch librdkafka cannot read but Java can (an
 * LZ4 frame with bytes after it, which the broker takes). Each record is printed as
 * `CreateTime:<ms>|Offset:<n>|<key>|<value>`: values here are UTF-8 without '|' or newlines.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { findJava } from '../../src/stack/java.js';
import { stackConfig } from '../../src/stack/config.js';

export interface JavaRecord {
  offset: bigint;
  timestamp: number;
  key: string | null;
  value: string | null;
}

/** The first `count` committed records of `topic`'s `partition` from offset 0, as Java's consumer reads them. */
export function readCommittedWithJava(brokers: readonly string[], topic: string, partition: number, count: number): Promise<JavaRecord[]> {
  const libs = join(stackConfig().paths.cache, 'kafka-4.1.1', 'libs');
  const args = [
    '-cp', `${libs}/*`, 'org.apache.kafka.tools.consumer.ConsoleConsumer',
    '--bootstrap-server', brokers.join(','), '--topic', topic, '--partition', String(partition), '--offset', 'earliest',
    '--max-messages', String(count), '--isolation-level', 'read_committed', '--timeout-ms', '60000',
    '--property', 'print.timestamp=true', '--property', 'print.offset=true', '--property', 'print.key=true', '--property', 'key.separator=|',
  ];
  return new Promise((resolve, reject) => {
    execFile(findJava(17, 'a Java 17+ for Kafka\'s consumer'), args, { timeout: 120_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`Kafka's Java consumer failed: ${stderr || error.message}`));
      resolve(stdout.split('\n').filter((line) => line.startsWith('CreateTime:')).map((line) => {
        const [time, offset, key, ...value] = line.split('|');
        const text = (s: string | undefined) => (s === undefined || s === 'null' ? null : s);
        return { timestamp: Number(time!.slice('CreateTime:'.length)), offset: BigInt(offset!.slice('Offset:'.length)), key: text(key), value: text(value.join('|')) };
      }));
    });
  });
}
