/**
 * A compressed record batch far larger decompressed than on disk (100 MB of zeros, gzip:
 * about 100 KB in Kafka), written by confluent-kafka (librdkafka), under `run --once
 * --memory`: decompression stops at the budget's batch limit, the process stays within its
 * budget (peak RSS from /proc), the partition waits naming the batch, and a run with a
 * budget that holds it indexes it and what follows. Expected records come from
 * confluent-kafka's read_committed reader; files are rebuilt and compared by checkTable.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { findTable } from '../../src/catalog/tables.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { committedOffsetsIndependently, readCommittedIndependently } from '../helpers/independent-kafka.js';
import { checkTable } from '../helpers/verify.js';

const MiB = 1024 * 1024;
const bombBytes = 100_000_000;

/** Three small records, the bomb alone in its batch, three small records: each flushed, so each is a batch of its own (gzip). */
const producer = `
import sys
from confluent_kafka import Producer
brokers, topic, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = Producer({"bootstrap.servers": brokers, "compression.type": "gzip", "message.max.bytes": 1000000000, "enable.idempotence": True, "linger.ms": 5})
errors = []
def sent(error, message):
    if error is not None: errors.append(str(error))
for batch in ([b"a0", b"a1", b"a2"], [bytes(size)], [b"b0", b"b1", b"b2"]):
    for value in batch: p.produce(topic, value=value, partition=0, on_delivery=sent)
    p.flush(60)
if errors: sys.exit("; ".join(errors))
`;

function produceBomb(brokers: readonly string[], topic: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', producer, brokers.join(','), topic, String(bombBytes)], { timeout: 120_000 }, (error, _stdout, stderr) => (error ? reject(new Error(`confluent-kafka could not produce: ${stderr || error.message}`)) : resolve()));
  });
}

/** `offsetlake run --once --memory SIZE` as a user runs it, with its peak resident memory (VmHWM, sampled from /proc until it exits). */
function runOnce(databaseUrl: string, memory: string): Promise<{ code: number | null; stderr: string; peakBytes: number }> {
  const child = spawn(process.execPath, ['bin/offsetlake.js', 'run', '--once', '--memory', memory], { env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let peakBytes = 0;
  const sample = setInterval(() => {
    try {
      const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
      if (kib) peakBytes = Math.max(peakBytes, Number(kib) * 1024);
    } catch {
      // exited between samples
    }
  }, 20);
  return new Promise((resolve) => child.on('exit', (code) => {
    clearInterval(sample);
    resolve({ code, stderr, peakBytes });
  }));
}

describe('a compressed batch larger decompressed than the memory budget allows', () => {
  it('run --once --memory 400MiB stays within its budget: decompression stops at the batch limit, the partition waits naming the batch (exit 1); with a budget that holds it (1200MiB), it and the later records are indexed, as read_committed reads them', async () => {
    const engine = await testEngine('bomb');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'bomb');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'raw');
    await produceBomb(engine.config.kafkaBrokers, topic);

    const small = await runOnce(engine.config.databaseUrl, '400MiB');
    process.stderr.write(`bomb peak RSS: ${(small.peakBytes / MiB).toFixed(0)} MiB\n`);
    expect(small.code, small.stderr).toBe(1);
    expect(small.stderr).toMatch(new RegExp(`the record batch at offsets \\[3, 3\\] of ${topic}-0 \\(gzip, \\d+ bytes in Kafka\\) decompresses to more than \\d+ bytes, the most one batch may take under this process's memory budget`));
    expect(small.peakBytes, `peak RSS ${(small.peakBytes / MiB).toFixed(0)} MiB`).toBeLessThanOrEqual(400 * MiB);
    const [waiting] = await partitionStatus(engine, table.name);
    expect(waiting!.indexedEnd).toBe(3n); // what came before the batch is indexed
    expect(waiting!.waitingReason).toContain('decompresses to more than');

    const large = await runOnce(engine.config.databaseUrl, '1200MiB');
    process.stderr.write(`peak RSS with 1200MiB: ${(large.peakBytes / MiB).toFixed(0)} MiB\n`);
    expect(large.code, large.stderr).toBe(0);
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    const rows = [...check.rowsByFile.values()].flat().sort((a, b) => Number(a._offset) - Number(b._offset));
    const [offsets] = await committedOffsetsIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 7n }]);
    expect(rows.map((r) => BigInt(r._offset as bigint))).toEqual(offsets);
    const [before, after] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 3n }, { topic, partition: 0, start: 4n, end: 7n }]);
    const text = (value: unknown) => Buffer.from(value as Uint8Array).toString();
    expect(rows.filter((r) => Number(r._offset) !== 3).map((r) => text(r._value))).toEqual([...before!, ...after!].map((r) => r.value!.toString()));
    const bomb = Buffer.from(rows[3]!._value as Uint8Array);
    expect([bomb.length, bomb.every((b) => b === 0)]).toEqual([bombBytes, true]);
    const [status] = await partitionStatus(engine, table.name);
    expect([status!.indexedEnd, status!.waitingReason]).toEqual([7n, null]);
  });
});
