/**
 * Encoder candidates side by side: the encode step alone (prepared column arrays in,
 * file + sha256 + footer out), on four shapes of records, each candidate in a child
 * process of its own (so peak RSS is its own, and a second child checks that another
 * process gives the same bytes).
 *
 *   node_modules/.bin/node --import tsx bench/encoders.ts [rows=100000] [rounds=4] [shapes=json,avro,small] [candidates=all]
 *
 * Shapes: `json` (bench/records.ts, ~1.1 KB JSON values), `avro` (the decoded columns of
 * bench/indexing-avro.ts: ten value leaves beside Kafka's, ~1 KiB values), `small`
 * (~100-byte JSON records), `timestamps` (local and UTC millisecond timestamps and a short
 * JSON text column: what encoder v6 stores otherwise than v5). MB/s of record bytes (key + value + headers), best of
 * `rounds`, CPU time beside wall time; RSS is the growth of the child's peak over
 * what it held before the first encode.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compressSync as nativeSnappy } from 'snappy';
import { recordBytes, type KafkaRecord } from '../src/kafka/record.js';
import {
  type Column, type Encoder, encoders, hyparquetEncoder, ownWriterEncoder, ownWriterPageShape, type HyparquetSettings, kafkaColumnArrays, kafkaTableColumns, prepare, type PreparedData,
} from '../src/parquet/index.js';
import { eventRecords } from './records.js';
import { defaultSettings } from '../src/table/settings.js';

const MiB = 1024 * 1024;
const base: Omit<HyparquetSettings, 'version'> = { codec: 'SNAPPY', columnIndex: false, fieldIds: false, plainColumns: [], pageSize: MiB };
const snappy = { compress: (page: Uint8Array) => nativeSnappy(page) };
const v2ish = { ...base, ...snappy, columnIndex: true, fieldIds: true };

const candidates: Record<string, () => Encoder> = {
  v1: () => encoders['hyparquet-writer@0.17.0/v1']!,
  uncompressed: () => hyparquetEncoder({ ...base, version: 'uncompressed', codec: 'UNCOMPRESSED' }),
  'native-snappy': () => hyparquetEncoder({ ...base, ...snappy, version: 'native-snappy' }),
  'native-snappy+ids+page-index': () => hyparquetEncoder({ ...v2ish, version: 'ids+page-index', plainColumns: ['_value'] }),
  'own writer, uncompressed': () => ownWriterEncoder({ version: 'own-uncompressed', codec: 'UNCOMPRESSED', compress: (page) => page, ...ownWriterPageShape }),
  ...Object.fromEntries(Object.keys(encoders).filter((v) => !v.endsWith('/v1')).map((v) => [v, () => encoders[v]!])),
};

interface Shape {
  records: KafkaRecord[];
  prepared: PreparedData;
  rowGroupRows: number;
}

function shape(name: string, rows: number): Shape {
  if (name === 'json') {
    const records = eventRecords(rows);
    return { records, prepared: prepare(kafkaTableColumns('json'), kafkaColumnArrays(0, records, 'json')), rowGroupRows: defaultSettings.row_group_rows };
  }
  if (name === 'small') {
    const utf8 = new TextEncoder();
    const records: KafkaRecord[] = Array.from({ length: rows }, (_, i) => ({
      offset: BigInt(i),
      timestamp: 1_700_000_000_000 + i,
      key: utf8.encode(`k${i % 5000}`),
      value: utf8.encode(JSON.stringify({ id: i, user: i % 5000, kind: ['view', 'click', 'buy'][i % 3], amount: (i % 977) / 10, ok: i % 2 === 0 })),
      headers: [],
    }));
    return { records, prepared: prepare(kafkaTableColumns('json'), kafkaColumnArrays(0, records, 'json')), rowGroupRows: defaultSettings.row_group_rows };
  }
  if (name === 'avro') {
    // bench/indexing-avro.ts's values, as its decoder turns them into columns
    const columns: Column[] = [
      ...kafkaTableColumns('avro'),
      { name: 'order', type: { kind: 'int64' }, nullable: true },
      { name: 'customer', type: { kind: 'int32' }, nullable: true },
      { name: 'total', type: { kind: 'double' }, nullable: true },
      { name: 'status', type: { kind: 'string' }, nullable: true },
      { name: 'placed', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: true },
      {
        name: 'address',
        type: { kind: 'struct', fields: [{ name: 'city', type: { kind: 'string' }, nullable: false }, { name: 'zip', type: { kind: 'string' }, nullable: true }] },
        nullable: true,
      },
      { name: 'tags', type: { kind: 'list', element: { type: { kind: 'string' }, nullable: false } }, nullable: true },
      { name: 'pad', type: { kind: 'string' }, nullable: true },
    ];
    const utf8 = new TextEncoder();
    const t0 = 1_700_000_000_000;
    const pad = 'x'.repeat(1024 - 80);
    const records: KafkaRecord[] = Array.from({ length: rows }, (_, n) => ({
      offset: BigInt(n),
      timestamp: t0 + Math.floor(n / 100),
      key: utf8.encode(`customer-${n % 1000}`),
      // the Avro bytes' length only counts toward MB/s; `_value` holds no bytes for decoded rows
      value: new Uint8Array(5 + 20 + pad.length + 20),
      headers: [],
    }));
    const kafka = kafkaColumnArrays(0, records, 'avro') as Record<string, unknown[]>;
    const data = {
      ...kafka,
      _value: records.map(() => null),
      _error: records.map(() => null),
      order: records.map((_, n) => BigInt(n)),
      customer: records.map((_, n) => n % 1000),
      total: records.map((_, n) => (n % 9973) / 100),
      status: records.map(() => 'PAID'),
      placed: records.map((_, n) => BigInt(t0 + n)),
      address: records.map((_, n) => ({ city: `city-${n % 50}`, zip: n % 3 ? String(10000 + (n % 90000)) : null })),
      tags: records.map((_, n) => ['a', `t${n % 7}`]),
      pad: records.map(() => pad),
    };
    return { records, prepared: prepare(columns, data), rowGroupRows: defaultSettings.row_group_rows };
  }
  if (name === 'timestamps') {
    // what encoder v6 stores otherwise than v5: local millisecond timestamps (×1000 into micros) and JSON text (STRING)
    const columns: Column[] = [
      ...kafkaTableColumns('avro'),
      { name: 'seen', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: true },
      { name: 'due', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: false },
      { name: 'at', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: true },
      { name: 'doc', type: { kind: 'json' }, nullable: true },
    ];
    const t0 = 1_700_000_000_000;
    const records: KafkaRecord[] = Array.from({ length: rows }, (_, n) => ({
      offset: BigInt(n), timestamp: t0 + n, key: null, value: new Uint8Array(5 + 3 * 8 + 40), headers: [],
    }));
    const kafka = kafkaColumnArrays(0, records, 'avro') as Record<string, unknown[]>;
    const data = {
      ...kafka,
      _value: records.map(() => null),
      _error: records.map(() => null),
      seen: records.map((_, n) => (n % 10 === 0 ? null : t0 + n * 7)),
      due: records.map((_, n) => t0 + 86_400_000 + n),
      at: records.map((_, n) => t0 - n * 3),
      doc: records.map((_, n) => `{"n":${n},"k":"v${n % 13}"}`),
    };
    return { records, prepared: prepare(columns, data), rowGroupRows: defaultSettings.row_group_rows };
  }
  throw new Error(`unknown shape ${name}`);
}

/** Column ids as a table schema would give them: 1.. in schema order, every node. */
function sequentialIds(columns: readonly Column[]): Record<string, number> {
  const ids: Record<string, number> = {};
  let next = 1;
  const walk = (path: string, column: { type: Column['type'] }): void => {
    ids[path] = next++;
    if (column.type.kind === 'struct') for (const f of column.type.fields) walk(`${path}.${f.name}`, f);
    else if (column.type.kind === 'list') walk(`${path}.list.element`, column.type.element);
  };
  for (const c of columns) walk(c.name, c);
  return ids;
}

interface ChildResult {
  wallMs: number;
  cpuMs: number;
  fileBytes: number;
  rssMiB: number;
  sha256: string[];
  inputMB: number;
}

function child(shapeName: string, candidate: string, rows: number, rounds: number): ChildResult {
  const s = shape(shapeName, rows);
  const encoder = candidates[candidate]!();
  const fieldIds = sequentialIds(s.prepared.columns);
  const before = process.resourceUsage().maxRSS;
  let wallMs = Infinity;
  let cpuMs = Infinity;
  let fileBytes = 0;
  const hashes = new Set<string>();
  for (let round = 0; round < rounds; round++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const file = encoder.encode(s.prepared, { rowGroupRows: s.rowGroupRows, fieldIds });
    wallMs = Math.min(wallMs, performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    cpuMs = Math.min(cpuMs, (cpu.user + cpu.system) / 1000);
    fileBytes = file.byteLength;
    hashes.add(Buffer.from(file.sha256).toString('hex'));
  }
  const rssMiB = (process.resourceUsage().maxRSS - before) / 1024;
  return { wallMs, cpuMs, fileBytes, rssMiB, sha256: [...hashes], inputMB: s.records.reduce((n, r) => n + recordBytes(r), 0) / 1e6 };
}

if (process.argv[2] === '--child') {
  const [, , , shapeName, candidate, rows, rounds] = process.argv;
  process.stdout.write(JSON.stringify(child(shapeName!, candidate!, Number(rows), Number(rounds))));
} else {
  const rows = Number(process.argv[2] ?? 100_000);
  const rounds = Number(process.argv[3] ?? 4);
  const shapes = (process.argv[4] ?? 'json,avro,small').split(',');
  const chosen = process.argv[5] ? process.argv[5].split(',') : Object.keys(candidates);
  const self = fileURLToPath(import.meta.url);
  const run = (shapeName: string, candidate: string, n: number): ChildResult =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, self, '--child', shapeName, candidate, String(rows), String(n)], { encoding: 'utf8', maxBuffer: 1 << 20 })) as ChildResult;
  for (const shapeName of shapes) {
    console.log(`\n${shapeName}: ${rows} records, best of ${rounds}, each candidate in its own process (and once more in another for the hash)`);
    console.log(`${'candidate'.padEnd(30)} ${'MB/s cpu'.padStart(9)} ${'MB/s wall'.padStart(10)} ${'× v1 cpu'.padStart(9)} ${'file MB'.padStart(8)} ${'peak RSS +MiB'.padStart(14)}  deterministic`);
    let v1Cpu = 0;
    for (const candidate of chosen) {
      const a = run(shapeName, candidate, rounds);
      const b = run(shapeName, candidate, 1);
      const cpu = a.inputMB / (a.cpuMs / 1000);
      if (candidate === 'v1') v1Cpu = cpu;
      const same = a.sha256.length === 1 && b.sha256[0] === a.sha256[0];
      console.log(
        `${candidate.padEnd(30)} ${cpu.toFixed(0).padStart(9)} ${(a.inputMB / (a.wallMs / 1000)).toFixed(0).padStart(10)} ${(v1Cpu ? cpu / v1Cpu : NaN).toFixed(2).padStart(9)} ` +
          `${(a.fileBytes / 1e6).toFixed(1).padStart(8)} ${a.rssMiB.toFixed(0).padStart(14)}  ${same ? 'yes' : 'NO'} (${a.inputMB.toFixed(1)} MB in)`,
      );
      if (!same) process.exitCode = 1;
    }
  }
}
