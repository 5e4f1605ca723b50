/**
 * Throughput of building one data file from Kafka records with ~1 KB JSON values, in
 * MB/s of input (key + value + header bytes, what `file_bytes` counts), per stage.
 *
 *   node_modules/.bin/node --import tsx bench/parquet.ts [rows=100000] [rounds=5] [rowGroupRows=100000]
 *
 * CPU time is reported besides wall time: on a shared 2-core machine wall time swings
 * with whatever else runs, CPU time much less. Best of `rounds` for each.
 */
import { recordBytes } from '../src/kafka/record.js';
import { columnStatistics, encodeParquet, kafkaColumnArrays, kafkaTableColumns, prepare, encoderOf } from '../src/parquet/index.js';
import { defaultSettings } from '../src/table/settings.js';
import { eventRecords } from './records.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const rows = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 5);
const rowGroupRows = Number(process.argv[4] ?? 100_000);

function measure<T>(fn: () => T): { result: T; wallMs: number; cpuMs: number } {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { result, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const records = eventRecords(rows);
const inputBytes = records.reduce((n, r) => n + recordBytes(r), 0);
const columns = kafkaTableColumns('json');
const stages = ['rows (JSON check)', 'normalize', 'encode', 'statistics', 'total'] as const;
const best = new Map<string, { wallMs: number; cpuMs: number }>();
const hashes = new Set<string>();
let fileBytes = 0;

for (let round = 0; round < rounds; round++) {
  const a = measure(() => kafkaColumnArrays(0, records, 'json'));
  const b = measure(() => prepare(columns, a.result));
  const c = measure(() => encodeParquet(columns, b.result, { rowGroupRows }));
  const d = measure(() => columnStatistics(columns, b.result));
  const parts = [a, b, c, d];
  const total = { wallMs: parts.reduce((n, p) => n + p.wallMs, 0), cpuMs: parts.reduce((n, p) => n + p.cpuMs, 0) };
  [...parts, total].forEach((p, i) => {
    const prev = best.get(stages[i]!);
    best.set(stages[i]!, { wallMs: Math.min(prev?.wallMs ?? Infinity, p.wallMs), cpuMs: Math.min(prev?.cpuMs ?? Infinity, p.cpuMs) });
  });
  hashes.add(Buffer.from(c.result.sha256).toString('hex'));
  fileBytes = c.result.byteLength;
}

const mb = inputBytes / 1e6;
console.log(`${encoderVersion}: ${rows} records, ${mb.toFixed(1)} MB in, ${(fileBytes / 1e6).toFixed(1)} MB file, row groups of ${rowGroupRows}, best of ${rounds}`);
for (const stage of stages) {
  const { wallMs, cpuMs } = best.get(stage)!;
  console.log(`${stage.padEnd(18)} ${(mb / (wallMs / 1000)).toFixed(1).padStart(7)} MB/s wall  ${(mb / (cpuMs / 1000)).toFixed(1).padStart(7)} MB/s cpu  (${wallMs.toFixed(0)} ms)`);
}
console.log(hashes.size === 1 ? `deterministic: ${rounds} rounds, sha256 ${[...hashes][0]}` : `NOT deterministic: ${hashes.size} different files`);
if (hashes.size !== 1) process.exitCode = 1;
