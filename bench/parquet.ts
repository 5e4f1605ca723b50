/**
 * Throughput of building one data file from Kafka records with ~1 KB JSON values, in
 * MB/s of input (key + value + header bytes, what `file_bytes` counts), per stage.
 *
 *   node_modules/.bin/node --import tsx bench/parquet.ts [rows=100000] [rounds=5] [rowGroupRows=100000]
 *
 * CPU time is reported besides wall time: on a shared 2-core machine wall time swings
 * with whatever else runs, CPU time much less. Best of `rounds` for each.
 */
import type { KafkaRecord } from '../src/kafka/record.js';
import { recordBytes } from '../src/kafka/record.js';
import {
  columnStatistics,
  encodeParquet,
  encoderVersion,
  kafkaColumnArrays,
  kafkaTableColumns,
  prepare,
} from '../src/parquet/index.js';

const rows = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 5);
const rowGroupRows = Number(process.argv[4] ?? 100_000);

/** Deterministic records shaped like application events: ~1.1 KB of JSON, a short key, a header or two. */
function makeRecords(n: number): KafkaRecord[] {
  let seed = 1;
  const rnd = (): number => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'checkout', 'cart', 'view', 'click', 'search', 'login', 'ünïcødé', '日本語', '😀emoji', 'shipping', 'payment'];
  const pick = (k: number): string => words[Math.floor(rnd() * k)]!;
  const utf8 = new TextEncoder();
  const t0 = 1_700_000_000_000;
  return Array.from({ length: n }, (_, i) => {
    const user = Math.floor(rnd() * 50_000);
    const event = {
      id: `evt-${i}-${Math.floor(rnd() * 1e9)}`,
      type: pick(10),
      user: { id: user, name: `user ${user}`, tier: ['free', 'pro', 'ent'][user % 3], country: ['DE', 'US', 'JP', 'BR'][user % 4] },
      ts: new Date(t0 + i * 10).toISOString(),
      amount: Math.round(rnd() * 100_000) / 100,
      items: Array.from({ length: 1 + Math.floor(rnd() * 5) }, (_, k) => ({ sku: `SKU-${Math.floor(rnd() * 10_000)}`, qty: 1 + (k % 3), price: Math.round(rnd() * 10_000) / 100 })),
      tags: [pick(words.length), pick(words.length), pick(words.length)],
      note: Array.from({ length: 80 + Math.floor(rnd() * 60) }, () => pick(words.length)).join(' '),
    };
    const headers: [string, Uint8Array | null][] =
      i % 4 === 0 ? [] : [['trace-id', utf8.encode(Math.floor(rnd() * 1e12).toString(16))], ...(i % 3 === 0 ? [['source', null] as [string, null]] : [])];
    return {
      offset: BigInt(1_000_000 + i),
      timestamp: t0 + i * 10 + Math.floor(rnd() * 50),
      key: i % 50 === 0 ? null : utf8.encode(`user-${user}`),
      value: utf8.encode(i % 1000 === 7 ? '{"truncated": ' : JSON.stringify(event)),
      headers,
    };
  });
}

function measure<T>(fn: () => T): { result: T; wallMs: number; cpuMs: number } {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { result, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const records = makeRecords(rows);
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
