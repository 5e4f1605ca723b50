/**
 * One committed Kafka record as the engine sees it, whatever delivered it (a committed
 * fetch, an MSK event). Offsets are bigint; timestamps are epoch milliseconds.
 */
export interface KafkaRecord {
  offset: bigint;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: ReadonlyArray<readonly [name: string, value: Uint8Array | null]>;
  /** Key + value + header bytes, when whoever decoded the record counted them (`recordBytes` then asks nothing else). */
  readonly byteSize?: number;
  /**
   * Why the record's key, value and headers could not be read (its batch decompresses to
   * more than MAX_BATCH_RECORD_BYTES, src/kafka/unreadable-batch.ts): they are null and empty,
   * and the row's `_error` says this.
   */
  readonly readError?: string;
}

/** Key + value + header bytes: what `file_bytes` counts. */
export function recordBytes(record: KafkaRecord): number {
  if (record.byteSize !== undefined) return record.byteSize;
  let bytes = (record.key?.byteLength ?? 0) + (record.value?.byteLength ?? 0);
  for (const [name, value] of record.headers) bytes += Buffer.byteLength(name, 'utf8') + (value?.byteLength ?? 0);
  return bytes;
}

/**
 * Records as columns: every field of record i at index i of a flat array, and keys,
 * values, header names and header values as positions in bytes the records already lie
 * in (a batch's decompressed records), so that encoding them makes no object or Buffer
 * per record (issue 27). A length of -1 is null. `recordColumns` (record-batch.ts) makes
 * them from any records.
 */
export interface RecordColumns {
  count: number;
  /** Offsets as numbers, or null when one lies beyond 2^53 (then read `offset` of the records). */
  offsets: Float64Array | null;
  timestamps: Float64Array;
  key: ByteSpanColumn;
  value: ByteSpanColumn;
  /** Record i's headers are entries [headerStarts[i], headerStarts[i + 1]) of `headerNames` and `headerValues`. */
  headerStarts: Int32Array;
  /** UTF-8 names (never null; an empty name is empty), or null when a name is not well-formed text (a lone surrogate): the records' own headers then. */
  headerNames: ByteSpanColumn | null;
  headerValues: ByteSpanColumn;
  /** Record i's `readError`, when some record has one (absent or null: none has). */
  readErrors?: (string | null)[] | null;
}

/**
 * Columns that need no records beside them: every offset a number and every header name
 * UTF-8. A build worker gets its records so (src/files/record-transfer.ts).
 */
export interface SelfContainedColumns extends RecordColumns {
  offsets: Float64Array;
  headerNames: ByteSpanColumn;
}

/** The records a build takes: records, or columns that need none (`recordColumns` gives either as columns). */
export type FileRecords = readonly KafkaRecord[] | SelfContainedColumns;

/** The columns, if they need no records beside them. */
export function selfContained(columns: RecordColumns): SelfContainedColumns | undefined {
  return columns.offsets && columns.headerNames ? (columns as SelfContainedColumns) : undefined;
}

export function recordCount(records: FileRecords): number {
  return 'count' in records ? records.count : records.length;
}

/** Key + value + header bytes of record i of `columns` (`recordBytes` of it): the lengths of its spans. */
export function columnRecordBytes(columns: SelfContainedColumns, i: number): number {
  let bytes = Math.max(0, columns.key.lengths[i]!) + Math.max(0, columns.value.lengths[i]!);
  for (let h = columns.headerStarts[i]!; h < columns.headerStarts[i + 1]!; h++) bytes += columns.headerNames.lengths[h]! + Math.max(0, columns.headerValues.lengths[h]!);
  return bytes;
}

/** Byte strings as places in shared bytes: entry i is `sources[source[i]]` from `starts[i]`, `lengths[i]` long (-1: null). */
export interface ByteSpanColumn {
  sources: Uint8Array[];
  source: Int32Array;
  starts: Int32Array;
  lengths: Int32Array;
}
