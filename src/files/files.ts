/**
 * From a sealed range to the catalog's files: one Parquet file per time bucket, built in
 * memory only to take its exact statistics, footer and checksum; then the bytes go.
 * `encodeFile` is also what a rebuild runs, so both sides build the same way. Registry
 * formats first merge every schema the range's records name into the table schema
 * (src/schema/evolve.ts), then decode with that version (src/schema/decode.ts). Pure: the
 * caller reads the schema version, the indexes and the encoder from the catalog and the
 * registry (src/indexer/range-builder.ts for indexing and backfill) and stores what it returns.
 */
import type { FileGranules, NewCatalogFile, NewRange } from '../catalog/file-writes.js';
import type { TableRecord } from '../table/record.js';
import {
  buildDataFile, ByteSpans, bytesOfRange, SafeInt64s, StructVectors, chunkChecksums, encodeParquet, encoderFor, fileLayout, PreparedData, sha256OfRange, kafkaColumnArrays, kafkaTableColumns, prepare, rowGroupSpans, ValueError, valueAt,
  type Column, type ColumnArrays, type ColumnVector, type DataFile, type EncodedFile, type EncodeOptions,
} from '../parquet/index.js';
import type { SealedRange } from '../ranges/sealer.js';
import { columnRecordBytes, recordBytes, recordCount, selfContained, type FileRecords, type KafkaRecord, type RecordColumns, type SelfContainedColumns } from '../kafka/record.js';
import { recordColumns } from '../kafka/record-batch.js';
import { fieldIds, type TableSchema } from '../schema/table-schema.js';
import { isRegistryFormat, KEY_COLUMN, tableDecoder } from '../schema/decode.js';
import { ownValue } from '../common/objects.js';
import { resolveForFile } from '../indexes/columns.js';
import { fileIndexEntries } from '../indexes/entries.js';
import type { IndexDefinition } from '../indexes/definition.js';

/** Turns a sealed range into the catalog's files (Parquet built in memory, statistics taken). */
export type RangeBuilder = (table: TableRecord, partition: number, range: SealedRange) => Promise<NewRange>;

/**
 * The rows of one file, normalized for its columns: what both the bytes and the
 * statistics come from. `columns`: `recordColumns(records)`, when the caller made them;
 * `decodedOnly`: a rebuild of some columns of a file without error rows (TableDecoder.decode).
 */
export function fileRows(
  table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, encoderVersion: string,
  { columns = recordColumns(records), decodedOnly }: { columns?: RecordColumns; decodedOnly?: ReadonlySet<string> } = {},
): PreparedData {
  const { jsonRules } = encoderFor(encoderVersion);
  const data: ColumnArrays = kafkaColumnArrays(partition, records, table.format, { columns, jsonRules });
  if (isRegistryFormat(table.format)) {
    const decoded = tableDecoder(table.format, schema, jsonRules).decode(records, decodedOnly, columns);
    return prepareDecoded(schema.columns, { ...data, ...decoded }, columns);
  }
  return prepare(schema.columns, data);
}

function fileOptions(table: TableRecord, schema: TableSchema, encoderVersion: string): EncodeOptions & { encoderVersion: string } {
  return { rowGroupRows: table.settings.row_group_rows, encoderVersion, fieldIds: fieldIds(schema) };
}

/** One file's bytes, as a rebuild or a query needs them: the same inputs give the same bytes. */
export function encodeFile(table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, encoderVersion: string): EncodedFile {
  return encodeRows(table, schema, fileRows(table, schema, partition, records, encoderVersion), encoderVersion);
}

/** A file's bytes from its rows (`fileRows`), for a caller that needs the rows too (an index backfill takes entries from them). */
export function encodeRows(table: TableRecord, schema: TableSchema, rows: PreparedData, encoderVersion: string): EncodedFile {
  return encodeParquet(schema.columns, rows, fileOptions(table, schema, encoderVersion));
}

/**
 * Kafka columns whose values are the records' own, whatever the format: no JSON check and
 * no decoding changes them (an error row of a registry format touches `_value`, `_error`
 * and the decoded columns only; decoded fields named like these are renamed, decode.ts).
 */
const recordColumnNames = new Set(['_partition', '_offset', '_timestamp', '_key', '_headers']);

/**
 * Some top-level columns (by index) of some of a file's rows, as a file of one row group:
 * a column chunk depends only on its own leaf's values in its row group, so the chunks of
 * this file are the chunks of that row group in the whole file, byte for byte. Only the
 * work the chosen columns depend on is done: normalizing is per column, so a json or raw
 * table normalizes the chosen columns alone, and checks its values as JSON only when
 * `_value` or `_error` is chosen and the caller does not know them all to be JSON (a
 * rebuild of a file without error rows, `noErrorRows`); a registry table decodes nothing when only record
 * columns are chosen, and otherwise decodes and normalizes every column (a row that one
 * column refuses becomes an error row in all of them), then encodes the chosen ones;
 * in a file without error rows no row can become one, so it decodes only the fields the
 * chosen columns come from (Avro skips the others).
 */
export function encodeColumns(
  table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, encoderVersion: string, columns: readonly number[],
  options: { noErrorRows?: boolean } = {},
): EncodedFile {
  const chosen = columns.map((c) => schema.columns[c]!);
  const only = new Set(chosen.map((column) => column.name));
  const { jsonRules } = encoderFor(encoderVersion);
  let picked: PreparedData;
  if (chosen.every((column) => recordColumnNames.has(column.name))) {
    // 'raw': the same record columns as every format, without the JSON check of values.
    picked = prepare(chosen, kafkaColumnArrays(partition, records, 'raw', { only }));
  } else if (!isRegistryFormat(table.format)) {
    picked = prepare(chosen, kafkaColumnArrays(partition, records, table.format, { only, valuesAreJson: options.noErrorRows ?? false, jsonRules }));
  } else {
    picked = (options.noErrorRows ? chosenDecoded(table, schema, partition, records, chosen, only, encoderVersion) : undefined) ?? pickedRows(table, schema, partition, records, columns, encoderVersion);
  }
  return encoderFor(encoderVersion).encode(picked, { ...fileOptions(table, schema, encoderVersion), rowGroupRows: Math.max(1, recordCount(records)) });
}

/** The chosen columns of every row (a registry format's whole rows decoded and normalized, then picked). */
function pickedRows(table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, columns: readonly number[], encoderVersion: string): PreparedData {
  const rows = fileRows(table, schema, partition, records, encoderVersion);
  return new PreparedData(columns.map((c) => rows.columns[c]!), columns.map((c) => rows.arrays[c]!), rows.rowCount);
}

/**
 * A registry format's chosen columns of a file without error rows: only their fields
 * decoded, only they normalized. Without error rows no column's value depends on another's
 * (an error row's nulls are the only such dependence), so these are the values the whole
 * rows give them. A value the chosen columns refuse contradicts the statistics: undefined,
 * and the caller takes the whole rows (whose chunks the checksums then judge).
 */
function chosenDecoded(
  table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, chosen: readonly Column[], only: ReadonlySet<string>, encoderVersion: string,
): PreparedData | undefined {
  if (!isRegistryFormat(table.format)) return undefined;
  const columns = recordColumns(records);
  const decoded = tableDecoder(table.format, schema, encoderFor(encoderVersion).jsonRules).decode(records, only, columns);
  try {
    return prepare(chosen, { ...kafkaColumnArrays(partition, records, table.format, { only, columns }), ...decoded });
  } catch (error) {
    if (error instanceof ValueError) return undefined;
    throw error;
  }
}

/** One file's bytes and exact statistics, as indexing records them. */
export function buildFile(table: TableRecord, schema: TableSchema, partition: number, records: FileRecords, encoderVersion: string): DataFile {
  return buildDataFile(schema.columns, fileRows(table, schema, partition, records, encoderVersion), fileOptions(table, schema, encoderVersion));
}

/**
 * No record stops a partition: a decoded value that its column cannot take (a decoder's
 * surprise, a value out of the column's range) makes that side of its row an error row,
 * like a value the schema cannot decode: the side's columns null, the raw value kept in
 * `_value`, and `_error` saying which column refused what. Only rows that fail are
 * touched, and which fail depends on nothing but the records and the schema, so a
 * rebuild makes the same rows.
 */
export function prepareDecoded(columns: readonly Column[], data: Record<string, ArrayLike<unknown> | ColumnVector>, records: RecordColumns): PreparedData {
  try {
    return prepare(columns, data);
  } catch (error) {
    if (!(error instanceof ValueError)) throw error;
  }
  const kafka = new Set(kafkaTableColumns('avro').map((c) => c.name));
  const valueColumns = columns.filter((c) => !kafka.has(c.name) && c.name !== KEY_COLUMN).map((c) => c.name);
  for (let row = 0; row < records.count; row++) {
    for (let attempt = 0; ; attempt++) {
      const problem = refusal(columns, data, row);
      if (!problem) break;
      if (attempt === 2 || kafka.has(problem.column)) throw problem;
      const side = problem.column === KEY_COLUMN ? 'key' : 'value';
      // the decoded columns (arrays, or vectors of their own), `_value` and `_error` are the decoder's (the record columns are checked to fit above)
      const decoded = data as Record<string, unknown[]>;
      for (const name of side === 'key' ? [KEY_COLUMN] : valueColumns) {
        const column = data[name]!;
        if (column instanceof ByteSpans) column.lengths[row] = -1;
        else if (column instanceof SafeInt64s) column.numbers[row] = NaN;
        else if (column instanceof StructVectors) column.nulls[row] = 1;
        else decoded[name]![row] = null;
      }
      if (side === 'value') decoded._value![row] = ByteSpans.of(records.value).at(row);
      const text = `${side}: column ${problem.path} cannot hold the decoded value (it must be ${problem.expected})`;
      decoded._error![row] = decoded._error![row] ? `${decoded._error![row] as string}; ${text}` : text;
    }
  }
  return prepare(columns, data);
}

/** Why one row's values do not fit the columns, if they do not. */
function refusal(columns: readonly Column[], data: Record<string, ArrayLike<unknown> | ColumnVector>, row: number): ValueError | undefined {
  try {
    prepare(columns, Object.fromEntries(columns.map((c) => [c.name, [valueAt(data[c.name]!, row)]])));
    return undefined;
  } catch (error) {
    if (error instanceof ValueError) return error;
    throw error;
  }
}

/** Records with their columns (`recordColumns` of them), for what needs both. */
export interface RecordsAndColumns {
  records: FileRecords;
  columns: RecordColumns;
}

/**
 * A built file's granules: its row groups and chunk positions from its footer, each
 * chunk's sha256, and each row group's offset span from its records' offsets (the file's
 * rows are its records in offset order). `span`: every committed record of the file's
 * offsets, of any bucket, whose bytes each granule counts. Null for a file whose chunks do
 * not tile its bytes (it is served whole).
 */
export function granulesOf(
  file: EncodedFile, own: RecordsAndColumns, startOffset: bigint, endOffset: bigint, span: readonly RecordsAndColumns[],
): FileGranules | null {
  const layout = fileLayout(file.footer, file.byteLength);
  if ('problem' in layout) return null;
  const spans = rowGroupSpans(layout.rowGroups.map((group) => group.rows), (row) => offsetAt(own, row), startOffset, endOffset);
  const kafkaBytes = spans.map(() => 0);
  for (const set of span) {
    const { records, columns } = set;
    const { offsets } = columns;
    const list = 'count' in records ? undefined : records;
    for (let i = 0; i < columns.count; i++) {
      // as numbers where the offsets are: no bigint per record
      const at = offsets ? granuleHolding(spans, offsets[i]!) : granuleHolding(spans, list![i]!.offset);
      if (at >= 0) kafkaBytes[at]! += columns.headerNames ? columnRecordBytes(columns as SelfContainedColumns, i) : recordBytes(list![i]!);
    }
  }
  return {
    granules: layout.rowGroups.map((group, rowGroup) => ({
      rowGroup, startOffset: spans[rowGroup]!.start, endOffset: spans[rowGroup]!.end, rowCount: group.rows, kafkaBytes: kafkaBytes[rowGroup]!,
      chunkSha256: chunkChecksums(group, file.parts),
    })),
    pageIndex: bytesOfRange(file.parts, layout.dataEnd, layout.footerStart),
    tailSha256: sha256OfRange(file.parts, layout.dataEnd, file.byteLength),
  };
}

function offsetAt({ records, columns }: RecordsAndColumns, row: number): bigint {
  return columns.offsets ? BigInt(columns.offsets[row]!) : (records as readonly KafkaRecord[])[row]!.offset;
}

/** The index of the span holding `offset` (spans are sorted and tile), or -1. */
function granuleHolding(spans: readonly { start: bigint; end: bigint }[], offset: bigint | number): number {
  let low = 0;
  let high = spans.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (offset < spans[mid]!.start) high = mid - 1;
    else if (offset >= spans[mid]!.end) low = mid + 1;
    else return mid;
  }
  return -1;
}

export function toNewDataFile(built: DataFile, schema: TableSchema, schemaVersion: number, bucket: number, recordCount: number, granules: FileGranules | null, indexEntries: NewCatalogFile['indexEntries'] = []): NewCatalogFile {
  return {
    granules,
    indexEntries,
    bucket,
    recordCount,
    fileSizeBytes: built.file.byteLength,
    footer: built.file.footer,
    sha256: built.file.sha256,
    schemaVersion,
    encoderVersion: built.file.encoderVersion,
    columns: built.statistics.map((stats) => {
      const columnId = ownValue(schema.leafIds, stats.column);
      if (columnId === undefined) throw new Error(`no column id for leaf ${stats.column} in the table schema`);
      return { columnId, valueCount: stats.valueCount, nullCount: stats.nullCount, nanCount: stats.nanCount, min: stats.min, max: stats.max };
    }),
  };
}

/** How an index's columns resolve against a file of `schema`. */
export function indexResolver(table: TableRecord, schema: TableSchema): (index: IndexDefinition) => ReturnType<typeof resolveForFile> {
  return (index) => resolveForFile(schema.columns, table.format, index.columns, index.kind);
}

/** A range to build: a sealed range whose files' records may come as columns (on a build worker). */
export type RangeToBuild = Omit<SealedRange, 'files'> & { files: { bucket: number; records: FileRecords }[] };

/** What building a range's files takes once the catalog has been asked: pure, so that it runs on any thread. */
export interface RangeBuildInput {
  table: TableRecord;
  schema: TableSchema;
  schemaVersion: number;
  /** The table's indexes that files carry entries for. */
  indexes: IndexDefinition[];
  encoderVersion: string;
  partition: number;
  range: RangeToBuild;
}

/** A sealed range's files: per bucket the Parquet file built in memory, its statistics, granules and index entries. */
export function buildRangeFiles({ table, schema, schemaVersion, indexes, encoderVersion, partition, range }: RangeBuildInput): NewRange {
  const span = range.files.map((file) => ({ records: file.records, columns: recordColumns(file.records) }));
  const files = range.files.map((file, f) => {
    const rows = fileRows(table, schema, partition, file.records, encoderVersion, { columns: span[f]!.columns });
    const built = buildDataFile(schema.columns, rows, fileOptions(table, schema, encoderVersion));
    const granules = granulesOf(built.file, span[f]!, range.startOffset, range.endOffset, span);
    const entries = fileIndexEntries(indexes, indexResolver(table, schema), rows);
    return toNewDataFile(built, schema, schemaVersion, file.bucket, span[f]!.columns.count, granules, entries);
  });
  return { startOffset: range.startOffset, endOffset: range.endOffset, reason: range.reason, files, indexIds: indexes.map((index) => index.indexId) };
}

/**
 * A sealed range as the build takes it: each file's records as columns once (`selfContained`
 * when they can be: they cross to a build worker moved, and the registry's schema ids are
 * read from them), else as the records.
 */
export function rangeToBuild(sealed: SealedRange): RangeToBuild {
  return { ...sealed, files: sealed.files.map((file) => ({ bucket: file.bucket, records: selfContained(recordColumns(file.records)) ?? file.records })) };
}
