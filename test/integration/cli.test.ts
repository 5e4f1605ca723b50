import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine.js';
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
  it('table create / list / drop, run --once, files, rebuild --verify and status, as a user types them', async () => {
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
    const verified = JSON.parse((await offsetlake('rebuild', 'clicks', String(files[0].dataFileId), '--verify', '--json')).stdout);
    expect(verified).toMatchObject({ verified: true, records: 1, sha256: files[0].sha256 });

    const status = JSON.parse((await offsetlake('status', 'clicks', '--json')).stdout);
    expect(status.map((s: { partition: number; indexedEnd: string; lag: string; files: string }) => [s.partition, s.indexedEnd, s.lag, s.files])).toEqual([
      [0, '5', '0', '5'],
      [1, '5', '0', '5'],
    ]);

    expect((await offsetlake('table', 'drop', 'clicks')).stdout).toBe('dropped table clicks\n');
    expect(JSON.parse((await offsetlake('table', 'list', '--json')).stdout)).toEqual([]);
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
