/**
 * What a read_committed consumer we did not write sees (confluent-kafka for Python, i.e.
 * librdkafka): the expected records of every check, so that a bug in our own committed
 * read or aborted-record filter cannot pass unnoticed (test/helpers/committed_records.py).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';

export interface IndependentRecord {
  offset: bigint;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: [string, Buffer | null][];
}

const script = fileURLToPath(new URL('./committed_records.py', import.meta.url));

/** The offsets of the committed records of each [start, end) of a partition, in order. */
export async function committedOffsetsIndependently(brokers: readonly string[], ranges: readonly { topic: string; partition: number; start: bigint; end: bigint }[], timeoutMs = 120_000): Promise<bigint[][]> {
  // The reader's own deadline (a read that stops short is an error there) a little inside the process's.
  const answer = (await runReader({ brokers: brokers.join(','), ranges: ranges.map(text), offsetsOnly: true, timeoutSeconds: Math.max(1, timeoutMs / 1000 - 5) }, timeoutMs)) as number[][];
  return answer.map((offsets) => offsets.map(BigInt));
}

const text = (r: { topic: string; partition: number; start: bigint; end: bigint }) => ({ ...r, start: r.start.toString(), end: r.end.toString() });

function runReader(request: unknown, timeoutMs = 120_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [script], { maxBuffer: 512 * 1024 * 1024, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`the independent read_committed consumer failed (the readers come from bash test/python-env.sh, which npm test runs first): ${stderr || error.message}`));
      resolve(JSON.parse(stdout));
    });
    child.stdin!.end(JSON.stringify(request));
  });
}

/** The committed records of each [start, end) of a partition, in order. */
export function readCommittedIndependently(brokers: readonly string[], ranges: readonly { topic: string; partition: number; start: bigint; end: bigint }[]): Promise<IndependentRecord[][]> {
  return readIndependently(brokers, ranges, 'read_committed');
}

/**
 * Every data record of each [start, end) of a partition, in order, those of aborted and
 * still open transactions included (read_uncommitted): what an event source mapping that
 * reads with a consumer's default isolation delivers. Never what a file may hold.
 */
export function readUncommittedIndependently(brokers: readonly string[], ranges: readonly { topic: string; partition: number; start: bigint; end: bigint }[]): Promise<IndependentRecord[][]> {
  return readIndependently(brokers, ranges, 'read_uncommitted');
}

async function readIndependently(brokers: readonly string[], ranges: readonly { topic: string; partition: number; start: bigint; end: bigint }[], isolation: 'read_committed' | 'read_uncommitted'): Promise<IndependentRecord[][]> {
  const parsed = (await runReader({ brokers: brokers.join(','), ranges: ranges.map(text), isolation })) as { offset: number; timestamp: number; key: string | null; value: string | null; headers: [string, string | null][] }[][];
  const bytes = (hex: string | null): Buffer | null => (hex === null ? null : Buffer.from(hex, 'hex'));
  return parsed.map((records) => records.map((r) => ({ offset: BigInt(r.offset), timestamp: r.timestamp, key: bytes(r.key), value: bytes(r.value), headers: r.headers.map(([k, v]) => [k, bytes(v)] as [string, Buffer | null]) })));
}

/**
 * What a read_committed consumer we did not write finds in the table's indexed range,
 * [indexed_start, indexed_end) of each partition: the rows every engine must count.
 */
export async function indexedRowsIndependently(engine: Engine, table: Pick<TableRecord, 'tableId' | 'topic'>): Promise<{ rows: number; offsets: number; partitions: number }> {
  const indexed = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id', [table.tableId]);
  const offsets = await committedOffsetsIndependently(engine.config.kafkaBrokers, indexed.rows.map((p) => ({ topic: table.topic, partition: p.partition_id, start: p.indexed_start, end: p.indexed_end })));
  let rows = 0;
  let offsetSum = 0;
  let partitionSum = 0;
  offsets.forEach((list, i) => {
    rows += list.length;
    offsetSum += list.reduce((sum, offset) => sum + Number(offset), 0);
    partitionSum += list.length * indexed.rows[i]!.partition_id;
  });
  return { rows, offsets: offsetSum, partitions: partitionSum };
}
