import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { newTopic, testEngine } from '../helpers/engine.js';

const run = promisify(execFile);
let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('cli');
});
afterAll(() => engine.close());

async function offsetlake(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['bin/offsetlake.js', ...args], {
      env: { ...process.env, DATABASE_URL: engine.config.databaseUrl },
      timeout: 120_000,
    });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}

describe('the offsetlake command line', () => {
  it('table create / list / drop, run --once, files, rebuild and status, as a user types them', async () => {
    const topic = await newTopic(engine, 2, 'cli');
    const created = await offsetlake('table', 'create', 'clicks', '--topic', topic, '--file-window', '90s', '--granularity', 'minute', '--history', 'none', '--json');
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'clicks', topic, format: 'json', settings: { file_window: 90_000, granularity: 'minute', history: { kind: 'none' } } });

    const list = JSON.parse((await offsetlake('table', 'list', '--json')).stdout);
    expect(list.map((t: { name: string }) => t.name)).toEqual(['clicks']);

    await produce(engine.kafka, topic, Array.from({ length: 10 }, (_, i) => ({ key: `u${i}`, value: JSON.stringify({ i }), partition: i % 2, timestamp: Date.UTC(2026, 10, 29, 10, i) })));
    const indexed = await offsetlake('run', '--once', '--json');
    expect(indexed.code).toBe(0);
    expect(JSON.parse(indexed.stdout)).toMatchObject({ records: 10 });

    const files = JSON.parse((await offsetlake('files', 'clicks', '--json')).stdout);
    expect(files.length).toBe(10); // one record a minute, minute buckets
    expect(files.every((f: { sealReason: string }) => ['bucket', 'flush'].includes(f.sealReason))).toBe(true);
    const rebuilt = JSON.parse((await offsetlake('rebuild', 'clicks', String(files[0].dataFileId), '--json')).stdout);
    expect(rebuilt).toMatchObject({ sameAsCatalog: ['size', 'footer', 'sha256'], records: 1, sha256: files[0].sha256 });
    expect((await offsetlake('rebuild', 'clicks', String(files[0].dataFileId), '--verify')).stderr).toContain('unknown flag --verify');

    const status = JSON.parse((await offsetlake('status', 'clicks', '--json')).stdout);
    expect(status.map((s: { partition: number; indexedEnd: string; lag: string; files: string }) => [s.partition, s.indexedEnd, s.lag, s.files])).toEqual([
      [0, '5', '0', '5'],
      [1, '5', '0', '5'],
    ]);

    expect((await offsetlake('table', 'drop', 'clicks')).stdout).toBe('dropped table clicks\n');
    expect(JSON.parse((await offsetlake('table', 'list', '--json')).stdout)).toEqual([]);
  });

  it('check rebuilds every live file from Kafka, names each one that does not match the catalog, and exits 1 if any', async () => {
    const topic = await newTopic(engine, 1, 'check');
    expect((await offsetlake('table', 'create', 'checked', '--topic', topic, '--granularity', 'minute')).code).toBe(0);
    await produce(engine.kafka, topic, Array.from({ length: 3 }, (_, i) => ({ value: JSON.stringify({ i }), timestamp: Date.UTC(2026, 10, 29, 10, i) })));
    expect((await offsetlake('run', '--once')).code).toBe(0);
    const clean = await offsetlake('check', 'checked', '--json');
    expect([clean.code, JSON.parse(clean.stdout)]).toEqual([0, { checked: 3, identical: 3, failed: [] }]);

    // a catalog whose record of a file no longer matches what Kafka gives back
    const files = JSON.parse((await offsetlake('files', 'checked', '--json')).stdout) as { dataFileId: string; startOffset: string; endOffset: string }[];
    await engine.catalog.query('UPDATE data_file SET sha256 = $2 WHERE data_file_id = $1', [files[1]!.dataFileId, Buffer.alloc(32)]);
    const dirty = await offsetlake('check', 'checked');
    expect(dirty.code).toBe(1);
    expect(dirty.stderr).toContain(`checked file ${files[1]!.dataFileId} (partition 0, offsets [${files[1]!.startOffset}, ${files[1]!.endOffset})) cannot be rebuilt: sha256 `);
    expect(dirty.stdout).toBe('3 files checked: 2 rebuilt byte for byte, 1 cannot be rebuilt (named above; they are never served)\n');
    expect((await offsetlake('table', 'drop', 'checked')).code).toBe(0);
  });

  it('every command answers --help, -h and `help COMMAND` with its usage, flags and an example, exit 0, and runs nothing', async () => {
    const commands = ['stack', 'table', 'files', 'status', 'run', 'rebuild', 'check', 'backfill', 'retention', 'serve', 'query', 'demo'];
    const before = (await offsetlake('table', 'list', '--json')).stdout;
    // every command with --help; -h and `help COMMAND` for a few (each answer is a process start)
    const asked = [...commands.map((command) => [command, '--help']), ['files', '-h'], ['run', '-h'], ['help', 'query'], ['help', 'stack']];
    for (const args of asked) {
      const command = args[0] === 'help' ? args[1]! : args[0]!;
      {
        const answer = await offsetlake(...args);
        expect(answer.code, args.join(' ')).toBe(0);
        expect(answer.stdout, args.join(' ')).toMatch(new RegExp(`usage:\\n  offsetlake ${command}[\\s\\S]*example:\\n  `));
      }
    }
    // subcommands too, and `stack help`
    for (const args of [['table', 'create', '--help'], ['stack', 'up', '-h'], ['stack', 'help']]) expect((await offsetlake(...args)).stdout, args.join(' ')).toMatch(/usage:/);
    // demo --help did not run the demo; nothing changed
    expect((await offsetlake('table', 'list', '--json')).stdout).toBe(before);
  });

  it('usage errors are said in our words with exit 2 and change nothing; failures exit 1', async () => {
    const before = (await offsetlake('table', 'list', '--json')).stdout;
    const cases: [string[], string][] = [
      [['files', 'x', '--jsn'], 'unknown flag --jsn; did you mean --json?'],
      [['table', 'create', 'x', '--topic', 't', '--file_windw', '5s'], 'unknown flag --file_windw; did you mean --file_window?'],
      [['table', 'create', 'x', '--topic', 't', '--file_window', '-5s'], "--file_window needs a value, and the next word starts with '-'; write a value that starts with '-' as --file_window=VALUE"],
      [['table', 'create', 'x', '--topic', 't', '--file_window=-5s'], 'file_window'],
      [['status', '--json=yes'], '--json takes no value'],
      [['run', 'now'], 'unexpected argument "now"'],
      [['help', 'nope'], 'unknown command "nope"'],
    ];
    for (const [args, message] of cases) {
      const result = await offsetlake(...args);
      expect([result.code, result.stderr.includes(message)], `${args.join(' ')}: ${result.stderr}`).toEqual([2, true]);
    }
    expect((await offsetlake('table', 'list', '--json')).stdout).toBe(before);
    const missing = await offsetlake('files', 'no_such_table');
    expect([missing.code, missing.stderr]).toEqual([1, 'offsetlake files: no table named "no_such_table"\n']);
  });

  it('refuses bad requests with a reason and a non-zero exit', async () => {
    const cases: [string[], string][] = [
      [['table', 'create', 'x', '--topic', 'no-such-topic-here'], 'Kafka topic "no-such-topic-here" does not exist'],
      [['table', 'create', 'Bad-Name', '--topic', 't'], 'table name "Bad-Name" must start with a lowercase letter'],
      [['table', 'create', 'x', '--topic', 't', '--file_bytes', '12parsecs'], 'file_bytes: "12parsecs" is not a positive size'],
      [['table', 'create', 'x'], 'table create needs --topic TOPIC'],
      [['files', 'missing'], 'no table named "missing"'],
      [['rebuild', 'missing', 'abc'], 'FILE must be a file id'],
      [['frobnicate'], 'unknown command "frobnicate"'],
    ];
    for (const [args, message] of cases) {
      const result = await offsetlake(...args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr).toContain(message);
    }
  });
});
