import { expect } from 'vitest';
import type { CatalogFile } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { auditTable, rebuiltRows, timeOf, type Row } from './table-audit.js';

export type { Row };
export { rebuiltRows };

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
  files: CatalogFile[];
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
  const audit = await auditTable(engine, table);
  expect(audit.problems, `${table.name}: the invariants`).toEqual([]);
  for (const file of audit.files) {
    const rows = audit.rowsByFile.get(file.dataFileId)!;
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
  return { files: audit.files, rowsByFile: audit.rowsByFile, committedOffsets: audit.committedOffsets };
}
