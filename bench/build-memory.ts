/**
 * What a range costs in resident memory (issue 17: `run --memory` budgets the process):
 * the bytes an open range holds per byte `file_bytes` counts (key + value + headers), and
 * the transient peak of building it (rows, column buffers, pages, the file, its granules).
 * The runner's budget (src/local/memory-budget.ts) uses the figures this prints.
 *
 *   node --expose-gc --import tsx bench/build-memory.ts [MiB,...=4,8,16,32]
 *
 * On the local stack (rangeBuilder reads the table's schema and indexes from the catalog).
 * Peak RSS is the kernel's high-water mark (/proc/self/status VmHWM), reset before each
 * build (`5` written to /proc/self/clear_refs), so a synchronous encode is measured whole.
 * Each size is measured in a fresh child process, its first build (a process that built
 * before keeps that memory resident, and would hide the next build's growth).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { resolveSettings } from '../src/table/settings.js';
import { dropTable } from '../src/catalog/tables.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { recordBytes, type KafkaRecord } from '../src/kafka/record.js';
import { createTopic } from '../src/kafka/topics.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { eventRecords } from './records.js';

const MiB = 1024 * 1024;
const child = process.argv[2] === '--child';
const sizes = child ? [Number(process.argv[3])] : (process.argv[2] ?? '4,8,16,32').split(',').map(Number);
if (!child) {
  for (const mib of sizes) process.stdout.write(execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', process.argv[1]!, '--child', String(mib)], { env: process.env, encoding: 'utf8' }));
  process.exit(0);
}
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const status = (field: 'VmRSS' | 'VmHWM') => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
const settle = () => { gc(); gc(); };

useLocalStackDefaults();
const engine = await openEngine();
const topic = `bench-build-memory-${randomUUID().slice(0, 8)}`;
await createTopic(engine.kafka, topic, 1);
const name = `bench_build_memory_${randomUUID().slice(0, 6)}`;
const table = await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: '128MiB', file_window: '1h', granularity: 'day' }) });
const build = rangeBuilder(engine.catalog);
try {
  // One record's bytes as file_bytes counts them; the records of bench/records.ts, ~1.1 KB.
  const perRecord = eventRecords(1000).reduce((sum, r) => sum + recordBytes(r), 0) / 1000;
  for (const mib of sizes) {
    settle();
    const before = status('VmRSS');
    const n = Math.round((mib * MiB) / perRecord);
    // Timestamps within one bucket: one file per range, as a steady topic gives.
    const records: KafkaRecord[] = eventRecords(n).map((r, i) => ({ ...r, offset: BigInt(i), timestamp: 1_700_000_000_000 + (i % 1000) }));
    const counted = records.reduce((sum, r) => sum + recordBytes(r), 0);
    settle();
    const held = status('VmRSS') - before;
    let transient = 0;
    {
      writeFileSync('/proc/self/clear_refs', '5');
      const start = status('VmRSS');
      const built = await build(table, 0, { startOffset: 0n, endOffset: BigInt(n), reason: 'bytes', files: [{ bucket: 0, records }], recordCount: n, bytes: counted });
      transient = Math.max(transient, status('VmHWM') - start);
      if (built.files.length !== 1) throw new Error(`expected one file, got ${built.files.length}`);
    }
    process.stdout.write(`| ${(counted / MiB).toFixed(1)} | ${n} | ${(held / counted).toFixed(2)} | ${(transient / MiB).toFixed(0)} | ${(transient / counted).toFixed(2)} |\n`);
  }
} finally {
  await dropTable(engine.catalog, name);
  await engine.close();
}
