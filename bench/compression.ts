/**
 * Page compression codecs side by side, on the same records in one run (docs/measurements.md,
 * "Compression: which codec by default"): for each codec, CPU per GiB of Kafka record bytes
 * (key + value + headers) to build a file (our encode: prepared rows in, file + sha256 out),
 * to rebuild it as serve does (records in: JSON check or Avro decoding, normalizing, encode,
 * sha256), for DuckDB and pyarrow to read it whole (every column of every row, one thread),
 * and the file's bytes: what an engine fetches over the wire.
 *
 *   node_modules/.bin/node --import tsx bench/compression.ts [rows=50000] [rounds=3] [shapes=json,avro] [codecs=all]
 *
 * Shapes: `json` (bench/records.ts: ~1.1 KB clickstream-like JSON events, a header or two)
 * and `avro` (the same events as Avro in the Confluent wire format, decoded into columns by
 * our Avro decoder: a nested record, a list of records, a list of strings). Codecs: our
 * writer (encoder v5's settings, writer.ts) with each compressor: none, snappy@7.4.3,
 * lz4-napi@2.10.0 (LZ4_RAW), and ZSTD from @toondepauw/node-zstd@2.0.0 (libzstd 1.5.7 through
 * the Rust zstd crate, napi-rs binaries for linux arm64 and x64) at a few levels. Each
 * codec runs in a child process of its own, and once more in another for the hash: the
 * bytes must be the same in both. Best of `rounds` for each figure. The engines run in the
 * tests' Python environment (test/python-env.sh): DuckDB 1.4.4 and pyarrow as locked there.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { fileRows } from '../src/files/files.js';
import { recordBytes, type KafkaRecord } from '../src/kafka/record.js';
import { ownWriterEncoder, ownWriterPageShape, ownWriterSettings, type Encoder, encoderOf } from '../src/parquet/index.js';
import { mergeRegistrySchemas } from '../src/schema/evolve.js';
import { fieldIds, initialSchema, type TableSchema } from '../src/schema/table-schema.js';
import { wireHeader } from '../src/schema/wire.js';
import type { TableRecord } from '../src/table/record.js';
import { resolveSettings, defaultSettings } from '../src/table/settings.js';
import type { WriterSettings } from '../src/parquet/writer-settings.js';
import { eventRecords } from './records.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const GiB = 1024 ** 3;

function zstd(level: number): WriterSettings {
  const encoder = new ZstdEncoder(level);
  return { codec: 'ZSTD', compress: (page) => encoder.encodeSync(page as Buffer), ...ownWriterPageShape };
}

/** Each codec as our writer's settings: everything else is encoder v5's. */
const codecs: Record<string, () => WriterSettings> = {
  none: () => ({ codec: 'UNCOMPRESSED', compress: (page) => page, ...ownWriterPageShape }),
  snappy: () => ownWriterSettings.snappy,
  lz4_raw: () => ownWriterSettings.lz4_raw,
  'zstd-1': () => zstd(1),
  'zstd-3': () => zstd(3),
  'zstd-6': () => zstd(6),
  'zstd-9': () => zstd(9),
};

function candidate(codec: string): Encoder {
  return ownWriterEncoder({ version: `bench/${codec}`, ...codecs[codec]!(), jsonRules: 'engines', groupFieldIds: true, utcMillisAsMicros: true });
}

/** The events of bench/records.ts as Avro: the same fields, a record inside, a list of records. */
const eventSchema = {
  type: 'record',
  name: 'Event',
  namespace: 'bench',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'type', type: 'string' },
    { name: 'user', type: { type: 'record', name: 'User', fields: [{ name: 'id', type: 'int' }, { name: 'name', type: 'string' }, { name: 'tier', type: 'string' }, { name: 'country', type: 'string' }] } },
    { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'amount', type: 'double' },
    { name: 'items', type: { type: 'array', items: { type: 'record', name: 'Item', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'price', type: 'double' }] } } },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'note', type: 'string' },
  ],
};

interface Shape {
  table: TableRecord;
  schema: TableSchema;
  records: KafkaRecord[];
}

function shape(name: string, rows: number): Shape {
  const table = (format: TableRecord['format']): TableRecord => ({ tableId: 1n, name: 'bench', topic: 'bench', format, settings: resolveSettings({}), createdAt: new Date(0), topicId: null });
  const json = eventRecords(rows);
  if (name === 'json') return { table: table('json'), schema: initialSchema('json'), records: json };
  if (name === 'avro') {
    const id = 7;
    const type = avro.Type.forSchema(eventSchema as avro.Schema);
    const header = wireHeader(id);
    const text = new TextDecoder();
    const records = json.map((record, i) => {
      // the one value in a thousand that is truncated JSON is the previous event again
      const source = text.decode(record.value!).startsWith('{"truncated"') ? json[i - 1]! : record;
      const event = JSON.parse(text.decode(source.value!)) as Record<string, unknown>;
      return { ...record, value: Buffer.concat([header, type.toBuffer({ ...event, ts: Date.parse(event.ts as string) })]) };
    });
    const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: { id, type: 'AVRO', schema: JSON.stringify(eventSchema), references: [] }, sides: new Set(['value']) }]);
    return { table: table('avro'), schema, records };
  }
  throw new Error(`unknown shape ${name}`);
}

interface ChildResult {
  recordBytes: number;
  fileBytes: number;
  /** Best CPU ms of: normalizing the records into rows (every codec alike), encoding, the two together. */
  rowsMs: number;
  encodeMs: number;
  rebuildMs: number;
  sha256: string[];
}

function cpuMs<T>(fn: () => T): { result: T; ms: number } {
  const before = process.cpuUsage();
  const result = fn();
  const used = process.cpuUsage(before);
  return { result, ms: (used.user + used.system) / 1000 };
}

function child(shapeName: string, codec: string, rows: number, rounds: number, out: string | undefined): ChildResult {
  const { table, schema, records } = shape(shapeName, rows);
  const encoder = candidate(codec);
  const options = { rowGroupRows: table.settings.row_group_rows, fieldIds: fieldIds(schema) };
  // fileRows takes only the JSON rules of the version it is given: v5's, as the candidates'
  const rowsOf = () => fileRows(table, schema, 0, records, encoderVersion);
  let rowsMs = Infinity;
  let encodeMs = Infinity;
  let rebuildMs = Infinity;
  const hashes = new Set<string>();
  let bytes: Uint8Array | undefined;
  for (let round = 0; round < rounds; round++) {
    const prepared = cpuMs(rowsOf);
    rowsMs = Math.min(rowsMs, prepared.ms);
    const encoded = cpuMs(() => {
      const file = encoder.encode(prepared.result, options);
      file.sha256;
      return file;
    });
    encodeMs = Math.min(encodeMs, encoded.ms);
    // serve's rebuild (files/rebuild.ts, verifiedFile): rows from the records, the file, its sha256
    const rebuilt = cpuMs(() => encoder.encode(rowsOf(), options).sha256);
    rebuildMs = Math.min(rebuildMs, rebuilt.ms);
    hashes.add(Buffer.from(rebuilt.result).toString('hex'));
    hashes.add(Buffer.from(encoded.result.sha256).toString('hex'));
    bytes ??= encoded.result.bytes;
  }
  if (out) writeFileSync(out, bytes!);
  return { recordBytes: records.reduce((n, r) => n + recordBytes(r), 0), fileBytes: bytes!.byteLength, rowsMs, encodeMs, rebuildMs, sha256: [...hashes] };
}

if (process.argv[2] === '--child') {
  const [, , , shapeName, codec, rows, rounds, out] = process.argv;
  process.stdout.write(JSON.stringify(child(shapeName!, codec!, Number(rows), Number(rounds), out)));
} else {
  const rows = Number(process.argv[2] ?? 50_000);
  const rounds = Number(process.argv[3] ?? 3);
  const shapes = (process.argv[4] ?? 'json,avro').split(',');
  const chosen = process.argv[5] ? process.argv[5].split(',') : Object.keys(codecs);
  const self = fileURLToPath(import.meta.url);
  const root = fileURLToPath(new URL('..', import.meta.url));
  const python = join(execFileSync('bash', [join(root, 'test/python-env.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(), 'bin', 'python');
  const dir = mkdtempSync(join(tmpdir(), 'offsetlake-compression-'));
  const run = (shapeName: string, codec: string, n: number, out?: string): ChildResult =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, self, '--child', shapeName, codec, String(rows), String(n), ...(out ? [out] : [])], { encoding: 'utf8', maxBuffer: 1 << 20 })) as ChildResult;
  try {
    for (const shapeName of shapes) {
      const results = chosen.map((codec) => {
        const file = join(dir, `${shapeName}-${codec}.parquet`);
        const a = run(shapeName, codec, rounds, file);
        const b = run(shapeName, codec, 1);
        const deterministic = a.sha256.length === 1 && b.sha256.length === 1 && a.sha256[0] === b.sha256[0];
        if (!deterministic) process.exitCode = 1;
        return { codec, file, deterministic, ...a };
      });
      const reads = JSON.parse(execFileSync(python, [join(root, 'bench/compression_read.py'), String(rounds), ...results.map((r) => r.file)], { encoding: 'utf8', maxBuffer: 1 << 20 })) as Record<string, { rows: number; pyarrow: number; duckdb: number }>;
      const perGiB = (ms: number, recordBytesIn: number): number => ms / 1000 / (recordBytesIn / GiB);
      const none = results.find((r) => r.codec === 'none');
      console.log(`\n${shapeName}: ${rows} records, ${(results[0]!.recordBytes / 1e6).toFixed(1)} MB of record bytes; CPU seconds per GiB of record bytes, best of ${rounds}; × none in brackets`);
      console.log(
        `${'codec'.padEnd(9)} ${'encode'.padStart(14)} ${'rebuild'.padStart(14)} ${'pyarrow read'.padStart(14)} ${'DuckDB read'.padStart(14)} ${'file MB'.padStart(8)} ${'bytes/record bytes'.padStart(19)}  same bytes in 2 processes`,
      );
      for (const r of results) {
        const read = reads[r.file]!;
        if (read.rows !== rows) throw new Error(`${r.file}: the engines read ${read.rows} rows, not ${rows}`);
        const cell = (value: number, base: number | undefined): string => `${value.toFixed(2)}${base ? ` (×${(value / base).toFixed(2)})` : ''}`.padStart(14);
        const noneRead = none ? reads[none.file]! : undefined;
        console.log(
          `${r.codec.padEnd(9)} ${cell(perGiB(r.encodeMs, r.recordBytes), none && perGiB(none.encodeMs, none.recordBytes))} ${cell(perGiB(r.rebuildMs, r.recordBytes), none && perGiB(none.rebuildMs, none.recordBytes))} ` +
            `${cell(perGiB(read.pyarrow * 1000, r.recordBytes), noneRead && perGiB(noneRead.pyarrow * 1000, r.recordBytes))} ${cell(perGiB(read.duckdb * 1000, r.recordBytes), noneRead && perGiB(noneRead.duckdb * 1000, r.recordBytes))} ` +
            `${(r.fileBytes / 1e6).toFixed(1).padStart(8)} ${(r.fileBytes / r.recordBytes).toFixed(3).padStart(19)}  ${r.deterministic ? 'yes' : 'NO'}`,
        );
      }
      console.log(`(normalizing the records into rows alone, any codec: ${perGiB(Math.min(...results.map((r) => r.rowsMs)), results[0]!.recordBytes).toFixed(2)} s/GiB)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
