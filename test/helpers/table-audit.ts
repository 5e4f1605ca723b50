/**
 * The invariants of a table, counted rather than asserted, so that a test (checkTable)
 * and the fault scenarios (`npm run chaos`, which runs outside vitest) judge a catalog
 * the same way: ranges and lost intervals tile each partition's indexed range; every
 * committed record, as a read_committed consumer we did not write sees it, is in exactly
 * one file; every file rebuilds from Kafka byte-identical to the catalog's.
 */
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { earliestOffsets } from '../../src/kafka/offsets.js';
import { bucketOf } from '../../src/ranges/buckets.js';
import { rebuildFile } from '../../src/files/rebuild.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import { committedOffsetsIndependently } from './independent-kafka.js';

export type Row = Record<string, unknown>;

const text = new TextDecoder();
/**
 * hyparquet's options for reading a file as our tests compare it: JSON columns as their
 * text (hyparquet would JSON.parse a column of converted type JSON, as v2 writes them;
 * v1's UTF8 columns come back as text anyway), other byte arrays as bytes.
 */
export const readAsText = { compressors, utf8: false, parsers: { jsonFromBytes: (bytes: Uint8Array) => bytes && text.decode(bytes) } } as const;

/** The file's bytes rebuilt from Kafka (checked against the catalog), read back by hyparquet. */
export async function rebuiltRows(engine: Engine, table: TableRecord, file: CatalogFile): Promise<Row[]> {
  const rebuilt = await rebuildFile(kafkaSource(engine.kafka), table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion));
  return (await parquetReadObjects({ ...readAsText, file: rebuilt.bytes.slice().buffer })) as Row[];
}

export function timeOf(value: unknown): number {
  return value instanceof Date ? value.getTime() : Number(value);
}

export interface TableAudit {
  files: CatalogFile[];
  /** Rows of every file that rebuilt (empty when audited with `keepRows: false`). */
  rowsByFile: Map<bigint, Row[]>;
  /** Per partition, the offsets of the committed records the independent reader found in the audited range. */
  committedOffsets: Map<number, bigint[]>;
  /** Committed records in the audited ranges (the independent reader's count). */
  committed: number;
  /** Distinct committed offsets found in rebuilt files. */
  indexed: number;
  /** Committed records in no file. */
  lost: number;
  /** Rows beyond the first for the same offset. */
  duplicated: number;
  filesRebuilt: number;
  /** Files Kafka's retention passed (with `belowEarliest`): not rebuilt, their records not audited. */
  expired: number;
  /** Everything that broke an invariant, one sentence each: gaps and overlaps, files that do not rebuild, misplaced rows. */
  problems: string[];
}

const ascending = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Audits every partition of `table` over [indexed_start, indexed_end), or up to
 * `producedEnd` of a partition when that is further: the end of what a producer wrote,
 * whose committed records must all be in files once the indexer caught up.
 * `keepRows: false` checks each file's rows and lets them go (a load run's gigabytes of
 * rows would not fit in memory at once); `rowsByFile` then stays empty. `readerTimeoutMs`:
 * how long the independent reader may take (default 2 minutes).
 */
export async function auditTable(
  engine: Engine,
  table: TableRecord,
  producedEnd: ReadonlyMap<number, bigint> = new Map(),
  options: { belowEarliest?: 'expired'; keepRows?: boolean; readerTimeoutMs?: number } = {},
): Promise<TableAudit> {
  const files = await listFiles(engine.catalog, table.tableId);
  const partitions = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1 ORDER BY partition_id',
    [table.tableId],
  );
  const lostIntervals = await engine.catalog.query<{ partition_id: number; start_offset: bigint; end_offset: bigint }>(
    'SELECT partition_id, start_offset, end_offset FROM offsetlake.lost_interval WHERE table_id = $1',
    [table.tableId],
  );
  const audit: TableAudit = { files, rowsByFile: new Map(), committedOffsets: new Map(), committed: 0, indexed: 0, lost: 0, duplicated: 0, filesRebuilt: 0, expired: 0, problems: [] };
  // With retention in play (`belowEarliest: 'expired'`): a file that starts below Kafka's
  // earliest offset can no longer be rebuilt, and what it held can no longer be read; the
  // audit of records and rebuilds starts after the last such file.
  const expiredBelow = new Map<number, bigint>();
  if (options.belowEarliest === 'expired') {
    const earliest = await earliestOffsets(engine.kafka, partitions.rows.map((row) => ({ topic: table.topic, partition: row.partition_id })));
    partitions.rows.forEach((row, i) => {
      const gone = files.filter((f) => f.partition === row.partition_id && f.startOffset < earliest[i]!);
      if (gone.length > 0) expiredBelow.set(row.partition_id, gone.reduce((end, f) => (f.endOffset > end ? f.endOffset : end), 0n));
    });
  }
  const isExpired = (file: CatalogFile) => file.endOffset <= (expiredBelow.get(file.partition) ?? -1n);

  // Tiling: distinct ranges and lost intervals (offsets Kafka deleted before anyone
  // indexed them) in offset order, each starting where the one before ended.
  const readable: { topic: string; partition: number; start: bigint; end: bigint }[] = [];
  for (const { partition_id: partition, indexed_start: start, indexed_end: end } of partitions.rows) {
    const ranges = [...new Map(files.filter((f) => f.partition === partition).map((f) => [`${f.startOffset}:${f.endOffset}`, f])).values()];
    const lost = lostIntervals.rows.filter((l) => l.partition_id === partition && l.end_offset > start);
    const segments = [
      ...ranges.map((r) => ({ startOffset: r.startOffset, endOffset: r.endOffset, lost: false })),
      ...lost.map((l) => ({ startOffset: l.start_offset, endOffset: l.end_offset, lost: true })),
    ].sort((a, b) => ascending(a.startOffset, b.startOffset));
    let expected = segments[0]?.lost && segments[0].startOffset < start ? segments[0].startOffset : start;
    for (const segment of segments) {
      if (segment.startOffset !== expected) audit.problems.push(`partition ${partition}: a ${segment.lost ? 'lost interval' : 'range'} starts at ${segment.startOffset}, expected ${expected}`);
      expected = segment.endOffset;
    }
    if (expected !== end) audit.problems.push(`partition ${partition}: ranges end at ${expected}, indexed_end is ${end}`);

    // What must be in files: [indexed_start, max(indexed_end, producedEnd)) less the lost
    // intervals (Kafka deleted them, nobody can read them).
    const until = (producedEnd.get(partition) ?? 0n) > end ? producedEnd.get(partition)! : end;
    let from = (expiredBelow.get(partition) ?? 0n) > start ? expiredBelow.get(partition)! : start;
    for (const l of [...lost].sort((a, b) => ascending(a.start_offset, b.start_offset))) {
      if (l.start_offset > from) readable.push({ topic: table.topic, partition, start: from, end: l.start_offset });
      if (l.end_offset > from) from = l.end_offset;
    }
    if (until > from) readable.push({ topic: table.topic, partition, start: from, end: until });
  }

  const committed = await committedOffsetsIndependently(engine.config.kafkaBrokers, readable, options.readerTimeoutMs);
  readable.forEach((r, i) => audit.committedOffsets.set(r.partition, [...(audit.committedOffsets.get(r.partition) ?? []), ...committed[i]!]));
  for (const { partition_id: partition } of partitions.rows) {
    const expected = audit.committedOffsets.get(partition) ?? [];
    if (!audit.committedOffsets.has(partition)) audit.committedOffsets.set(partition, expected);
    const seen = new Map<bigint, number>();
    for (const file of files.filter((f) => f.partition === partition)) {
      if (isExpired(file)) {
        audit.expired += 1;
        continue;
      }
      let rows: Row[];
      try {
        rows = await rebuiltRows(engine, table, file);
      } catch (error) {
        audit.problems.push(`partition ${partition}: file ${file.dataFileId} [${file.startOffset}, ${file.endOffset}) does not rebuild: ${(error as Error).message}`);
        continue;
      }
      audit.filesRebuilt += 1;
      if (options.keepRows !== false) audit.rowsByFile.set(file.dataFileId, rows);
      if (BigInt(rows.length) !== file.recordCount) audit.problems.push(`file ${file.dataFileId}: ${rows.length} rows, the catalog says ${file.recordCount}`);
      // Plain checks per row, a few sentences per file: 350,000 of anything slow take seconds.
      const misplaced: string[] = [];
      for (const row of rows) {
        const offset = BigInt(row._offset as bigint);
        if (offset < file.startOffset || offset >= file.endOffset) misplaced.push(`offset ${offset} outside [${file.startOffset}, ${file.endOffset})`);
        if (bucketOf(timeOf(row._timestamp), table.settings.granularity) !== file.bucket.getTime()) misplaced.push(`offset ${offset} outside bucket ${file.bucket.toISOString()}`);
        if (row._partition !== partition) misplaced.push(`offset ${offset} has _partition ${String(row._partition)}`);
        seen.set(offset, (seen.get(offset) ?? 0) + 1);
      }
      audit.problems.push(...misplaced.slice(0, 5).map((m) => `rows of file ${file.dataFileId}: ${m}`));
    }
    const wanted = new Set(expected);
    const lost = expected.filter((offset) => !seen.has(offset));
    const strangers = [...seen.keys()].filter((offset) => !wanted.has(offset));
    const duplicated = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
    audit.committed += expected.length;
    audit.indexed += seen.size - strangers.length;
    audit.lost += lost.length;
    audit.duplicated += duplicated;
    if (lost.length > 0) audit.problems.push(`partition ${partition}: ${lost.length} committed records in no file (first: ${lost.slice(0, 5).join(', ')})`);
    if (duplicated > 0) audit.problems.push(`partition ${partition}: ${duplicated} records in more than one file`);
    if (strangers.length > 0) audit.problems.push(`partition ${partition}: ${strangers.length} rows of offsets the independent reader has no committed record at (first: ${strangers.slice(0, 5).join(', ')})`);
  }
  return audit;
}
