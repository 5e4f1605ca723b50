/**
 * `offsetlake serve` under load (issue 17): the real CLI as a child process, its cache
 * smaller than the table's files, and 50 concurrent clients of random reads:
 *
 *   npm run serve-load -- [--seconds 60] [--clients 50] [--cache 48MiB]
 *        [--table-mib 128] [--file-mib 8] [--table NAME] [--seed 17]
 *
 * On the local stack (`offsetlake stack up`; the OFFSETLAKE_*_PORT variables pick its ports).
 * 1. A table of 1 KiB JSON records, ~table-mib in files of ~file-mib (indexed in this
 *    process), unless --table names one already loaded.
 * 2. The truth: every file rebuilt in this process (rebuildFile) and its sha256 compared
 *    with the catalog's, independently of the server.
 * 3. Two phases of --seconds / 2, 50 clients each looping over random requests: a footer
 *    suffix (`bytes=-8` or `bytes=-<footer bytes>`, answered from the catalog), a 1–4 MiB
 *    range at a random place, or the whole file, in equal shares.
 *      cold: files chosen among all of them (the table is larger than the cache: mostly misses)
 *      warm: files chosen among a hot set that fits in the cache, read once before
 *    Every response is compared byte for byte with the same slice of the truth (and each
 *    whole file's sha256 with the catalog's); a differing or missing byte is a wrong byte.
 * 4. Reported per phase and kind: requests/s, MiB/s, p50/p99 latency; the cache hits and
 *    misses of the phase (/metrics); the server's peak RSS (/proc, every 200 ms) vs --cache.
 * Figures are printed, never asserted; exit 1 when any byte was wrong or a request failed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { listFiles, type CatalogFile } from '../src/catalog/file-reads.js';
import { parseBytes, parseDuration, resolveSettings } from '../src/table/settings.js';
import { findTable } from '../src/catalog/tables.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { indexerFor } from '../src/indexer/handler.js';
import { produce } from '../src/kafka/produce.js';
import { kafkaSource } from '../src/kafka/source.js';
import { createTopic } from '../src/kafka/topics.js';
import { rebuildFile } from '../src/files/rebuild.js';
import { schemaVersion } from '../src/catalog/schema-versions.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { seededRandom } from '../test/helpers/random.js';
import { startServe } from './serve-process.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60s' },
    clients: { type: 'string', default: '50' },
    cache: { type: 'string', default: '48MiB' },
    'table-mib': { type: 'string', default: '128' },
    'file-mib': { type: 'string', default: '8' },
    table: { type: 'string' },
    seed: { type: 'string', default: '17' },
  },
});
const totalMs = parseDuration('--seconds', /^\d+$/.test(values.seconds) ? `${values.seconds}s` : values.seconds);
const clients = Number(values.clients);
const cacheBytes = parseBytes('--cache', values.cache);
const tableMiB = Number(values['table-mib']);
const fileMiB = Number(values['file-mib']);
const random = seededRandom(Number(values.seed));
const MiB = 1024 * 1024;
const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

useLocalStackDefaults();
const engine = await openEngine();
let failed = false;

async function loadTable(): Promise<string> {
  const suffix = randomBytes(4).toString('hex');
  const topic = `bench-serve-load-${suffix}`;
  await createTopic(engine.kafka, topic, 1);
  const name = `bench_serve_load_${suffix}`;
  await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: `${fileMiB}MiB`, file_window: '1h', granularity: 'day' }) });
  const total = Math.ceil((tableMiB * MiB) / 1044);
  const base = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  for (let written = 0; written < total; ) {
    const n = Math.min(10_000, total - written);
    const records = Array.from({ length: n }, (_, i) => ({
      key: `k${written + i}`,
      value: `{"i":${written + i},"s":"${randomBytes(502).toString('hex')}"}`,
      partition: 0,
      timestamp: base + ((written + i) % 1000),
    }));
    await produce(engine.kafka, topic, records, { transactionalId: `bench-${topic}` });
    written += n;
  }
  const table = await findTable(engine.catalog, name);
  const indexer = await indexerFor({ catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: `bench-${suffix}`, clock: Date.now, indexers: new Map(), releaseAfterEvent: false }, table, 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
  log(`loaded and indexed ${total} records into ${name}`);
  return name;
}

const name = values.table ?? (await loadTable());
const table = await findTable(engine.catalog, name);
const files = (await listFiles(engine.catalog, table.tableId)).filter((f) => f.expiredAt === null);
const tableBytes = files.reduce((sum, f) => sum + Number(f.fileSizeBytes), 0);
log(`${files.length} files, ${(tableBytes / MiB).toFixed(1)} MiB in all; serve --cache ${(cacheBytes / MiB).toFixed(0)} MiB`);

// The truth, rebuilt here, each checked against the catalog's sha256.
const truth = new Map<bigint, Buffer>();
for (const file of files) {
  const bytes = Buffer.from((await rebuildFile(kafkaSource(engine.kafka), table, file, await schemaVersion(engine.catalog, table.tableId, file.schemaVersion))).bytes);
  if (!createHash('sha256').update(bytes).digest().equals(file.sha256)) throw new Error(`file ${file.dataFileId}: the rebuild's sha256 is not the catalog's`);
  truth.set(file.dataFileId, bytes);
}
log('truth rebuilt in this process, every sha256 equal to the catalog\'s');

// The server: the real CLI.
const serve = await startServe({ port: 0, args: ['--cache', values.cache] });
const { port, child: server } = serve;
let peakRss = 0;
const rssTimer = setInterval(() => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
    if (match) peakRss = Math.max(peakRss, Number(match[1]) * 1024);
  } catch {
    // gone
  }
}, 200);
const idleRss = (() => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
})();

const agent = new Agent({ keepAlive: true, maxSockets: clients });
interface Answer { status: number; body: Buffer; headers: Record<string, string | string[] | undefined> }
function get(path: string, range?: string, accept?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent, headers: { ...(range ? { range } : {}), ...(accept ? { accept } : {}) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), headers: response.headers }));
      response.on('error', reject);
    }).on('error', reject).end();
  });
}

interface Metrics { chunkCacheHits: number; chunkCacheMisses: number; granuleRebuilds: number; partialGranuleRebuilds: number; rebuilds: number; mismatches: number; chunkMismatches: number; memory: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number } }
async function metrics(): Promise<Metrics> {
  return JSON.parse((await get('/metrics', undefined, 'application/json')).body.toString());
}

// The manifest as the server gives it must agree with the catalog.
const manifest = JSON.parse((await get(`/tables/${name}/files`)).body.toString()) as { files?: { id: string; sha256: string; sizeBytes: number }[] } | { id: string; sha256: string; sizeBytes: number }[];
const listed = Array.isArray(manifest) ? manifest : manifest.files ?? [];
for (const file of files) {
  const entry = listed.find((f) => f.id === file.dataFileId.toString());
  if (!entry || entry.sha256 !== file.sha256.toString('hex') || entry.sizeBytes !== Number(file.fileSizeBytes)) {
    log(`problem: the manifest's entry for file ${file.dataFileId} is ${JSON.stringify(entry)}, the catalog's sha256 ${file.sha256.toString('hex')}`);
    failed = true;
  }
}

type Kind = 'footer' | 'range' | 'whole';
interface Stat { latencies: number[]; bytes: number; wrongBytes: number; failures: string[] }
const stats = new Map<string, Stat>();
const stat = (key: string): Stat => stats.get(key) ?? stats.set(key, { latencies: [], bytes: 0, wrongBytes: 0, failures: [] }).get(key)!;
let wrongBytes = 0;

/** Differing bytes between what came and what should have come; a length difference counts as wrong bytes too. */
function compare(got: Buffer, want: Buffer): number {
  let wrong = Math.abs(got.length - want.length);
  if (got.equals(want)) return 0;
  const n = Math.min(got.length, want.length);
  for (let i = 0; i < n; i += 1) if (got[i] !== want[i]) wrong += 1;
  return Math.max(wrong, 1);
}

async function one(phase: string, file: CatalogFile): Promise<void> {
  const whole = truth.get(file.dataFileId)!;
  const size = whole.length;
  const pick = random();
  const kind: Kind = pick < 1 / 3 ? 'footer' : pick < 2 / 3 ? 'range' : 'whole';
  let range: string | undefined;
  let want: Buffer;
  if (kind === 'footer') {
    const n = random() < 0.5 ? 8 : file.footer.byteLength;
    range = `bytes=-${n}`;
    want = whole.subarray(size - n);
  } else if (kind === 'range') {
    const length = Math.min(size, MiB + Math.floor(random() * 3 * MiB));
    const first = Math.floor(random() * (size - length + 1));
    range = `bytes=${first}-${first + length - 1}`;
    want = whole.subarray(first, first + length);
  } else {
    want = whole;
  }
  const s = stat(`${phase}/${kind}`);
  const began = performance.now();
  let answer: Answer;
  try {
    answer = await get(`/tables/${name}/files/${file.dataFileId}.parquet`, range);
  } catch (error) {
    s.failures.push(`${file.dataFileId} ${range ?? 'whole'}: ${(error as Error).message}`);
    return;
  }
  s.latencies.push(performance.now() - began);
  if (answer.status !== (range ? 206 : 200)) {
    s.failures.push(`${file.dataFileId} ${range ?? 'whole'}: status ${answer.status} ${answer.body.toString().slice(0, 200)}`);
    return;
  }
  s.bytes += answer.body.length;
  let wrong = compare(answer.body, want);
  if (kind === 'whole' && !createHash('sha256').update(answer.body).digest().equals(file.sha256)) wrong = Math.max(wrong, 1);
  s.wrongBytes += wrong;
  wrongBytes += wrong;
  if (wrong > 0) log(`WRONG: file ${file.dataFileId} ${range ?? 'whole'}: ${wrong} wrong bytes (got ${answer.body.length}, wanted ${want.length})`);
}

async function phase(label: string, pool: CatalogFile[], ms: number): Promise<{ seconds: number; hits: number; misses: number; rebuilds: number }> {
  const before = await metrics();
  const began = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() - began < ms) await one(label, pool[Math.floor(random() * pool.length)]!);
  }));
  const seconds = (performance.now() - began) / 1000;
  const after = await metrics();
  return { seconds, hits: after.chunkCacheHits - before.chunkCacheHits, misses: after.chunkCacheMisses - before.chunkCacheMisses, rebuilds: after.granuleRebuilds + after.partialGranuleRebuilds + after.rebuilds - (before.granuleRebuilds + before.partialGranuleRebuilds + before.rebuilds) };
}

// Where the server's memory goes: its own process.memoryUsage() (in /metrics) once a second.
const peakMemory = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
let sampling = true;
const memorySampler = (async () => {
  while (sampling) {
    const { memory } = await metrics().catch(() => ({ memory: undefined }));
    if (memory) for (const key of Object.keys(peakMemory) as (keyof typeof peakMemory)[]) peakMemory[key] = Math.max(peakMemory[key], memory[key]);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
})();

try {
  // The hot set: the largest number of files that fit in half the cache (so that they stay in it).
  const hot: CatalogFile[] = [];
  for (const file of files) if (hot.reduce((sum, f) => sum + Number(f.fileSizeBytes), 0) + Number(file.fileSizeBytes) <= cacheBytes / 2) hot.push(file);
  if (hot.length === 0) hot.push(files[0]!);
  const cold = await phase('cold', files, totalMs / 2);
  for (const file of hot) await get(`/tables/${name}/files/${file.dataFileId}.parquet`, 'bytes=0-0');
  const warm = await phase('warm', hot, totalMs / 2);
  const end = await metrics();
  sampling = false;
  await memorySampler;

  const q = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
  const rows: string[][] = [];
  for (const [label, info, pool] of [['cold', cold, files], ['warm', warm, hot]] as const) {
    for (const kind of ['footer', 'range', 'whole', 'all'] as const) {
      const parts = kind === 'all' ? (['footer', 'range', 'whole'] as const).map((k) => stat(`${label}/${k}`)) : [stat(`${label}/${kind}`)];
      const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
      const bytes = parts.reduce((sum, p) => sum + p.bytes, 0);
      rows.push([
        `${label} (${pool.length} files${kind === 'all' ? `; chunk cache hits/misses ${info.hits}/${info.misses}, row groups rebuilt ${info.rebuilds}` : ''})`,
        kind,
        String(latencies.length),
        (latencies.length / info.seconds).toFixed(1),
        (bytes / MiB / info.seconds).toFixed(1),
        q(latencies, 0.5).toFixed(0),
        q(latencies, 0.99).toFixed(0),
        String(parts.reduce((sum, p) => sum + p.wrongBytes, 0)),
        String(parts.reduce((sum, p) => sum + p.failures.length, 0)),
      ]);
    }
  }
  process.stdout.write(`| phase | requests | n | requests/s | MiB/s | p50 ms | p99 ms | wrong bytes | failed |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n`);
  process.stdout.write(rows.map((r) => `| ${r.join(' | ')} |`).join('\n') + '\n');
  process.stdout.write(`${clients} clients; table ${files.length} files, ${(tableBytes / MiB).toFixed(1)} MiB; serve --cache ${(cacheBytes / MiB).toFixed(0)} MiB; server RSS peak ${(peakRss / MiB).toFixed(0)} MiB (idle ${(idleRss / MiB).toFixed(0)} MiB); mismatches ${end.mismatches + end.chunkMismatches}; wrong bytes ${wrongBytes}\n`);
  const m = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
  process.stdout.write(`server memory, peaks of 1 s samples: rss ${m(peakMemory.rss)}, JS heap ${m(peakMemory.heapTotal)} (used ${m(peakMemory.heapUsed)}), external ${m(peakMemory.external)} (of which Buffers ${m(peakMemory.arrayBuffers)})\n`);
  for (const [key, s] of stats) for (const failure of s.failures.slice(0, 5)) log(`failed (${key}): ${failure}`);
  const failures = [...stats.values()].reduce((sum, s) => sum + s.failures.length, 0);
  failed ||= wrongBytes > 0 || failures > 0 || end.mismatches > 0 || end.chunkMismatches > 0;
} finally {
  clearInterval(rssTimer);
  agent.destroy();
  await serve.stop();
  await engine.close();
}
process.exit(failed ? 1 : 0);
