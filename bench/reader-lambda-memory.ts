/**
 * How much memory the reader function needs, measured: the deployed bundle of the Reader
 * function, answering the requests DuckDB makes for a query, in a process given the CPU
 * and memory Lambda gives a function of each memory size.
 *
 *   node --import tsx bench/reader-lambda-memory.ts --table <json table> [--sizes 512,1024,1769,2048,3008] [--rounds 2]
 *
 * The table is one `npm run bench:peers -- --keep` left (its JSON workload: Kafka
 * timestamps over the 24 hours before it ran), on the local stack that is up.
 *
 * 1. The requests: `offsetlake serve` and DuckDB 1.4.4 through `offsetlake attach`, with
 *    DuckDB's HTTP log on (bench/peers/query.py, `httpLog`), for a full scan and for one
 *    hour (12 hours before now): every GET in the order DuckDB made it.
 * 2. The bundle: `cdk synth -c architecture=<this machine's>` and the Reader's asset,
 *    copied where no node_modules are reachable, as the runtime loads it.
 * 3. For each memory size, each query, each round: a new process (a new sandbox: its
 *    cache empty, as a scan's first requests find it) in a cgroup (v1) whose CPU quota is
 *    Lambda's share for that size (AWS: a function has the equivalent of one vCPU at
 *    1,769 MB, and CPU in proportion to memory) and whose memory limit is the size. It
 *    loads the bundle (the INIT phase, timed apart), then calls `handler` with each request
 *    in turn as one warm sandbox would, timing each (the billed duration).
 *
 * Reported per size: INIT, the query's summed request time (what it is billed for), the
 * longest request, peak RSS and the cgroup's peak, GB-seconds and dollars per 1,000
 * queries at arm64's price. DuckDB sends two requests at a time, and a function URL gives
 * each its own sandbox, so the query's wall time is about half the sum. Not Lambda: this
 * machine's processor, not Graviton, so the sizes are compared with each other, not with
 * AWS's figures.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../infra/root.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { deployedCopy, node22, synthesizeFunctions } from '../test/helpers/lambda-bundles.js';
import { startServe } from './serve-process.js';

const run = promisify(execFile);
const root = projectRoot();

/** Lambda's price per GB-second, arm64, first tier (us-east-1, 2026). */
const armPricePerGbSecond = 0.0000133334;
/** The memory size at which a function has one whole vCPU. */
const oneVcpuMb = 1769;

interface Options { table: string; sizes: number[]; rounds: number; port: number }

function options(argv: string[]): Options {
  const value = (name: string) => {
    const at = argv.indexOf(`--${name}`);
    return at < 0 ? undefined : argv[at + 1];
  };
  const table = value('table');
  if (!table) throw new Error('--table <name> is required: a JSON table that `npm run bench:peers -- --keep` left');
  const sizes = (value('sizes') ?? '512,1024,1769,2048,3008').split(',').map(Number);
  if (sizes.some((size) => !Number.isInteger(size) || size < 128 || size > 10240)) throw new Error('--sizes takes Lambda memory sizes in MB, 128 to 10240');
  const rounds = Number(value('rounds') ?? 2);
  const port = Number(value('port') ?? 38950);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number of rounds, at least 1');
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('--port takes a TCP port for the serve that records the requests');
  return { table, sizes, rounds, port };
}

interface FunctionUrlEvent { rawPath: string; headers: Record<string, string>; requestContext: { http: { method: string } } }

/** The bytes a `bytes=first-last` request asks for (DuckDB's are all of that form); -1 for any other (not checked). */
function rangeLength(event: FunctionUrlEvent): number {
  const match = /^bytes=(\d+)-(\d+)$/.exec(event.headers.range ?? '');
  return match ? Number(match[2]) - Number(match[1]) + 1 : -1;
}

/** DuckDB's requests for each query, made through a `serve` of this checkout. */
async function duckdbRequests(table: string, port: number): Promise<Record<string, FunctionUrlEvent[]>> {
  const cli = join(root, 'bin/offsetlake.js');
  const serve = await startServe({ port });
  try {
    const attach = (JSON.parse((await run(process.execPath, [cli, 'attach', '--url', `http://127.0.0.1:${port}`, '--no-auth', '--json'])).stdout) as { statements: string[] }).statements;
    const venv = (await run('bash', [join(root, 'test/python-env.sh'), 'bench/peers/requirements.txt'], { cwd: root })).stdout.trim().split('\n').pop()!;
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 12 * 3_600_000);
    const text = (date: Date) => date.toISOString().replace('T', ' ').replace('.000Z', '+00');
    const queries: Record<string, string> = {
      fullScan: `SELECT count(*) AS n, sum(length(_value::VARCHAR)) AS value_chars FROM lake.${table}`,
      oneHour: `SELECT count(*) AS n, count(DISTINCT _key) AS keys FROM lake.${table} WHERE _timestamp >= TIMESTAMPTZ '${text(hour)}' AND _timestamp < TIMESTAMPTZ '${text(new Date(hour.getTime() + 3_600_000))}'`,
    };
    const found: Record<string, FunctionUrlEvent[]> = {};
    const scratch = mkdtempSync(join(tmpdir(), 'offsetlake-lambda-memory-'));
    for (const [name, sql] of Object.entries(queries)) {
      const spec = join(scratch, `${name}.json`);
      writeFileSync(spec, JSON.stringify({ setup: ['LOAD ducklake', 'LOAD postgres', 'LOAD httpfs', ...attach], sql, httpLog: true }));
      const out = JSON.parse((await run(join(venv, 'bin/python'), [join(root, 'bench/peers/query.py'), spec], { maxBuffer: 64 * 1024 * 1024 })).stdout) as { rows: unknown[][]; requests: { method: string; url: string; range: string | null }[] };
      found[name] = out.requests.map((request) => ({
        rawPath: new URL(request.url).pathname,
        headers: request.range ? { range: request.range } : ({} as Record<string, string>),
        requestContext: { http: { method: request.method } },
      }));
      console.log(`${name}: ${found[name]!.length} requests (answer ${JSON.stringify(out.rows)})`);
    }
    rmSync(scratch, { recursive: true, force: true });
    return found;
  } finally {
    await serve.stop();
  }
}

// The sandbox: loads the bundle (INIT), then each event in turn into a sink that counts
// bytes and reads the status from the prelude the streaming handler writes first.
const sandbox = `
import { Writable } from 'node:stream';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [bundle, eventsFile, resultFile] = process.argv.slice(2);
const began = performance.now();
const { handler } = await import(pathToFileURL(bundle).href);
const initMs = performance.now() - began;
const requests = [];
for (const event of JSON.parse(readFileSync(eventsFile, 'utf8'))) {
  let head = Buffer.alloc(0);
  let bytes = 0;
  const sink = new Writable({ highWaterMark: 64 * 1024, write(chunk, _encoding, done) { bytes += chunk.length; if (head.length < 4096) head = Buffer.concat([head, Buffer.from(chunk)]); done(); } });
  sink.setContentType = () => {};
  const start = performance.now();
  await handler(event, sink, {});
  const ms = performance.now() - start;
  const nul = head.indexOf(0);
  const status = nul > 0 ? JSON.parse(head.subarray(0, nul).toString()).statusCode : 0;
  // the body: what follows the prelude's JSON and its 8 NUL bytes
  requests.push({ ms, status, bytes: nul > 0 ? bytes - nul - 8 : bytes });
}
const usage = process.resourceUsage();
writeFileSync(resultFile, JSON.stringify({ initMs, requests, maxRssKiB: usage.maxRSS, cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000 }));
process.exit(0);
`;

interface SandboxRun {
  initMs: number;
  requests: { ms: number; status: number; bytes: number }[];
  maxRssKiB: number;
  cpuMs: number;
  /** Held to Lambda's CPU share and memory by a cgroup (false: this process could not make one, and the run had the whole machine). */
  limited: boolean;
  cgroupPeakBytes?: number;
  killed?: string;
}

const cgroupRoot = '/sys/fs/cgroup';

/** A cgroup (v1) pair with Lambda's CPU share and memory for `sizeMb`, or undefined where this process may not make one. */
function lambdaCgroup(sizeMb: number): { enter: string; peak: () => number; remove: () => void } | undefined {
  const name = `offsetlake-lambda-${sizeMb}-${process.pid}`;
  const cpu = join(cgroupRoot, 'cpu', name);
  const memory = join(cgroupRoot, 'memory', name);
  try {
    mkdirSync(cpu);
    mkdirSync(memory);
    const period = 100_000;
    writeFileSync(join(cpu, 'cpu.cfs_period_us'), String(period));
    writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(Math.round((period * sizeMb) / oneVcpuMb)));
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(sizeMb * 1024 * 1024));
  } catch (error) {
    console.log(`no cgroup for ${sizeMb} MB (${(error as Error).message}): this size runs without Lambda's limits`);
    return undefined;
  }
  return {
    enter: `echo $$ > ${join(cpu, 'cgroup.procs')} && echo $$ > ${join(memory, 'cgroup.procs')} && `,
    peak: () => Number(readFileSync(join(memory, 'memory.max_usage_in_bytes'), 'utf8')),
    remove: () => {
      // a cgroup's folder goes with rmdir, once its process has ended
      for (const dir of [cpu, memory]) rmdirSync(dir);
    },
  };
}

async function sandboxRun(bundleDir: string, events: FunctionUrlEvent[], sizeMb: number, env: Record<string, string>): Promise<SandboxRun> {
  const eventsFile = join(bundleDir, 'events.json');
  const resultFile = join(bundleDir, 'result.json');
  writeFileSync(join(bundleDir, 'sandbox.mjs'), sandbox);
  writeFileSync(eventsFile, JSON.stringify(events));
  rmSync(resultFile, { force: true });
  const group = lambdaCgroup(sizeMb);
  try {
    const command = `${group?.enter ?? ''}exec "$0" sandbox.mjs index.mjs events.json result.json`;
    const child = spawn('sh', ['-c', command, node22], { cwd: bundleDir, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
    if (!existsSync(resultFile)) {
      const peak = group?.peak();
      return { initMs: 0, requests: [], maxRssKiB: 0, cpuMs: 0, limited: group !== undefined, ...(peak === undefined ? {} : { cgroupPeakBytes: peak }), killed: signal === 'SIGKILL' ? `killed at ${sizeMb} MB (out of memory)` : `exited ${code ?? signal}: ${stderr.slice(-500)}` };
    }
    const result = { ...(JSON.parse(readFileSync(resultFile, 'utf8')) as Omit<SandboxRun, 'limited'>), limited: group !== undefined };
    const peak = group?.peak();
    return peak === undefined ? result : { ...result, cgroupPeakBytes: peak };
  } finally {
    group?.remove();
  }
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  // the children of step 1 find the stack themselves (attach hands out its reader login only when DATABASE_URL is unset)
  const stack: NodeJS.ProcessEnv = { ...process.env };
  useLocalStackDefaults(stack);
  console.log(`machine: ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const requests = await duckdbRequests(opts.table, opts.port);

  const architecture = process.arch === 'arm64' ? 'arm64' : 'x86_64';
  const outDir = mkdtempSync(join(tmpdir(), 'offsetlake-lambda-memory-synth-'));
  console.log(`cdk synth -c architecture=${architecture} (the bundle for this machine's processor)`);
  const reader = (await synthesizeFunctions(outDir, { architecture })).get('Reader')!;
  const bundleDir = deployedCopy(reader);
  const env: Record<string, string> = {
    ...reader.environment,
    PATH: process.env.PATH ?? '',
    DATABASE_URL: stack.DATABASE_URL!,
    KAFKA_BROKERS: stack.KAFKA_BROKERS!,
    KAFKA_AUTH: 'none',
    OFFSETLAKE_NO_AUTH: '1',
    OFFSETLAKE_READER_INVOKE_MODE: 'RESPONSE_STREAM',
  };

  const rows: { size: number; query: string; run: SandboxRun }[] = [];
  for (let round = 0; round < opts.rounds; round++) {
    for (const size of opts.sizes) {
      for (const [query, events] of Object.entries(requests)) {
        const result = await sandboxRun(bundleDir, events, size, env);
        const bad = result.requests.filter((r) => r.status < 200 || r.status > 299);
        if (bad.length > 0) throw new Error(`${size} MB, ${query}: ${bad.length} request(s) answered ${bad[0]!.status}`);
        const short = result.requests.findIndex((r, i) => rangeLength(events[i]!) >= 0 && r.bytes !== rangeLength(events[i]!));
        if (!result.killed && short >= 0) throw new Error(`${size} MB, ${query}: request ${short} (${events[short]!.headers.range}) got ${result.requests[short]!.bytes} bytes of body`);
        rows.push({ size, query, run: result });
        const summed = result.requests.reduce((sum, r) => sum + r.ms, 0);
        console.log(`round ${round + 1}, ${size} MB, ${query}: ${result.killed ?? `INIT ${result.initMs.toFixed(0)} ms, requests ${(summed / 1000).toFixed(2)} s, CPU ${(result.cpuMs / 1000).toFixed(2)} s, peak RSS ${(result.maxRssKiB / 1024).toFixed(0)} MiB, cgroup peak ${((result.cgroupPeakBytes ?? 0) / 2 ** 20).toFixed(0)} MiB`}`);
      }
    }
  }

  console.log('\n| memory | vCPU share | query | INIT | billed (sum of requests) | longest request | peak RSS | cgroup peak | GB-s | $ per 1,000 queries (arm64) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const size of opts.sizes) {
    for (const query of Object.keys(requests)) {
      const runs = rows.filter((row) => row.size === size && row.query === query).map((row) => row.run);
      const share = runs.every((r) => r.limited) ? (size / oneVcpuMb).toFixed(2) : 'not held (no cgroup)';
      if (runs.some((r) => r.killed)) {
        console.log(`| ${size} MB | ${share} | ${query} | ${runs.find((r) => r.killed)!.killed} | | | | | | |`);
        continue;
      }
      const span = (values: number[], digits: number) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
      const billed = runs.map((r) => r.requests.reduce((sum, q) => sum + Math.ceil(q.ms), 0) / 1000);
      const gbSeconds = billed.map((s) => (s * size) / 1024);
      console.log(`| ${size} MB | ${share} | ${query} | ${span(runs.map((r) => r.initMs), 0)} ms | ${span(billed, 2)} s | ${span(runs.map((r) => Math.max(...r.requests.map((q) => q.ms))), 0)} ms | ${span(runs.map((r) => r.maxRssKiB / 1024), 0)} MiB | ${span(runs.map((r) => (r.cgroupPeakBytes ?? 0) / 2 ** 20), 0)} MiB | ${span(gbSeconds, 2)} | ${span(gbSeconds.map((g) => g * armPricePerGbSecond * 1000), 3)} |`);
    }
  }
  const out = join(root, 'bench/results', `reader-lambda-memory-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ date: new Date().toISOString(), table: opts.table, machine: { cores: cpus().length, loadavg: loadavg() }, requests: Object.fromEntries(Object.entries(requests).map(([k, v]) => [k, v.length])), rows }, null, 2)}\n`);
  console.log(`\nJSON: ${out}`);
  rmSync(outDir, { recursive: true, force: true });
  rmSync(bundleDir, { recursive: true, force: true });
}

await main();
