/**
 * A zstd record batch of several frames in a real topic. Concatenated zstd frames decode to
 * the concatenation of their contents (RFC 8878 section 3); the broker validates the batch
 * with Java's decoder and confluent-kafka (librdkafka) reads it, but Node's zstdDecompressSync
 * stops at the first frame that ends with room in its output chunk, so the batch once read
 * short and stopped its partition as corrupt. The batch is written from Kafka's record format
 * (test/helpers/record-batch-bytes.ts: JSON records cut into frames of zlib's zstd, some of
 * them ending inside a record) and sent by a plain Produce (test/helpers/hand-written-produce.ts)
 * between records from confluent-kafka, whose read_committed reader gives every expected row.
 * Indexed by `run --once`, then `check` rebuilds every file byte for byte.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { runCli } from '../helpers/cli.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { produceAroundBatches } from '../helpers/hand-written-produce.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { batchBytes, recordBytes, type RecordSpec } from '../helpers/record-batch-bytes.js';
import { checkTable, rebuiltRows } from '../helpers/verify.js';

const RECORDS = 400;
/**
 * What Kafka 4.1 answers a batch with bytes after its records' frames: UNKNOWN_SERVER_ERROR.
 * Its validator reads on past the last record to check that nothing remains
 * (DefaultRecordBatch.ensureNoneRemaining) and zstd-jni fails there: "Unknown frame descriptor".
 */
const UNKNOWN_SERVER_ERROR = -1;

describe('a zstd record batch of several frames, in a real topic', () => {
  it('is indexed whole by run --once: every row as confluent-kafka reads it, and check rebuilds the same files; a batch with bytes after its frame is refused by the broker', async () => {
    const engine = await testEngine('zstdframes');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'zstd-frames');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'json');
    const dir = mkdtempSync(join(tmpdir(), 'zstd-frames-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));

    const baseTimestamp = Date.now();
    const specs: RecordSpec[] = Array.from({ length: RECORDS }, (_, i) => ({
      offsetDelta: i, timestampDelta: i, key: i % 3 === 0 ? null : Buffer.from(`k${i}`),
      value: Buffer.from(JSON.stringify({ n: `z${i}`, pad: 'x'.repeat((i * 53) % 400) })),
    }));
    const section = Buffer.concat(specs.map(recordBytes));
    // frames of about 1 KiB to 40 KiB, each ending where it falls (mostly inside a record), the last one the rest
    const cuts = [1000, 1001, 17_000, 20_000, 60_000].filter((c) => c < section.length);
    expect(cuts).toHaveLength(5);
    const frames = [...cuts, section.length].map((end, i) => zlib.zstdCompressSync(section.subarray(i === 0 ? 0 : cuts[i - 1]!, end)));
    const batch = (compressed: Buffer) => batchBytes({ baseOffset: 0n, attributes: 4, baseTimestamp: BigInt(baseTimestamp), maxTimestamp: BigInt(baseTimestamp + RECORDS - 1), records: specs }, compressed);
    writeFileSync(join(dir, 'frames'), batch(Buffer.concat(frames)));
    writeFileSync(join(dir, 'trailing'), batch(Buffer.concat([zlib.zstdCompressSync(section), Buffer.from('not a frame')])));
    // the broker's decoder reads every frame, and refuses bytes after the records' frames, as ours does: no such batch is in a log
    expect(await produceAroundBatches(engine.config.kafkaBrokers, topic, [join(dir, 'frames'), join(dir, 'trailing')])).toEqual([0, UNKNOWN_SERVER_ERROR]);
    const end = BigInt(3 + RECORDS + 3);

    const run = await runCli(engine.config.databaseUrl, ['run', '--once'], {}, 300_000);
    expect(run.code, run.stderr).toBe(0);
    const [status] = await partitionStatus(engine, table.name);
    expect([status!.indexedEnd, status!.waitingReason]).toEqual([end, null]);

    const check = await runCli(engine.config.databaseUrl, ['check', table.name, '--json'], {}, 300_000);
    expect(check.code, check.stderr).toBe(0);
    const files = await listFiles(engine.catalog, table.tableId);
    await checkTable(engine, table); // the ranges tile the indexed range, each committed record in one file
    expect(JSON.parse(check.stdout)).toMatchObject({ checked: files.length, identical: files.length, failed: [] });

    const rows = (await Promise.all(files.map((file) => rebuiltRows(engine, table, file)))).flat().sort((a, b) => Number(a._offset) - Number(b._offset));
    const [committed] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end }]);
    expect(committed).toHaveLength(3 + RECORDS + 3);
    expect(committed!.slice(3, 3 + RECORDS).map((r) => r.value!.toString())).toEqual(specs.map((s) => s.value!.toString()));
    const text = (b: Uint8Array | null | undefined) => (b === null || b === undefined ? null : Buffer.from(b).toString());
    expect(rows.map((r) => ({ offset: BigInt(r._offset as bigint), timestamp: Number(r._timestamp), key: text(r._key as Uint8Array | null), value: (r._value as string | null) ?? null, error: r._error ?? null })))
      .toEqual(committed!.map((r) => ({ offset: r.offset, timestamp: r.timestamp, key: text(r.key), value: text(r.value), error: null })));
  });
});
