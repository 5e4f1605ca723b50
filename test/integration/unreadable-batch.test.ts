/**
 * A record batch that decompresses to more than 2 GiB less a byte (MAX_BATCH_RECORD_BYTES)
 * in a real topic: error rows with the records' offsets and timestamps, and the partition
 * goes on. No standard producer writes such a batch (librdkafka's message.max.bytes stops
 * at 1e9, the Java client's batch.size is an int and a record larger than it is a batch of
 * its own), so it is written from Kafka's record format (test/helpers/record-batch-bytes.ts:
 * three records whose values are 2.1 GiB of zeros, one zstd frame of RLE blocks, ~70 KB)
 * and sent by a plain Produce v7 request (zstd needs v7) from Python; the broker decompresses it to
 * validate it before taking it. The records around it come from confluent-kafka, and
 * its read_committed reader gives their expected rows. Indexed under `run --once --memory
 * 400MiB` (the bound is measured as a stream), then checked by `check` with no budget: the same
 * files, byte for byte.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { partitionStatus } from '../../src/tables/status.js';
import { parseRecordBatches } from '../../src/kafka/record-batch.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { batchBytes, varint, zstdFrame } from '../helpers/record-batch-bytes.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { rebuiltRows } from '../helpers/verify.js';
import { runCli } from '../helpers/cli.js';

const MiB = 1 << 20;

/** Three records (offset deltas 0-2, as a producer must write them) of 700 MiB of zeros each, zstd. */
function bombBatch(baseTimestamp: number): Buffer {
  const parts: (Buffer | number)[] = [];
  for (let i = 0; i < 3; i++) {
    const before = Buffer.concat([Buffer.from([0]), varint(i * 10), varint(i), varint(-1), varint(700 * MiB)]);
    const length = before.length + 700 * MiB + 1;
    parts.push(Buffer.concat([varint(length), before]), 700 * MiB, varint(0));
  }
  const spec = { baseOffset: 0n, attributes: 4, lastOffsetDelta: 2, baseTimestamp: BigInt(baseTimestamp), maxTimestamp: BigInt(baseTimestamp + 20), records: new Array(3).fill(null) };
  return batchBytes(spec, zstdFrame(parts));
}

/** Three JSON records through confluent-kafka, the batch file by a plain Produce v7 (zstd needs v7) to the partition's leader, three more JSON records. */
const producer = `
import socket, struct, sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
brokers, topic, path = sys.argv[1], sys.argv[2], sys.argv[3]
p = Producer({"bootstrap.servers": brokers, "enable.idempotence": True, "linger.ms": 5})
errors = []
def sent(error, message):
    if error is not None: errors.append(str(error))
def records(prefix):
    for i in range(3): p.produce(topic, value=('{"n":"%s%d"}' % (prefix, i)).encode(), partition=0, on_delivery=sent)
    p.flush(60)
records("a")
metadata = AdminClient({"bootstrap.servers": brokers}).list_topics(topic, timeout=30)
leader = metadata.brokers[metadata.topics[topic].partitions[0].leader]
batch = open(path, "rb").read()
s = lambda text: struct.pack(">h", len(text)) + text.encode()
body = struct.pack(">hhi", 0, 7, 1) + s("unreadable-batch-test") + struct.pack(">hhi", -1, -1, 60000)
body += struct.pack(">i", 1) + s(topic) + struct.pack(">i", 1) + struct.pack(">ii", 0, len(batch)) + batch
with socket.create_connection((leader.host, leader.port), timeout=120) as conn:
    conn.sendall(struct.pack(">i", len(body)) + body)
    def read(n):
        data = b""
        while len(data) < n:
            part = conn.recv(n - len(data))
            if not part: raise SystemExit("the broker closed the connection")
            data += part
        return data
    answer = read(struct.unpack(">i", read(4))[0])
at = 4 + 4  # correlation id, topic count
at += 2 + struct.unpack(">h", answer[at:at + 2])[0] + 4  # topic name, partition count
partition, error = struct.unpack(">ih", answer[at:at + 6])
if error != 0: sys.exit("Produce of the batch: Kafka error code %d" % error)
records("b")
if errors: sys.exit("; ".join(errors))
`;

function produceAround(brokers: readonly string[], topic: string, batchFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', producer, brokers.join(','), topic, batchFile], { timeout: 300_000 }, (error, _stdout, stderr) => (error ? reject(new Error(`could not produce: ${stderr || error.message}`)) : resolve()));
  });
}

describe('a record batch over 2 GiB decompressed, in a real topic', () => {
  it('becomes one error row per record with its offset and timestamp under run --once --memory 400MiB, the records after it are indexed, and check (no budget) rebuilds the same files', async () => {
    const engine = await testEngine('unreadable');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'unreadable');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'json');
    const dir = mkdtempSync(join(tmpdir(), 'unreadable-batch-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const baseTimestamp = Date.now();
    const batch = bombBatch(baseTimestamp);
    writeFileSync(join(dir, 'batch'), batch);
    await produceAround(engine.config.kafkaBrokers, topic, join(dir, 'batch'));

    const run = await runCli(engine.config.databaseUrl, ['run', '--once', '--memory', '400MiB'], {}, 300_000);
    expect(run.code, run.stderr).toBe(0);
    const [status] = await partitionStatus(engine, table.name);
    expect([status!.indexedEnd, status!.waitingReason]).toEqual([9n, null]);

    // `check` (no memory budget: it decompresses up to the bound itself) rebuilds every file byte for byte
    const check = await runCli(engine.config.databaseUrl, ['check', table.name, '--json'], {}, 300_000);
    expect(check.code, check.stderr).toBe(0);
    const files = await listFiles(engine.catalog, table.tableId);
    expect(JSON.parse(check.stdout)).toMatchObject({ checked: files.length, identical: files.length, failed: [] });
    const rows = (await Promise.all(files.map((file) => rebuiltRows(engine, table, file)))).flat().sort((a, b) => Number(a._offset) - Number(b._offset));
    // one reader per range: librdkafka cannot decompress the batch either (_BAD_COMPRESSION), and its prefetch past offset 2 would fail the next range
    const [before] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 3n }]);
    const [after] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 6n, end: 9n }]);
    const expected = (r: { offset: bigint; timestamp: number; value: Buffer | null }) => ({ offset: r.offset, timestamp: r.timestamp, value: r.value?.toString() ?? null, error: null });
    const stored = 12 + parseRecordBatches(batch, { topic, partition: 0 })[0]!.batchLength;
    const error = `the record batch at offsets [3, 5] (zstd, ${stored} bytes in Kafka) decompresses to more than 2147483647 bytes, the most one batch may: its records' keys, values and headers are not read`;
    expect(rows.map((r) => ({ offset: BigInt(r._offset as bigint), timestamp: Number(r._timestamp), value: (r._value as string | null) ?? null, error: r._error ?? null }))).toEqual([
      ...before!.map(expected),
      ...[0, 1, 2].map((i) => ({ offset: BigInt(3 + i), timestamp: baseTimestamp + 10 * i, value: null, error })),
      ...after!.map(expected),
    ]);
  });
});
