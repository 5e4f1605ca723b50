import { parquetReadObjects } from 'hyparquet';
import { expect } from 'vitest';
import { listFiles, type DataFile } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/catalog/tables.js';
import type { Engine } from '../../src/runtime/engine.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { committedOffsetsIndependently } from './independent-kafka.js';
import { bucketOf } from '../../src/ranges/buckets.js';
import { rebuildFile } from '../../src/reader/rebuild.js';

export type Row = Record<string, unknown>;

/** The file's bytes rebuilt from Kafka (checked against the catalog), read back by hyparquet. */
export async function rebuiltRows(engine: Engine, table: TableRecord, file: DataFile): Promise<Row[]> {
  const rebuilt = await rebuildFile(engine.catalog, kafkaSource(engine.kafka), table, file);
  return (await parquetReadObjects({ file: rebuilt.bytes.slice().buffer, utf8: false })) as Row[];
}

function timeOf(value: unknown): number {
  return value instanceof Date ? value.getTime() : Number(value);
}

/** Statistics an independent reader computes from the rows, in the catalog's text forms. */
function statisticsOf(rows: Row[], column: string, kind: 'int' | 'time' | 'text'): { nulls: number; min: string | null; max: string | null } {
  const present = rows.map((row) => row[column]).filter((value) => value !== null && value !== undefined);
  if (present.length === 0) return { nulls: rows.length, min: null, max: null };
  if (kind === 'text') {
    const sorted = present.map((v) => Buffer.from(String(v), 'utf8')).sort(Buffer.compare);
    return { nulls: rows.length - present.length, min: sorted[0]!.toString('utf8'), max: sorted[sorted.length - 1]!.toString('utf8') };
  }
  const numbers = present.map((v) => (kind === 'time' ? BigInt(timeOf(v)) : BigInt(v as number | bigint)));
  const min = numbers.reduce((a, b) => (b < a ? b : a));
  const max = numbers.reduce((a, b) => (b > a ? b : a));
  return { nulls: rows.length - present.length, min: String(min), max: String(max) };
}

export interface TableCheck {
  files: DataFile[];
  rowsByFile: Map<bigint, Row[]>;
  committedOffsets: Map<number, bigint[]>;
}

/**
 * The invariants, checked against Kafka and an independent Parquet reader:
 * per partition the ranges tile [indexed_start, indexed_end) with no gap or overlap
 * (a range's bucket files share its offsets); every committed record in it is in exactly
 * one file; every file rebuilds byte-identical; its statistics equal the rows'.
 */
export async function checkTable(engine: Engine, table: TableRecord): Promise<TableCheck> {
  const files = await listFiles(engine.catalog, table.tableId);
  const partitions = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id',
    [table.tableId],
  );
  const rowsByFile = new Map<bigint, Row[]>();
  const committedOffsets = new Map<number, bigint[]>();
  const lost = await engine.catalog.query<{ partition_id: number; start_offset: bigint; end_offset: bigint }>(
    'SELECT partition_id, start_offset, end_offset FROM offsetlake.lost_interval WHERE table_id = $1',
    [table.tableId],
  );
  for (const { partition_id: partition, indexed_start: start, indexed_end: end } of partitions.rows) {
    const mine = files.filter((f) => f.partition === partition);
    // Tiling: distinct ranges and lost intervals (offsets Kafka deleted before anyone
    // indexed them) in offset order, each starting where the one before ended.
    const ranges = [...new Map(mine.map((f) => [`${f.startOffset}:${f.endOffset}`, f])).values()];
    const segments = [
      ...ranges.map((r) => ({ startOffset: r.startOffset, endOffset: r.endOffset, lost: false })),
      ...lost.rows.filter((l) => l.partition_id === partition && l.end_offset > start).map((l) => ({ startOffset: l.start_offset, endOffset: l.end_offset, lost: true })),
    ].sort((a, b) => (a.startOffset < b.startOffset ? -1 : 1));
    let expected = segments[0]?.lost && segments[0].startOffset < start ? segments[0].startOffset : start;
    for (const segment of segments) {
      expect(segment.startOffset, `partition ${partition}: a ${segment.lost ? 'lost interval' : 'range'} starts at ${segment.startOffset}, expected ${expected}`).toBe(expected);
      expected = segment.endOffset;
    }
    expect(expected, `partition ${partition}: ranges end at ${expected}, indexed_end is ${end}`).toBe(end);

    // Committed records of the ranges, as a consumer we did not write sees them (lost
    // intervals cannot be read: Kafka deleted them).
    const readable = segments.filter((x) => !x.lost && x.endOffset > x.startOffset);
    const committed = (await committedOffsetsIndependently(engine.config.kafkaBrokers, readable.map((x) => ({ topic: table.topic, partition, start: x.startOffset, end: x.endOffset })))).flat();
    committedOffsets.set(partition, committed);
    const seen: bigint[] = [];
    for (const file of mine) {
      const rows = await rebuiltRows(engine, table, file);
      rowsByFile.set(file.dataFileId, rows);
      expect(BigInt(rows.length)).toBe(file.recordCount);
      // Plain checks per row, one assertion per file: 350,000 expect() calls take seconds.
      const misplaced: string[] = [];
      for (const row of rows) {
        const offset = BigInt(row._offset as bigint);
        if (offset < file.startOffset || offset >= file.endOffset) misplaced.push(`offset ${offset} outside [${file.startOffset}, ${file.endOffset})`);
        if (bucketOf(timeOf(row._timestamp), table.settings.granularity) !== file.bucket.getTime()) misplaced.push(`offset ${offset} outside bucket ${file.bucket.toISOString()}`);
        if (row._partition !== partition) misplaced.push(`offset ${offset} has _partition ${String(row._partition)}`);
        seen.push(offset);
      }
      expect(misplaced.slice(0, 5), `rows of file ${file.dataFileId}`).toEqual([]);
      // Statistics: what the catalog holds equals what the rows say.
      const stats = new Map(file.columns.map((c) => [c.columnName, c]));
      const expectStats = (column: string, kind: 'int' | 'time' | 'text') => {
        const want = statisticsOf(rows, column, kind);
        const got = stats.get(column);
        expect(got, `statistics of ${column}`).toBeDefined();
        expect({ nulls: got!.nullCount, min: got!.min, max: got!.max }, `statistics of ${column} in file ${file.dataFileId}`).toEqual({ nulls: BigInt(want.nulls), min: want.min, max: want.max });
        expect(got!.valueCount).toBe(BigInt(rows.length));
      };
      expectStats('_partition', 'int');
      expectStats('_offset', 'int');
      expectStats('_timestamp', 'time');
      if (table.format === 'json') {
        expectStats('_value', 'text');
        expectStats('_error', 'text');
      } else if (table.format !== 'raw') {
        expectStats('_error', 'text');
      }
    }
    const sorted = [...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // Compared as one string: a deep comparison of 350,000 bigints is slow to fail and to pass.
    expect(sorted.length, `partition ${partition}: rows in files vs committed records`).toBe(committed.length);
    expect(sorted.join(','), `partition ${partition}: every committed record in exactly one file`).toBe(committed.join(','));
  }
  return { files, rowsByFile, committedOffsets };
}
