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
 */
import { createHash } from 'node:crypto';
import { parquetWrite, type ColumnSource } from 'hyparquet-writer';
import { ChunkedWriter } from './chunked-writer.js';
import { parquetFooter } from './footer.js';
import { type Column, leaves, parquetSchema } from './schema.js';
import { prepare, type PreparedData, type RowData } from './values.js';

export interface EncodeOptions {
  /** Rows per row group; the last one holds the remainder. */
  rowGroupRows: number;
  /**
   * Extra key/value metadata for the footer, written sorted by key. Part of the bytes:
   * it must be something the catalog can give again at rebuild.
   */
  keyValueMetadata?: Readonly<Record<string, string>>;
}

export interface EncodedFile {
  /** The whole file. */
  bytes: Uint8Array;
  /** The file's trailing bytes: FileMetaData + 4-byte length + "PAR1" (see footer.ts). */
  footer: Uint8Array;
  sha256: Uint8Array;
  byteLength: number;
  rowCount: number;
  /** Record this with the file: a rebuild must use the same encoder. */
  encoderVersion: string;
}

export interface Encoder {
  readonly version: string;
  encode(data: PreparedData, options: EncodeOptions): EncodedFile;
}

/** Metadata key under which every file names the encoder that built it. */
export const ENCODER_METADATA_KEY = 'offsetlake.encoder';

const HYPARQUET_WRITER_V1 = 'hyparquet-writer@0.17.0/v1';

const hyparquetWriterV1: Encoder = {
  version: HYPARQUET_WRITER_V1,
  encode(data, options) {
    const { rowGroupRows } = options;
    if (!Number.isSafeInteger(rowGroupRows) || rowGroupRows < 1) {
      throw new Error(`rowGroupRows must be a positive integer, got ${rowGroupRows}`);
    }
    const columnData: ColumnSource[] = data.columns.map((column, i) => ({
      name: column.name,
      data: data.arrays[i]!,
      // hyparquet-writer's dictionary keys values with a Map, for which -0 and +0 are one
      // key: whichever comes first would be written for both. PLAIN keeps each as given.
      ...(hasFloatingLeaf(column) ? { encoding: 'PLAIN' as const } : {}),
      // spelled out, not left to defaults, so that v1's settings are read here
      columnIndex: false,
      offsetIndex: true,
      bloomFilter: false,
    }));
    const extra = Object.entries(options.keyValueMetadata ?? {})
      .filter(([key]) => key !== ENCODER_METADATA_KEY)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, value]) => ({ key, value }));
    const writer = new ChunkedWriter();
    const pending = parquetWrite({
      writer,
      schema: parquetSchema(data.columns),
      columnData,
      codec: 'SNAPPY',
      statistics: true,
      statisticsTruncateLength: Infinity,
      rowGroupSize: rowGroupRows,
      pageSize: 1024 * 1024,
      kvMetadata: [{ key: ENCODER_METADATA_KEY, value: HYPARQUET_WRITER_V1 }, ...extra],
      createdBy: `offsetlake (${HYPARQUET_WRITER_V1})`,
    });
    // only a writer whose flush() returns a promise makes this asynchronous; ours has none
    if (pending) throw new Error('hyparquet-writer unexpectedly wrote asynchronously');
    return finish(writer.getBytes(), data.rowCount, HYPARQUET_WRITER_V1);
  },
};

function hasFloatingLeaf(column: Column): boolean {
  return leaves([column]).some((leaf) => leaf.type.kind === 'float' || leaf.type.kind === 'double');
}

function finish(bytes: Uint8Array, rowCount: number, encoderVersion: string): EncodedFile {
  return {
    bytes,
    footer: parquetFooter(bytes),
    sha256: new Uint8Array(createHash('sha256').update(bytes).digest()),
    byteLength: bytes.byteLength,
    rowCount,
    encoderVersion,
  };
}

/** Every encoder that files in a catalog may name. Never remove or change an entry. */
export const encoders: Readonly<Record<string, Encoder>> = Object.freeze({
  [HYPARQUET_WRITER_V1]: hyparquetWriterV1,
});

/** The encoder new files are built with. */
export const encoderVersion: string = HYPARQUET_WRITER_V1;

export function encoderFor(version: string): Encoder {
  const encoder = encoders[version];
  if (!encoder) {
    throw new Error(`unknown Parquet encoder ${JSON.stringify(version)}; this build knows ${Object.keys(encoders).join(', ')}`);
  }
  return encoder;
}

/** Build one data file in memory. Give `encoderVersion` to rebuild a file built by an older one. */
export function encodeParquet(
  columns: readonly Column[],
  data: RowData,
  options: EncodeOptions & { encoderVersion?: string },
): EncodedFile {
  return encoderFor(options.encoderVersion ?? encoderVersion).encode(prepare(columns, data), options);
}
