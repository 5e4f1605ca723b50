/**
 * What each command loads (issue 31: the command line starts at once). Every run is the
 * real CLI in a child process with test/helpers/loaded-packages-hook.ts imported first,
 * which lists every package the process resolved, by `import` or `require`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { commandHelp, ownHelp } from '../../src/cli/help.js';
import { produce } from '../../src/kafka/produce.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';

const hook = resolve('test/helpers/loaded-packages-hook.ts');
const heavy = ['@platformatic/kafka', 'pg', '@duckdb/node-api', 'avsc', 'protobufjs', 'aws-cdk-lib', 'constructs'];
const isHeavy = (name: string) => heavy.includes(name) || name.startsWith('@aws-sdk/');

let engine: Engine;
let dir: string;
beforeAll(async () => {
  engine = await testEngine('loaded');
  dir = mkdtempSync(join(tmpdir(), 'offsetlake-loaded-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await engine.close();
});

let runs = 0;
/** The packages `offsetlake ARGS…` loaded, after checking it exited as expected. */
async function packagesLoadedBy(args: string[], code = 0): Promise<string[]> {
  const file = join(dir, `run-${runs++}.txt`);
  const run = await runCli(engine.config.databaseUrl, args, { NODE_OPTIONS: `--import ${hook}`, LOADED_PACKAGES_FILE: file });
  expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(code);
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

describe('the packages a command loads', () => {
  it('--help, help CMD, CMD --help, CMD SUBCOMMAND --help and --version load no Kafka client, pg, DuckDB, avsc, protobufjs, AWS SDK or CDK', async () => {
    const asked = [
      ['--help'],
      ['--version'],
      ...[...Object.keys(commandHelp), ...Object.keys(ownHelp)].map((command) => [command, '--help']),
      ['help', 'run'],
      ['help', 'topic'],
      ['table', 'create', '--help'],
      ['stack', 'help'],
    ];
    for (const args of asked) expect((await packagesLoadedBy(args)).filter(isHeavy), args.join(' ')).toEqual([]);
  });

  it('table list, files and attach load pg and nothing else heavy (no Kafka client); status, which asks Kafka for LSOs, loads the client (the hook sees both)', async () => {
    // files of a table that is not there, and attach to a serve that is not there, fail (exit 1) after opening the catalog
    const asked: [string[], number][] = [[['table', 'list'], 0], [['files', 'none'], 1], [['attach', '--no-auth', '--url', `http://127.0.0.1:${await closedPort()}`], 1]];
    for (const [args, code] of asked) expect((await packagesLoadedBy(args, code)).filter(isHeavy), args.join(' ')).toEqual(['pg']);
    expect(await packagesLoadedBy(['status'])).toContain('@platformatic/kafka');
  });

  it('sql SHOW INDEXES and DROP INDEX load pg and nothing else heavy; a CREATE INDEX that backfills from Kafka loads the client', async () => {
    const topic = await newTopic(engine, 1, 'loaded-sql');
    await produce(engine.kafka, topic, Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `{"n":${i}}`, timestamp: Date.UTC(2026, 10, 29, 9, 30) + i })));
    const table = await testTable(engine, topic, {});
    for (const statement of ['SHOW INDEXES', `SHOW INDEXES ON ${table.name}`, `DROP INDEX IF EXISTS nothing ON ${table.name}`]) {
      expect((await packagesLoadedBy(['sql', statement])).filter(isHeavy), statement).toEqual(['pg']);
    }
    // the records are the table's history: backfilled, they are files an index must be given entries for from Kafka
    await packagesLoadedBy(['backfill', table.name]);
    expect((await listFiles(engine.catalog, table.tableId)).length).toBeGreaterThan(0);
    expect(await packagesLoadedBy(['sql', `CREATE INDEX by_key ON ${table.name} (_key) USING POSTINGS`])).toContain('@platformatic/kafka');
  });

  it('backfill (--help, and a run on a table with history) loads no CDK: it runs the state machine\'s definition from src with aws-local-stepfunctions', async () => {
    const cdk = (name: string) => name === 'aws-cdk-lib' || name === 'constructs' || name === 'aws-cdk';
    expect((await packagesLoadedBy(['backfill', '--help'])).filter(cdk)).toEqual([]);
    const topic = await newTopic(engine, 1, 'loaded-backfill');
    await produce(engine.kafka, topic, Array.from({ length: 50 }, (_, i) => ({ key: null, value: `{"n":${i}}`, timestamp: Date.UTC(2026, 10, 29, 9, 30) + i })));
    // Created after the records: they are its history, below the indexed range.
    const table = await testTable(engine, topic, {});
    const loaded = await packagesLoadedBy(['backfill', table.name]);
    expect(loaded.filter(cdk)).toEqual([]);
    expect(loaded).toContain('aws-local-stepfunctions');
    const files = await listFiles(engine.catalog, table.tableId);
    expect(files.reduce((sum, file) => sum + BigInt(file.recordCount), 0n)).toBe(50n);
  });
});
