/**
 * Deterministic Parquet encoding. A data file's bytes are dropped after indexing and
 * rebuilt from Kafka on read, so the same rows must always give the same bytes. An
 * encoder version fixes everything that shapes them: the writer library and its
 * version, every writer option, the column mapping (schema.ts), value normalization
 * (values.ts) and how rows are fed (one call, row groups of exactly `rowGroupRows`).
 * A version never changes its output (test/unit/parquet.golden.test.ts pins it); a
 * different output is a new entry in `encoders`, and old files keep their own.
 *
 * Why hyparquet-writer@0.17.0 — measured on this 2-core machine (100,000 records of
 * the Kafka row shape, ~1.1 KB JSON values, 116 MB of key+value+header bytes; best of
 * 5, MB/s of input; CPU time is steadier than wall time on a shared machine):
 *
 *   encode step (write, + sha256 and footer for ours)  MB/s cpu   MB/s wall   file
 *   hyparquet-writer, its ByteWriter, snappy              60–72      85–91    35 MB
 *   hyparquet-writer, its ByteWriter, uncompressed       100–146    147–176   118 MB
 *   hyparquet-writer, ChunkedWriter, snappy   ← v1        83–93     93–100    35 MB
 *   hyparquet-writer, ChunkedWriter, uncompressed        120–147        153   118 MB
 *   parquet-wasm 0.8.0 + apache-arrow 21.2.0 (Arrow
 *     buffers built directly, IPC into wasm), snappy     127–138    150–171    36 MB
 *     uncompressed                                       146–150    179–186   118 MB
 *
 * Whole build of a json file (bench/parquet.ts: JSON check 195–200, normalize ~500,
 * encode ~90, statistics ~440 MB/s cpu): ~46 MB/s cpu, ~53 MB/s wall.
 *
 * Both were deterministic within and across processes (v1 also across Node 20 and 22). parquet-wasm is ~1.5x faster
 * with snappy, but it cannot write the JSON logical type (Arrow's `arrow.json`
 * extension comes out as STRING), writes no NaN counts, cuts string statistics, keeps
 * its WebAssembly memory at its peak for the life of the process, and needs
 * apache-arrow besides. hyparquet-writer writes exactly the schema we ask for, with
 * exact footer statistics, in plain JavaScript.
 *
 * Snappy (hyparquet-writer's built-in JavaScript implementation, pinned with it): the
 * encode step takes 1.4–1.6x as long as uncompressed, but files are ~3.4x smaller on
 * JSON, and these bytes are what engines fetch over HTTP (and what a reader holds). Native compressors (node:zlib zstd, gzip)
 * are avoided on purpose: they ship with Node, so a runtime upgrade could change the
 * bytes under an unchanged encoder version.
 *
 * v2 on (below) is our own writer (writer.ts) around a native compressor pinned on npm, the
 * table's `compression`: ZSTD (@toondepauw/node-zstd, level 1; the default since issue 47,
 * bench/compression.ts), Snappy (snappy), LZ4_RAW (lz4-napi, the default before) or none. bench/encoders.ts,
 * same run: JSON 180 vs v1 85 MB/s cpu, Avro shape 724 vs 145, small records 97 vs 43
 * (docs/measurements.md, "Encoder v2: the figures", with the profile).
 */
import { createHash } from 'node:crypto';
import { parquetWrite, type ColumnSource, type SchemaElement } from 'hyparquet-writer';
import { compressSync as lz4CompressSync } from 'lz4-napi';
import { compressSync as snappyCompressSync } from 'snappy';
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { ChunkedWriter } from './chunked-writer.js';
import { parquetFooter } from './footer.js';
import { type Column, leaves, parquetSchema } from './schema.js';
import { prepare, type PreparedData, type RowData, withArrays } from './values.js';
import { type ColumnStatistics, writtenStatistics } from './statistics.js';
import type { JsonRules } from './json-text.js';
import { joinParts } from './file-parts.js';
import { OutOfStoredRangeError } from './plain-values.js';
import { assembleParquet, encodeRowGroups } from './writer.js';
import type { WriterSettings } from './writer-settings.js';
import { defaultSettings, type Compression, type TableSettings } from '../table/settings.js';

export interface EncodeOptions {
  /** Rows per row group; the last one holds the remainder. */
  rowGroupRows: number;
  /**
   * Extra key/value metadata for the footer, written sorted by key. Part of the bytes:
   * it must be something the catalog can give again at rebuild.
   */
  keyValueMetadata?: Readonly<Record<string, string>>;
  /**
   * Parquet `field_id` per schema node, keyed by its path joined with '.' (a top-level
   * column by its name, a nested leaf as `_headers.list.element.key`): the table's column
   * ids (see `fieldIds` in src/schema/table-schema.ts). Part of the bytes for encoders
   * that write field ids (v2 on); a node without an entry gets none, and before v5 a
   * nested group node gets none either (see `WriterSettings.groupFieldIds`).
   */
  fieldIds?: Readonly<Record<string, number>>;
}

export interface EncodedFile {
  /** The whole file. */
  bytes: Uint8Array;
  /** The file as the writer left it, in order: hashing a range of it needs no join. */
  parts: readonly Uint8Array[];
  /** The file's trailing bytes: FileMetaData + 4-byte length + "PAR1" (see footer.ts). */
  footer: Uint8Array;
  sha256: Uint8Array;
  byteLength: number;
  rowCount: number;
  /** Record this with the file: a rebuild must use the same encoder. */
  encoderVersion: string;
  /**
   * The file's exact statistics (statistics.ts), when the encoder took them in its own
   * pass over the values. Absent: whoever needs them walks the values.
   */
  statistics?: ColumnStatistics[];
}

export interface Encoder {
  readonly version: string;
  /**
   * What its files call JSON text: which values of a json table are error rows, and how a
   * registry table's untyped values are made JSON text (json-text.ts). `engines` from v4 on.
   */
  readonly jsonRules: JsonRules;
  encode(data: PreparedData, options: EncodeOptions): EncodedFile;
}

/** Metadata key under which every file names the encoder that built it. */
export const ENCODER_METADATA_KEY = 'offsetlake.encoder';

/**
 * Everything of a hyparquet-writer encoder that shapes its bytes besides the data. An
 * encoder version is one fixed value of these; bench/encoders.ts builds candidates
 * from other values to measure them.
 */
export interface HyparquetSettings {
  version: string;
  codec: 'SNAPPY' | 'LZ4_RAW' | 'UNCOMPRESSED';
  /** Compresses one page; absent: hyparquet-writer's own (its JavaScript Snappy). */
  compress?: (page: Uint8Array) => Uint8Array;
  /** ColumnIndex per column chunk (hyparquet-writer writes page indexes only for chunks of 2+ pages). */
  columnIndex: boolean;
  /** Write `EncodeOptions.fieldIds` as the schema's field_id. */
  fieldIds: boolean;
  /** PLAIN (no dictionary attempt) for the BYTE_ARRAY columns listed by top-level name. */
  plainColumns: readonly string[];
  pageSize: number;
}

function checkedRowGroupRows(options: EncodeOptions): number {
  const { rowGroupRows } = options;
  if (!Number.isSafeInteger(rowGroupRows) || rowGroupRows < 1) throw new Error(`rowGroupRows must be a positive integer, got ${rowGroupRows}`);
  return rowGroupRows;
}

/** One encoder from fixed settings. */
export function hyparquetEncoder(settings: HyparquetSettings): Encoder {
  const { version } = settings;
  const compressors = settings.compress ? { [settings.codec]: settings.compress } : undefined;
  const plain = new Set(settings.plainColumns);
  return {
    version,
    jsonRules: 'json-parse',
    encode(given, options) {
      const data = withArrays(given);
      const rowGroupRows = checkedRowGroupRows(options);
      const columnData: ColumnSource[] = data.columns.map((column, i) => ({
        name: column.name,
        data: data.arrays[i] as unknown[], // withArrays: every column an array
        // hyparquet-writer's dictionary keys values with a Map, for which -0 and +0 are one
        // key: whichever comes first would be written for both. PLAIN keeps each as given.
        ...(hasFloatingLeaf(column) || plain.has(column.name) ? { encoding: 'PLAIN' as const } : {}),
        // spelled out, not left to defaults, so that the settings are read here
        columnIndex: settings.columnIndex,
        offsetIndex: true,
        bloomFilter: false,
      }));
      const extra = sortedMetadata(options.keyValueMetadata);
      const schema = parquetSchema(data.columns);
      const writer = new ChunkedWriter();
      const pending = parquetWrite({
        writer,
        schema: settings.fieldIds ? withFieldIds(schema, options.fieldIds ?? {}) : schema,
        columnData,
        codec: settings.codec,
        ...(compressors ? { compressors } : {}),
        statistics: true,
        statisticsTruncateLength: Infinity,
        rowGroupSize: rowGroupRows,
        pageSize: settings.pageSize,
        kvMetadata: [{ key: ENCODER_METADATA_KEY, value: version }, ...extra],
        createdBy: `offsetlake (${version})`,
      });
      // only a writer whose flush() returns a promise makes this asynchronous; ours has none
      if (pending) throw new Error('hyparquet-writer unexpectedly wrote asynchronously');
      return finish(writer.getBytes(), data.rowCount, version);
    },
  };
}

/**
 * The flattened schema with `field_id` set on each node that `ids` names by its path.
 * Walks the depth-first order of parquetSchema: each element's children follow it.
 */
function withFieldIds(schema: readonly SchemaElement[], ids: Readonly<Record<string, number>>): SchemaElement[] {
  const out: SchemaElement[] = [schema[0]!];
  let at = 1;
  const walk = (prefix: string): void => {
    const element = schema[at++]!;
    const path = prefix ? `${prefix}.${element.name}` : element.name;
    const id = Object.hasOwn(ids, path) ? ids[path] : undefined;
    out.push(id === undefined ? element : { ...element, field_id: id });
    for (let child = 0; child < (element.num_children ?? 0); child++) walk(path);
  };
  for (let column = 0; column < (schema[0]!.num_children ?? 0); column++) walk('');
  return out;
}

const hyparquetWriterV1 = hyparquetEncoder({
  version: 'hyparquet-writer@0.17.0/v1',
  codec: 'SNAPPY',
  columnIndex: false,
  fieldIds: false,
  plainColumns: [],
  pageSize: 1024 * 1024,
});

/** Caller metadata by key (the encoder's own key is ours alone). */
function sortedMetadata(metadata: Readonly<Record<string, string>> | undefined): { key: string; value: string }[] {
  return Object.entries(metadata ?? {})
    .filter(([key]) => key !== ENCODER_METADATA_KEY)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => ({ key, value }));
}

function hasFloatingLeaf(column: Column): boolean {
  return leaves([column]).some((leaf) => leaf.type.kind === 'float' || leaf.type.kind === 'double');
}

function finish(bytes: Uint8Array, rowCount: number, encoderVersion: string): EncodedFile {
  return {
    bytes,
    parts: [bytes],
    footer: parquetFooter(bytes),
    sha256: new Uint8Array(createHash('sha256').update(bytes).digest()),
    byteLength: bytes.byteLength,
    rowCount,
    encoderVersion,
  };
}

/**
 * A file from its parts: joined into one buffer on first use of `bytes`, hashed part by
 * part on first use of `sha256` (a granule read checks its chunks' own checksums and
 * never needs the whole file's, so it neither joins nor hashes it).
 */
function finishParts(parts: readonly Uint8Array[], rowCount: number, encoderVersion: string, statistics?: ColumnStatistics[]): EncodedFile {
  let joined: Uint8Array | undefined;
  let sha256: Uint8Array | undefined;
  return {
    ...(statistics ? { statistics } : {}),
    get bytes() {
      joined ??= joinParts(parts);
      return joined;
    },
    get sha256() {
      if (!sha256) {
        const hash = createHash('sha256');
        for (const part of parts) hash.update(part);
        sha256 = new Uint8Array(hash.digest());
      }
      return sha256;
    },
    parts,
    footer: joinParts(parts.slice(-2)),
    byteLength: parts.reduce((n, part) => n + part.byteLength, 0),
    rowCount,
    encoderVersion,
  };
}

/**
 * v2 on: our own writer (writer.ts) around a native compressor. Everything that shapes
 * the bytes is named in the version and pinned exactly in package.json: the writer is
 * this repository's code (a change to its output is a new version), the compressor an
 * exact npm version (Snappy and LZ4 leave an encoder free to choose its matches, so
 * another implementation or version may give other, equally valid bytes).
 */
export interface OwnWriterSettings extends WriterSettings {
  version: string;
  /** Absent: `json-parse`, the rules of every encoder before v4. */
  jsonRules?: JsonRules;
  /**
   * The encoder (same JSON rules) that builds a file whose values this one cannot store
   * (`OutOfStoredRangeError`): the file then names that encoder, and is rebuilt with it.
   */
  fallback?: Encoder;
}

export function ownWriterEncoder(settings: OwnWriterSettings): Encoder {
  const { version } = settings;
  return {
    version,
    jsonRules: settings.jsonRules ?? 'json-parse',
    encode(given, options) {
      // v2 raised bounds inside Buffer values: it is given them as arrays, as when it was written
      const data = settings.boundsRaisedInPlace ? withArrays(given) : given;
      const rowGroupRows = checkedRowGroupRows(options);
      let groups: ReturnType<typeof encodeRowGroups>;
      try {
        groups = encodeRowGroups(data, rowGroupRows, settings);
      } catch (error) {
        if (error instanceof OutOfStoredRangeError && settings.fallback) return settings.fallback.encode(given, options);
        throw error;
      }
      const parts = assembleParquet(data, groups, {
        rowGroupRows,
        fieldIds: options.fieldIds ?? {},
        keyValueMetadata: [{ key: ENCODER_METADATA_KEY, value: version }, ...sortedMetadata(options.keyValueMetadata)],
        createdBy: `offsetlake (${version})`,
      }, settings);
      // v2 raised cut bounds inside the values, and its statistics read them raised: they walk the values.
      // Taken now, as text: the chunks' bounds are views into the records, which a file kept for its bytes would hold.
      return finishParts(parts, data.rowCount, version, settings.boundsRaisedInPlace ? undefined : writtenStatistics(data.columns, groups));
    },
  };
}

/** lz4-napi returns lz4_flex's block after a 4-byte size; LZ4_RAW is the block alone. */
function lz4Raw(page: Uint8Array): Uint8Array {
  return lz4CompressSync(page as Buffer).subarray(4);
}

/**
 * ZSTD's level in our files: 1, the cheapest to build and to rebuild (bench/compression.ts:
 * level 3 costs ×1.2 the encode for 3 % smaller files, level 6 ×3.7 for 8 %). A frame of
 * libzstd 1.5.7 through @toondepauw/node-zstd@2.0.0's streaming encoder (no content size,
 * no checksum), which the encoder version names: another library or level may make other
 * valid frames.
 */
const ZSTD_LEVEL = 1;
const zstdEncoder = new ZstdEncoder(ZSTD_LEVEL);

/** Everything but the codec of our writer's settings (benches build candidates from it). */
export const ownWriterPageShape = { pageBytes: 1024 * 1024, pageRows: 1_000, statisticsBytes: 64 } as const;

/** The page compressions a table may choose (`compression`, src/table/settings.ts). */
export type PageCompression = Compression;

/** The writer settings of the newest encoders (v3 to v5, which differ in their JSON rules and `groupFieldIds` only; v2 adds `boundsRaisedInPlace`), for code that drives the writer itself (row groups apart). */
export const ownWriterSettings: Readonly<Record<PageCompression, WriterSettings>> = Object.freeze({
  zstd: { codec: 'ZSTD', compress: (page: Uint8Array) => zstdEncoder.encodeSync(page as Buffer), ...ownWriterPageShape },
  lz4_raw: { codec: 'LZ4_RAW', compress: lz4Raw, ...ownWriterPageShape },
  snappy: { codec: 'SNAPPY', compress: (page: Uint8Array) => snappyCompressSync(page as Buffer), ...ownWriterPageShape },
  none: { codec: 'UNCOMPRESSED', compress: (page: Uint8Array) => page, ...ownWriterPageShape },
});

/**
 * v2 raised cut byte-array bounds inside the values themselves when they were Node
 * Buffers (issue 25): its footers can hold a raised min, and the statistics taken after
 * it read the raised value. It stays so that its files rebuild to their bytes; v3 is v2
 * with bounds of their own, and the same bytes wherever v2 changed no value.
 */
const ownWriterSnappyV2 = ownWriterEncoder({ version: 'offsetlake-parquet@2/snappy@7.4.3', ...ownWriterSettings.snappy, boundsRaisedInPlace: true });
const ownWriterLz4V2 = ownWriterEncoder({ version: 'offsetlake-parquet@2/lz4-napi@2.10.0', ...ownWriterSettings.lz4_raw, boundsRaisedInPlace: true });

const ownWriterSnappyV3 = ownWriterEncoder({ version: 'offsetlake-parquet@3/snappy@7.4.3', ...ownWriterSettings.snappy });
const ownWriterLz4V3 = ownWriterEncoder({ version: 'offsetlake-parquet@3/lz4-napi@2.10.0', ...ownWriterSettings.lz4_raw });

/**
 * v4 is v3 with the JSON every engine we serve parses (issue 46): an escaped lone
 * surrogate in a json table's value makes an error row (DuckDB refused every query that
 * read `_value` of a file holding one), and a registry table's untyped value is JSON text
 * only when it nests at most `JSON_NESTING_LIMIT` deep and holds no lone surrogate. v3's
 * files took what JSON.parse takes, and keep being rebuilt with it.
 */
const ownWriterSnappyV4 = ownWriterEncoder({ version: 'offsetlake-parquet@4/snappy@7.4.3', ...ownWriterSettings.snappy, jsonRules: 'engines' });
const ownWriterLz4V4 = ownWriterEncoder({ version: 'offsetlake-parquet@4/lz4-napi@2.10.0', ...ownWriterSettings.lz4_raw, jsonRules: 'engines' });

/**
 * v5 is v4 with files that follow Iceberg's Parquet mapping (issue 47):
 * - a field_id on every schema node Iceberg's own writer gives one: a struct inside a
 *   struct and a list's `element` group too (`groupFieldIds`), each the id of the Iceberg
 *   schema (src/iceberg/schema.ts); the repeated `list` group has none, as in Iceberg's.
 *   Trino and Daft map nested fields by id only: in v4's files they found no id below the
 *   top level but on leaves, and read a struct in a struct as NULL;
 * - a UTC millisecond timestamp (`_timestamp`, Avro timestamp-millis) stored as
 *   TIMESTAMP(MICROS, true), Iceberg's `timestamptz` (`utcMillisAsMicros`): Trino refuses
 *   TIMESTAMP(MILLIS, true). The catalog's statistics stay in milliseconds. A file holding
 *   one beyond ±292,277 years (no int64 of micros) is built by v4, and names it.
 */
const ownWriterSnappy = ownWriterEncoder({
  version: 'offsetlake-parquet@5/snappy@7.4.3', ...ownWriterSettings.snappy, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true, fallback: ownWriterSnappyV4,
});
const ownWriterLz4 = ownWriterEncoder({
  version: 'offsetlake-parquet@5/lz4-napi@2.10.0', ...ownWriterSettings.lz4_raw, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true, fallback: ownWriterLz4V4,
});

/**
 * ZSTD pages (the default of new tables since issue 47: every engine we name reads it,
 * files about 0.64× Snappy's at Snappy's CPU or less, docs/measurements.md "Compression:
 * which codec by default") and pages without compression (`compression none`: for engines
 * on the same machine as serve, where bytes cost nothing to move). New files are built by
 * their v6 encoders (below); these v5 and v4 twins exist only as the fallbacks of v6 for
 * values its types cannot store (v6 → v5 → v4, as for the other codecs).
 */
const ownWriterZstdV4 = ownWriterEncoder({ version: `offsetlake-parquet@4/node-zstd@2.0.0/level-${ZSTD_LEVEL}`, ...ownWriterSettings.zstd, jsonRules: 'engines' });
const ownWriterZstd = ownWriterEncoder({
  version: `offsetlake-parquet@5/node-zstd@2.0.0/level-${ZSTD_LEVEL}`, ...ownWriterSettings.zstd, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true, fallback: ownWriterZstdV4,
});
const ownWriterUncompressedV4 = ownWriterEncoder({ version: 'offsetlake-parquet@4/uncompressed', ...ownWriterSettings.none, jsonRules: 'engines' });
const ownWriterUncompressed = ownWriterEncoder({
  version: 'offsetlake-parquet@5/uncompressed', ...ownWriterSettings.none, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true, fallback: ownWriterUncompressedV4,
});

/**
 * v6 is v5 with each Iceberg type stored as Iceberg's Parquet mapping says (issue 47,
 * docs/formats.md "Each type against Iceberg's Parquet mapping"):
 * - a JSON text column (a json table's `_value`, a registry table's untyped value) as
 *   STRING (`jsonAsString`): Iceberg declares it `string`, and polars' scan_iceberg refused
 *   v5's JSON annotation (`incoming: Binary != target: String`); the DuckLake face still
 *   declares it `json`, and DuckDB reads it so over a STRING column;
 * - a local millisecond timestamp (Avro local-timestamp-millis) as TIMESTAMP(MICROS, false),
 *   Iceberg's `timestamp` (`localMillisAsMicros`), the values times 1000;
 * - a decimal above precision 38 (only Avro `decimal` makes one), which Iceberg declares
 *   `fixed[L]`, as a plain FIXED_LEN_BYTE_ARRAY(L) without the DECIMAL annotation
 *   (`wideDecimalAsFixed`), the same bytes per value, and no bounds in the file (footer
 *   min/max, ColumnIndex): a reader orders plain fixed bytes unsigned, not as decimals.
 * A file that v6 cannot store (a millisecond timestamp with no int64 of micros) is built
 * by v5, which in turn hands it to v4 when it cannot store it either.
 */
/** What v6 stores otherwise than v5, the same for every codec. */
const v6Storage = { localMillisAsMicros: true, jsonAsString: true, wideDecimalAsFixed: true } as const;
const ownWriterSnappyV6 = ownWriterEncoder({
  version: 'offsetlake-parquet@6/snappy@7.4.3', ...ownWriterSettings.snappy, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true,
  ...v6Storage, fallback: ownWriterSnappy,
});
const ownWriterLz4V6 = ownWriterEncoder({
  version: 'offsetlake-parquet@6/lz4-napi@2.10.0', ...ownWriterSettings.lz4_raw, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true,
  ...v6Storage, fallback: ownWriterLz4,
});
const ownWriterZstdV6 = ownWriterEncoder({
  version: `offsetlake-parquet@6/node-zstd@2.0.0/level-${ZSTD_LEVEL}`, ...ownWriterSettings.zstd, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true,
  ...v6Storage, fallback: ownWriterZstd,
});
const ownWriterUncompressedV6 = ownWriterEncoder({
  version: 'offsetlake-parquet@6/uncompressed', ...ownWriterSettings.none, jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true,
  ...v6Storage, fallback: ownWriterUncompressed,
});

/** The encoder of new files for each page compression a table may choose. */
export const encoderForCompression: Readonly<Record<PageCompression, string>> = Object.freeze({
  zstd: ownWriterZstdV6.version,
  snappy: ownWriterSnappyV6.version,
  lz4_raw: ownWriterLz4V6.version,
  none: ownWriterUncompressedV6.version,
});

/** Every encoder that files in a catalog may name. Never remove or change an entry. */
export const encoders: Readonly<Record<string, Encoder>> = Object.freeze({
  [hyparquetWriterV1.version]: hyparquetWriterV1,
  [ownWriterSnappyV2.version]: ownWriterSnappyV2,
  [ownWriterLz4V2.version]: ownWriterLz4V2,
  [ownWriterSnappyV3.version]: ownWriterSnappyV3,
  [ownWriterLz4V3.version]: ownWriterLz4V3,
  [ownWriterSnappyV4.version]: ownWriterSnappyV4,
  [ownWriterLz4V4.version]: ownWriterLz4V4,
  [ownWriterSnappy.version]: ownWriterSnappy,
  [ownWriterLz4.version]: ownWriterLz4,
  [ownWriterZstdV4.version]: ownWriterZstdV4,
  [ownWriterZstd.version]: ownWriterZstd,
  [ownWriterUncompressedV4.version]: ownWriterUncompressedV4,
  [ownWriterUncompressed.version]: ownWriterUncompressed,
  [ownWriterSnappyV6.version]: ownWriterSnappyV6,
  [ownWriterLz4V6.version]: ownWriterLz4V6,
  [ownWriterZstdV6.version]: ownWriterZstdV6,
  [ownWriterUncompressedV6.version]: ownWriterUncompressedV6,
});

/**
 * The encoder of a table's new files: its compression's newest encoder. The one answer to
 * "the current encoder": indexing, backfill, query's fresh tail and `--version` ask it.
 */
export function encoderOf(settings: Pick<TableSettings, 'compression'>): string {
  return encoderForCompression[settings.compression];
}

export function encoderFor(version: string): Encoder {
  const encoder = encoders[version];
  if (!encoder) {
    throw new Error(`unknown Parquet encoder ${JSON.stringify(version)}; this build knows ${Object.keys(encoders).join(', ')}`);
  }
  return encoder;
}

/** Build one data file in memory, by a default table's encoder unless `encoderVersion` names another (a table's own, or the one a file was built with). */
export function encodeParquet(
  columns: readonly Column[],
  data: RowData,
  options: EncodeOptions & { encoderVersion?: string },
): EncodedFile {
  return encoderFor(options.encoderVersion ?? encoderOf(defaultSettings)).encode(prepare(columns, data), options);
}
