/**
 * A record batch that decompresses to more than 2 GiB less a byte (MAX_BATCH_RECORD_BYTES)
 * in a real topic: error rows with the records' offsets and timestamps, and the partition
 * goes on. No standard producer writes such a batch (librdkafka's message.max.bytes stops
 * at 1e9, the Java client's batch.size is an int and a record larger than it is a batch of
 * its own), so it is written from Kafka's record format (test/helpers/record-batch-bytes.ts:
 * three records whose values are 2.1 GiB of zeros, one zstd frame of RLE blocks, ~70 KB)
 * and sent by a plain Produce v7 request (zstd needs v7) from Python (test/helpers/hand-written-produce.ts);
 * the broker decompresses it to validate it before taking it. The records around it come from confluent-kafka, and
 * its read_committed reader gives their expected rows. Indexed under `run --once --memory
 * 400MiB` (the bound is measured as a stream), then checked by `check` with no budget: the same
 * files, byte for byte.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { partitionStatus } from '../../src/table-topic/status.js';
import { parseRecordBatches } from '../../src/kafka/batch-header.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { batchBytes, varint, zstdFrame } from '../helpers/record-batch-bytes.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { rebuiltRows } from '../helpers/verify.js';
import { runCli } from '../helpers/cli.js';
import { produceAroundBatches } from '../helpers/hand-written-produce.js';

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
    expect(await produceAroundBatches(engine.config.kafkaBrokers, topic, [join(dir, 'batch')])).toEqual([0]);

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
