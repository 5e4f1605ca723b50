/**
 * An LZ4 record batch with bytes after its frame, in a real topic. Kafka's broker validates
 * the batch with Java's reader (KafkaLZ4BlockInputStream), which stops at the frame's end
 * mark, and takes it (Produce code 0): Java consumers read its records. Our decoder once
 * called such a batch corrupt, and its partition stopped for good (`run --once` exited 1).
 * confluent-kafka's reader (librdkafka) fails on it, so the expected rows come from Kafka's own
 * Java consumer, read_committed (test/helpers/java-consumer.ts), and the batch's from the
 * records the test wrote (test/helpers/record-batch-bytes.ts, Kafka's record format) too.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compressFrameSync } from 'lz4-napi';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { runCli } from '../helpers/cli.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { produceAroundBatches } from '../helpers/hand-written-produce.js';
import { readCommittedWithJava } from '../helpers/java-consumer.js';
import { batchBytes, recordBytes, type RecordSpec } from '../helpers/record-batch-bytes.js';
import { rebuiltRows } from '../helpers/verify.js';

const RECORDS = 200;

describe('an LZ4 record batch with bytes after its frame, in a real topic', () => {
  it('the broker takes it; run --once indexes every record of it (as Java reads them) and goes on, and check rebuilds the same files', async () => {
    const engine = await testEngine('lz4trailing');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'lz4-trailing');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'json');
    const dir = mkdtempSync(join(tmpdir(), 'lz4-trailing-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));

    const baseTimestamp = Date.now();
    const specs: RecordSpec[] = Array.from({ length: RECORDS }, (_, i) => ({
      offsetDelta: i, timestampDelta: i, key: i % 4 === 0 ? null : Buffer.from(`k${i}`),
      value: Buffer.from(JSON.stringify({ n: `l${i}`, pad: 'y'.repeat((i * 37) % 300) })),
    }));
    const frame = compressFrameSync(Buffer.concat(specs.map(recordBytes)));
    const batch = batchBytes({ baseOffset: 0n, attributes: 3, baseTimestamp: BigInt(baseTimestamp), maxTimestamp: BigInt(baseTimestamp + RECORDS - 1), records: specs }, Buffer.concat([frame, Buffer.from('bytes after the frame')]));
    writeFileSync(join(dir, 'trailing'), batch);
    expect(await produceAroundBatches(engine.config.kafkaBrokers, topic, [join(dir, 'trailing')])).toEqual([0]);
    const end = BigInt(3 + RECORDS + 3);

    const run = await runCli(engine.config.databaseUrl, ['run', '--once'], {}, 300_000);
    expect(run.code, run.stderr).toBe(0);
    const [status] = await partitionStatus(engine, table.name);
    expect([status!.indexedEnd, status!.waitingReason]).toEqual([end, null]);

    const check = await runCli(engine.config.databaseUrl, ['check', table.name, '--json'], {}, 300_000);
    expect(check.code, check.stderr).toBe(0);
    const files = await listFiles(engine.catalog, table.tableId);
    expect(JSON.parse(check.stdout)).toMatchObject({ checked: files.length, identical: files.length, failed: [] });

    const text = (b: Uint8Array | null | undefined) => (b === null || b === undefined ? null : Buffer.from(b).toString());
    const rows = (await Promise.all(files.map((file) => rebuiltRows(engine, table, file)))).flat().sort((a, b) => Number(a._offset) - Number(b._offset))
      .map((r) => ({ offset: BigInt(r._offset as bigint), timestamp: Number(r._timestamp), key: text(r._key as Uint8Array | null), value: (r._value as string | null) ?? null, error: r._error ?? null }));
    // Kafka's own Java consumer reads the batch (confluent-kafka cannot: its fetch from any offset of
    // this small log takes the batch, and it fails to decompress it)
    const java = await readCommittedWithJava(engine.config.kafkaBrokers, topic, 0, 3 + RECORDS + 3);
    expect(java).toHaveLength(3 + RECORDS + 3);
    expect(java.slice(3, 3 + RECORDS).map((r) => r.value)).toEqual(specs.map((s) => s.value!.toString()));
    expect(rows).toEqual(java.map((r) => ({ ...r, error: null })));
  });
});
