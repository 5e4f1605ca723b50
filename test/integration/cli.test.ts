import { readFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { closedPort } from '../helpers/ports.js';
import { runCli, type CliRun } from '../helpers/cli.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { bodyBytes } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { compressions } from '../../src/table/settings.js';
import { encoderForCompression } from '../../src/parquet/encoder.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('cli');
});
afterAll(() => engine.close());

async function offsetlake(...args: string[]): Promise<CliRun> {
  return offsetlakeWith({}, ...args);
}

/** The CLI with some of the environment changed (a service moved away, a bad URL). */
function offsetlakeWith(changes: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runCli(engine.config.databaseUrl, args, changes);
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

    // A reader's counters reach status through the catalog: one whole file served, rebuilt as its one row group.
    const reader = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { publishEveryMs: 0 });
    const clicks = await findTable(engine.catalog, 'clicks');
    const served = await bodyBytes(reader.producer.range(clicks, (await listFiles(engine.catalog, clicks.tableId))[0]!, 0, Number(files[0].fileSizeBytes)));
    reader.meter.served(served.byteLength);
    await reader.publish();
    const reads = (await offsetlake('status', 'clicks')).stderr;
    expect(reads).toContain(`reads (1 reader in the last hour): ${(Number(files[0].fileSizeBytes) / 1024).toFixed(1)} KiB served`);
    expect(reads).toContain('row groups rebuilt 1 whole and 0 for some columns, files rebuilt whole 0; chunk cache 0 hits');
    // later tests of this catalog expect no reader's line
    await engine.catalog.query('DELETE FROM offsetlake.reader_counters');

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
    expect([clean.code, JSON.parse(clean.stdout)]).toEqual([0, { checked: 3, identical: 3, failed: [], wrongStatistics: [], wrongPieces: [], wrongIndexEntries: [] }]);

    // a catalog whose record of a file no longer matches what Kafka gives back
    const files = JSON.parse((await offsetlake('files', 'checked', '--json')).stdout) as { dataFileId: string; startOffset: string; endOffset: string }[];
    await engine.catalog.query('UPDATE offsetlake.data_file SET sha256 = $2 WHERE data_file_id = $1', [files[1]!.dataFileId, Buffer.alloc(32)]);
    const dirty = await offsetlake('check', 'checked');
    expect(dirty.code).toBe(1);
    expect(dirty.stderr).toContain(`checked file ${files[1]!.dataFileId} (partition 0, offsets [${files[1]!.startOffset}, ${files[1]!.endOffset})) cannot be rebuilt: sha256 `);
    expect(dirty.stdout).toBe('3 files checked: 2 rebuilt byte for byte with their statistics and stored pieces, 1 cannot be rebuilt (named above; they are never served)\n');
    expect((await offsetlake('table', 'drop', 'checked')).code).toBe(0);
  });

  it('check takes every column\'s statistics again from the rows of the rebuilt file and names each one the catalog has otherwise (issue 25: a 67-byte Avro value under an unknown schema id)', async () => {
    const topic = await newTopic(engine, 1, 'check-stats');
    expect((await offsetlake('table', 'create', 'statted', '--topic', topic, '--format', 'avro')).code).toBe(0);
    // the value: magic byte 0, schema id 0x7ffffff0 (unknown), so its raw bytes land in _value
    const value = '007ffffff0feffffffffffffffff010af09f98807802403a1416a5fcc83f00000080ffffffff0f01020604c3a90278027800ee81b2b9c668c48c030817a4ae4d000800';
    await produce(engine.kafka, topic, [{ key: 'k'.repeat(70), value: Buffer.from(value, 'hex') }]);
    expect((await offsetlake('run', '--once')).code).toBe(0);
    const table = await findTable(engine.catalog, 'statted');
    const [file] = await listFiles(engine.catalog, table.tableId);
    const bounds = (name: string) => file!.columns.filter((c) => c.columnName === name).map((c) => [c.min, c.max]);
    expect(bounds('_value')).toEqual([[value, value]]);
    expect(bounds('_key')).toEqual([[Buffer.from('k'.repeat(70)).toString('hex'), Buffer.from('k'.repeat(70)).toString('hex')]]);
    const clean = await offsetlake('check', 'statted', '--json');
    expect([clean.code, JSON.parse(clean.stdout)]).toEqual([0, { checked: 1, identical: 1, failed: [], wrongStatistics: [], wrongPieces: [], wrongIndexEntries: [] }]);

    // the catalog's max of _value as issue 25 found it: byte 63 two higher than the file's
    const wrong = `${value.slice(0, 126)}4f${value.slice(128)}`;
    const valueId = file!.columns.find((c) => c.columnName === '_value')!.columnId;
    await engine.catalog.query('UPDATE offsetlake.file_column_stats SET max_value = $3 WHERE data_file_id = $1 AND column_id = $2', [file!.dataFileId, valueId, wrong]);
    const dirty = await offsetlake('check', 'statted');
    expect(dirty.code).toBe(1);
    expect(dirty.stderr).toContain(`statted file ${file!.dataFileId} (partition 0, offsets [${file!.startOffset}, ${file!.endOffset})) rebuilds byte for byte, but the catalog's statistics are not its rows': column _value: max "${value.slice(0, 38)}…${value.slice(-38)}" in the file, "${wrong.slice(0, 38)}…${wrong.slice(-38)}" in the catalog`);
    expect(dirty.stdout).toBe("1 files checked: 0 rebuilt byte for byte with their statistics and stored pieces, 0 cannot be rebuilt, 1 with statistics that are not the file's (named above: engines and queries may skip rows they hold)\n");
    const json = JSON.parse((await offsetlake('check', 'statted', '--json')).stdout);
    expect(json.wrongStatistics.map((c: { statistics: string[] }) => c.statistics.length)).toEqual([1]);
    expect((await offsetlake('table', 'drop', 'statted')).code).toBe(0);
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

  it('--version names the package version, the catalog version, the encoder of new files for each compression a table may choose, and Node, exit 0', async () => {
    const project = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const encoders = compressions.map((compression) => `${compression} ${encoderForCompression[compression]}`).join(', ');
    for (const flag of ['--version', '-V']) {
      const answer = await offsetlake(flag);
      expect(answer.code, flag).toBe(0);
      expect(answer.stdout, flag).toMatch(new RegExp(`^offsetlake ${project.version.replaceAll('.', '\\.')} \\(catalog version \\d+, encoders: [^;]+; Node 22\\.\\d+\\.\\d+\\)\n$`));
      expect(answer.stdout, flag).toContain(`encoders: ${encoders}; Node`);
    }
  });

  it('usage errors are said in our words with exit 2 and change nothing; failures exit 1', async () => {
    const before = (await offsetlake('table', 'list', '--json')).stdout;
    const cases: [string[], string][] = [
      [['files', 'x', '--jsn'], 'unknown flag --jsn; did you mean --json?'],
      [['table', 'create', 'x', '--topic', 't', '--file_windw', '5s'], 'unknown flag --file_windw; did you mean --file_window?; the table settings are --file_bytes, --file_window, --file_age, --granularity'],
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

  it('a service that is not there is named with what to do: the catalog, a bad DATABASE_URL, Kafka for status, a taken port for serve; -o into a missing folder is refused before any rebuild', async () => {
    const closed = await closedPort();
    const noCatalog = await offsetlakeWith({ DATABASE_URL: `postgres://offsetlake@127.0.0.1:${closed}/offsetlake` }, 'table', 'list');
    expect([noCatalog.code, noCatalog.stderr]).toEqual([1, `offsetlake table: cannot open the catalog at postgres://offsetlake@127.0.0.1:${closed}/offsetlake: nothing answers there; \`offsetlake stack up\` starts the local catalog, or set DATABASE_URL to yours\n`]);
    const badUrl = await offsetlakeWith({ DATABASE_URL: 'not-a-url' }, 'status');
    expect([badUrl.code, badUrl.stderr]).toEqual([1, 'offsetlake status: the catalog\'s address "not-a-url" is not a postgres:// URL (DATABASE_URL or --database-url), e.g. postgres://user:password@host:5432/db\n']);

    const topic = await newTopic(engine, 1, 'away');
    expect((await offsetlake('table', 'create', 'kafka_away', '--topic', topic)).code).toBe(0);
    const noKafka = await offsetlakeWith({ KAFKA_BROKERS: `127.0.0.1:${closed}` }, 'status', 'kafka_away', '--json');
    expect(noKafka.code).toBe(1);
    expect(noKafka.stderr).toContain(`warning: Kafka at 127.0.0.1:${closed} did not answer for topic ${topic}`);
    expect(JSON.parse(noKafka.stdout)).toMatchObject([{ table: 'kafka_away', lastStableOffset: null, lsoError: expect.stringContaining(`Kafka at 127.0.0.1:${closed} did not answer`) }]);
    expect((await offsetlake('table', 'drop', 'kafka_away')).code).toBe(0);

    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    const port = (taken.address() as AddressInfo).port;
    try {
      const serve = await offsetlake('serve', '--no-auth', '--port', String(port));
      expect([serve.code, serve.stderr]).toEqual([1, `offsetlake serve: port ${port} on 127.0.0.1 is taken by another process; choose another with --port\n`]);
    } finally {
      await new Promise((done) => taken.close(done));
    }
    const output = await offsetlake('rebuild', 'no_such_table', '1', '-o', '/no/such/folder/f.parquet');
    expect([output.code, output.stderr]).toEqual([2, 'offsetlake rebuild: -o /no/such/folder/f.parquet: the folder /no/such/folder does not exist; create it first\n']);
  });

  it('history not yet indexed is said: by table create, by status (with the command to run) and by query on stderr, until backfill has run', async () => {
    const topic = await newTopic(engine, 1, 'history');
    await produce(engine.kafka, topic, Array.from({ length: 5 }, (_, i) => ({ value: JSON.stringify({ i }) })));
    const created = await offsetlake('table', 'create', 'with_history', '--topic', topic);
    expect(created.stdout).toBe(`created table with_history on topic ${topic} (1 partitions)\nthe topic holds 5 offsets of history below where indexing starts: \`offsetlake backfill with_history\` indexes them (history: all)\n`);
    const status = await offsetlake('status', 'with_history');
    expect(status.stdout).toMatch(/5 left \[0, 5\)/);
    expect(status.stderr).toBe('with_history: 5 offsets of history are not indexed yet; `offsetlake backfill with_history` indexes them\n');
    const query = await offsetlake('query', 'SELECT count(*) AS n FROM with_history');
    expect([query.stdout, query.stderr.includes('note: with_history has 5 offsets of history not indexed yet; the answer leaves them out')]).toEqual(['n\n0\n', true]);
    expect((await offsetlake('backfill', 'with_history')).code).toBe(0);
    const after = await offsetlake('status', 'with_history');
    expect([after.stdout.includes('done (from 0)'), after.stderr]).toEqual([true, '']);
    expect((await offsetlake('query', 'SELECT count(*) AS n FROM with_history', '--quiet')).stdout).toBe('n\n5\n');
    expect((await offsetlake('table', 'drop', 'with_history')).code).toBe(0);
  });

  it('a command piped into head stops quietly when head has read enough: no EPIPE stack trace, exit 0 (issue 25.5)', async () => {
    const topic = await newTopic(engine, 1, 'piped');
    expect((await offsetlake('table', 'create', 'piped', '--topic', topic)).code).toBe(0);
    await produce(engine.kafka, topic, Array.from({ length: 4_000 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'x'.repeat(100) }) })));
    expect((await offsetlake('run', '--once')).code).toBe(0);
    // far more than a pipe holds (64 KiB), so the command is still writing when head leaves
    const piped = spawnSync('bash', ['-c', 'node bin/offsetlake.js query "SELECT * FROM piped" --quiet | head -n 2; echo "exit ${PIPESTATUS[0]}" >&2'], {
      env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, encoding: 'utf8', timeout: 120_000,
    });
    expect(piped.stdout.split('\n').filter(Boolean)).toHaveLength(2);
    expect(piped.stderr.trim()).toBe('exit 0');
    expect((await offsetlake('table', 'drop', 'piped')).code).toBe(0);
  });

  it('run says what it does: a progress line with records/s, files and lag per table as often as asked, and a summary when stopped', async () => {
    const topic = await newTopic(engine, 1, 'progress');
    expect((await offsetlake('table', 'create', 'progressing', '--topic', topic, '--history', 'none')).code).toBe(0);
    await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ value: JSON.stringify({ i }) })));
    const child = spawn(process.execPath, ['bin/offsetlake.js', 'run', '--progress-every', '1s'], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let [stdout, stderr] = ['', ''];
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    // the open range is not committed yet (file_window 60 s): lag is the 4 records it holds
    for (let i = 0; i < 300 && !/records\/s, \d+ files committed; lag \(offsets\): progressing 4/.test(stderr); i++) await new Promise((done) => setTimeout(done, 100));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/^\d+ records\/s, 0 files committed; lag \(offsets\): progressing 4; rss \d+ MiB \(JS heap \d+ MiB, \d+ MiB used; Buffers \d+ MiB\)$/m);
    expect(stderr).toMatch(/^memory 1024 MiB: \d+ MiB for the process and 1 partition\(s\), ranges held \d+ MiB in all, one range at most \d+ MiB \(then sealed: capacity\), 2 build\(s\) at once, one record batch at most \d+ MiB decompressed$/m);
    expect(stdout).toMatch(/^4 records in \d+ events; \d+ ranges, \d+ files committed$/m);
    expect((await offsetlake('table', 'drop', 'progressing')).code).toBe(0);
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
