/**
 * What worker threads give across row groups: one file of the JSON bench shape (bench/
 * records.ts), its row groups encoded by our writer (encoder v2, LZ4_RAW) on N worker
 * threads, then assembled and hashed on the main thread; against the same encode in one
 * pass on the main thread, in the same run. Every worker count must give the same bytes.
 *
 *   node_modules/.bin/node --import tsx bench/encode-workers.ts [rows=100000] [rounds=3] [workers=1,2]
 *
 * Each worker prepares its own copy of the rows before the clock starts (the records are
 * deterministic), so what is timed is the encode, the transfer of the encoded parts back
 * (copied: the compressor's Buffers cannot be transferred), the assembly and the sha256.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { defaultSettings } from '../src/table/settings.js';
import { kafkaColumnArrays, kafkaTableColumns, prepare, type PreparedData, ownWriterSettings } from '../src/parquet/index.js';
import { assembleParquet, encodeRowGroup, type EncodedRowGroup, writeParquet } from '../src/parquet/writer.js';
import type { WriteOptions } from '../src/parquet/writer-settings.js';
import { eventRecords } from './records.js';

// the writer settings of a table with the default compression
const settings = ownWriterSettings[defaultSettings.compression];
const rowGroupRows = defaultSettings.row_group_rows;

function rowsOf(rows: number): { data: PreparedData; inputBytes: number } {
  const records = eventRecords(rows);
  const inputBytes = records.reduce((n, r) => n + (r.key?.length ?? 0) + (r.value?.length ?? 0) + r.headers.reduce((h, [k, v]) => h + k.length + (v?.length ?? 0), 0), 0);
  return { data: prepare(kafkaTableColumns('json'), kafkaColumnArrays(0, records, 'json')), inputBytes };
}

if (!isMainThread) {
  // a worker: prepare once, then encode the row groups it is sent, giving their parts back
  const { data } = rowsOf(workerData.rows as number);
  parentPort!.on('message', (starts: number[]) => {
    const groups = starts.map((start) => encodeRowGroup(data, start, Math.min(start + rowGroupRows, data.rowCount), settings));
    // copied back: the compressor's Buffers are external memory, which cannot be transferred
    parentPort!.postMessage(groups);
  });
} else {
  const rows = Number(process.argv[2] ?? 100_000);
  const rounds = Number(process.argv[3] ?? 3);
  const counts = (process.argv[4] ?? '1,2').split(',').map(Number);
  const { data, inputBytes } = rowsOf(rows);
  const options: WriteOptions = { rowGroupRows, fieldIds: {}, keyValueMetadata: [], createdBy: 'bench' };
  const starts = Array.from({ length: Math.ceil(rows / rowGroupRows) }, (_, g) => g * rowGroupRows);
  const hash = (parts: readonly Uint8Array[]) => {
    const h = createHash('sha256');
    for (const part of parts) h.update(part);
    return h.digest('hex');
  };
  const best = async (run: () => Promise<string>): Promise<{ ms: number; sha: string }> => {
    let ms = Infinity;
    let sha = '';
    for (let r = 0; r < rounds; r++) {
      const t = performance.now();
      sha = await run();
      ms = Math.min(ms, performance.now() - t);
    }
    return { ms, sha };
  };
  const mb = inputBytes / 1e6;
  console.log(`${rows} records, ${mb.toFixed(1)} MB in, ${starts.length} row groups of ${rowGroupRows}; ${availableParallelism()} cores here; best of ${rounds}, wall time`);
  const single = await best(async () => hash(writeParquet(data, options, settings)));
  console.log(`main thread, one pass      ${(mb / (single.ms / 1000)).toFixed(0).padStart(5)} MB/s  1.00×  ${single.sha.slice(0, 16)}`);
  for (const n of counts) {
    const workers = Array.from({ length: n }, () => new Worker(new URL(import.meta.url), { workerData: { rows } }));
    await Promise.all(workers.map((w) => once(w, 'online')));
    // let each worker prepare its rows before timing (one untimed encode of nothing)
    await Promise.all(workers.map(async (w) => {
      w.postMessage([]);
      await once(w, 'message');
    }));
    const result = await best(async () => {
      const share = workers.map((_, k) => starts.filter((_, g) => g % n === k));
      const answers = await Promise.all(workers.map(async (w, k) => {
        w.postMessage(share[k]);
        const [groups] = (await once(w, 'message')) as [EncodedRowGroup[]];
        return groups;
      }));
      const byStart = new Map<number, EncodedRowGroup>();
      answers.forEach((groups, k) => groups.forEach((g, i) => byStart.set(share[k]![i]!, g)));
      return hash(assembleParquet(data, starts.map((s) => byStart.get(s)!), options, settings));
    });
    await Promise.all(workers.map((w) => w.terminate()));
    console.log(`${String(n).padStart(2)} worker thread(s)        ${(mb / (result.ms / 1000)).toFixed(0).padStart(5)} MB/s  ${(single.ms / result.ms).toFixed(2)}×  ${result.sha.slice(0, 16)}  ${result.sha === single.sha ? 'same bytes' : 'OTHER BYTES'}`);
  }
}
