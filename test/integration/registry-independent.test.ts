/**
 * Registry-format tables (avro, protobuf, json-schema) checked with tools we did not write
 * (issue 9). Python produces through confluent-kafka (librdkafka) with a transactional
 * producer, framing payloads in the Confluent wire format and encoding them with fastavro,
 * Google's protobuf runtime (schema compiled by protoc from grpcio-tools) and json.dumps;
 * the schemas are registered over HTTP. offsetlake is driven only through its command line,
 * one process per step: `table create` (before producing), `run --once`, `files --json`,
 * and `rebuild` of every file in a fresh process. Python then reads every rebuilt file with
 * pyarrow and the topic with a read_committed confluent-kafka consumer, decodes each record
 * with fastavro / protobuf / json, and compares row by row (registry_independent.py).
 *
 * Two data sets, each in its own topic and table per format: `full` has every hazard
 * (Object.prototype names as fields, map keys and header keys, NUL and BOM in strings, empty
 * Protobuf bytes, negative int64 map keys), `plain` has none, so that the type mapping is
 * still checked on its own should a hazard ever stop the full tables' partitions again.
 *
 * Expected values come from those tools and the "Type mapping" table of docs/formats.md, never from
 * src/. Needs the locked readers of bash test/python-env.sh (npm's pretest runs it).
 * Diagnosis: REGIND_WITHOUT=names,nul,... (see registry_independent.py) leaves hazards out of
 * the full data set, to see what fails behind a failure that stops a partition.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { testEngine } from '../helpers/engine.js';

const script = fileURLToPath(new URL('./registry_independent.py', import.meta.url));
const cli = fileURLToPath(new URL('../../bin/offsetlake.js', import.meta.url));
const formats = ['avro', 'protobuf', 'json-schema'] as const;
type Format = (typeof formats)[number];
// full: every hazard (Object.prototype names, NUL, BOM, empty Protobuf bytes, 64-bit map keys);
// plain: none, so the type mapping is still checked on its own should a hazard ever stop the full tables again.
const variants = ['full', 'plain'] as const;
type Variant = (typeof variants)[number];
const targets = variants.flatMap((variant) => formats.map((format) => ({ variant, format, table: `indep_${variant}_${format.replace('-', '_')}` })));
type Target = (typeof targets)[number];
const decoderOf: Record<Format, string> = { avro: 'fastavro', protobuf: "Google's protobuf runtime", 'json-schema': 'json.loads' };
const describeVariant: Record<Variant, string> = {
  full: 'with Object.prototype names as fields/map keys/header keys, NUL and BOM strings, empty bytes and negative int64 map keys',
  plain: 'without those hazards',
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface CatalogFile {
  dataFileId: string;
  partition: number;
  startOffset: string;
  endOffset: string;
  recordCount: string;
}

/** A child process; never throws, so that a failing step still lets the later ones report. */
function spawn(command: string, args: string[], env: NodeJS.ProcessEnv, timeout: number): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1) : 0;
      const killed = error && (error as { killed?: boolean }).killed ? `\n(killed after ${timeout} ms)` : '';
      resolve({ code, stdout: String(stdout), stderr: String(stderr) + killed });
    });
  });
}

let engine: Engine;
let work: string;
let env: NodeJS.ProcessEnv;
let produced: Run;
const created = new Map<Target, Run>();

const offsetlake = (args: string[], timeout = 30_000) => spawn(process.execPath, [cli, ...args], env, timeout);
const python = (args: string[], timeout = 30_000) => spawn('python3', [script, ...args, '--work', work], env, timeout);
const explain = (what: string, run: Run) => `${what} exited ${run.code}\n--- stderr ---\n${run.stderr}\n--- stdout ---\n${run.stdout.slice(0, 4000)}`;

beforeAll(async () => {
  // A catalog of its own, so that `run --once` indexes exactly these six tables.
  engine = await testEngine('indep');
  work = mkdtempSync(join(tmpdir(), 'offsetlake-indep-'));
  env = { ...process.env, DATABASE_URL: engine.config.databaseUrl };
  const prepared = await python(['prepare', '--brokers', engine.config.kafkaBrokers.join(','), '--registry', engine.config.schemaRegistryUrl]);
  if (prepared.code !== 0) throw new Error(explain('registry_independent.py prepare', prepared));
  const topics = JSON.parse(prepared.stdout) as Record<Variant, Record<Format, string>>;
  // Tables first: a new table starts at the LSO, so it must exist before anything is produced.
  for (let i = 0; i < targets.length; i += 3) {
    await Promise.all(
      targets.slice(i, i + 3).map(async (t) => {
        created.set(t, await offsetlake(['table', 'create', t.table, '--topic', topics[t.variant][t.format], '--format', t.format, '--file_window', '30m', '--json']));
      }),
    );
  }
  produced = await python(['produce']);
}, 120_000);

afterAll(async () => {
  await engine?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('registry-format tables against independent producers, decoders and pyarrow', () => {
  it('table create makes avro, protobuf and json-schema tables before producing; Python registers two schema versions per topic and produces one committed, one aborted and one more committed transaction', () => {
    for (const t of targets) expect(created.get(t)?.code, explain(`table create ${t.table}`, created.get(t)!)).toBe(0);
    expect(produced.code, explain('registry_independent.py produce', produced)).toBe(0);
  });

  it('run --once (one process) exits 0 having indexed every partition of the six tables up to its LSO, with no open range and nothing waiting', async () => {
    const indexed = await offsetlake(['run', '--once', '--json'], 30_000);
    const status = await offsetlake(['status', '--json']);
    const rows = status.code === 0 ? (JSON.parse(status.stdout) as { table: string; partition: number; indexedEnd: string; lastStableOffset: string; openRangeRecords: string; waitingReason: string | null }[]) : [];
    const behind = rows
      .filter((r) => r.indexedEnd !== r.lastStableOffset || r.openRangeRecords !== '0' || r.waitingReason !== null)
      .map((r) => `${r.table}/${r.partition}: indexed to ${r.indexedEnd} of LSO ${r.lastStableOffset}, open range ${r.openRangeRecords} records${r.waitingReason ? `, waiting: ${r.waitingReason}` : ''}`);
    expect(indexed.code, explain('offsetlake run --once', indexed)).toBe(0);
    expect(status.code, explain('offsetlake status', status)).toBe(0);
    expect(rows.length).toBe(targets.length * 2);
    expect(behind, `partitions not indexed up to their LSO:\n${behind.join('\n')}\n--- run --once stderr ---\n${indexed.stderr}`).toEqual([]);
  }, 45_000);

  it('files --json lists files for both partitions of every table, and rebuild -o, each in a fresh process, reproduces every file with the catalog size, footer and sha256', async () => {
    const rebuilds: { target: Target; file: CatalogFile; path: string; run?: Run }[] = [];
    const listings = new Map<Target, CatalogFile[]>();
    const problems: string[] = [];
    const listed = new Map<Target, Run>();
    for (let i = 0; i < targets.length; i += 3) {
      await Promise.all(targets.slice(i, i + 3).map(async (t) => listed.set(t, await offsetlake(['files', t.table, '--json']))));
    }
    for (const target of targets) {
      const run = listed.get(target)!;
      if (run.code !== 0) problems.push(explain(`files ${target.table}`, run));
      const files = run.code === 0 ? (JSON.parse(run.stdout) as CatalogFile[]) : [];
      listings.set(target, files);
      const partitions = new Set(files.map((f) => f.partition));
      if (partitions.size !== 2) problems.push(`${target.table}: files in partitions [${[...partitions].join(', ')}], expected both 0 and 1`);
      for (const file of files) rebuilds.push({ target, file, path: join(work, `${target.table}-${file.dataFileId}.parquet`) });
    }
    // Three rebuilds at a time, each its own `offsetlake rebuild` process.
    for (let i = 0; i < rebuilds.length; i += 3) {
      await Promise.all(
        rebuilds.slice(i, i + 3).map(async (r) => {
          r.run = await offsetlake(['rebuild', r.target.table, r.file.dataFileId, '-o', r.path, '--json']);
        }),
      );
    }
    // What the Python checks read: every catalog file, its rebuilt copy, or why there is none.
    for (const target of targets) {
      const entries = rebuilds
        .filter((r) => r.target === target)
        .map((r) => ({ ...r.file, path: r.path, rebuildError: r.run!.code === 0 ? null : r.run!.stderr || `exit ${r.run!.code}` }));
      writeFileSync(join(work, `${target.variant}-${target.format}.files.json`), JSON.stringify(entries));
    }
    for (const r of rebuilds) if (r.run!.code !== 0) problems.push(`${r.target.table} file ${r.file.dataFileId} (partition ${r.file.partition}): ${r.run!.stderr.trim()}`);
    expect(problems, problems.join('\n')).toEqual([]);
  }, 90_000);

  for (const target of targets) {
    it(`${target.format} ${describeVariant[target.variant]}: every read_committed record is in exactly one rebuilt file, bad records are rows with _error and the raw _value, and pyarrow's column types and values equal ${decoderOf[target.format]}'s decoding mapped by the type table of docs/formats.md`, async () => {
      const verified = await python(['verify', '--format', target.format, '--variant', target.variant]);
      expect(verified.code, explain(`registry_independent.py verify --format ${target.format} --variant ${target.variant}`, verified)).toBe(0);
    }, 30_000);
  }
});
