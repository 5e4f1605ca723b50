/**
 * What shapes the bytes of our own writer's files, in one place: each encoder version
 * (encoder.ts) pins one set of these, and every module of the writer reads the ones it
 * needs, so none of them imports the writer that puts the modules together.
 */
export type Codec = 'UNCOMPRESSED' | 'SNAPPY' | 'ZSTD' | 'LZ4_RAW';

export interface WriterSettings {
  codec: Codec;
  /** Compresses one page into the codec's raw format; unused for UNCOMPRESSED. */
  compress: (page: Uint8Array) => Uint8Array;
  /** Target uncompressed size of a data page. */
  pageBytes: number;
  /**
   * Rows per data page at most. Every column's pages then start at the same rows (unless
   * a page reaches `pageBytes` first), so a reader that skips pages by one column's page
   * index (a filter on `_offset` or `_timestamp`) can skip the same rows of the others.
   */
  pageRows: number;
  /** Byte-array statistics (footer and page index) longer than this are cut. */
  statisticsBytes: number;
  /**
   * Encoder 2's cut bounds, kept only so that its files rebuild to their bytes: it cut a
   * bound with `bytes.slice()`, which for a Node Buffer (a Kafka record's key, value or
   * header, a decoder's bytes field) is a view of the value, and raised the max in place,
   * so the value itself changed (issue 25) and every later bound read the raised bytes.
   * Here the raises go to a copy of each value, read back as encoder 2 read the value, so
   * the bytes are encoder 2's and the values stay untouched. Never set for a new encoder.
   */
  boundsRaisedInPlace?: boolean;
  /**
   * field_id on a nested group node (a struct in a struct, a list's element group) too,
   * as Iceberg's own writer puts it: from encoder v5 on (issue 47; engines that map nested
   * fields by id, Trino and Daft, lost them). Before, only top-level columns and leaves had
   * one; their files keep exactly that whatever `fieldIds` names.
   */
  groupFieldIds?: boolean;
  /**
   * A UTC timestamp column in milliseconds is stored as TIMESTAMP(MICROS, true), its values
   * times 1000 (encoder v5 on): Iceberg's `timestamptz`, which Trino reads and refuses in
   * milliseconds. The column's statistics (`writtenStatistics`, the catalog's) stay in
   * the column's own unit; only the file's values, footer and page index are in micros.
   */
  utcMillisAsMicros?: boolean;
  /**
   * A local (not UTC) millisecond timestamp column too, as TIMESTAMP(MICROS, false), its
   * values times 1000 (encoder v6 on): Iceberg's `timestamp` is micros, and an engine that
   * takes the file's unit from Iceberg's mapping must not meet milliseconds.
   */
  localMillisAsMicros?: boolean;
  /**
   * A JSON text column stored as Parquet STRING (encoder v6 on): Iceberg declares it
   * `string`, whose Parquet form is STRING, and polars refused the JSON annotation
   * (`incoming: Binary != target: String`). The DuckLake face still calls it `json`.
   */
  jsonAsString?: boolean;
  /**
   * A decimal above precision 38 stored as a plain FIXED_LEN_BYTE_ARRAY, without the
   * DECIMAL annotation (encoder v6 on): Iceberg has no such decimal and declares it
   * `fixed[L]`, whose Parquet form is plain fixed bytes; each value's bytes stay the same
   * (big-endian two's complement). A reader orders plain fixed bytes as unsigned bytes,
   * not in the decimal order its bounds are taken in (a negative value's bytes sort after
   * every positive one's), so the file bounds it nowhere: no min/max in the chunk's
   * statistics, no ColumnIndex (OffsetIndex only; null counts kept). The catalog's
   * statistics (`writtenStatistics`) stay decimal values.
   */
  wideDecimalAsFixed?: boolean;
}

export interface WriteOptions {
  rowGroupRows: number;
  /** field_id per schema node, keyed by its path joined with '.'. */
  fieldIds: Readonly<Record<string, number>>;
  /** Written in this order. */
  keyValueMetadata: readonly { key: string; value: string }[];
  createdBy: string;
}
