/**
 * How long the command line takes to start (issue 31, item 6: `--help` of any command
 * ≤ 150 ms, a catalog command ≤ 400 ms on an idle 2-core machine), against `node -e 0`
 * timed in the same run:
 *
 *   npm run bench:startup -- [--rounds 15] [--builds /path/old,/path/new]
 *
 * Needs the local stack (`offsetlake stack up`; the OFFSETLAKE_*_PORT variables move it).
 * Every command runs in a child process as a user runs it (`node bin/offsetlake.js …`),
 * under /usr/bin/time for its user + sys CPU; wall time is taken here, from spawn to exit.
 * The catalog is a fresh database of its own with one table over an empty topic, so that
 * `table list` lists one table and `run --once` has one empty partition to index.
 * Each round runs every command of every build once, starting one further along each
 * round, so that drift in the machine's load falls on all of them. One warm-up call per
 * command first (it also makes the bundle in dist/ when a source is newer). Reported:
 * medians and ranges, and the median of each round's ratio to that round's `node -e 0`.
 * Figures are printed, never asserted; exit 1 when a command fails.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { useLocalStackDefaults } from '../src/stack/index.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '15' },
    builds: { type: 'string', default: resolve('.') },
  },
});
const rounds = Number(values.rounds);
const builds = values.builds!.split(',').map((path) => resolve(path));

/** What is timed: a label and the arguments of `bin/offsetlake.js` (undefined: `node -e 0`). */
const commands: { label: string; args: string[] | undefined; target?: number }[] = [
  { label: 'node -e 0', args: undefined },
  { label: 'offsetlake --help', args: ['--help'], target: 150 },
  { label: 'offsetlake table --help', args: ['table', '--help'], target: 150 },
  { label: 'offsetlake table list', args: ['table', 'list'], target: 400 },
  { label: 'offsetlake run --once', args: ['run', '--once'] },
];

interface Timing { wallMs: number; cpuMs: number }

async function timed(build: string, args: string[] | undefined, env: NodeJS.ProcessEnv): Promise<Timing> {
  const argv = args === undefined ? ['-e', '0'] : [join(build, 'bin/offsetlake.js'), ...args];
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'TIME %U %S', process.execPath, ...argv], { cwd: build, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`${argv.join(' ')} in ${build} exited ${code}:\n${stdout}${stderr}`);
  const [user, sys] = /TIME (\S+) (\S+)/.exec(stderr)!.slice(1).map(Number) as [number, number];
  return { wallMs, cpuMs: (user + sys) * 1000 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

useLocalStackDefaults();
const base = process.env.DATABASE_URL;
if (!base) throw new Error('no catalog: run `offsetlake stack up` first (the OFFSETLAKE_*_PORT variables move the stack)');
const database = `startup_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = new URL(base);
url.pathname = `/${database}`;
const env = { ...process.env, DATABASE_URL: url.toString() };

try {
  const topic = 'startup-bench-empty';
  const setup = builds[builds.length - 1]!;
  await timed(setup, ['topic', 'create', topic, '--if-not-exists'], env);
  await timed(setup, ['table', 'create', 'startup_bench', '--topic', topic], env);

  const timings = new Map<string, Timing[]>();
  const ratios = new Map<string, number[]>();
  const jobs = builds.flatMap((build) => commands.filter((c) => c.args !== undefined).map((command) => ({ build, command })));
  const key = (build: string, label: string) => (builds.length > 1 ? `${label} (${build})` : label);
  for (const { build, command } of jobs) await timed(build, command.args, env);
  await timed(builds[0]!, undefined, env);

  const loadBefore = loadAverage();
  for (let round = 0; round < rounds; round++) {
    const baseline = await timed(builds[0]!, undefined, env);
    timings.set('node -e 0', [...(timings.get('node -e 0') ?? []), baseline]);
    for (let i = 0; i < jobs.length; i++) {
      const { build, command } = jobs[(i + round) % jobs.length]!;
      const timing = await timed(build, command.args, env);
      const name = key(build, command.label);
      timings.set(name, [...(timings.get(name) ?? []), timing]);
      ratios.set(name, [...(ratios.get(name) ?? []), timing.wallMs / baseline.wallMs]);
    }
  }
  const loadAfter = loadAverage();

  process.stdout.write(`${rounds} rounds, ${cpus().length} cores, Node ${process.versions.node}; load average (1, 5, 15 min) ${loadBefore} before, ${loadAfter} after\n`);
  const rows = [['command', 'wall median', 'wall min–max', 'cpu median', '× node -e 0 (wall)', 'target']];
  for (const [name, list] of timings) {
    const command = commands.find((c) => name.startsWith(c.label))!;
    const wall = list.map((t) => t.wallMs);
    const ratio = ratios.get(name);
    const met = command.target === undefined ? '' : `≤ ${command.target} ms: ${median(wall) <= command.target ? 'met' : 'not met'}`;
    rows.push([name, `${median(wall).toFixed(0)} ms`, `${Math.min(...wall).toFixed(0)}–${Math.max(...wall).toFixed(0)} ms`, `${median(list.map((t) => t.cpuMs)).toFixed(0)} ms`, ratio ? `${median(ratio).toFixed(1)}×` : '1', met]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()}\n`);
} finally {
  await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
  await admin.end();
}
